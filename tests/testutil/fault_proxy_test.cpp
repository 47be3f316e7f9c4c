// The fault proxy itself, in front of an echo server in this process: each mode does what
// tests rely on it to do.
#include "testutil/fault_proxy.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <thread>

namespace idem::testutil {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

// Echoes every byte back, on its own thread.
class EchoServer {
 public:
  EchoServer() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    asio::co_spawn(io_, accept(), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~EchoServer() {
    io_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  asio::awaitable<void> accept() {
    for (;;) {
      auto [ec, s] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      asio::co_spawn(io_, echo(std::move(s)), asio::detached);
    }
  }
  static asio::awaitable<void> echo(tcp::socket s) {
    char buf[1024];
    for (;;) {
      auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      auto [wec, w] =
          co_await asio::async_write(s, asio::buffer(buf, n), asio::as_tuple(asio::use_awaitable));
      if (wec) co_return;
    }
  }
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
};

// A blocking client with a receive timeout.
class Client {
 public:
  explicit Client(std::uint16_t port) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec_);
    timeval tv{0, 300'000};
    if (!ec_) ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  bool connected() const { return !ec_; }
  void send(const std::string& text) { asio::write(socket_, asio::buffer(text)); }
  // What comes back within the timeout ("" if nothing), or "EOF".
  std::string receive(std::size_t n) {
    std::string out;
    char buf[1024];
    while (out.size() < n) {
      const auto got = ::recv(socket_.native_handle(), buf, std::min(sizeof buf, n - out.size()), 0);
      if (got == 0 && out.empty()) return "EOF";
      if (got <= 0) break;  // the timeout, or the end
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  boost::system::error_code ec_;
};

TEST(FaultProxy, ForwardsDropsDelaysCutsAndRefuses) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", echo.port());

  Client a(proxy.port());
  ASSERT_TRUE(a.connected());
  a.send("hello");
  EXPECT_EQ(a.receive(5), "hello");

  proxy.drop_replies();
  const auto before = proxy.counters().bytes_to_server;
  a.send("lost!");
  EXPECT_TRUE(proxy.wait_to_server_beyond(before));  // the server got it...
  EXPECT_TRUE(proxy.wait_for([](const auto& c) { return c.replies_dropped >= 1; }));
  EXPECT_EQ(a.receive(5), "");  // ...and its answer was lost; the connection stays open

  proxy.forward();
  a.send("again");
  EXPECT_EQ(a.receive(5), "again");

  proxy.drop_and_cut();
  a.send("cut!!");
  EXPECT_EQ(a.receive(5), "EOF");

  proxy.delay_replies(200ms);
  Client b(proxy.port());
  const auto sent = std::chrono::steady_clock::now();
  b.send("slow");
  // (The client gives up after 300 ms per read: 200 ms fits.)
  EXPECT_EQ(b.receive(4), "slow");
  EXPECT_GE(std::chrono::steady_clock::now() - sent, 190ms);

  proxy.forward();
  proxy.cut_all();
  EXPECT_EQ(b.receive(1), "EOF");

  proxy.refuse();
  EXPECT_FALSE(Client(proxy.port()).connected());
  proxy.forward();
  Client c(proxy.port());
  ASSERT_TRUE(c.connected());
  c.send("back");
  EXPECT_EQ(c.receive(4), "back");
  EXPECT_EQ(proxy.counters().connections, 3u);
}

}  // namespace
}  // namespace idem::testutil
