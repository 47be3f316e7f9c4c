// The PostgreSQL store (docs/stores.md; URIs in docs/configuration.md, "Stores"):
// postgres://user:pass@host:port/db (or postgresql://), distributed and durable. Any libpq URI parameter may
// follow; one more is the store's own and is removed before the URI reaches libpq:
//   table_prefix=NAME   the tables are NAMErecords, NAMEtokens, NAMElocks (default idem_);
//                       [a-z_][a-z0-9_]*, at most 40 characters
// The tables are created if missing. Errors name the host and the server's reason, never
// the password: invalid_argument for a malformed URI, unavailable when the server cannot
// be reached, failed_precondition when it refuses (authentication, unknown database,
// missing privileges).
#pragma once

#include <memory>
#include <string_view>

#include "idem/open.h"
#include "idem/store.h"

namespace idem::postgres {

Result<std::unique_ptr<Store>> open(std::string_view uri, const StoreOptions& options);

}  // namespace idem::postgres
