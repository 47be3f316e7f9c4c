// The MySQL store (docs/stores.md; URIs in docs/configuration.md, "Stores"):
// mysql://user:pass@host:port/db, distributed and durable, for MySQL >= 8.0 and MariaDB >= 10.6
// (InnoDB). The URI's user, password and database are percent-decoded; its parameters:
//   table_prefix=NAME        the tables are NAMErecords, NAMEtokens, NAMElocks (default idem_);
//                            [a-z_][a-z0-9_]*, at most 40 characters
//   ssl_mode=MODE            DISABLED (no TLS) | PREFERRED (TLS when the server offers it) |
//                            REQUIRED (TLS or no connection; the certificate unchecked) |
//                            VERIFY_CA | VERIFY_IDENTITY (the certificate and host name checked);
//                            without it, the connector's default (Connector/C 3.3: no TLS)
//   ssl_ca=FILE              the CA certificates that sign the server's
//   ssl_cert=FILE, ssl_key=FILE  a client certificate and its key, for a server that asks for one
//   server_public_key=FILE   the server's RSA public key, for a caching_sha2_password account over
//                            TCP without TLS (MySQL 8's default authentication)
// The tables are created if missing. Errors name the host and the server's reason, never the
// password: invalid_argument for a malformed URI, unavailable when the server cannot be reached,
// failed_precondition when it refuses (authentication, unknown database, missing privileges).
#pragma once

#include <memory>
#include <string_view>

#include "idem/open.h"
#include "idem/store.h"

namespace idem::mysql {

Result<std::unique_ptr<Store>> open(std::string_view uri, const StoreOptions& options);

}  // namespace idem::mysql
