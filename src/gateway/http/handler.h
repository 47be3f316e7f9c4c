// What serves a listener (docs/gateway-internals.md, "Layers"). The HTTP layer reads a
// request head and refuses what no handler should see (head_checks.h); it then hands the
// request to its listener's handler through an HttpExchange and writes what the handler
// answers. The handler decides everything else, reading top to bottom in one coroutine:
// answer from the head alone, read the body whole up to a limit of its choosing, or relay
// the request to an upstream as its body arrives. The HTTP layer knows no route, no
// record and no metric; the pipeline and the admin listener know no socket.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include <boost/asio/awaitable.hpp>

#include "gateway/http/http_reply.h"
#include "gateway/http/upstream.h"
#include "gateway/model/request_meta.h"

namespace idem::gateway {

// A request body read whole, or why not.
struct BodyRead {
  // The request with its body; null when refused or when the client went away.
  const HttpRequest* request = nullptr;
  // Set: answer it and close. A body past the limit is refused 413 body-too-large (and
  // `too_large` says so), one that would pass the shared body budget 503 overloaded, a
  // malformed chunked body 400, chunk extensions or trailers past the header limit 431.
  std::optional<HttpResponse> refusal;
  bool too_large = false;
  bool client_gone = false;  // the client failed mid-body: close without an answer

  static BodyRead whole(const HttpRequest& r) { return {&r, std::nullopt, false, false}; }
  static BodyRead refused(HttpResponse r, bool too_large = false) {
    return {nullptr, std::move(r), too_large, false};
  }
  static BodyRead gone() { return {nullptr, std::nullopt, false, true}; }
};

// One request on a connection, as the handler sees it. Valid for the handler's call.
class HttpExchange {
 public:
  // The request head: valid until relay() is called (which forwards it).
  virtual const http::request_header<>& head() const = 0;
  // The client's address and the request id (docs/observability.md), on the client
  // listener; on the admin listener the peer's address alone.
  virtual const RequestMeta& meta() const = 0;
  // The Content-Length the head declares; nullopt for a chunked body or none.
  virtual std::optional<std::uint64_t> content_length() const = 0;
  // Whether the client lets the connection be kept after this request (HTTP/1.1 without
  // `Connection: close`, or HTTP/1.0 with `keep-alive`).
  virtual bool keep_alive() const = 0;
  // Whether the request has no body to read (so a connection answered from the head alone
  // can be kept).
  virtual bool body_done() const = 0;
  // Reads the body whole, at most `limit` bytes, held in the listener's shared body budget
  // until the exchange ends. At most once; a `100-continue` client is told to go on first.
  virtual boost::asio::awaitable<BodyRead> read_body(std::uint64_t limit) = 0;
  // Forwards the request to `upstream` as its body arrives, with the forwarding fields of
  // meta() (relay.h): the upstream's answer, streamed; a problem (502/504) when the
  // upstream failed; nullopt when the client went away mid-body. At most once, and not
  // after read_body().
  virtual boost::asio::awaitable<std::optional<Answer>> relay(UpstreamClient& upstream, Duration timeout) = 0;

 protected:
  ~HttpExchange() = default;
};

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // The context of a request from `peer` with this head (request_meta, upstream.h), which
  // the exchange's meta() then holds: by default the request id alone, the peer trusted
  // as no proxy. The client listener's handler applies its `trusted_proxies`.
  virtual RequestMeta meta(const http::request_header<>& head, std::string_view peer) const {
    return request_meta(head, peer);
  }
  // The answer to the exchange's request; nullopt closes the connection without one (the
  // client went away mid-body).
  virtual boost::asio::awaitable<std::optional<Answer>> serve(HttpExchange& exchange) = 0;
};

// What the HTTP layer counts, for the metrics (docs/observability.md): client requests
// between their head and their answer written (idem_inflight), and request bodies refused
// because the shared body budget was spent (idem_overloaded_total).
struct ServerGauges {
  std::atomic<std::int64_t> inflight{0};
  std::atomic<std::uint64_t> overloaded{0};
};

}  // namespace idem::gateway
