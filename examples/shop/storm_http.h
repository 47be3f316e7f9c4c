// The storm's HTTP client side: one request per connection on the storm's io_context, each
// with its own deadline, plus the small helpers the users need (a wait group for
// concurrent clicks, the payment platform's signature).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/verb.hpp>

namespace shop::storm {

namespace asio = boost::asio;
namespace http = boost::beast::http;
template <class T>
using awaitable = asio::awaitable<T>;
using Headers = std::vector<std::pair<std::string, std::string>>;
using Millis = std::chrono::milliseconds;

inline constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

// What one exchange came back with. status 0: no answer (connection refused or broken,
// deadline passed); `error` says which.
struct Reply {
  int status = 0;
  std::string body;
  bool replayed = false;     // Idempotent-Replayed: true
  std::string problem_type;  // the "type" of a problem+json body, else empty
  std::string error;         // why there is no answer
  bool timed_out = false;    // the client's deadline fired (the request may have run)
};

// A request to send. Callers build it as a named variable and pass it by reference (no
// temporaries inside a co_await expression: g++ 12 miscompiles some).
struct Outgoing {
  http::verb method = http::verb::post;
  std::string target;
  Headers headers;
  std::string body;
  Millis deadline{15000};  // the whole exchange: connect, write, read
};

// One request on a fresh connection to 127.0.0.1:port (Connection: close); never throws.
// `out` must stay alive until the returned awaitable completes.
awaitable<Reply> send(unsigned short port, const Outgoing& out);

// Suspends the calling coroutine for `d` (a timer, not a blocking sleep).
awaitable<void> pause(Millis d);

// Waits for a set of coroutines started with spawn(). Single-threaded (one io_context);
// the Group must outlive its children, which wait() guarantees when awaited before the
// Group goes out of scope.
class Group {
 public:
  explicit Group(asio::io_context& ioc);
  // Starts `task` now; `task` must not reference locals of the caller that wait() does not
  // keep alive (pass state by value or through objects that outlive wait()).
  void spawn(awaitable<void> task);
  awaitable<void> wait();

 private:
  asio::io_context& ioc_;
  asio::steady_timer done_;
  int running_ = 0;
};

}  // namespace shop::storm
