// A request body parsed as JSON for key templates and fingerprints, by the same rules as
// idem::canonical_json (include/idem/canonical_json.h): exactly one JSON text, valid UTF-8,
// no duplicate member names (I-JSON), at most 64 levels deep, and every number read as the
// correctly rounded double (Boost 1.81's own conversion can be an ulp off, which would make
// `{json.amount}` render 0.30000000000000004 where the client sent 0.3).
// canonical_json(parse_json_body(t).value()) equals canonical_json(t) for every t.
// Pure; safe for concurrent use.
#pragma once

#include <string_view>

#include <boost/json/value.hpp>

#include "idem/status.h"

namespace idem::gateway {

// The parsed body, every number a double. invalid_argument, naming the reason and the byte
// offset, when `body` is not JSON by the rules above; internal when memory runs out.
Result<boost::json::value> parse_json_body(std::string_view body);

}  // namespace idem::gateway
