// Where a PostgreSQL store connects, and the translation of libpq's errors into Statuses
// (once for the whole backend). Messages name the server as host:port/db and never hold
// the password.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <string_view>

#include "idem/clock.h"
#include "idem/status.h"

namespace idem::postgres {

struct Target {
  std::string uri;     // for libpq, without the store's own parameters
  std::string prefix;  // of the table names
  // create_tables=false: open only checks that the tables are there (protocol/README.md,
  // "PostgreSQL"); a DBA created them with the DDL `idem schema` prints.
  bool create_tables = true;
  std::string where;  // "host:port/db", for messages

  // Opens a blocking connection (open-time checks) or starts a non-blocking one.
  PGconn* connect_blocking(Duration timeout) const;
  PGconn* connect_start() const;

  // "postgres 'host:port/db': " + what + ": " + reason.
  std::string message(std::string_view what, std::string_view reason) const;
  // A failed connection: unavailable when the server could not be reached or is not
  // ready; failed_precondition when it refused us (authentication, no such database).
  Status connect_error(PGconn* conn) const;
  // A failed statement, by SQLSTATE.
  Status statement_error(const PGresult* res, std::string_view what) const;
};

// Parses postgres:// or postgresql:// URIs; takes table_prefix and create_tables out.
Result<Target> parse_target(std::string_view uri);

struct PGresultDeleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, PGresultDeleter>;

}  // namespace idem::postgres
