// TLS for the rediss schemes (docs/configuration.md, "Stores"): the OpenSSL context a
// Redis store's connections share, and what a failed handshake means.
//
// Thread safety: the context is set up once, before any connection uses it; connections
// only read it.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <string>

#include "idem/status.h"
#include "stores/redis/redis_uri.h"

namespace idem::redis {

// TLS 1.2 or later, the peer verified against tls.ca_file (or the system's CA
// certificates), the client certificate and key when given. failed_precondition naming
// the file that cannot be read.
Result<std::shared_ptr<boost::asio::ssl::context>> make_tls_context(const Tls& tls);

// Sets the name the server's certificate must carry (tls.server_name, else `host`) and,
// for a name that is not an IP address, sends it as SNI. Call before the handshake.
Status prepare_tls_stream(boost::asio::ssl::stream<boost::asio::ip::tcp::socket>& stream, const Tls& tls,
                          const std::string& host);

// Why a handshake failed, in words: the certificate check's verdict when there is one
// ("certificate verify failed: Hostname mismatch"), else the error.
std::string tls_failure(boost::asio::ssl::stream<boost::asio::ip::tcp::socket>& stream,
                        const boost::system::error_code& ec);
// Whether the handshake failed because the server's certificate was refused (a
// configuration to fix, not a passing fault).
bool tls_verify_failed(boost::asio::ssl::stream<boost::asio::ip::tcp::socket>& stream);

}  // namespace idem::redis
