#include "gateway/http/relay.h"

#include <array>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>

namespace idem::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;
using Steady = std::chrono::steady_clock;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kPiece = 16 * 1024;

// One step of a serializer whose buffer_body is fed piece by piece: need_buffer means the
// piece is written and the next one is wanted.
template <class Serializer>
awaitable<bool> write_piece(beast::tcp_stream& stream, Serializer& sr, Steady::duration timeout) {
  stream.expires_after(timeout);
  auto [ec, n] = co_await http::async_write(stream, sr, kTuple);
  co_return !ec || ec == http::error::need_buffer;
}

}  // namespace

awaitable<bool> write_answer(beast::tcp_stream& client, Answer& answer, Steady::duration write_timeout) {
  if (!answer.tail) {
    client.expires_after(write_timeout);
    auto [ec, n] = co_await http::async_write(client, answer.response, kTuple);
    co_return !ec && answer.response.keep_alive();
  }
  http::response<http::buffer_body> out;
  out.base() = answer.response.base();
  if (out.find(http::field::content_length) == out.end()) {
    if (out.version() >= 11)
      out.chunked(true);
    else
      out.keep_alive(false);  // an HTTP/1.0 client reads to the end of the connection
  }
  http::response_serializer<http::buffer_body> sr{out};
  std::string& prefix = answer.response.body();
  out.body().data = prefix.empty() ? nullptr : prefix.data();
  out.body().size = prefix.size();
  out.body().more = true;
  if (!co_await write_piece(client, sr, write_timeout)) co_return false;
  std::array<char, kPiece> piece;
  while (!answer.tail->done()) {
    auto [ec, n] = co_await answer.tail->read(piece.data(), piece.size());
    if (ec) co_return false;
    out.body().data = n ? piece.data() : nullptr;
    out.body().size = n;
    out.body().more = !answer.tail->done();
    if (!co_await write_piece(client, sr, write_timeout)) co_return false;
  }
  co_return out.keep_alive();
}

awaitable<std::optional<Answer>> relay_request(beast::tcp_stream& client, beast::flat_buffer& buffer,
                                               StreamParser& parser, ChunkGuard& guard,
                                               UpstreamClient& upstream, RelayTimeouts timeouts,
                                               bool& body_complete) {
  const auto& in = parser.get();
  const unsigned version = in.version();
  const bool keep_alive = in.keep_alive();
  const bool head = in.method() == http::verb::head;
  body_complete = parser.is_done();
  auto fail = [&](Problem p, std::string_view detail) {
    return Answer{problem_response(p, detail, version, keep_alive && body_complete)};
  };

  http::request<http::buffer_body> fwd;
  fwd.base() = in.base();
  prepare_forward_head(fwd.base(), upstream.url());
  if (parser.chunked())
    fwd.chunked(true);
  else if (auto length = parser.content_length())
    fwd.content_length(*length);
  else if (in.method() == http::verb::post || in.method() == http::verb::put ||
           in.method() == http::verb::patch)
    fwd.content_length(0);

  auto connected = co_await upstream.connect(Steady::now() + timeouts.upstream);
  if (!connected.conn) co_return fail(Problem::upstream_unavailable, "the upstream is unavailable");
  UpstreamConnection& up = *connected.conn;
  http::request_serializer<http::buffer_body> sr{fwd};
  fwd.body().data = nullptr;
  fwd.body().more = !parser.is_done();
  if (!co_await write_piece(up.stream, sr, timeouts.upstream))
    co_return fail(Problem::upstream_unavailable, "the upstream closed the connection");

  guard.attach(parser);
  std::array<char, kPiece> piece;
  while (!parser.is_done()) {
    auto& body = parser.get().body();
    body.data = piece.data();
    body.size = piece.size();
    client.expires_after(timeouts.client_read);
    auto [rec, rn] = co_await http::async_read_some(client, buffer, parser, kTuple);
    if (rec && rec != http::error::need_buffer) {
      guard.read_failed(rec);
      co_return std::nullopt;  // the upstream sees a cut request
    }
    if (parser.is_done() && !guard.finish(parser.get())) co_return std::nullopt;
    const std::size_t n = piece.size() - body.size;
    fwd.body().data = n ? piece.data() : nullptr;
    fwd.body().size = n;
    fwd.body().more = !parser.is_done();
    if (!co_await write_piece(up.stream, sr, timeouts.upstream))
      co_return fail(Problem::upstream_unavailable, "the upstream closed the connection");
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

}  // namespace idem::gateway
