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

// The order of `a` and `b` with ASCII letters compared without case (then by length): the
// order in which a list of names sorted once answers iequals lookups by binary search.
constexpr bool iless(std::string_view a, std::string_view b) noexcept {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const char x = ascii_lower(a[i]), y = ascii_lower(b[i]);
    if (x != y) return x < y;
  }
  return a.size() < b.size();
}

}  // namespace idem::util
