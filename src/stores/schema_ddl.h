// The DDL of a SQL store's tables (docs/stores.md, "The protocol folder and the DDL"): what `idem schema
// --store URI` prints, so that a DBA creates the tables and the store opens with create_tables=false. It is
// the store's schema file of protocol/ with the URI's table prefix put in; no server is asked. Pure; safe for
// concurrent use.
#pragma once

#include <string>
#include <string_view>

#include "idem/status.h"

namespace idem {

// The statements, ready for psql or mysql, with a comment saying what they are. Errors:
// invalid_argument for a malformed URI or an unknown scheme; failed_precondition for a store
// whose tables need no DDL (memory:, sqlite:, redis://, redis-cluster://), saying why.
Result<std::string> store_ddl(std::string_view uri);

}  // namespace idem
