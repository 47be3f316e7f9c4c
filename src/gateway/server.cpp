#include "gateway/server.h"

#include <array>
#include <cstdio>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

namespace idem::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;
using asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

// Counts a request from its head to its answer: for shutdown, and (client listener only)
// for the idem_inflight gauge.
struct ActiveGuard {
  std::atomic<int>& active;
  Metrics* metrics;
  ActiveGuard(std::atomic<int>& a, Metrics* m) : active(a), metrics(m) {
    active.fetch_add(1);
    if (metrics) metrics->inflight_add(1);
  }
  ~ActiveGuard() {
    if (metrics) metrics->inflight_add(-1);
    active.fetch_sub(1);
  }
  ActiveGuard(const ActiveGuard&) = delete;
  ActiveGuard& operator=(const ActiveGuard&) = delete;
};

// A session that ends with an exception (a bug, or bad_alloc) closes its connection; say so.
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

// Reads the rest of the request (its body) within the deadline. A body over the parser's
// limit is answered 413 by the caller; any other failure closes the connection.
awaitable<beast::error_code> read_body(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                       http::request_parser<http::string_body>& parser,
                                       std::chrono::seconds timeout) {
  if (parser.is_done()) co_return beast::error_code{};
  // A client that waits for permission before sending its body (curl does, above 1 KiB).
  auto expect = parser.get().find(http::field::expect);
  if (expect != parser.get().end() && beast::iequals(expect->value(), "100-continue")) {
    HttpResponse go{http::status::continue_, 11};
    stream.expires_after(timeout);
    auto [wec, wn] = co_await http::async_write(stream, go, kTuple);
    if (wec) co_return wec;
  }
  stream.expires_after(timeout);
  auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
  co_return ec;
}

// The request target in origin-form ("/path?query"), or nullopt when it cannot be served.
// An absolute-form target ("http://host/orders") is reduced to its origin-form, and a path
// with dot segments ("/a/../orders", also percent-encoded) is refused: otherwise a request
// could reach a protected path under a spelling the route table does not match.
std::optional<std::string> origin_form(std::string_view target) {
  std::string_view t = target;
  const auto scheme = t.find("://");
  if (!t.starts_with('/') && scheme != std::string_view::npos && t.find('/') > scheme) {
    const auto slash = t.find_first_of("/?", scheme + 3);
    t = slash == std::string_view::npos ? std::string_view("/") : t.substr(slash);
  }
  std::string out(t);
  if (out.starts_with('?')) out.insert(0, "/");
  if (!out.starts_with('/')) return std::nullopt;
  std::string_view path = target_path(out);
  while (!path.empty()) {
    path.remove_prefix(1);
    const auto next = path.find('/');
    const std::string segment = percent_decode(path.substr(0, next), false);
    if (segment == "." || segment == "..") return std::nullopt;
    path = next == std::string_view::npos ? std::string_view{} : path.substr(next);
  }
  return out;
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

Server::Server(IoPool& pool, Gateway& gateway, Admin& admin, Metrics& metrics, ServerLimits limits)
    : pool_(pool), gateway_(gateway), admin_(admin), metrics_(metrics), limits_(limits) {}

tcp::endpoint Server::listen_client(const ListenAddress& address) { return listen(address, false); }
tcp::endpoint Server::listen_admin(const ListenAddress& address) { return listen(address, true); }

Server::Listener::Listener(asio::io_context& ioc) : acceptor(ioc), gate(ioc) {}

tcp::endpoint Server::listen(const ListenAddress& address, bool admin) {
  auto listener = std::make_unique<Listener>(pool_.main());
  tcp::acceptor& acceptor = listener->acceptor;
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
  const tcp::endpoint bound = acceptor.local_endpoint();
  Listener& ref = *listener;
  {
    std::lock_guard lock(mu_);
    listeners_.push_back(std::move(listener));
  }
  asio::co_spawn(acceptor.get_executor(), accept_loop(ref, admin), report_exception);
  return bound;
}

awaitable<void> Server::accept_loop(Listener& listener, bool admin) {
  tcp::acceptor& acceptor = listener.acceptor;
  for (;;) {
    // At the limit, wait for a connection to close (connection_closed cancels the gate;
    // the short expiry only bounds the wait should a wake-up race past it).
    while (!admin && open_clients_.load() >= limits_.max_connections && !stopping_.load()) {
      listener.gate.expires_after(std::chrono::milliseconds(100));
      co_await listener.gate.async_wait(kTuple);
    }
    auto [ec, socket] = co_await acceptor.async_accept(pool_.next(), kTuple);
    if (stopping_.load()) co_return;
    if (ec) {
      if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
      // EMFILE and friends: keep serving the connections we have, and do not spin.
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(kTuple);
      continue;
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto conn = std::make_shared<Conn>(std::move(socket));
    {
      std::lock_guard lock(mu_);
      if (++accepted_ % 256 == 0) conns_.remove_if([](const std::weak_ptr<Conn>& w) { return w.expired(); });
      conns_.push_back(conn);
    }
    if (!admin) open_clients_.fetch_add(1);
    auto ex = conn->stream.get_executor();
    asio::co_spawn(ex, session(std::move(conn), admin), [this, admin](std::exception_ptr e) {
      if (!admin) connection_closed();
      report_exception(e);
    });
  }
}

void Server::connection_closed() {
  if (open_clients_.fetch_sub(1) != limits_.max_connections) return;
  std::lock_guard lock(mu_);
  for (auto& l : listeners_) asio::post(l->gate.get_executor(), [l = l.get()] { l->gate.cancel(); });
}

void Server::shutdown() {
  stopping_.store(true);
  std::lock_guard lock(mu_);
  for (auto& l : listeners_)
    asio::post(l->acceptor.get_executor(), [l = l.get()] {
      boost::system::error_code ec;
      l->acceptor.close(ec);
      l->gate.cancel();
    });
  // Idle connections wait for a request head that is not coming: cancel that read. The
  // check runs on the connection's thread, so it cannot race with the session.
  for (auto& w : conns_)
    if (auto c = w.lock())
      asio::post(c->stream.get_executor(), [c] {
        if (c->idle) c->stream.cancel();
      });
}

awaitable<void> Server::session(std::shared_ptr<Conn> conn, bool admin) {
  beast::tcp_stream& stream = conn->stream;
  beast::flat_buffer buffer;
  bool unread_body = false;  // answered before the body was read: the client may still send
  for (;;) {
    if (stopping_.load()) break;
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits_.header_limit));
    parser.body_limit(admin ? 1024 * 1024 : limits_.proxy_body_limit);
    conn->idle = true;
    stream.expires_after(limits_.header_timeout);
    auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, kTuple);
    conn->idle = false;
    if (ec) {
      // Clean close, timeout or cancel: go quietly. A head we cannot parse: say so, then close.
      const bool parse_error = ec.category() == http::make_error_code(http::error::bad_target).category() &&
                               ec != http::error::end_of_stream && ec != http::error::partial_message;
      if (ec == http::error::header_limit) {
        auto res = problem_response(431, "header-too-large", "Request header fields too large",
                                    "the request head is larger than 16 KiB", 11, false);
        stream.expires_after(limits_.write_timeout);
        co_await http::async_write(stream, res, kTuple);
      } else if (parse_error) {
        auto res =
            problem_response(Problem::request_invalid, "malformed HTTP request: " + ec.message(), 11, false);
        stream.expires_after(limits_.write_timeout);
        co_await http::async_write(stream, res, kTuple);
      }
      break;
    }

    ActiveGuard guard(active_, admin ? nullptr : &metrics_);
    std::optional<HttpResponse> res;
    if (admin)
      res = co_await handle_admin(*conn, buffer, parser);
    else
      res = co_await handle(*conn, buffer, parser);
    if (!res) break;
    const bool keep = res->keep_alive() && !stopping_.load();
    res->keep_alive(keep);
    stream.expires_after(limits_.write_timeout);
    auto [wec, written] = co_await http::async_write(stream, *res, kTuple);
    unread_body = !parser.is_done();
    if (wec || !keep) break;
  }
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (unread_body) {
    // Closing with unread data would reset the connection and could destroy our answer
    // (a 413) before the client reads it: drain what the client still sends, briefly.
    std::array<char, 4096> scratch;
    std::size_t drained = 0;
    stream.expires_after(std::chrono::seconds(1));
    while (drained < 1024 * 1024) {
      auto [rec, n] = co_await stream.async_read_some(asio::buffer(scratch), kTuple);
      if (rec) break;
      drained += n;
    }
  }
  stream.close();
}

awaitable<std::optional<HttpResponse>> Server::handle(Conn& conn, beast::flat_buffer& buffer,
                                                      http::request_parser<http::string_body>& parser) {
  const unsigned version = parser.get().version();
  const bool keep_alive = parser.get().keep_alive();
  if (parser.get().method() != http::verb::options || parser.get().target() != "*") {
    auto target = origin_form(parser.get().target());
    if (!target)
      co_return problem_response(Problem::request_invalid,
                                 "the request target must be a path without dot segments", version, false);
    if (*target != parser.get().target()) parser.get().target(*target);
  }
  const auto& head = parser.get();

  if (head.method() == http::verb::post && target_path(head.target()) == "/_idem/tokens") {
    if (auto ec = co_await read_body(conn.stream, buffer, parser, limits_.body_timeout))
      co_return std::nullopt;
    co_return co_await gateway_.issue_token(parser.get());
  }

  const auto& routes = gateway_.config().routes;
  auto match = match_route(routes, head.method_string(), head.target());
  if (!match) {
    auto ec = co_await read_body(conn.stream, buffer, parser, limits_.body_timeout);
    if (ec == http::error::body_limit)
      co_return problem_response(Problem::body_too_large, "the request body is larger than the proxy accepts",
                                 version, false);
    if (ec) co_return std::nullopt;
    co_return co_await gateway_.proxy(parser.get());
  }

  // Cheap checks first: nothing is read or claimed for a request rejected on its head.
  const Route& route = *match->route;
  const auto fields = header_fields(head);
  const RequestView view{head.method_string(), head.target(), fields, {}};
  Decision decision = check_head(route, view);
  const bool body_pending = !parser.is_done();
  if (decision.verdict == Verdict::reject)
    co_return gateway_.reject_early(route, head, decision.rejection, keep_alive && !body_pending);
  if (decision.verdict == Verdict::protect || route.key.kind == KeyRule::Kind::templated) {
    if (auto length = parser.content_length())
      if (auto r = check_body_size(route, *length)) co_return gateway_.reject_early(route, head, *r, false);
    parser.body_limit(route.policy.max_body);
  }
  auto ec = co_await read_body(conn.stream, buffer, parser, limits_.body_timeout);
  if (ec == http::error::body_limit) {
    auto r = check_body_size(route, route.policy.max_body + 1);
    co_return gateway_.reject_early(route, parser.get(), *r, false);
  }
  if (ec) co_return std::nullopt;
  co_return co_await gateway_.protect(*match, parser.get(), std::move(decision));
}

awaitable<std::optional<HttpResponse>> Server::handle_admin(Conn& conn, beast::flat_buffer& buffer,
                                                            http::request_parser<http::string_body>& parser) {
  auto ec = co_await read_body(conn.stream, buffer, parser, limits_.body_timeout);
  if (ec == http::error::body_limit)
    co_return problem_response(Problem::body_too_large, "admin requests are limited to 1 MiB",
                               parser.get().version(), false);
  if (ec) co_return std::nullopt;
  co_return co_await admin_.handle(parser.get());
}

}  // namespace idem::gateway
