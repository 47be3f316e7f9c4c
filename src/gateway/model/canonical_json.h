// Canonical JSON: RFC 8785 (JSON Canonicalization Scheme) — object members sorted by their
// UTF-16 code units, no insignificant whitespace, strings with the minimal escapes — except
// that numbers keep their exact decimal value instead of becoming IEEE doubles, so that
// 1790000000000000001 and 1790000000000000002 (a Java Long written by Jackson) stay two
// numbers. Two JSON texts that mean the same value canonicalize to the same bytes: member
// order, whitespace and number spelling (1, 1.0, 1e0, 10e-1) do not matter.
//
// The canonical form of a number (canonical_decimal) is its exact value written as
// ECMAScript's Number::toString lays out digits, with every digit kept: the significant
// digits in plain notation when the decimal exponent is moderate ("1", "-1.5", "0.000001",
// "100000000000000000000"), otherwise in exponent notation without a '+'
// ("1e21", "1.5e-7"; 1790000000000000001e999999999 is "1.790000000000000001e1000000017").
// Its length is at most the number of significant digits plus 25, however large the
// exponent: nothing is ever expanded into digits. -0 is 0. docs/gateway.md, "Numbers".
// Pure; safe for concurrent use. The gateway's, not part of the installed library's contract
// (include/idem/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "idem/status.h"

namespace idem {

// A parsed JSON text with exact numbers. Objects, arrays, strings, booleans and null are
// held as boost::json values; a number is held as a uint64 value that indexes its exact
// canonical form (canonical_decimal), so a document never holds an int64 or double. Read
// numbers through number(). Immutable once parsed; movable.
class ExactJson {
 public:
  ExactJson() = default;  // the document `null`

  const boost::json::value& root() const noexcept { return root_; }

  // True when `v`, a value of this document, is a number.
  static bool is_number(const boost::json::value& v) noexcept { return v.is_uint64(); }

  // The canonical form of the number `v`, a value of this document for which is_number().
  const std::string& number(const boost::json::value& v) const { return numbers_.at(v.get_uint64()); }

 private:
  friend Result<ExactJson> parse_exact_json(std::string_view json);
  boost::json::value root_;
  std::vector<std::string> numbers_;
};

// `json` parsed: exactly one JSON text (RFC 8259, valid UTF-8, no lone surrogate escapes),
// no member name repeated within an object (RFC 8785 requires I-JSON), at most 64 levels
// deep. invalid_argument, naming the reason and byte offset, otherwise, or when a number's
// exponent is beyond about ±2^31 (the parser's limit); internal only when memory runs out.
// Work and memory are linear in the size of `json`. No exception escapes.
Result<ExactJson> parse_exact_json(std::string_view json);

// The canonical form of `json`; the errors of parse_exact_json().
Result<std::string> canonical_json(std::string_view json);

// The same for a C string. Without it, canonical_json("...") would be ambiguous, since an
// ExactJson could be built from a const char* as well.
inline Result<std::string> canonical_json(const char* json) { return canonical_json(std::string_view(json)); }

// The canonical form of a parsed document, or of `v`, one of its values.
std::string canonical_json(const ExactJson& doc);
std::string canonical_json(const ExactJson& doc, const boost::json::value& v);

// The canonical form of a JSON string holding `utf8`, quotes included.
std::string canonical_json_string(std::string_view utf8);

// The canonical form of `number`, the text of a JSON number (RFC 8259 grammar, such as
// "-12.50e+3" → "-12500"). invalid_argument when it is not one, or when its exponent has
// more than 18 digits.
Result<std::string> canonical_decimal(std::string_view number);

// The canonical form of a finite double's shortest round-trip decimal (0.1 → "0.1",
// 1e21 → "1e21", -0.0 → "0"); "NaN", "Infinity" and "-Infinity" for the non-finite ones.
std::string canonical_number(double d);

}  // namespace idem
