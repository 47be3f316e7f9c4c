// Streaming between the client and the upstream (docs/gateway.md, "Memory"): a
// request on no route is forwarded as its body arrives, and any response too large to
// hold whole is passed on as it arrives, so an event stream reaches the client event by
// event and a large download costs a fixed buffer, not its size.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "gateway/http/http_body.h"
#include "gateway/http/upstream.h"

namespace idem::gateway {

using StreamParser = http::request_parser<http::buffer_body>;

// `client` is the client's connection: a boost::beast::tcp_stream or a TlsStream
// (tls_stream.h), both instantiated in relay.cpp.

// Writes `answer` to the client: whole, or its head and first part and then its tail as
// the upstream sends it (framed as the upstream framed it: its Content-Length, else
// chunked for HTTP/1.1 clients, else ended by closing). Each write waits at most
// `write_timeout`. False when the connection cannot be used again (a write failed, or
// the upstream failed mid-body after the head was sent: the client sees a cut response).
// `scratch` holds the head while it is written (the connection's, so its capacity is reused).
template <class Stream>
boost::asio::awaitable<bool> write_answer(Stream& client, Answer& answer,
                                          std::chrono::steady_clock::duration write_timeout,
                                          std::string& scratch);

struct RelayTimeouts {
  // Each wait for the client's body; and the whole body must arrive within it plus a second
  // per KiB received (at least 1 KiB/s past the first client_read, as Apache's
  // mod_reqtimeout MinRate has it), so a body dripped a byte at a time, each byte within
  // client_read of the last, is cut all the same, and an upload that keeps that rate never is.
  std::chrono::steady_clock::duration client_read;
  Duration upstream;  // connect, and each upstream write and read
};

// Forwards a request whose head `parser` has read (its body not yet read) to the
// upstream, with the forwarding fields of `meta` (add_forwarding_fields), streaming the
// body as it arrives, and reads the upstream's response head. `guard` is attached to the
// parser (chunk extensions and trailers). The answer: the upstream's response (its body
// streamed through a tail), or a problem (502/504) when the upstream failed; nullopt when
// the client failed mid-body (close the connection). `body_complete` says whether the
// client's body was read to its end. `scratch` holds the forwarded head while it is
// written (the client connection's, as for write_answer).
template <class Stream>
boost::asio::awaitable<std::optional<Answer>> relay_request(Stream& client, boost::beast::flat_buffer& buffer,
                                                            StreamParser& parser, ChunkGuard& guard,
                                                            UpstreamClient& upstream, const RequestMeta& meta,
                                                            RelayTimeouts timeouts, bool& body_complete,
                                                            std::string& scratch);

}  // namespace idem::gateway
