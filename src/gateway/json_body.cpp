#include "gateway/json_body.h"

namespace idem::gateway {

// The canonical-JSON parser itself, so that key templates, fingerprints and canonical
// forms agree on every text.
Result<ExactJson> parse_json_body(std::string_view body) { return parse_exact_json(body); }

}  // namespace idem::gateway
