// Percent-decoding (RFC 3986 §2.1: "%XX" stands for the byte 0xXX), with the caller's policy
// for a '%' that does not start such an escape. Pure; safe for concurrent use.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "util/hex.h"

namespace idem::util {

// What a '%' not followed by two hex digits means ("%", "%4" at the end, "%zz").
enum class BadPercent {
  keep,    // it is text: kept as written, and what follows it is read as usual (WHATWG URL §1.3)
  reject,  // the whole text is refused (store URIs whose drivers would read it otherwise)
};

// What a '+' means.
enum class Plus {
  literal,  // a '+' (RFC 3986)
  space,    // a ' ' (application/x-www-form-urlencoded, WHATWG URL §5.1); "%2B" is a '+'
};

// The byte that the escape at text[i] stands for ("%2F" and "%2f": 0x2F), or -1 when
// text[i] is not a '%' followed by two hex digits (either case).
constexpr int escaped_byte(std::string_view text, std::size_t i) noexcept {
  if (i + 2 >= text.size() || text[i] != '%') return -1;
  const int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// `text` with every escape replaced by its byte, "%00" included, and '+' as `plus` says.
// A bad '%' as `bad` says: nullopt for BadPercent::reject; BadPercent::keep never answers
// nullopt.
std::optional<std::string> percent_decode(std::string_view text, BadPercent bad, Plus plus = Plus::literal);

}  // namespace idem::util
