// ASCII case folding for protocol words: header field names, methods, URI schemes and
// tokens such as "chunked" or "bearer"; and what such a word (an RFC 9110 token) is made of. Pure ASCII:
// bytes outside 'A'-'Z' are left as they are, whatever the C locale says (std::tolower follows it). Not
// Beast's iequals either: Beast 1.81's reads one byte past its arguments on a mismatch. Safe for concurrent
// use.
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

// RFC 9110 §5.6.2 tchar: what a field name, a method or an auth-scheme is made of.
constexpr bool is_tchar(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// RFC 9110 §5.6.2 token: one or more tchar.
constexpr bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_tchar(c)) return false;
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
