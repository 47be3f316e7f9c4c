#include "gateway/http/server.h"

#include <array>
#include <cstdio>
#include <optional>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

#include "gateway/http/head_checks.h"
#include "gateway/http/relay.h"
#include "util/ascii.h"
#include "util/asio_tokens.h"

namespace idem::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;
using asio::ip::tcp;

namespace {

// The connection buffer holds a head (up to the header limit) plus a little of what
// follows it; a chunk-extension line or a trailer section longer than that fails to fit.
constexpr std::size_t kBufferSlack = 4096;
// A head is read this much at a time; an idle connection keeps this much buffer.
constexpr std::size_t kReadPiece = 4096;

// Counts a request from its head to its answer: for shutdown, and (client listener only)
// for the idem_inflight gauge.
struct ActiveGuard {
  std::atomic<int>& active;
  std::atomic<std::int64_t>& inflight;
  ActiveGuard(std::atomic<int>& a, std::atomic<std::int64_t>& i) : active(a), inflight(i) {
    active.fetch_add(1);
    inflight.fetch_add(1, std::memory_order_relaxed);
  }
  ~ActiveGuard() {
    inflight.fetch_sub(1, std::memory_order_relaxed);
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

HttpResponse header_too_large(unsigned version) {
  return problem_response(Problem::header_too_large,
                          "the request head (with chunk extensions and trailers) is larger than 16 KiB",
                          version, false);
}

// http::async_read_header, with one more refusal: a field line continued on the next line
// (obs-fold, RFC 9112 §5.2), which a server may refuse and which proxies in front may
// unfold differently.
awaitable<std::pair<beast::error_code, std::size_t>> read_head(
    beast::tcp_stream& stream, beast::flat_buffer& buffer, http::request_parser<http::empty_body>& parser) {
  // The parser consumes nothing until the whole head is there, so the buffer's start stays
  // put: only the bytes that arrived since the last look are scanned (a head sent byte by
  // byte must not cost quadratic time).
  std::size_t scanned = 0;
  bool head_ended = false;
  for (;;) {
    if (buffer.size() > 0) {
      const std::string_view data(static_cast<const char*>(buffer.data().data()), buffer.size());
      for (; !head_ended && scanned < data.size(); ++scanned) {
        if (scanned == 0 || data[scanned - 1] != '\n') continue;
        const char c = data[scanned];
        if (c == ' ' || c == '\t')
          co_return std::pair{beast::error_code(http::error::bad_field), std::size_t{0}};
        head_ended = c == '\r';  // the blank line that ends the head
      }
      beast::error_code ec;
      const std::size_t n = parser.put(buffer.data(), ec);
      buffer.consume(n);
      if (ec != http::error::need_more) co_return std::pair{ec, n};
      if (buffer.size() >= buffer.max_size())
        co_return std::pair{beast::error_code(http::error::header_limit), n};
    }
    const std::size_t room = std::min<std::size_t>(buffer.max_size() - buffer.size(), kReadPiece);
    auto [ec, n] = co_await stream.async_read_some(buffer.prepare(room), util::kUseTuple);
    buffer.commit(n);
    if (ec == asio::error::eof)
      ec = buffer.size() > 0 ? http::error::partial_message : http::error::end_of_stream;
    if (ec) co_return std::pair{ec, std::size_t{0}};
  }
}

// The peer's IP as text, an IPv4 client of an IPv6 socket (every interface) as IPv4.
std::string peer_address(const tcp::socket& socket) {
  boost::system::error_code ec;
  const tcp::endpoint ep = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  asio::ip::address a = ep.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  return a.to_string(ec);
}

HttpResponse malformed_body(unsigned version) {
  return problem_response(Problem::request_invalid, "malformed request body (chunked framing)", version,
                          false);
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

class Server::ConnExchange final : public HttpExchange {
 public:
  ConnExchange(Server& server, Conn& conn, beast::flat_buffer& buffer, Request& req, const RequestMeta& meta)
      : server_(server), conn_(conn), buffer_(buffer), req_(req), meta_(meta), reservation_(server.budget_) {}

  const http::request_header<>& head() const override {
    return body_ ? body_->get().base() : req_.head.get().base();
  }
  const RequestMeta& meta() const override { return meta_; }
  std::optional<std::uint64_t> content_length() const override {
    if (body_)
      return body_->content_length() ? std::optional<std::uint64_t>(*body_->content_length()) : std::nullopt;
    return req_.head.content_length() ? std::optional<std::uint64_t>(*req_.head.content_length())
                                      : std::nullopt;
  }
  bool keep_alive() const override { return body_ ? body_->keep_alive() : req_.head.keep_alive(); }
  bool body_done() const override { return req_.body_done; }
  awaitable<BodyRead> read_body(std::uint64_t limit) override;
  awaitable<std::optional<Answer>> relay(UpstreamClient& upstream, Duration timeout) override;

 private:
  // Tells a client that waits for permission before sending its body (curl does, above
  // 1 KiB) to go on. False when the client is gone.
  awaitable<bool> continue_if_expected(const http::request_header<>& head);

  Server& server_;
  Conn& conn_;
  beast::flat_buffer& buffer_;
  Request& req_;
  const RequestMeta& meta_;
  BodyReservation reservation_;
  std::optional<BodyParser> body_;  // once read_body() took the head
};

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

HttpResponse Server::overloaded(unsigned version) {
  gauges_.overloaded.fetch_add(1, std::memory_order_relaxed);
  return problem_response(Problem::overloaded, "too many request bodies are being received; retry shortly",
                          version, false, std::chrono::seconds(1));
}

awaitable<void> Server::session(std::shared_ptr<Conn> conn, bool admin) {
  beast::tcp_stream& stream = conn->stream;
  if (!admin) conn->peer = peer_address(stream.socket());
  // Bounded: a head, chunk-extension line or trailer section that does not fit is refused.
  beast::flat_buffer buffer(limits_.header_limit + kBufferSlack);
  bool unread_body = false;  // answered before the body was read: the client may still send
  for (;;) {
    if ((stopping_.load() && !admin) || closing_.load()) break;
    Request req;
    req.head.header_limit(static_cast<std::uint32_t>(limits_.header_limit));
    req.head.body_limit(boost::none);  // each route sets its own when the body is read
    conn->idle = true;
    // An idle keep-alive connection gives back what its last request used beyond the 4 KiB
    // it waits with (read_head reads 4 KiB at a time), and keeps those: freeing and taking
    // them again cost a malloc and a free on every request.
    if (buffer.size() == 0 && buffer.capacity() > kReadPiece) buffer.shrink_to_fit();
    stream.expires_after(limits_.header_timeout);
    auto [ec, n] = co_await read_head(stream, buffer, req.head);
    conn->idle = false;
    req.head_bytes = n;
    req.body_done = req.head.is_done();
    if (ec) {
      // Clean close, timeout or cancel: go quietly. A head we cannot parse: say so, then close.
      std::optional<HttpResponse> res;
      if (ec == http::error::header_limit || ec == http::error::buffer_overflow)
        res = header_too_large(11);
      else if (ec == http::error::bad_version &&
               speaks_another_version({static_cast<const char*>(buffer.data().data()), buffer.size()})) {
        const HeadRefusal r = another_version_refusal();
        res = problem_response(r.problem, r.detail, r.version, false);
      } else if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
                 ec != http::error::end_of_stream && ec != http::error::partial_message)
        res =
            problem_response(Problem::request_invalid, "malformed HTTP request: " + ec.message(), 11, false);
      if (res) {
        stream.expires_after(limits_.write_timeout);
        co_await http::async_write(stream, *res, util::kUseTuple);
      }
      break;
    }

    // Admin requests are not waited for by the drain: only client requests are counted.
    std::optional<ActiveGuard> guard;
    if (!admin) guard.emplace(active_, gauges_.inflight);
    std::optional<Answer> answer;
    RequestMeta meta;
    if (!admin) meta = request_meta(req.head.get(), conn->peer);
    if (auto refusal = refuse_head(req.head.get(), admin)) {
      answer.emplace(problem_response(refusal->problem, refusal->detail, refusal->version, false));
    } else {
      // The exchange (and the body it read, and its share of the body budget) ends before
      // the answer is written.
      ConnExchange exchange(*this, *conn, buffer, req, meta);
      answer = co_await (admin ? admin_ : client_).serve(exchange);
    }
    if (!answer) break;
    // Every answer on the client listener names its request (docs/observability.md): the
    // id the upstream received and the request log shows; a replay too (its body and the
    // rest of its stored head are as they were).
    if (!admin) answer->response.set(kRequestIdHeader, meta.request_id.view());
    unread_body = !req.body_done;
    const bool keep =
        answer->response.keep_alive() && (admin || !stopping_.load()) && !closing_.load() && !unread_body;
    answer->response.keep_alive(keep);
    const bool usable = co_await write_answer(stream, *answer, limits_.write_timeout, conn->head);
    if (!usable || !keep) break;
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
      auto [rec, rn] = co_await stream.async_read_some(asio::buffer(scratch), util::kUseTuple);
      if (rec) break;
      drained += rn;
    }
  }
  stream.close();
}

awaitable<bool> Server::ConnExchange::continue_if_expected(const http::request_header<>& head) {
  auto expect = head.find(http::field::expect);
  if (expect == head.end() || !util::iequals(expect->value(), "100-continue")) co_return true;
  HttpResponse go{http::status::continue_, 11};
  conn_.stream.expires_after(server_.limits_.write_timeout);
  auto [wec, wn] = co_await http::async_write(conn_.stream, go, util::kUseTuple);
  co_return !wec;
}

awaitable<BodyRead> Server::ConnExchange::read_body(std::uint64_t limit) {
  const unsigned version = req_.head.get().version();
  body_.emplace(std::move(req_.head));
  BodyParser& parser = *body_;
  parser.body_limit(limit);
  const auto too_large = [&] {
    return BodyRead::refused(
        problem_response(Problem::body_too_large, "the request body is too large", version, false), true);
  };
  if (parser.is_done()) {
    req_.body_done = true;
    co_return BodyRead::whole(parser.get());
  }
  if (auto length = parser.content_length()) {
    if (*length > limit) co_return too_large();
    if (!reservation_.take(*length)) co_return BodyRead::refused(server_.overloaded(version));
  }
  ChunkGuard guard(server_.limits_.header_limit, req_.head_bytes, &reservation_);
  guard.attach(parser);
  if (!co_await continue_if_expected(parser.get().base())) co_return BodyRead::gone();
  conn_.stream.expires_after(server_.limits_.body_timeout);
  auto [ec, n] = co_await http::async_read(conn_.stream, buffer_, parser, util::kUseTuple);
  if (ec && ec != http::error::body_limit) guard.read_failed(ec);
  if (guard.failure() == ChunkGuard::Failure::head_too_large)
    co_return BodyRead::refused(header_too_large(version));
  if (guard.failure() == ChunkGuard::Failure::overloaded)
    co_return BodyRead::refused(server_.overloaded(version));
  if (ec == http::error::body_limit) co_return too_large();
  if (guard.failure() == ChunkGuard::Failure::malformed) co_return BodyRead::refused(malformed_body(version));
  if (ec) co_return BodyRead::gone();
  if (!guard.finish(parser.get().base())) co_return BodyRead::refused(header_too_large(version));
  req_.body_done = true;
  co_return BodyRead::whole(parser.get());
}

awaitable<std::optional<Answer>> Server::ConnExchange::relay(UpstreamClient& upstream, Duration timeout) {
  StreamParser parser(std::move(req_.head));
  parser.body_limit(boost::none);  // streamed: it costs a fixed buffer, whatever its size
  ChunkGuard guard(server_.limits_.header_limit, req_.head_bytes, nullptr);
  // The body is streamed: a client waiting for 100-continue may send it at once.
  if (!parser.is_done() && !co_await continue_if_expected(parser.get().base())) co_return std::nullopt;
  auto answer = co_await relay_request(conn_.stream, buffer_, parser, guard, upstream, meta_,
                                       {server_.limits_.body_timeout, timeout}, req_.body_done, conn_.head);
  if (!answer && guard.failure() == ChunkGuard::Failure::head_too_large)
    answer.emplace(header_too_large(parser.get().version()));
  if (!answer && guard.failure() == ChunkGuard::Failure::malformed)
    answer.emplace(malformed_body(parser.get().version()));
  co_return answer;
}

}  // namespace idem::gateway
