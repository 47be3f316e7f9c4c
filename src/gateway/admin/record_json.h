// A record as the admin API and `idem record get` show it (docs/admin.md): scope, key, state,
// fence, expires_at (RFC 3339), lease_until (pending) and, for done records, what the
// result holds (response with response_status, uncertain, not_stored, or json with value).
// Pure; safe for concurrent use.
#pragma once

#include <string>

#include "idem/record.h"

namespace idem::gateway {

// The record as JSON text. A control-API result (`json`) is its `value` as committed, byte
// for byte (gateway/admin/raw_json.h), never a double's rounding of it.
std::string record_json(const Record& record);

}  // namespace idem::gateway
