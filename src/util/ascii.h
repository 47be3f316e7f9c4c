// ASCII case folding for protocol words: header field names, methods, URI schemes and
// tokens such as "chunked" or "bearer". Pure ASCII: bytes outside 'A'-'Z' are left as they
// are, whatever the C locale says (std::tolower follows it). Not Beast's iequals either:
// Beast 1.81's reads one byte past its arguments on a mismatch. Safe for concurrent use.
#pragma once

#include <cstddef>
#include <string_view>

namespace idem::util {

// `c` with 'A'-'Z' mapped to 'a'-'z'; every other byte unchanged.
constexpr char ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// True when `a` and `b` have the same length and differ at most in the case of ASCII letters.
constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

}  // namespace idem::util
