// The gateway's client for one upstream (docs/gateway.md): HTTP/1.1, over TLS for an
// https:// upstream (docs/gateway.md, "TLS to upstreams"), over a pool of keep-alive
// connections, each exchange bounded by a deadline, every failure classified
// by what it means for the side effect:
//   refused  nothing was sent (connect, or the TLS handshake and the certificate's check,
//            failed or timed out): safe to release the claim
//   timeout  the deadline passed after sending: outcome unknown
//   broken   the connection failed after sending: outcome unknown
// A request is never resent once any byte of it may have reached the upstream. A pooled
// connection is reused only after an exchange that ended with no doubt about framing (the
// whole request sent, a complete response delimited by its length or chunks, no stray
// bytes after it, keep-alive on both sides), and never past the idle time the upstream
// announces (`Keep-Alive: timeout=N`) or the configured one: an upstream closing an idle
// connection just as a request is sent on it would fake an unknown outcome.
// Bodies are never held whole unless the caller asks: a response larger than the caller
// buffers comes back as its head, its first part and a ResponseTail that streams the rest.
// Safe for concurrent use: any number of exchanges may run at once from any thread. Idle
// connections are pooled per io_context, so an exchange reuses one of its own thread's.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>

#include "gateway/http/http_reply.h"
#include "gateway/http/upstream_stream.h"
#include "gateway/model/config/address.h"
#include "gateway/model/forwarding.h"
#include "gateway/model/request_meta.h"

namespace idem::gateway {

class UpstreamClient;

// An upstream connection for one exchange: checked out of the pool or newly connected.
// The stream lives on the heap: a connection changes hands several times per exchange
// (pool, exchange, tail, pool), and moving a Beast stream itself allocates a new one.
struct UpstreamConnection {
  std::unique_ptr<UpstreamStream> socket;
  boost::beast::flat_buffer buffer;  // bytes read from the upstream but not yet parsed
  UpstreamStream& stream() noexcept { return *socket; }
};

// The rest of a response body that was too large to buffer. Owns the upstream connection
// until the body ends (then pools it when that is safe) or the tail is dropped (then
// closes it).
class ResponseTail {
 public:
  using Parser = http::response_parser<http::buffer_body>;
  // Each read waits at most `idle_timeout` for the upstream.
  // `pool_limit`: how long the connection may idle in the pool once the body has ended.
  // `starved`: the parser has seen every byte the connection's buffer holds (body_parse.h).
  ResponseTail(UpstreamClient& owner, UpstreamConnection conn, std::unique_ptr<Parser> parser, bool starved,
               std::chrono::steady_clock::duration idle_timeout,
               std::chrono::steady_clock::duration pool_limit);
  ~ResponseTail();
  ResponseTail(const ResponseTail&) = delete;
  ResponseTail& operator=(const ResponseTail&) = delete;

  // Reads the next part of the body into `out`: the bytes read (0 only at the end), or an
  // error (timeout, connection lost) after which the tail is unusable.
  boost::asio::awaitable<std::pair<boost::system::error_code, std::size_t>> read(char* out, std::size_t size);
  bool done() const noexcept { return parser_->is_done(); }

 private:
  UpstreamClient& owner_;
  std::optional<UpstreamConnection> conn_;
  std::unique_ptr<Parser> parser_;
  bool starved_;
  std::chrono::steady_clock::duration idle_timeout_;
  std::chrono::steady_clock::duration pool_limit_;
};

struct UpstreamResult {
  enum class Kind { response, refused, timeout, broken };
  Kind kind = Kind::refused;
  // kind == response: the head with its end-to-end fields only (hop-by-hop fields and those
  // the upstream's Connection names are removed) and the body: all of it, or when `tail`
  // is set, its first part (Content-Length, if any, still describes the whole body).
  HttpResponse response;
  std::unique_ptr<ResponseTail> tail;
  std::string error;  // otherwise: why, for the log
};

// The request as the upstream must see it: the client's request with hop-by-hop fields,
// Expect (the body is already read) and any client-sent Idempotency-Fence removed, Host
// set to the upstream's authority when the client (HTTP/1.0) sent none, the forwarding
// fields made (add_forwarding_fields, after the hop-by-hop fields are gone, so a client's
// Connection header cannot name them away), the target prefixed with the upstream's base
// path, framing recomputed, HTTP/1.1 and keep-alive on.
HttpRequest make_forward_request(const HttpRequest& client, const UpstreamUrl& upstream,
                                 const RequestMeta& meta);
// A request as it leaves for the upstream: its head written out (append_forward_head) and
// its body, a view of the client's.
struct ForwardRequest {
  std::string head;
  std::string_view body;
  bool head_request = false;  // a HEAD: the response has no body
};
// The fields the gateway sets on a forwarded request beyond make_forward_request's (the
// key and the fence), each replacing any the client sent under its name.
using SetFields = std::span<const std::pair<std::string_view, std::string_view>>;
// make_forward_request's request with `set` set on it, written straight from the client's
// request: the same bytes as append_head of that request (a test compares them over
// many requests), without copying the request or allocating a field.
ForwardRequest forward_request(const HttpRequest& client, const UpstreamUrl& upstream,
                               const RequestMeta& meta, SetFields set);
// The same for a request whose body is streamed: the head only, framing (Content-Length or
// chunked) kept as the client sent it.
void prepare_forward_head(http::request_header<>& head, const UpstreamUrl& upstream, const RequestMeta& meta);

// The fields every forwarded request carries (docs/gateway.md, "Forwarding fields";
// docs/observability.md), decided by whether the peer is a trusted proxy
// (`meta.trusted_peer`, forwarding.h):
//  - from any other peer, every forwarding field the client sent (Forwarded,
//    X-Forwarded-*, X-Real-IP, Front-End-Https, ... : forwarding_field) is removed, and
//    X-Forwarded-For is the peer, X-Forwarded-Proto "http" (this listener speaks plain
//    HTTP: a client must not pass itself off as having come over TLS), Forwarded this hop's
//    element ("for=192.0.2.7;proto=http");
//  - from a trusted proxy they pass as sent, X-Forwarded-For and Forwarded with this hop
//    appended (RFC 7239 §4), X-Forwarded-Proto as the proxy sent it ("http" if none).
// And X-Request-Id: the client's own when it sent one sane id (left as sent, or put back if
// its Connection header named it), else the generated one. traceparent and tracestate pass
// untouched, like every end-to-end field. Only the forwarded request gets these: keys,
// subjects and fingerprints are read from what the client sent.
void add_forwarding_fields(http::request_header<>& head, const RequestMeta& meta);

// The request id of a request with this head and its context, from its X-Request-Id
// fields (choose_request_id); with `trusted`, whether the peer `client` is a trusted proxy
// and the client its X-Forwarded-For names (resolve_client).
RequestMeta request_meta(const http::request_header<>& head, std::string_view client,
                         const TrustedProxies* trusted = nullptr);

// The upstream's response as the client must see it: hop-by-hop fields removed, framing
// recomputed for `version` and `keep_alive` (kept as sent for an answer to HEAD, and for a
// response whose body continues in a tail, which the writer frames).
HttpResponse make_client_response(HttpResponse upstream, unsigned version, bool keep_alive, bool head = false,
                                  bool streamed = false);

class UpstreamClient {
 public:
  // Idle pooled connections older than `max_idle` (or than half the idle time the
  // upstream announces with Keep-Alive: timeout=N, when that is shorter) are closed rather
  // than reused, before the upstream's own keep-alive timeout (5 s in Node.js, 75 s in
  // nginx) closes them under a request.
  // An https:// `url` is spoken to over TLS as `tls` says; an unreadable ca_file makes
  // every exchange refused, saying why.
  explicit UpstreamClient(UpstreamUrl url,
                          std::chrono::steady_clock::duration max_idle = std::chrono::seconds(3),
                          UpstreamTls tls = {});
  ~UpstreamClient();

  // Sends `request` (made by forward_request) and reads the response, all within
  // `timeout`. A body of more than `max_buffered` bytes comes back in part, with a tail
  // for the rest. Never throws.
  boost::asio::awaitable<UpstreamResult> exchange(const ForwardRequest& request, Duration timeout,
                                                  std::size_t max_buffered);

  // The parts of an exchange, for a caller that streams the request body itself:
  // a connection (pooled or new; on failure the result says refused and why)...
  struct Connected {
    std::optional<UpstreamConnection> conn;
    UpstreamResult failure;
  };
  boost::asio::awaitable<Connected> connect(std::chrono::steady_clock::time_point deadline);
  // A connection with `request` written on it (connect, then write), for a caller that
  // awaits receive() itself: exchange() is send() then receive().
  boost::asio::awaitable<Connected> send(const ForwardRequest& request,
                                         std::chrono::steady_clock::time_point deadline);
  // ...and, once the whole request was written on it, its response as exchange() gives it.
  boost::asio::awaitable<UpstreamResult> receive(UpstreamConnection conn, bool head_request,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 std::size_t max_buffered);

  const UpstreamUrl& url() const noexcept { return url_; }
  std::chrono::steady_clock::duration max_idle() const noexcept { return max_idle_; }
  const UpstreamTls& tls() const noexcept { return tls_; }

  // Closes every idle pooled connection (shutdown).
  void close_idle();
  // Closes every idle pooled connection, and pools none from now on: the upstream was
  // changed or removed by a reload (upstreams.h). Exchanges in flight finish.
  void retire();

 private:
  friend class ResponseTail;
  struct Idle {
    std::unique_ptr<UpstreamStream> stream;
    std::chrono::steady_clock::time_point until;  // reused only before this
    std::chrono::steady_clock::time_point since;  // pooled then
  };
  struct Pool {
    const boost::asio::execution_context* context;
    std::deque<Idle> idle;  // most recently used at the back
  };
  Pool& pool_of(const boost::asio::execution_context& context);  // requires mu_
  std::unique_ptr<UpstreamStream> checkout(const boost::asio::execution_context& context);
  // The TLS handshake on a connected stream, the certificate checked; an error saying why.
  boost::asio::awaitable<std::optional<std::string>> handshake(
      UpstreamStream& stream, std::chrono::steady_clock::time_point deadline);
  // How long a connection may idle in the pool after this response: max_idle_, or half
  // the idle time the response's Keep-Alive field announces, when that is shorter.
  std::chrono::steady_clock::duration pool_limit(const http::response_header<>& head) const;
  // Pools the connection for at most `limit` after a response that leaves no doubt about
  // framing; closes it otherwise.
  void settle(UpstreamConnection conn, const ResponseTail::Parser& parser,
              std::chrono::steady_clock::duration limit);

  UpstreamUrl url_;
  std::chrono::steady_clock::duration max_idle_;
  UpstreamTls tls_;
  std::unique_ptr<boost::asio::ssl::context> ssl_;  // for an https:// url
  std::string ssl_error_;                           // why ssl_ cannot be used, or ""
  std::mutex mu_;
  std::deque<Pool> pools_;  // guarded by mu_; one per io_context, a handful
  bool retired_ = false;    // guarded by mu_
};

}  // namespace idem::gateway

namespace idem::gateway {

// A response for the client: whole, or (with `tail`) its head and the first part of its
// body, the rest to be streamed from the upstream as it comes.
struct Answer {
  Answer() = default;
  Answer(HttpResponse r) : response(std::move(r)) {}  // NOLINT: a whole response is an answer
  Answer(HttpResponse r, std::unique_ptr<ResponseTail> t) : response(std::move(r)), tail(std::move(t)) {}
  HttpResponse response;
  std::unique_ptr<ResponseTail> tail;
};

}  // namespace idem::gateway
