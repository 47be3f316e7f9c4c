// The gateway's HTTP/1.1 listeners (SPEC §3.2, §3.5): the client-facing listener, whose
// requests go through the Gateway pipeline, and the admin listener. One coroutine per
// connection owns its stream and loops deadline → read → handle → write, so keep-alive
// and pipelined clients are served in order. Every read has a deadline (a slow client
// sending its head byte by byte is cut off), heads over 16 KiB get 431, malformed requests
// 400 problem+json, and both close the connection.
//
// Shutdown (SIGTERM): stop accepting, close idle connections, let requests in flight
// finish (their results are stored), then report drained.
// Threads: listeners run on the pool's main context; each connection is accepted onto the
// pool's next context and runs there alone (IoPool). shutdown() may be called from any thread.
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "gateway/admin.h"
#include "gateway/gateway.h"
#include "gateway/io_pool.h"

namespace idem::gateway {

struct ServerLimits {
  std::size_t header_limit = 16 * 1024;
  std::uint64_t proxy_body_limit = 64ull * 1024 * 1024;  // unmatched requests
  std::chrono::seconds header_timeout{10};               // includes keep-alive idle time
  std::chrono::seconds body_timeout{30};
  std::chrono::seconds write_timeout{30};
  // Open client connections at most; at the limit the listener stops accepting (new
  // connections wait in the kernel's backlog) until one closes. Idle and slow connections
  // are closed by header_timeout, so the limit cannot be held by idle clients for long.
  // The admin listener is not counted.
  std::size_t max_connections = 4096;
};

class Server {
 public:
  Server(IoPool& pool, Gateway& gateway, Admin& admin, Metrics& metrics, ServerLimits limits = {});

  // Binds and listens; throws boost::system::system_error when the address cannot be bound.
  // Every interface (:PORT) is IPv6 and IPv4 on one socket, or IPv4 alone on a system
  // without IPv6. Returns the bound endpoint (port 0 picks a free port).
  boost::asio::ip::tcp::endpoint listen_client(const ListenAddress& address);
  boost::asio::ip::tcp::endpoint listen_admin(const ListenAddress& address);

  // Stops accepting and closes idle connections; requests in flight run to the end.
  void shutdown();
  // True once shutdown() was called and no request is in flight.
  bool drained() const noexcept { return stopping_.load() && active_.load() == 0; }

 private:
  struct Conn {
    explicit Conn(boost::asio::ip::tcp::socket s) : stream(std::move(s)) {}
    boost::beast::tcp_stream stream;
    bool idle = true;  // touched on the connection's thread only
  };
  boost::asio::ip::tcp::endpoint listen(const ListenAddress& address, bool admin);
  struct Listener {
    explicit Listener(boost::asio::io_context& ioc);
    boost::asio::ip::tcp::acceptor acceptor;
    boost::asio::steady_timer gate;  // the accept loop waits on it at max_connections
  };
  boost::asio::awaitable<void> accept_loop(Listener& listener, bool admin);
  void connection_closed();
  boost::asio::awaitable<void> session(std::shared_ptr<Conn> conn, bool admin);
  // nullopt: close the connection without an answer (the client went away mid-body).
  boost::asio::awaitable<std::optional<HttpResponse>> handle(Conn& conn, boost::beast::flat_buffer& buffer,
                                                             http::request_parser<http::string_body>& parser);
  boost::asio::awaitable<std::optional<HttpResponse>> handle_admin(
      Conn& conn, boost::beast::flat_buffer& buffer, http::request_parser<http::string_body>& parser);

  IoPool& pool_;
  Gateway& gateway_;
  Admin& admin_;
  Metrics& metrics_;
  ServerLimits limits_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_{0};  // requests between head read and response written
  std::atomic<std::size_t> open_clients_{0};
  std::mutex mu_;
  std::list<std::unique_ptr<Listener>> listeners_;  // guarded by mu_
  std::list<std::weak_ptr<Conn>> conns_;            // guarded by mu_
  std::uint64_t accepted_ = 0;                      // guarded by mu_
};

}  // namespace idem::gateway
