// Where a MySQL store connects, and the translation of the connector's and the server's errors into
// Statuses (once for the whole backend). Messages name the server as host:port/db and never hold
// the password.
#pragma once

#include <mysql.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "idem/clock.h"
#include "idem/status.h"

namespace idem::mysql {

struct Target {
  std::string host = "localhost";
  unsigned port = 3306;
  std::string user, password, db;  // percent-decoded
  std::string prefix;              // of the table names
  bool create_tables = true;       // false: open only checks that the tables are there
  std::string
      ssl_mode;  // "" (the connector's default), DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY
  std::string ssl_ca;             // a file of CA certificates
  std::string ssl_cert, ssl_key;  // files: a client certificate and its key, for a server that asks for one
  std::string server_public_key;  // a file: the server's RSA key, for caching_sha2_password without TLS
  std::string uri;                // as given, to find the password in messages
  std::string where;              // "host:port/db", for messages

  // A handle with the store's options set (multi-statement queries, rows found, TLS); `nonblocking`
  // for the store's connections, blocking (with `timeout` for connecting) for open-time work.
  // nullptr when out of memory.
  MYSQL* handle(Duration timeout, bool nonblocking) const;

  // "mysql 'host:port/db': " + what + ": " + reason.
  std::string message(std::string_view what, std::string_view reason) const;
  // A failed connection: unavailable when the server could not be reached or is not ready;
  // failed_precondition when it refused us (authentication, no such database).
  Status connect_error(MYSQL* conn) const;
  // After connecting: failed_precondition when ssl_mode asks for TLS and the connection has none
  // (the connector does not refuse a server without TLS unless it checks the certificate).
  Status check_tls(MYSQL* conn) const;
  // A failed statement, by error number (a connection error is unavailable).
  Status statement_error(MYSQL* conn, std::string_view what) const;
};

// Whether a failed statement's error number says the whole transaction was rolled back and
// may simply run again (a deadlock, a lock wait that timed out).
bool retryable(unsigned error);
// Whether an error number is the connector's own (the connection failed), not the server's.
bool client_error(unsigned error);

// Parses mysql://[user[:password]@]host[:port][/db][?table_prefix=P&ssl_mode=M&ssl_ca=FILE&
// server_public_key=FILE&ssl_cert=FILE&ssl_key=FILE&create_tables=false].
Result<Target> parse_target(std::string_view uri);

}  // namespace idem::mysql
