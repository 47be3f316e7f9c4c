// The listeners (server.h): binding, accepting up to each listener's connection cap, and
// stopping. What a connection does is in session.cpp.
#include "gateway/http/server.h"

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

}  // namespace

Server::Server(IoPool& pool, RequestHandler& client, RequestHandler& admin, ServerGauges& gauges,
               ServerLimits limits)
    : pool_(pool),
      client_(client),
      admin_(admin),
      gauges_(gauges),
      limits_(limits),
      budget_(limits.buffered_bodies) {}

tcp::endpoint Server::listen_client(const ListenAddress& address) { return listen(address, false); }
tcp::endpoint Server::listen_admin(const ListenAddress& address) { return listen(address, true); }

Server::Listener::Listener(asio::io_context& ioc, bool is_admin, std::size_t max)
    : acceptor(ioc), gate(ioc), admin(is_admin), max_connections(max) {}

tcp::endpoint Server::listen(const ListenAddress& address, bool admin) {
  auto listener = std::make_unique<Listener>(pool_.main(), admin,
                                             admin ? limits_.max_admin_connections : limits_.max_connections);
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
    // At the limit, wait for a connection to close (connection_closed cancels the gate;
    // the short expiry only bounds the wait should a wake-up race past it).
    while (listener.open.load() >= listener.max_connections && !stopping_.load()) {
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
    auto conn = std::make_shared<Conn>(std::move(socket), listener.admin);
    {
      std::lock_guard lock(mu_);
      if (++accepted_ % 256 == 0) conns_.remove_if([](const std::weak_ptr<Conn>& w) { return w.expired(); });
      conns_.push_back(conn);
    }
    listener.open.fetch_add(1);
    auto ex = conn->stream.get_executor();
    asio::co_spawn(ex, session(std::move(conn), listener.admin), [this, &listener](std::exception_ptr e) {
      connection_closed(listener);
      report_exception(e);
    });
  }
}

void Server::connection_closed(Listener& listener) {
  if (listener.open.fetch_sub(1) != listener.max_connections) return;
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

bool Server::closed() const noexcept {
  std::lock_guard lock(mu_);
  for (const auto& l : listeners_)
    if (l->open.load() != 0) return false;
  return true;
}

}  // namespace idem::gateway
