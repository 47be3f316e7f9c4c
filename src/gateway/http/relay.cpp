#include "gateway/http/relay.h"

#include <array>
#include <optional>
#include <string>
#include <tuple>

#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>

#include "gateway/http/body_parse.h"
#include "gateway/http/head_writer.h"
#include "gateway/http/tls_stream.h"
#include "gateway/model/forwarding.h"
#include "util/asio_tokens.h"

namespace idem::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;
using Steady = std::chrono::steady_clock;

namespace {

constexpr std::size_t kPiece = 16 * 1024;

// The least rate a streamed body must keep, past its first client_read (relay.h).
constexpr std::uint64_t kMinBodyRate = 1024;  // bytes per second

// When the body must have arrived whole, `received` bytes into it.
Steady::time_point body_deadline(Steady::time_point start, Steady::duration base, std::uint64_t received) {
  return start + base + std::chrono::seconds(received / kMinBodyRate);
}

// The next part of the client's body into `piece` (the parser's body tells how much):
// parsed from what `buffer` already holds when that is enough (no waiting, no trip
// through the scheduler); else, with `wait`, read from the client, waiting at most
// `timeout` and never past `deadline`.
template <class Stream>
awaitable<beast::error_code> read_piece(Stream& client, beast::flat_buffer& buffer, StreamParser& parser,
                                        bool& starved, std::array<char, kPiece>& piece, bool wait,
                                        Steady::duration timeout, Steady::time_point deadline) {
  auto& body = parser.get().body();
  body.data = piece.data();
  body.size = piece.size();
  if (wait) beast::get_lowest_layer(client).expires_at(std::min(Steady::now() + timeout, deadline));
  co_return co_await parse_body_some(client, buffer, parser, starved, wait);
}

}  // namespace

template <class Stream>
awaitable<bool> write_answer(Stream& client, Answer& answer, Steady::duration write_timeout,
                             std::string& scratch) {
  beast::get_lowest_layer(client).expires_after(write_timeout);
  if (!answer.tail) {
    auto ec = co_await write_message(client, answer.response, scratch);
    co_return !ec && answer.response.keep_alive();
  }
  http::response<http::buffer_body> out;
  out.base() = std::move(answer.response.base());
  std::string& prefix = answer.response.body();
  std::array<char, kPiece> piece;
  // Framed by its length, the body leaves as it is; otherwise chunked to an HTTP/1.1
  // client, and to the end of the connection for HTTP/1.0. The head goes with the first
  // part in one write, then the rest as it arrives.
  const bool chunked = out.find(http::field::content_length) == out.end() && out.version() >= 11;
  if (chunked)
    out.chunked(true);
  else if (out.find(http::field::content_length) == out.end())
    out.keep_alive(false);
  const auto write = [&](std::string_view head, std::string_view body, bool last) {
    return chunked ? write_chunk(client, head, body, last) : write_raw(client, head, body);
  };
  scratch.clear();
  append_head(scratch, out.base());
  if (co_await write(scratch, prefix, answer.tail->done())) co_return false;
  while (!answer.tail->done()) {
    auto [ec, n] = co_await answer.tail->read(piece.data(), piece.size());
    if (ec) co_return false;
    beast::get_lowest_layer(client).expires_after(write_timeout);
    if (co_await write({}, std::string_view(piece.data(), n), answer.tail->done())) co_return false;
  }
  co_return out.keep_alive();
}

template <class Stream>
awaitable<std::optional<Answer>> relay_request(Stream& client, beast::flat_buffer& buffer,
                                               StreamParser& parser, ChunkGuard& guard,
                                               UpstreamClient& upstream, const RequestMeta& meta,
                                               RelayTimeouts timeouts, bool& body_complete,
                                               std::string& scratch) {
  const unsigned version = parser.get().version();
  const bool keep_alive = parser.get().keep_alive();
  const bool head = parser.get().method() == http::verb::head;
  body_complete = parser.is_done();
  auto fail = [&](Problem p, std::string_view detail) {
    return Answer{problem_response(p, detail, version, keep_alive && body_complete)};
  };

  // The head moves to the forwarded request: from here on the parser needs only its state
  // (and its fields hold nothing but the trailers it may still read, which the guard
  // counts and drops).
  http::request<http::buffer_body> fwd;
  fwd.base() = std::move(parser.get().base());
  const bool proxy_proto = meta.trusted_peer && !fwd[kForwardedProtoHeader].empty();
  prepare_forward_head(fwd.base(), upstream.url(), meta);
  if (meta.tls) {  // forwarded_over_tls, on the head as fields
    if (!proxy_proto) fwd.set(kForwardedProtoHeader, "https");
    fwd.set(kForwardedHeader, forwarded_value_over_tls(fwd[kForwardedHeader]));
  }
  if (parser.chunked())
    fwd.chunked(true);
  else if (auto length = parser.content_length())
    fwd.content_length(*length);
  else if (fwd.method() == http::verb::post || fwd.method() == http::verb::put ||
           fwd.method() == http::verb::patch)
    fwd.content_length(0);

  auto connected = co_await upstream.connect(Steady::now() + timeouts.upstream);
  if (!connected.conn) co_return fail(Problem::upstream_unavailable, "the upstream is unavailable");
  UpstreamConnection& up = *connected.conn;
  guard.attach(parser);
  std::array<char, kPiece> piece;
  bool starved = false;  // the head's read ended at the head's end, not wanting more
  // A chunked body is framed again part by part (write_chunk); any other leaves as it
  // came, after a head written by hand (head_writer.h).
  scratch.clear();
  append_head(scratch, fwd.base());
  // The head goes out with the first part of the body, so a request that arrived whole
  // (the usual case) is forwarded in one write.
  const Steady::time_point start = Steady::now();
  std::uint64_t received = 0;
  for (bool first = true; first || !parser.is_done(); first = false) {
    std::size_t n = 0;
    if (!parser.is_done()) {
      // The first part is only what is already buffered: the head is not held back
      // waiting for a slow client's body.
      if (auto rec = co_await read_piece(client, buffer, parser, starved, piece, !first, timeouts.client_read,
                                         body_deadline(start, timeouts.client_read, received))) {
        guard.read_failed(rec);
        co_return std::nullopt;  // the upstream sees a cut request
      }
      n = piece.size() - parser.get().body().size;
      received += n;
      if (parser.is_done() && !guard.finish(parser.get())) co_return std::nullopt;
    }
    const std::string_view head_bytes = first ? std::string_view(scratch) : std::string_view();
    const std::string_view part(piece.data(), n);
    up.stream().expires_after(timeouts.upstream);
    // Not `co_await (a ? f() : g())`: GCC 12 destroys such a temporary awaitable twice.
    beast::error_code wec;
    if (fwd.chunked())
      wec = co_await write_chunk(up.stream(), head_bytes, part, parser.is_done());
    else
      wec = co_await write_raw(up.stream(), head_bytes, part);
    if (wec) co_return fail(Problem::upstream_unavailable, "the upstream closed the connection");
  }
  body_complete = true;

  UpstreamResult r = co_await upstream.receive(std::move(up), head, Steady::now() + timeouts.upstream, 0);
  if (r.kind != UpstreamResult::Kind::response)
    co_return fail(
        r.kind == UpstreamResult::Kind::timeout ? Problem::upstream_timeout : Problem::upstream_unavailable,
        "the upstream did not answer");
  const bool streamed = r.tail != nullptr;
  co_return Answer{make_client_response(std::move(r.response), version, keep_alive, head, streamed),
                   std::move(r.tail)};
}

#define IDEM_RELAY(Stream)                                                                                  \
  template awaitable<bool> write_answer(Stream&, Answer&, Steady::duration, std::string&);                  \
  template awaitable<std::optional<Answer>> relay_request(Stream&, beast::flat_buffer&, StreamParser&,      \
                                                          ChunkGuard&, UpstreamClient&, const RequestMeta&, \
                                                          RelayTimeouts, bool&, std::string&);
IDEM_RELAY(beast::tcp_stream)
IDEM_RELAY(TlsStream)
#undef IDEM_RELAY

}  // namespace idem::gateway
