#include "gateway/upstream.h"

#include <sys/socket.h>

#include <cerrno>
#include <tuple>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>

namespace idem::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::uint64_t kMaxResponseBody = 256ull * 1024 * 1024;
constexpr std::size_t kMaxIdle = 256;

// A pooled connection the upstream has closed (or sent stray bytes on) is not usable. One
// non-blocking peek: no data and no end of stream means idle and open.
bool still_open(beast::tcp_stream& s) {
  auto& sock = s.socket();
  if (!sock.is_open()) return false;
  char c;
  const ssize_t n = ::recv(sock.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

HttpRequest make_forward_request(const HttpRequest& client, const UpstreamUrl& upstream) {
  HttpRequest req = client;
  strip_hop_by_hop(req.base());
  req.erase(kFenceHeader);
  req.erase(http::field::expect);
  if (!upstream.base_path.empty()) req.target(upstream.base_path + std::string(client.target()));
  req.version(11);
  req.keep_alive(true);
  if (!req.body().empty() || req.method() == http::verb::post || req.method() == http::verb::put ||
      req.method() == http::verb::patch)
    req.prepare_payload();
  return req;
}

HttpResponse make_client_response(HttpResponse upstream, unsigned version, bool keep_alive, bool head) {
  HttpResponse res = std::move(upstream);
  strip_hop_by_hop(res.base());
  res.version(version);
  res.keep_alive(keep_alive);
  if (!head) res.prepare_payload();
  return res;
}

UpstreamClient::UpstreamClient(UpstreamUrl url, std::chrono::steady_clock::duration max_idle)
    : url_(std::move(url)), max_idle_(max_idle) {}

UpstreamClient::Pool& UpstreamClient::pool_of(const asio::execution_context& context) {
  for (auto& p : pools_)
    if (p.context == &context) return p;
  return pools_.emplace_back(Pool{&context, {}});
}

std::optional<beast::tcp_stream> UpstreamClient::checkout(const asio::execution_context& context) {
  std::lock_guard lock(mu_);
  auto& idle = pool_of(context).idle;
  const auto now = std::chrono::steady_clock::now();
  while (!idle.empty()) {
    Idle c = std::move(idle.back());
    idle.pop_back();
    if (now - c.since < max_idle_ && still_open(c.stream)) return std::move(c.stream);
    boost::system::error_code ec;
    c.stream.socket().close(ec);
  }
  return std::nullopt;
}

void UpstreamClient::checkin(beast::tcp_stream stream) {
  std::lock_guard lock(mu_);
  stream.expires_never();
  auto& idle = pool_of(asio::query(stream.get_executor(), asio::execution::context)).idle;
  if (idle.size() >= kMaxIdle) return;  // closes the stream
  idle.push_back({std::move(stream), std::chrono::steady_clock::now()});
}

void UpstreamClient::close_idle() {
  std::lock_guard lock(mu_);
  pools_.clear();
}

asio::awaitable<UpstreamResult> UpstreamClient::exchange(const HttpRequest& request, Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto ex = co_await asio::this_coro::executor;
  auto pooled = checkout(asio::query(ex, asio::execution::context));
  beast::tcp_stream stream = pooled ? std::move(*pooled) : beast::tcp_stream(ex);
  if (!pooled) {
    boost::system::error_code cec;
    const auto address = asio::ip::make_address(url_.host, cec);
    if (!cec) {  // an IP address: no resolver round trip
      const tcp::endpoint endpoint(address, url_.port);
      stream.expires_at(deadline);
      std::tie(cec) = co_await stream.async_connect(endpoint, kTuple);
    } else {
      // The resolver has no deadline of its own: a timer on this coroutine's executor
      // cancels it (the timer's handler may outlive this frame, hence the shared owner).
      auto resolver = std::make_shared<tcp::resolver>(ex);
      asio::steady_timer limit(ex, deadline);
      limit.async_wait([resolver](const boost::system::error_code& ec) {
        if (!ec) resolver->cancel();
      });
      const std::string service = std::to_string(url_.port);
      auto [rec, endpoints] = co_await resolver->async_resolve(url_.host, service, kTuple);
      limit.cancel();
      if (rec == asio::error::operation_aborted)
        co_return UpstreamResult{UpstreamResult::Kind::refused, {}, "resolve: timed out"};
      if (rec) co_return UpstreamResult{UpstreamResult::Kind::refused, {}, "resolve: " + rec.message()};
      stream.expires_at(deadline);
      tcp::endpoint ep;
      std::tie(cec, ep) = co_await stream.async_connect(endpoints, kTuple);
    }
    if (cec) co_return UpstreamResult{UpstreamResult::Kind::refused, {}, "connect: " + cec.message()};
    stream.socket().set_option(tcp::no_delay(true), cec);
  }

  stream.expires_at(deadline);
  auto [wec, written] = co_await http::async_write(stream, request, kTuple);
  if (wec == beast::error::timeout)
    co_return UpstreamResult{UpstreamResult::Kind::timeout, {}, "timed out sending the request"};
  if (wec) co_return UpstreamResult{UpstreamResult::Kind::broken, {}, "send: " + wec.message()};

  beast::flat_buffer buffer;
  // Interim answers (102 Processing, 103 Early Hints) precede the final one: skip them.
  // 101 is never final here: the gateway forwards no Upgrade, so it means a broken upstream.
  for (;;) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBody);
    if (request.method() == http::verb::head) parser.skip(true);
    auto [rec, read] = co_await http::async_read(stream, buffer, parser, kTuple);
    if (rec == beast::error::timeout)
      co_return UpstreamResult{UpstreamResult::Kind::timeout, {}, "timed out waiting for the response"};
    if (rec) co_return UpstreamResult{UpstreamResult::Kind::broken, {}, "receive: " + rec.message()};
    const unsigned status = parser.get().result_int();
    if (status == 101)
      co_return UpstreamResult{UpstreamResult::Kind::broken, {}, "the upstream switched protocols"};
    if (status >= 100 && status < 200) continue;
    HttpResponse res = parser.release();
    if (res.keep_alive() && buffer.size() == 0) checkin(std::move(stream));
    co_return UpstreamResult{UpstreamResult::Kind::response, std::move(res), {}};
  }
}

}  // namespace idem::gateway
