// Hexadecimal digits: reading one, and writing bytes as lowercase hex. Pure; safe for
// concurrent use.
#pragma once

#include <string>
#include <string_view>

namespace idem::util {

// The value of the hex digit `c` ('0'-'9', 'a'-'f' or 'A'-'F'), or -1 when `c` is not one.
constexpr int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// As hex_value, but for the lowercase spelling only: -1 for 'A'-'F'. For text that only
// append_hex wrote, where another spelling means that it did not.
constexpr int lower_hex_value(char c) noexcept { return c >= 'A' && c <= 'F' ? -1 : hex_value(c); }

// Appends two lowercase hex digits for each byte of `bytes`, first byte first ("\x01\xab" ->
// "01ab").
// Sized once and written by index: it runs for every fingerprint and key hash, on the
// request path (a push_back per digit cost measurably more: docs/performance.md,
// "Counting instructions").
inline void append_hex(std::string& out, std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const std::size_t at = out.size();
  out.resize(at + 2 * bytes.size());
  char* p = out.data() + at;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    *p++ = kDigits[b >> 4];
    *p++ = kDigits[b & 0xF];
  }
}

// The lowercase hex of `bytes`: what append_hex appends.
inline std::string to_hex(std::string_view bytes) {
  std::string out;
  append_hex(out, bytes);
  return out;
}

}  // namespace idem::util
