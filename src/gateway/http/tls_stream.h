// The client listener's connection under TLS (tls_context.h): a TLS stream over the
// connection's tcp_stream, whose timeouts still bound every read and write. The session and
// the writers are templates over the stream (plain tcp_stream or this), instantiated for
// both, so a plain connection pays nothing for TLS.
#pragma once

#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

namespace idem::gateway {

using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream&>;

}  // namespace idem::gateway
