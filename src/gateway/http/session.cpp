// One connection (server.h): read a head, check it, hand it to the listener's handler
// through a ConnExchange, write the answer; until the client or the server closes.
#include <array>
#include <optional>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

#include "gateway/http/head_checks.h"
#include "gateway/http/relay.h"
#include "gateway/http/server.h"
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
HttpResponse header_too_large(unsigned version) {
  return problem_response(Problem::header_too_large,
                          "the request head (with chunk extensions and trailers) is larger than 16 KiB",
                          version, false);
}

// http::async_read_header, with one more refusal: a field line continued on the next line
// (obs-fold, RFC 9112 §5.2), which a server may refuse and which proxies in front may
// unfold differently; and the header limit counted over the whole head. Returns the head's
// size in bytes.
// Beast takes the request line and each complete field line as they arrive (consuming them
// from the buffer) and unfolds an obs-fold itself, so both checks count from the head's
// first byte, not the buffer's: whatever the segmentation, a continuation line is refused
// and a head longer than `header_limit` gets header_limit. Each byte is scanned once (a head
// sent byte by byte must not cost quadratic time).
template <class Stream>
awaitable<std::pair<beast::error_code, std::size_t>> read_head(Stream& stream, beast::flat_buffer& buffer,
                                                               http::request_parser<http::empty_body>& parser,
                                                               std::size_t header_limit) {
  std::size_t consumed = 0;  // head bytes the parser has taken from the buffer
  std::size_t scanned = 0;   // head bytes looked at, from the head's first byte
  char last = '\0';          // the byte before `scanned`
  bool head_ended = false;
  for (;;) {
    if (buffer.size() > 0) {
      const std::string_view data(static_cast<const char*>(buffer.data().data()), buffer.size());
      for (scanned = std::max(scanned, consumed); !head_ended && scanned < consumed + data.size();
           ++scanned) {
        const char c = data[scanned - consumed];
        if (scanned > 0 && last == '\n') {
          if (c == ' ' || c == '\t')
            co_return std::pair{beast::error_code(http::error::bad_field), std::size_t{0}};
          head_ended = c == '\r';  // the blank line that ends the head
        }
        last = c;
      }
      // The parser sees no more than what is left of the limit: a head that ends past it
      // is never taken whole.
      const std::size_t room = header_limit > consumed ? header_limit - consumed : 0;
      beast::error_code ec;
      const std::size_t n = parser.put(asio::buffer(data.data(), std::min(data.size(), room)), ec);
      buffer.consume(n);
      consumed += n;
      if (ec != http::error::need_more) co_return std::pair{ec, consumed};
      if (consumed + buffer.size() >= header_limit || buffer.size() >= buffer.max_size())
        co_return std::pair{beast::error_code(http::error::header_limit), consumed};
    }
    const std::size_t room = std::min<std::size_t>(buffer.max_size() - buffer.size(), kReadPiece);
    auto [ec, n] = co_await stream.async_read_some(buffer.prepare(room), util::kUseTuple);
    buffer.commit(n);
    if (ec == asio::error::eof)
      ec = consumed + buffer.size() > 0 ? http::error::partial_message : http::error::end_of_stream;
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

// The handshake failed because the client spoke plain HTTP (OpenSSL saw a request line
// where a ClientHello belongs).
bool plain_http_on_tls(const beast::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() &&
         ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_HTTP_REQUEST;
}

HttpResponse malformed_body(unsigned version) {
  return problem_response(Problem::request_invalid, "malformed request body (chunked framing)", version,
                          false);
}

}  // namespace

template <class Stream>
class Server::ConnExchange final : public HttpExchange {
 public:
  ConnExchange(Server& server, Conn& conn, Stream& stream, beast::flat_buffer& buffer, Request& req,
               const RequestMeta& meta)
      : server_(server),
        conn_(conn),
        stream_(stream),
        buffer_(buffer),
        req_(req),
        meta_(meta),
        reservation_(conn.listener.budget, &conn.peer->budget) {}

  const http::request_header<>& head() const override {
    if (request_) return request_->base();
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
  Stream& stream_;  // over conn_.stream, which holds the deadlines
  beast::flat_buffer& buffer_;
  Request& req_;
  const RequestMeta& meta_;
  // The request read whole: its head and body moved out of the parser. Declared after the
  // reservation its body is held in, so that it is freed first.
  BodyReservation reservation_;
  std::optional<BodyParser> body_;      // once read_body() took the head
  std::optional<HttpRequest> request_;  // once read_body() read the body
};

HttpResponse Server::overloaded(unsigned version) {
  gauges_.overloaded.fetch_add(1, std::memory_order_relaxed);
  return problem_response(Problem::overloaded, "too many request bodies are being received; retry shortly",
                          version, false, std::chrono::seconds(1));
}

awaitable<void> Server::session(std::shared_ptr<Conn> conn, bool admin) {
  conn->address = peer_address(conn->stream.socket());
  const std::shared_ptr<asio::ssl::context> context = admin ? nullptr : tls();
  if (!context) co_return co_await serve(*conn, conn->stream, admin);
  // TLS (docs/operations.md, "TLS at the edge"): the handshake is part of the wait for the
  // first request. It is bounded by the header timeout, and the connection counts as
  // waiting (idle_since, set at accept), so at a connection cap it is closed like an idle
  // one; shutdown cancels it too.
  TlsStream stream(conn->stream, *context);
  conn->stream.expires_after(conn->listener.limits.header_timeout);
  auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, util::kUseTuple);
  if (!ec) co_return co_await serve(*conn, stream, admin);
  if (plain_http_on_tls(ec)) {
    HttpResponse res = problem_response(Problem::request_invalid,
                                        "this port speaks HTTPS: plain HTTP was sent to it", 11, false);
    conn->stream.expires_after(limits_.write_timeout);
    co_await http::async_write(conn->stream, res, util::kUseTuple);
  }
  boost::system::error_code ignored;
  conn->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  conn->stream.close();
}

template <class Stream>
awaitable<void> Server::serve(Conn& c, Stream& stream, bool admin) {
  Conn* const conn = &c;
  // Bounded: a head, chunk-extension line or trailer section that does not fit is refused.
  beast::flat_buffer buffer(limits_.header_limit + kBufferSlack);
  bool unread_body = false;    // answered before the body was read: the client may still send
  bool answered_last = false;  // the server ends the connection after an answer it wrote
  bool served = false;         // a request was read on this connection
  for (;;) {
    if ((stopping_.load() && !admin) || closing_.load()) break;
    Request req;
    req.head.header_limit(static_cast<std::uint32_t>(limits_.header_limit));
    req.head.body_limit(boost::none);  // each route sets its own when the body is read
    conn->idle = true;
    // Waiting for a request: at a connection cap, the longest waiting is closed first.
    if (conn->idle_since.load(std::memory_order_relaxed) == 0) conn->idle_since.store(steady_ns());
    // Chosen to be closed as its last request came in: it served that one and is no longer
    // chosen. Not before the first request: chosen before this session began, its close is
    // queued behind this start and ends the read below.
    if (served) conn->spare();
    // An idle keep-alive connection gives back what its last request used beyond the 4 KiB
    // it waits with (read_head reads 4 KiB at a time), and keeps those: freeing and taking
    // them again cost a malloc and a free on every request.
    if (buffer.size() == 0 && buffer.capacity() > kReadPiece) buffer.shrink_to_fit();
    conn->stream.expires_after(conn->listener.limits.header_timeout);
    auto [ec, n] = co_await read_head(stream, buffer, req.head, limits_.header_limit);
    conn->idle = false;
    conn->idle_since.store(0);
    served = true;
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
        conn->stream.expires_after(limits_.write_timeout);
        co_await http::async_write(stream, *res, util::kUseTuple);
        answered_last = true;
      }
      break;
    }

    // Admin requests are not waited for by the drain: only client requests are counted.
    std::optional<ActiveGuard> guard;
    if (!admin) guard.emplace(active_, gauges_.inflight);
    std::optional<Answer> answer;
    RequestMeta meta;
    if (!admin) {
      meta = client_.meta(req.head.get(), conn->address);
      meta.tls = !std::is_same_v<Stream, beast::tcp_stream>;
    } else
      meta.client = conn->address;  // for the admin listener's audit line
    if (auto refusal = refuse_head(req.head.get(), admin)) {
      answer.emplace(problem_response(refusal->problem, refusal->detail, refusal->version, false));
    } else {
      // The exchange (and the body it read, and its share of the body budget) ends before
      // the answer is written.
      ConnExchange<Stream> exchange(*this, *conn, stream, buffer, req, meta);
      answer = co_await (admin ? admin_ : client_).serve(exchange);
    }
    if (!answer) break;
    // Every answer on the client listener names its request (docs/observability.md): the
    // id the upstream received and the request log shows; a replay too (its body and the
    // rest of its stored head are as they were).
    if (!admin) {
      answer->response.set(kRequestIdHeader, meta.request_id.view());
      if (!answer->tail) name_problem_instance(answer->response, meta.request_id.view());
    }
    unread_body = !req.body_done;
    const bool keep =
        answer->response.keep_alive() && (admin || !stopping_.load()) && !closing_.load() && !unread_body;
    answer->response.keep_alive(keep);
    const bool usable = co_await write_answer(stream, *answer, limits_.write_timeout, conn->head);
    answered_last = !keep;
    if (!usable || !keep) break;
  }
  // Under TLS, an answer that the end of the connection frames (an HTTP/1.0 client's) is
  // complete only with close_notify, else the client cannot tell it from a cut: send it, and
  // wait briefly for the client's.
  if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
    if (answered_last && !unread_body) {
      conn->stream.expires_after(std::chrono::seconds(1));
      co_await stream.async_shutdown(util::kUseTuple);
    }
  }
  boost::system::error_code ignored;
  conn->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (unread_body) {
    // Closing with unread data would reset the connection and could destroy our answer
    // (a 413) before the client reads it: drain what the client still sends, briefly.
    std::array<char, 4096> scratch;
    std::size_t drained = 0;
    conn->stream.expires_after(std::chrono::seconds(1));
    while (drained < 1024 * 1024) {
      auto [rec, rn] = co_await stream.async_read_some(asio::buffer(scratch), util::kUseTuple);
      if (rec) break;
      drained += rn;
    }
  }
  conn->stream.close();
}

template <class Stream>
awaitable<bool> Server::ConnExchange<Stream>::continue_if_expected(const http::request_header<>& head) {
  auto expect = head.find(http::field::expect);
  if (expect == head.end() || !util::iequals(expect->value(), "100-continue")) co_return true;
  HttpResponse go{http::status::continue_, 11};
  conn_.stream.expires_after(server_.limits_.write_timeout);
  auto [wec, wn] = co_await http::async_write(stream_, go, util::kUseTuple);
  co_return !wec;
}

template <class Stream>
awaitable<BodyRead> Server::ConnExchange<Stream>::read_body(std::uint64_t limit) {
  const unsigned version = req_.head.get().version();
  body_.emplace(std::move(req_.head));
  BodyParser& parser = *body_;
  parser.body_limit(limit);
  // The body's memory is taken from the budgets as its bytes arrive (BudgetedBody): a
  // declared length alone holds nothing.
  parser.get().body().reservation = &reservation_;
  parser.get().body().limit = limit;
  const auto too_large = [&] {
    return BodyRead::refused(
        problem_response(Problem::body_too_large, "the request body is too large", version, false), true);
  };
  const auto whole = [&] {
    req_.body_done = true;
    request_.emplace(std::move(parser.get().base()), std::move(parser.get().body().data));
    return BodyRead::whole(*request_);
  };
  if (parser.is_done()) co_return whole();
  if (auto length = parser.content_length(); length && *length > limit) co_return too_large();
  ChunkGuard guard(server_.limits_.header_limit, req_.head_bytes);
  guard.attach(parser);
  if (!co_await continue_if_expected(parser.get().base())) co_return BodyRead::gone();
  conn_.stream.expires_after(conn_.listener.limits.body_timeout);
  auto [ec, n] = co_await http::async_read(stream_, buffer_, parser, util::kUseTuple);
  if (ec && ec != http::error::body_limit) guard.read_failed(ec);
  if (guard.failure() == ChunkGuard::Failure::head_too_large)
    co_return BodyRead::refused(header_too_large(version));
  if (parser.get().body().overloaded) co_return BodyRead::refused(server_.overloaded(version));
  if (ec == http::error::body_limit) co_return too_large();
  if (guard.failure() == ChunkGuard::Failure::malformed) co_return BodyRead::refused(malformed_body(version));
  if (ec) co_return BodyRead::gone();
  if (!guard.finish(parser.get().base())) co_return BodyRead::refused(header_too_large(version));
  co_return whole();
}

template <class Stream>
awaitable<std::optional<Answer>> Server::ConnExchange<Stream>::relay(UpstreamClient& upstream,
                                                                     Duration timeout) {
  StreamParser parser(std::move(req_.head));
  parser.body_limit(boost::none);  // streamed: it costs a fixed buffer, whatever its size
  ChunkGuard guard(server_.limits_.header_limit, req_.head_bytes);
  // The body is streamed: a client waiting for 100-continue may send it at once.
  if (!parser.is_done() && !co_await continue_if_expected(parser.get().base())) co_return std::nullopt;
  auto answer =
      co_await relay_request(stream_, buffer_, parser, guard, upstream, meta_,
                             {conn_.listener.limits.body_timeout, timeout}, req_.body_done, conn_.head);
  if (!answer && guard.failure() == ChunkGuard::Failure::head_too_large)
    answer.emplace(header_too_large(parser.get().version()));
  if (!answer && guard.failure() == ChunkGuard::Failure::malformed)
    answer.emplace(malformed_body(parser.get().version()));
  co_return answer;
}

}  // namespace idem::gateway
