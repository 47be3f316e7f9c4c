#include "gateway/http/head_writer.h"

#include <array>
#include <charconv>

#include <boost/asio/buffer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "gateway/http/tls_stream.h"
#include "gateway/http/upstream_stream.h"
#include "util/asio_tokens.h"

namespace idem::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;

namespace {

// A scratch buffer that grew past this for an unusual head is given back afterwards.
constexpr std::size_t kKeptScratch = 16 * 1024;

void append_version(std::string& out, unsigned version) {
  out.append("HTTP/", 5);
  out += static_cast<char>('0' + version / 10);
  out += '.';
  out += static_cast<char>('0' + version % 10);
}

void append_fields(std::string& out, const http::fields& fields) {
  for (const auto& f : fields) {
    out += f.name_string();
    out.append(": ", 2);
    out += f.value();
    out.append("\r\n", 2);
  }
  out.append("\r\n", 2);
}

template <class Stream, class Message>
asio::awaitable<beast::error_code> write_whole(Stream& stream, const Message& message, std::string& scratch) {
  if (message.chunked()) {
    auto [ec, n] = co_await http::async_write(stream, message, util::kUseTuple);
    co_return ec;
  }
  scratch.clear();
  append_head(scratch, message.base());
  auto ec = co_await write_raw(stream, scratch, message.body());
  if (scratch.capacity() > kKeptScratch) std::string().swap(scratch);
  co_return ec;
}

}  // namespace

void append_head(std::string& out, const http::request_header<>& head) {
  out += head.method_string();
  out += ' ';
  out += head.target();
  out += ' ';
  append_version(out, head.version());
  out.append("\r\n", 2);
  append_fields(out, head);
}

void append_head(std::string& out, const http::response_header<>& head) {
  append_version(out, head.version());
  const unsigned code = head.result_int();
  out += ' ';
  out += static_cast<char>('0' + code / 100 % 10);
  out += static_cast<char>('0' + code / 10 % 10);
  out += static_cast<char>('0' + code % 10);
  out += ' ';
  const auto reason = head.reason();
  out += reason.empty() ? http::obsolete_reason(static_cast<http::status>(code)) : reason;
  out.append("\r\n", 2);
  append_fields(out, head);
}

template <class Stream>
asio::awaitable<beast::error_code> write_message(Stream& stream, const HttpResponse& message,
                                                 std::string& scratch) {
  return write_whole(stream, message, scratch);
}

template <class Stream>
asio::awaitable<beast::error_code> write_raw(Stream& stream, std::string_view head_bytes,
                                             std::string_view body) {
  const std::array<asio::const_buffer, 2> parts{asio::buffer(head_bytes.data(), head_bytes.size()),
                                                asio::buffer(body.data(), body.size())};
  auto [ec, n] = co_await asio::async_write(stream, parts, util::kUseTuple);
  co_return ec;
}

template <class Stream>
asio::awaitable<beast::error_code> write_chunk(Stream& stream, std::string_view head_bytes,
                                               std::string_view body, bool last) {
  static constexpr std::string_view kCrlf = "\r\n";
  static constexpr std::string_view kLastChunk = "0\r\n\r\n";
  std::array<char, 24> size;  // 16 hex digits and CRLF at most
  char* end = size.data();
  if (!body.empty()) {
    end = std::to_chars(size.data(), size.data() + 16, body.size(), 16).ptr;
    *end++ = '\r';
    *end++ = '\n';
  }
  const std::array<asio::const_buffer, 5> parts{
      asio::buffer(head_bytes.data(), head_bytes.size()),
      asio::buffer(size.data(), static_cast<std::size_t>(end - size.data())),
      asio::buffer(body.data(), body.size()), asio::buffer(kCrlf.data(), body.empty() ? 0 : kCrlf.size()),
      asio::buffer(kLastChunk.data(), last ? kLastChunk.size() : 0)};
  auto [ec, n] = co_await asio::async_write(stream, parts, util::kUseTuple);
  co_return ec;
}

#define IDEM_HEAD_WRITERS(Stream)                                                                        \
  template asio::awaitable<beast::error_code> write_message(Stream&, const HttpResponse&, std::string&); \
  template asio::awaitable<beast::error_code> write_raw(Stream&, std::string_view, std::string_view);    \
  template asio::awaitable<beast::error_code> write_chunk(Stream&, std::string_view, std::string_view, bool);
IDEM_HEAD_WRITERS(beast::tcp_stream)
IDEM_HEAD_WRITERS(TlsStream)
IDEM_HEAD_WRITERS(UpstreamStream)
#undef IDEM_HEAD_WRITERS

}  // namespace idem::gateway
