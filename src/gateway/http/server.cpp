// The listeners (server.h): binding, accepting within each listener's connection caps (in
// all and per client), and stopping. What a connection does is in session.cpp.
#include "gateway/http/server.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstdio>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "util/asio_tokens.h"

namespace idem::gateway {
namespace asio = boost::asio;
using asio::awaitable;
using asio::ip::tcp;

namespace {

void report_exception(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    std::fprintf(stderr, "idem: connection ended by an exception: %s\n", x.what());
  } catch (...) {
    std::fprintf(stderr, "idem: connection ended by an unknown exception\n");
  }
}

// :PORT: one socket for IPv6 and IPv4 ([::] with IPV6_V6ONLY off), or 0.0.0.0 where the
// system has no IPv6. (An empty host given to the resolver would mean loopback.)
void bind_every_interface(tcp::acceptor& acceptor, std::uint16_t port) {
  boost::system::error_code ec;
  acceptor.open(tcp::v6(), ec);
  if (!ec) acceptor.set_option(asio::ip::v6_only(false), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(tcp::endpoint(tcp::v6(), port), ec);
  if (!ec) return;
  // A port in use is in use for IPv4 too: report that, not a retry's error.
  if (ec == asio::error::address_in_use) throw boost::system::system_error(ec, "bind");
  boost::system::error_code ignored;
  acceptor.close(ignored);
  acceptor.open(tcp::v4());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(tcp::endpoint(tcp::v4(), port));
}

// Whom a connection counts against: its IPv4 address, or the /64 of its IPv6 address (one
// host gets a /64 at least, so addresses within it cost an attacker nothing).
template <class Socket>
std::string client_of(const Socket& socket) {
  boost::system::error_code ec;
  const tcp::endpoint ep = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  asio::ip::address a = ep.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  if (a.is_v4()) return a.to_string();
  asio::ip::address_v6::bytes_type bytes = a.to_v6().to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return asio::ip::address_v6(bytes).to_string() + "/64";
}

// How long a connection waits for a request at least before it may be closed at a cap.
constexpr auto kEvictionGrace = std::chrono::milliseconds(50);

}  // namespace

std::int64_t Server::steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Server::Server(IoPool& pool, RequestHandler& client, RequestHandler& admin, ServerGauges& gauges,
               ServerLimits limits)
    : pool_(pool), client_(client), admin_(admin), gauges_(gauges), limits_(limits) {}

void Server::set_tls(std::shared_ptr<asio::ssl::context> context) {
  std::lock_guard lock(mu_);
  tls_ = std::move(context);
}

std::shared_ptr<asio::ssl::context> Server::tls() const {
  std::lock_guard lock(mu_);
  return tls_;
}

tcp::endpoint Server::listen_client(const ListenAddress& address) { return listen(address, false); }
tcp::endpoint Server::listen_admin(const ListenAddress& address) { return listen(address, true); }

Server::Listener::Listener(asio::io_context& ioc, bool is_admin, const ListenerLimits& l)
    : acceptor(ioc), gate(ioc), admin(is_admin), limits(l), budget(l.buffered_bodies) {}

tcp::endpoint Server::listen(const ListenAddress& address, bool admin) {
  auto listener = std::make_unique<Listener>(pool_.main(), admin, admin ? limits_.admin : limits_.client);
  tcp::acceptor& acceptor = listener->acceptor;
  try {
    if (address.every_interface()) {
      bind_every_interface(acceptor, address.port);
    } else {
      tcp::resolver resolver(pool_.main());
      auto results = resolver.resolve(address.host, std::to_string(address.port));
      const tcp::endpoint ep = results.begin()->endpoint();
      acceptor.open(ep.protocol());
      acceptor.set_option(asio::socket_base::reuse_address(true));
      acceptor.bind(ep);
    }
    acceptor.listen(asio::socket_base::max_listen_connections);
  } catch (const boost::system::system_error& e) {
    // The system's words ("Address already in use"), without Boost's source location.
    std::string why = e.code().message();
    if (!why.empty() && why[0] >= 'A' && why[0] <= 'Z') why[0] = static_cast<char>(why[0] - 'A' + 'a');
    throw ListenError("cannot listen on " + address.to_string() + " (" + (admin ? "admin" : "client") +
                      " listener): " + why);
  }
  const tcp::endpoint bound = acceptor.local_endpoint();
  Listener& ref = *listener;
  {
    std::lock_guard lock(mu_);
    listeners_.push_back(std::move(listener));
  }
  asio::co_spawn(acceptor.get_executor(), accept_loop(ref), report_exception);
  return bound;
}

awaitable<void> Server::accept_loop(Listener& listener) {
  tcp::acceptor& acceptor = listener.acceptor;
  for (;;) {
    // At the cap (of connections not being closed), once a connection is waiting to be
    // accepted, make room: close the connection that has waited longest for a request, of
    // the client holding the most connections. With none waiting, or twice the cap open (those
    // being closed too), wait for one to close (connection_closed cancels the gate; the short
    // expiry only bounds the wait should a wake-up race past it).
    // (The admin listener serves while the client listener drains.)
    while (!closing_.load() && (listener.admin || !stopping_.load())) {
      const std::size_t open = listener.open.load();
      const std::size_t cap = listener.limits.connections;
      if (listener.staying.load() < cap && open < 2 * cap) break;
      bool evicted = false;
      if (open < 2 * cap) {
        auto [wec] = co_await acceptor.async_wait(tcp::acceptor::wait_read, util::kUseTuple);
        if (wec) break;
        std::lock_guard lock(listener.mu);
        evicted = evict_idle(listener, nullptr);
      }
      if (evicted) continue;
      listener.gate.expires_after(std::chrono::milliseconds(100));
      co_await listener.gate.async_wait(util::kUseTuple);
    }
    auto [ec, socket] = co_await acceptor.async_accept(pool_.next(), util::kUseTuple);
    if ((stopping_.load() && !listener.admin) || closing_.load()) co_return;
    if (ec) {
      if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
      // EMFILE and friends: keep serving the connections we have, and do not spin.
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(util::kUseTuple);
      continue;
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    const std::string client = client_of(socket);
    auto conn = std::make_shared<Conn>(std::move(socket), listener);
    // Waiting for its first request from now on: the oldest of its client's when the next
    // one comes.
    conn->idle_since.store(steady_ns());
    if (!admit(*conn, client)) {
      conn->stream.close();  // the client holds its cap, all of it busy
      continue;
    }
    {
      std::lock_guard lock(mu_);
      if (++accepted_ % 256 == 0) conns_.remove_if([](const std::weak_ptr<Conn>& w) { return w.expired(); });
      conns_.push_back(conn);
    }
    listener.staying.fetch_add(1);
    listener.open.fetch_add(1);
    auto ex = conn->stream.get_executor();
    // The completion handler keeps the connection until it is unregistered.
    asio::co_spawn(ex, session(conn, listener.admin), [this, conn](std::exception_ptr e) {
      connection_closed(*conn);
      report_exception(e);
    });
  }
}

bool Server::admit(Conn& conn, const std::string& client) {
  Listener& listener = conn.listener;
  std::lock_guard lock(listener.mu);
  std::shared_ptr<Peer>& peer = listener.peers[client];
  if (!peer) peer = std::make_shared<Peer>(client, listener.limits.buffered_bodies_per_client);
  // At the client's cap its longest-waiting connection makes room; the new one is in
  // already (connections chosen to close, and closing, no longer count).
  const std::size_t staying = static_cast<std::size_t>(
      std::count_if(peer->conns.begin(), peer->conns.end(), [](const Conn& c) { return !c.evicted.load(); }));
  if (staying >= listener.limits.connections_per_client && !evict_idle(listener, peer.get())) {
    if (peer->conns.empty()) listener.peers.erase(client);
    return false;
  }
  conn.peer = peer;
  peer->conns.push_back(conn);
  return true;
}

bool Server::evict_idle(Listener& listener, Peer* peer) {
  if (!peer) {  // the client holding the most connections that has one waiting
    for (auto& [key, p] : listener.peers)
      if ((!peer || p->conns.size() > peer->conns.size()) &&
          std::any_of(p->conns.begin(), p->conns.end(),
                      [](const Conn& c) { return c.idle_since.load() != 0 && !c.evicted.load(); }))
        peer = p.get();
    if (!peer) return false;
  }
  // A connection whose request has arrived but is not read yet is not waiting: it is about to
  // be served (a probe is accepted with its request on the way).
  const auto arrived = [](const Conn& c) {
    char byte;
    return ::recv(c.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  };
  Conn* oldest = nullptr;
  std::int64_t oldest_since = 0;
  for (Conn& c : peer->conns) {
    const std::int64_t since = c.idle_since.load();
    if (since != 0 && !c.evicted.load() && (!oldest || since < oldest_since) && !arrived(c)) {
      oldest = &c;
      oldest_since = since;
    }
  }
  if (!oldest) return false;
  oldest->doom();
  // On the connection's thread: closed unless it is being served or its request has begun
  // to arrive, and not before it has waited kEvictionGrace (a client that has just connected
  // may not have sent its request yet: a probe among the sockets of a flood from its own
  // address is served all the same).
  asio::post(oldest->stream.get_executor(), [c = oldest->shared_from_this(), arrived] {
    const auto close_if_waiting = [c, arrived](boost::system::error_code = {}) {
      if (c->idle && c->evicted.load() && !arrived(*c))
        c->stream.cancel();
      else
        c->spare();  // being served: it may be chosen again later
    };
    const auto waited = std::chrono::nanoseconds(steady_ns() - c->idle_since.load());
    if (waited >= kEvictionGrace) return close_if_waiting();
    if (!c->grace) c->grace = std::make_unique<asio::steady_timer>(c->stream.get_executor());
    c->grace->expires_after(kEvictionGrace - waited);
    c->grace->async_wait(close_if_waiting);
  });
  return true;
}

void Server::connection_closed(Conn& conn) {
  Listener& listener = conn.listener;
  // Gone from its client's list before it leaves the counts: a connection still listed that
  // waits for nothing must not count as staying, or the next arrival would close another
  // idle connection in its place.
  if (conn.peer) {
    std::lock_guard lock(listener.mu);
    conn.peer->conns.erase(conn.peer->conns.iterator_to(conn));
    if (conn.peer->conns.empty()) listener.peers.erase(conn.peer->key);
  }
  // One count each: chosen to be closed, it no longer counted as staying.
  if (!conn.evicted.exchange(false)) listener.staying.fetch_sub(1);
  const std::size_t was_open = listener.open.fetch_sub(1);
  // Near the cap the accept loop may wait for this.
  if (was_open < listener.limits.connections) return;
  asio::post(listener.gate.get_executor(), [l = &listener] { l->gate.cancel(); });
}

void Server::shutdown() {
  stopping_.store(true);
  std::lock_guard lock(mu_);
  // The admin listener stays: probes see /readyz 503 while the drain lasts, and metrics
  // can be read until the end (docs/operations.md, "Stopping").
  for (auto& l : listeners_)
    if (!l->admin)
      asio::post(l->acceptor.get_executor(), [l = l.get()] {
        boost::system::error_code ec;
        l->acceptor.close(ec);
        l->gate.cancel();
      });
  // Idle connections wait for a request head that is not coming: cancel that read. The
  // check runs on the connection's thread, so it cannot race with the session.
  for (auto& w : conns_)
    if (auto c = w.lock())
      if (!c->admin)
        asio::post(c->stream.get_executor(), [c] {
          if (c->idle) c->stream.cancel();
        });
}

void Server::close() {
  closing_.store(true);
  stopping_.store(true);
  std::lock_guard lock(mu_);
  for (auto& l : listeners_)
    asio::post(l->acceptor.get_executor(), [l = l.get()] {
      boost::system::error_code ec;
      l->acceptor.close(ec);
      l->gate.cancel();
    });
  for (auto& w : conns_)
    if (auto c = w.lock()) asio::post(c->stream.get_executor(), [c] { c->stream.cancel(); });
}

Server::Connections Server::connections(bool admin) const {
  Connections n;
  std::lock_guard lock(mu_);
  for (const auto& l : listeners_) {
    if (l->admin != admin) continue;
    std::lock_guard peers_lock(l->mu);
    for (const auto& [key, peer] : l->peers)
      for (const Conn& c : peer->conns) {
        ++n.open;
        if (c.idle_since.load() != 0) ++n.waiting;
      }
  }
  return n;
}

bool Server::closed() const noexcept {
  std::lock_guard lock(mu_);
  for (const auto& l : listeners_)
    if (l->open.load() != 0) return false;
  return true;
}

}  // namespace idem::gateway
