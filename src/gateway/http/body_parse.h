// Reading a message body piece by piece into a buffer_body parser, from bytes already
// buffered and from the socket.
//
// Beast's parser, once it has answered need_more, must next be given more bytes than it
// was given (it asserts so: a final chunk whose trailer section is cut, "0\r\n\r", is one
// such place), and Beast's own reads offer the buffer to the parser before they read. So
// a body parse that stopped at need_more remembers it (`starved`) and reads before it
// parses again.
#pragma once

#include <algorithm>
#include <cstddef>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>

#include "util/asio_tokens.h"

namespace idem::gateway {

template <bool isRequest>
using BodyParser = boost::beast::http::parser<isRequest, boost::beast::http::buffer_body>;

// Parses what `buffer` holds into the parser's buffer_body (its data and size, set by the
// caller, say where and how much), unless the parser has seen all of it (`starved`, which
// it sets when the parser wants more). The piece being full (need_buffer) is not an error.
// Returns the bytes of `buffer` used.
template <bool isRequest>
std::size_t parse_buffered(boost::beast::flat_buffer& buffer, BodyParser<isRequest>& parser, bool& starved,
                           boost::beast::error_code& ec) {
  namespace http = boost::beast::http;
  ec = {};
  if (starved || buffer.size() == 0 || parser.is_done()) return 0;
  const std::size_t used = parser.put(buffer.data(), ec);
  buffer.consume(used);
  starved = ec == http::error::need_more;
  if (starved || ec == http::error::need_buffer) ec = {};
  return used;
}

// The next part of a body, as parse_buffered; then, with `wait`, read from `stream` until
// some of the body, its end or an error arrives. Without `wait` it never blocks. The end
// of the stream is an error except where it ends the body.
template <bool isRequest, class Stream>
boost::asio::awaitable<boost::beast::error_code> parse_body_some(Stream& stream,
                                                                 boost::beast::flat_buffer& buffer,
                                                                 BodyParser<isRequest>& parser, bool& starved,
                                                                 bool wait) {
  constexpr std::size_t kReadSize = 16 * 1024;
  const std::size_t room_before = parser.get().body().size;
  for (;;) {
    boost::beast::error_code ec;
    const std::size_t used = parse_buffered(buffer, parser, starved, ec);
    const std::size_t room_now = parser.get().body().size;
    if (ec || parser.is_done() || room_now != room_before || room_now == 0) co_return ec;
    if (used > 0 && !starved) continue;  // a chunk's head, parsed without a byte of its data
    if (!wait) co_return ec;
    const std::size_t room = std::min(kReadSize, buffer.max_size() - buffer.size());
    if (room == 0) co_return boost::beast::error_code(boost::beast::http::error::buffer_overflow);
    auto [rec, n] = co_await stream.async_read_some(buffer.prepare(room), util::kUseTuple);
    buffer.commit(n);
    if (n > 0) starved = false;
    if (rec == boost::asio::error::eof) {  // everything read before it was parsed above
      parser.put_eof(rec);  // a body that runs to the end of the stream ends here; any other is cut
      co_return rec;
    }
    if (rec) co_return rec;
  }
}

}  // namespace idem::gateway
