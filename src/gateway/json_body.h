// A request body parsed as JSON for key templates and fingerprints, by the rules of
// idem::canonical_json (core/canonical_json.h): exactly one JSON text, valid UTF-8,
// no duplicate member names (I-JSON), at most 64 levels deep, and every number kept at its
// exact decimal value (never a double: 1790000000000000001 and 1790000000000000002 stay
// two numbers). canonical_json(parse_json_body(t).value()) equals canonical_json(t) for
// every t. Pure; safe for concurrent use.
#pragma once

#include <string_view>

#include "core/canonical_json.h"
#include "idem/status.h"

namespace idem::gateway {

// The parsed body. invalid_argument, naming the reason and the byte offset, when `body` is
// not JSON by the rules above; internal when memory runs out.
Result<ExactJson> parse_json_body(std::string_view body);

}  // namespace idem::gateway
