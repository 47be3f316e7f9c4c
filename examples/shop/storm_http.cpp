#include "storm_http.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace shop::storm {

namespace beast = boost::beast;
using asio::ip::tcp;

namespace {

std::string problem_type_of(const std::string& body) {
  boost::system::error_code ec;
  auto v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return {};
  const auto* t = v.as_object().if_contains("type");
  return t && t->is_string() ? std::string(t->as_string()) : std::string();
}

}  // namespace

awaitable<Reply> send(unsigned short port, const Outgoing& out) {
  Reply reply;
  auto ex = co_await asio::this_coro::executor;
  beast::tcp_stream stream(ex);
  stream.expires_after(out.deadline);
  const tcp::endpoint endpoint(asio::ip::make_address_v4("127.0.0.1"), port);
  auto [cec] = co_await stream.async_connect(endpoint, kTuple);
  if (cec) {
    reply.error = "connect: " + cec.message();
    reply.timed_out = cec == beast::error::timeout;
    co_return reply;
  }
  http::request<http::string_body> req{out.method, out.target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [name, value] : out.headers) req.insert(name, value);
  req.body() = out.body;
  req.keep_alive(false);
  req.prepare_payload();
  auto [wec, written] = co_await http::async_write(stream, req, kTuple);
  (void)written;
  // A failed write may still have an answer waiting (a 413, or a server that answered
  // early); read it either way.
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  auto [rec, read] = co_await http::async_read(stream, buffer, res, kTuple);
  (void)read;
  if (rec) {
    reply.error = std::string(wec ? "write: " + wec.message() + ", " : "") + "read: " + rec.message();
    reply.timed_out = rec == beast::error::timeout;
    co_return reply;
  }
  reply.status = static_cast<int>(res.result_int());
  reply.body = std::move(res.body());
  if (auto it = res.find("Idempotent-Replayed"); it != res.end()) reply.replayed = it->value() == "true";
  if (auto it = res.find(http::field::content_type);
      it != res.end() && it->value().find("json") != beast::string_view::npos)
    reply.problem_type = problem_type_of(reply.body);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return reply;
}

awaitable<void> pause(Millis d) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_after(d);
  co_await timer.async_wait(kTuple);
}

Group::Group(asio::io_context& ioc) : ioc_(ioc), done_(ioc) {}

void Group::spawn(awaitable<void> task) {
  ++running_;
  asio::co_spawn(ioc_, std::move(task), [this](std::exception_ptr e) {
    if (--running_ == 0) done_.cancel();
    if (e) std::rethrow_exception(e);  // a bug in the storm itself: stop the run
  });
}

awaitable<void> Group::wait() {
  while (running_ > 0) {
    done_.expires_at(asio::steady_timer::time_point::max());
    co_await done_.async_wait(kTuple);
  }
}

}  // namespace shop::storm
