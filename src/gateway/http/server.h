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
// share one cap per listener, taken as their bytes arrive (past it: 503 overloaded).
// Strangers cannot hold the slots (docs/gateway.md, "Connections and bodies"): each
// listener caps its connections and its held bodies in all and per client (an IPv4
// address, or an IPv6 /64); at a connection cap, the connection that has waited longest
// for a request head (of that client, or of the client holding the most) is closed to make
// room, so idle sockets cannot keep a probe or a request out.
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
#include <string>
#include <unordered_map>

#include <boost/intrusive/list.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "gateway/http/handler.h"
#include "gateway/http/http_body.h"
#include "gateway/http/io_pool.h"
#include "gateway/http/tls_stream.h"
#include "gateway/model/config/config.h"

namespace idem::gateway {

struct ServerLimits {
  std::size_t header_limit = 16 * 1024;
  std::chrono::seconds write_timeout{30};
  // What clients may hold of each listener (model/config/config.h: `limits`, `admin.limits`).
  // At a connection cap the listener closes the connection that has waited longest for a
  // request head (of the client at its cap, or of the client holding the most connections)
  // and accepts; with none waiting, a client at its cap has the new connection closed, and
  // a listener at its cap stops accepting (new connections wait in the kernel's backlog)
  // until one closes. A request whose body would pass the bodies held (in all, or of its
  // client) is answered 503 overloaded.
  ListenerLimits client = kClientLimits;
  ListenerLimits admin = kAdminLimits;
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

  // TLS on the client listener (tls_context.h): connections accepted from now on handshake
  // with `context` (null: plain HTTP); those established keep the context they began with.
  // Set before listen_client() to serve HTTPS from the start; again on SIGHUP with the new
  // certificate. Safe from any thread.
  void set_tls(std::shared_ptr<boost::asio::ssl::context> context);

  // Binds and listens; throws ListenError when the address cannot be resolved or bound.
  // Every interface (:PORT) is IPv6 and IPv4 on one socket, or IPv4 alone on a system
  // without IPv6. Returns the bound endpoint (port 0 picks a free port).
  boost::asio::ip::tcp::endpoint listen_client(const ListenAddress& address);
  boost::asio::ip::tcp::endpoint listen_admin(const ListenAddress& address);

  // Stops accepting clients and closes idle client connections; requests in flight run to
  // the end. The admin listener and its connections are left alone.
  void shutdown();
  // The caps and timeouts the listeners were given.
  const ServerLimits& limits() const noexcept { return limits_; }
  // A listener's connections now: open, and of those waiting for a request (between
  // requests, or before the first); the rest are reading or serving one.
  struct Connections {
    std::size_t open = 0;
    std::size_t waiting = 0;
  };
  Connections connections(bool admin) const;
  // True once shutdown() was called and no client request is in flight.
  bool drained() const noexcept { return stopping_.load() && active_.load() == 0; }
  // After the drain: closes the admin listener too and cancels what every connection
  // waits for, so that each session ends (and stops touching this Server) before the io
  // contexts are stopped. closed() is true once no connection is left.
  void close();
  bool closed() const noexcept;

 private:
  struct Peer;
  struct Listener {
    Listener(boost::asio::io_context& ioc, bool admin, const ListenerLimits& limits);
    boost::asio::ip::tcp::acceptor acceptor;
    boost::asio::steady_timer gate;  // the accept loop waits on it at the connection cap
    const bool admin;
    const ListenerLimits limits;
    std::atomic<std::size_t> open{0};
    std::atomic<std::size_t> staying{0};  // of the open: not chosen to be closed (Conn::doom)
    BodyBudget budget;
    std::mutex mu;
    std::unordered_map<std::string, std::shared_ptr<Peer>> peers;  // guarded by mu
  };
  struct Conn : std::enable_shared_from_this<Conn> {
    Conn(boost::asio::ip::tcp::socket s, Listener& l)
        : fd(s.native_handle()), stream(std::move(s)), listener(l), admin(l.admin) {}
    const int fd;  // the socket's, for the accept loop's look at what is pending on it
    boost::beast::tcp_stream stream;
    Listener& listener;
    const bool admin;
    std::shared_ptr<Peer> peer;                    // set by admit(), before the session starts
    boost::intrusive::list_member_hook<> in_peer;  // guarded by the listener's mu
    bool idle = true;                              // touched on the connection's thread only
    // Since when the connection has waited for a request head (steady clock, in ns since its
    // epoch); 0 while it reads or serves a request. Written by the session, read by the accept
    // loop to choose whom to close at a cap.
    std::atomic<std::int64_t> idle_since{0};
    std::atomic<bool> evicted{false};  // chosen to be closed (doom()); spare() clears it
    // Chosen to be closed (with the listener's mu held), or no longer: the listener counts
    // those being closed apart.
    void doom() {
      if (!evicted.exchange(true)) listener.staying.fetch_sub(1);
    }
    void spare() {
      if (evicted.exchange(false)) listener.staying.fetch_add(1);
    }
    std::unique_ptr<boost::asio::steady_timer> grace;  // its close once chosen; the connection's thread only
    std::string address;                               // the client's address (RequestMeta::client)
    std::string head;                                  // an answer's head being written (head_writer.h)
  };
  // One client on one listener (an IPv4 address, or an IPv6 /64): its connections and the
  // request-body bytes they hold.
  struct Peer {
    Peer(std::string k, std::uint64_t budget_limit) : key(std::move(k)), budget(budget_limit) {}
    const std::string key;
    boost::intrusive::list<Conn, boost::intrusive::member_hook<Conn, boost::intrusive::list_member_hook<>,
                                                               &Conn::in_peer>>
        conns;  // guarded by the listener's mu
    BodyBudget budget;
  };
  using HeadParser = http::request_parser<http::empty_body>;
  using BodyParser = http::request_parser<BudgetedBody>;
  // One request on a connection: its head, read; its body, maybe not yet.
  struct Request {
    HeadParser head;
    std::size_t head_bytes = 0;
    bool body_done = false;  // the body was read to its end (else the connection closes)
  };
  template <class Stream>
  class ConnExchange;  // the HttpExchange a handler gets (session.cpp)

  boost::asio::ip::tcp::endpoint listen(const ListenAddress& address, bool admin);
  boost::asio::awaitable<void> accept_loop(Listener& listener);
  // Registers an accepted connection with its client: false when the client is at its
  // connection cap with none of its connections waiting for a request (close it then).
  bool admit(Conn& conn, const std::string& client);
  void connection_closed(Conn& conn);
  // Has the connection of `peer` that has waited longest for a request head closed (with
  // `peer` null: of the client holding the most connections); false when none waits.
  // Called with the listener's mu held.
  static bool evict_idle(Listener& listener, Peer* peer);
  static std::int64_t steady_ns() noexcept;  // for Conn::idle_since
  boost::asio::awaitable<void> session(std::shared_ptr<Conn> conn, bool admin);
  // The requests of a connection over `stream` (its tcp_stream, or TLS over it).
  template <class Stream>
  boost::asio::awaitable<void> serve(Conn& conn, Stream& stream, bool admin);
  std::shared_ptr<boost::asio::ssl::context> tls() const;
  HttpResponse overloaded(unsigned version);

  IoPool& pool_;
  RequestHandler& client_;
  RequestHandler& admin_;
  ServerGauges& gauges_;
  ServerLimits limits_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> closing_{false};  // close(): the admin listener ends too
  std::atomic<int> active_{0};        // requests between head read and response written
  mutable std::mutex mu_;
  std::list<std::unique_ptr<Listener>> listeners_;  // guarded by mu_
  std::list<std::weak_ptr<Conn>> conns_;            // guarded by mu_
  std::uint64_t accepted_ = 0;                      // guarded by mu_
  std::shared_ptr<boost::asio::ssl::context> tls_;  // guarded by mu_
};

}  // namespace idem::gateway
