// The gateway's client for its one upstream (SPEC §3.2): plain HTTP/1.1 over a pool of
// keep-alive connections, each exchange bounded by a deadline, every failure classified by
// what it means for the side effect:
//   refused  nothing was sent (connect failed or timed out): safe to release the claim
//   timeout  the deadline passed after sending: outcome unknown
//   broken   the connection failed after sending: outcome unknown
// A request is never resent once any byte of it may have reached the upstream; a pooled
// connection the upstream has already closed is noticed before use and replaced.
// Safe for concurrent use: any number of exchanges may run at once from any thread. Idle
// connections are pooled per io_context, so an exchange reuses one of its own thread's.
#pragma once

#include <chrono>
#include <deque>
#include <mutex>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "gateway/address.h"
#include "gateway/http_reply.h"

namespace idem::gateway {

struct UpstreamResult {
  enum class Kind { response, refused, timeout, broken };
  Kind kind = Kind::refused;
  HttpResponse response;  // kind == response: as received, hop-by-hop fields still present
  std::string error;      // otherwise: why, for the problem detail and the log
};

// The request as the upstream must see it: the client's request with hop-by-hop fields,
// Expect (the body is already read) and any client-sent Idempotency-Fence removed, the target prefixed with
// the upstream's base path, framing recomputed and keep-alive on.
HttpRequest make_forward_request(const HttpRequest& client, const UpstreamUrl& upstream);

// The upstream's response as the client must see it: hop-by-hop fields removed, framing
// recomputed for `version` and `keep_alive` (kept as sent for an answer to HEAD).
HttpResponse make_client_response(HttpResponse upstream, unsigned version, bool keep_alive,
                                  bool head = false);

class UpstreamClient {
 public:
  // Idle pooled connections older than `max_idle` are closed rather than reused, before
  // a typical upstream keep-alive timeout (5 s in Node.js, 75 s in nginx) closes them.
  explicit UpstreamClient(UpstreamUrl url,
                          std::chrono::steady_clock::duration max_idle = std::chrono::seconds(3));

  // Sends `request` (already made by make_forward_request) and reads the response, all
  // within `timeout`. Never throws.
  boost::asio::awaitable<UpstreamResult> exchange(const HttpRequest& request, Duration timeout);

  const UpstreamUrl& url() const noexcept { return url_; }

  // Closes every idle pooled connection (shutdown).
  void close_idle();

 private:
  struct Idle {
    boost::beast::tcp_stream stream;
    std::chrono::steady_clock::time_point since;
  };
  struct Pool {
    const boost::asio::execution_context* context;
    std::deque<Idle> idle;  // most recently used at the back
  };
  Pool& pool_of(const boost::asio::execution_context& context);  // requires mu_
  std::optional<boost::beast::tcp_stream> checkout(const boost::asio::execution_context& context);
  void checkin(boost::beast::tcp_stream stream);

  UpstreamUrl url_;
  std::chrono::steady_clock::duration max_idle_;
  std::mutex mu_;
  std::deque<Pool> pools_;  // guarded by mu_; one per io_context, a handful
};

}  // namespace idem::gateway
