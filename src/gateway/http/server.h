// The gateway's HTTP/1.1 listeners (docs/gateway.md): the client-facing listener and the
// admin listener, each served by a RequestHandler (handler.h): the pipeline's Gateway and
// the Admin. One coroutine per connection owns its stream and loops deadline → read head →
// check head → the handler → write, so keep-alive and pipelined clients are served in
// order. Every read has a deadline (a slow client sending its head byte by byte is cut
// off), heads over 16 KiB get 431, malformed requests 400 problem+json, and both close the
// connection.
// The edge is strict where proxies and frameworks could disagree (RFC 9112, head_checks.h):
// a Transfer-Encoding other than exactly "chunked", two Host fields, a target with '#',
// '\\', an encoded '/' or '\\' or a dot segment, a standard method spelled in another case,
// and a version other than HTTP/1.0 and 1.1 (an HTTP/2 preface gets 505) are refused
// before a handler sees the request. Memory is bounded: the connection buffer has a fixed
// limit, chunk extensions and trailers count against the header limit (trailers are
// dropped), a relayed request streams to the upstream, and the request bodies held whole
// across all connections share one cap (past it: 503 overloaded).
//
// Shutdown (SIGTERM): stop accepting clients, close idle client connections, let requests
// in flight finish (their results are stored), then report drained. The admin listener
// serves until the process stops.
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

#include "gateway/http/handler.h"
#include "gateway/http/http_body.h"
#include "gateway/http/io_pool.h"
#include "gateway/model/config/address.h"

namespace idem::gateway {

struct ServerLimits {
  std::size_t header_limit = 16 * 1024;
  // Request-body bytes held in memory at once across every connection (protected routes,
  // the admin listener); a request that would pass it is answered 503 overloaded.
  std::uint64_t buffered_bodies = 256ull * 1024 * 1024;
  std::chrono::seconds header_timeout{10};  // includes keep-alive idle time
  std::chrono::seconds body_timeout{30};
  std::chrono::seconds write_timeout{30};
  // Open client connections at most; at the limit the listener stops accepting (new
  // connections wait in the kernel's backlog) until one closes. Idle and slow connections
  // are closed by header_timeout, so the limit cannot be held by idle clients for long.
  // The admin listener has a cap of its own.
  std::size_t max_connections = 4096;
  std::size_t max_admin_connections = 64;
};

// What a listener that cannot be opened says: "cannot listen on 127.0.0.1:8080 (client
// listener): address already in use".
class ListenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Server {
 public:
  // `client` serves the client listener, `admin` the admin listener; both and `gauges`
  // must outlive the Server.
  Server(IoPool& pool, RequestHandler& client, RequestHandler& admin, ServerGauges& gauges,
         ServerLimits limits = {});

  // Binds and listens; throws ListenError when the address cannot be resolved or bound.
  // Every interface (:PORT) is IPv6 and IPv4 on one socket, or IPv4 alone on a system
  // without IPv6. Returns the bound endpoint (port 0 picks a free port).
  boost::asio::ip::tcp::endpoint listen_client(const ListenAddress& address);
  boost::asio::ip::tcp::endpoint listen_admin(const ListenAddress& address);

  // Stops accepting clients and closes idle client connections; requests in flight run to
  // the end. The admin listener and its connections are left alone.
  void shutdown();
  // True once shutdown() was called and no client request is in flight.
  bool drained() const noexcept { return stopping_.load() && active_.load() == 0; }
  // After the drain: closes the admin listener too and cancels what every connection
  // waits for, so that each session ends (and stops touching this Server) before the io
  // contexts are stopped. closed() is true once no connection is left.
  void close();
  bool closed() const noexcept;

 private:
  struct Conn {
    Conn(boost::asio::ip::tcp::socket s, bool on_admin) : stream(std::move(s)), admin(on_admin) {}
    boost::beast::tcp_stream stream;
    const bool admin;
    bool idle = true;  // touched on the connection's thread only
    std::string peer;  // the client's address (RequestMeta::client); set by the session
    std::string head;  // an answer's head being written (head_writer.h)
  };
  struct Listener {
    Listener(boost::asio::io_context& ioc, bool admin, std::size_t max_connections);
    boost::asio::ip::tcp::acceptor acceptor;
    boost::asio::steady_timer gate;  // the accept loop waits on it at max_connections
    const bool admin;
    const std::size_t max_connections;
    std::atomic<std::size_t> open{0};
  };
  using HeadParser = http::request_parser<http::empty_body>;
  using BodyParser = http::request_parser<http::string_body>;
  // One request on a connection: its head, read; its body, maybe not yet.
  struct Request {
    HeadParser head;
    std::size_t head_bytes = 0;
    bool body_done = false;  // the body was read to its end (else the connection closes)
  };
  class ConnExchange;  // the HttpExchange a handler gets (server.cpp)

  boost::asio::ip::tcp::endpoint listen(const ListenAddress& address, bool admin);
  boost::asio::awaitable<void> accept_loop(Listener& listener);
  void connection_closed(Listener& listener);
  boost::asio::awaitable<void> session(std::shared_ptr<Conn> conn, bool admin);
  HttpResponse overloaded(unsigned version);

  IoPool& pool_;
  RequestHandler& client_;
  RequestHandler& admin_;
  ServerGauges& gauges_;
  ServerLimits limits_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> closing_{false};  // close(): the admin listener ends too
  std::atomic<int> active_{0};        // requests between head read and response written
  BodyBudget budget_;
  mutable std::mutex mu_;
  std::list<std::unique_ptr<Listener>> listeners_;  // guarded by mu_
  std::list<std::weak_ptr<Conn>> conns_;            // guarded by mu_
  std::uint64_t accepted_ = 0;                      // guarded by mu_
};

}  // namespace idem::gateway
