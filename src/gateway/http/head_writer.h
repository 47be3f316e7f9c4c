// Message heads written by hand, byte for byte as Beast's serializer writes them, into one
// contiguous buffer: a head and a body held in memory then leave in one gather write
// (writev) instead of a walk over a buffer sequence of one piece per field, which cost
// more CPU than the rest of a pass-through request (docs/performance.md, "Where the time
// goes"), and whose walk grew with the square of the fields (a head of 4,000 fields took
// 13 ms to relay: issue 29). Chunked bodies are framed here too (write_chunk).
#pragma once

#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "gateway/http/http_reply.h"

namespace idem::gateway {

// Appends the start line, the fields in their order and the blank line to `out`.
void append_head(std::string& out, const http::request_header<>& head);
void append_head(std::string& out, const http::response_header<>& head);

// Each writer takes the client's or the upstream's stream: a boost::beast::tcp_stream, a
// TlsStream (tls_stream.h) or an UpstreamStream (upstream_stream.h, plain or TLS); the three
// are instantiated in head_writer.cpp.

// Writes `message` whole: head and body in one gather write through `scratch` (kept by
// the caller between writes so its capacity is reused). The stream's timeout, as set by
// the caller, applies.
template <class Stream>
boost::asio::awaitable<boost::beast::error_code> write_message(Stream& stream, const HttpResponse& message,
                                                               std::string& scratch);

// Writes `head` (already in `head_bytes`, from append_head) and the first `body` bytes of
// an unchunked message in one gather write; `head_bytes` may be empty (a later part).
template <class Stream>
boost::asio::awaitable<boost::beast::error_code> write_raw(Stream& stream, std::string_view head_bytes,
                                                           std::string_view body);

// Writes `head_bytes` (may be empty) and `body` as one chunk of a chunked message
// ("<size in hex>\r\n<body>\r\n"; nothing for an empty body) and, when `last`, the last
// chunk with an empty trailer section ("0\r\n\r\n"), in one gather write: the bytes Beast's
// serializer writes for a buffer_body fed piece by piece.
template <class Stream>
boost::asio::awaitable<boost::beast::error_code> write_chunk(Stream& stream, std::string_view head_bytes,
                                                             std::string_view body, bool last);

}  // namespace idem::gateway
