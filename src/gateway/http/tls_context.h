// TLS on the client listener (docs/configuration.md, "TLS on the client listener"; docs/operations.md, "TLS
// at the edge"): the server context made from the configured certificate chain and private key. TLS 1.2
// and 1.3 only, OpenSSL's default ciphers, no renegotiation, ALPN `http/1.1` (a client that offers only other
// protocols, h2 alone, completes the handshake without one and speaks HTTP/1.1 or is refused as on the plain
// listener).
#pragma once

#include <memory>

#include <boost/asio/ssl/context.hpp>

#include "gateway/model/config/config.h"

namespace idem::gateway {

// The client listener's TLS context for `tls` (which must be on()). Throws ConfigError,
// at the key of the file at fault (file:line:tls.cert_file: ...), when a file cannot be
// read or parsed, or the key does not belong to the certificate. `source` names the
// config file for the error.
std::shared_ptr<boost::asio::ssl::context> listener_tls_context(const ListenerTls& tls,
                                                                const std::string& source);

}  // namespace idem::gateway
