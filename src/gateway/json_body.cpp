#include "gateway/json_body.h"

#include "idem/canonical_json.h"

namespace idem::gateway {

// The canonical-JSON parser itself, so that key templates, fingerprints and canonical
// forms agree on every text.
Result<boost::json::value> parse_json_body(std::string_view body) { return parse_json_exact(body); }

}  // namespace idem::gateway
