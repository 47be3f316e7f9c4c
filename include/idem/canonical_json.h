// RFC 8785 (JSON Canonicalization Scheme): object members sorted by their UTF-16 code
// units, no insignificant whitespace, numbers in their ECMAScript shortest form (1.0 → 1,
// 1e21 → 1e+21), strings with the minimal escapes. Two JSON texts that mean the same value
// canonicalize to the same bytes. Pure; safe for concurrent use.
#pragma once

#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "idem/status.h"

namespace idem {

// The canonical form of `json`. Every number is read as the nearest IEEE double (so
// 9007199254740993 becomes 9007199254740992, and 1e-400 becomes 0, as in ECMAScript).
// invalid_argument, naming the reason and byte offset, when `json` is not exactly one JSON
// text (RFC 8259, valid UTF-8, no lone surrogate escapes), repeats a member name within an
// object (RFC 8785 requires I-JSON), nests deeper than 64 levels, or holds a number beyond
// the range of a double (such as 1e400). internal only when memory runs out.
Result<std::string> canonical_json(std::string_view json);

// `json` parsed by the rules above (one JSON text, no repeated member names, at most 64
// levels), every number as the nearest double, exactly (Boost's own parser may be one
// unit in the last place off). The errors of canonical_json(); no exception escapes.
Result<boost::json::value> parse_json_exact(std::string_view json);

// The same for a C string. Without it, canonical_json("...") would be ambiguous, since a
// boost::json::value can be built from a const char* as well.
inline Result<std::string> canonical_json(const char* json) { return canonical_json(std::string_view(json)); }

// The canonical form of an already parsed value. Its int64/uint64 numbers are written as
// the doubles nearest to them. A non-finite double (which parsing never yields) is written
// as null, as JSON.stringify writes it. Strings are expected to hold UTF-8.
std::string canonical_json(const boost::json::value& v);

// The ECMAScript Number::toString form of a double ("1", "0.5", "1e+21", "1e-7", and
// "-0" → "0"); "NaN", "Infinity" and "-Infinity" for the non-finite ones.
std::string canonical_number(double d);

}  // namespace idem
