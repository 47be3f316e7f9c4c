// Heads written by hand (gateway/http/head_writer.h) are the bytes Beast's serializer
// writes, for requests and responses of every shape the gateway forwards, and a whole
// message leaves a socket exactly as Beast would have sent it, however the kernel splits
// the write.
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/http.hpp>

#include "gateway/http/head_writer.h"

namespace idem::gateway {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

template <class Message>
std::string beast_bytes(const Message& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

template <class Message>
std::string hand_bytes(const Message& m) {
  std::string out;
  append_head(out, m.base());
  return out + m.body();
}

HttpRequest request(std::string_view method, std::string_view target, unsigned version) {
  HttpRequest r;
  r.method_string(method);
  r.target(target);
  r.version(version);
  return r;
}

TEST(HeadWriter, RequestsAreWrittenAsBeastWritesThem) {
  HttpRequest post = request("POST", "/orders?x=1&y=%E4%B8%AD", 11);
  post.set(http::field::host, "shop.example");
  post.insert("Idempotency-Key", "order-1234567890123456789");
  post.insert("X-Custom", "");  // an empty value
  post.insert("x-custom", "second, with the other case");
  post.set(http::field::content_type, "application/json");
  post.body() = R"({"sku":"A1","qty":1})";
  post.prepare_payload();
  EXPECT_EQ(hand_bytes(post), beast_bytes(post));

  // A method Beast does not know keeps its spelling; HTTP/1.0; no fields at all.
  HttpRequest odd = request("PROPPATCH-X", "*", 10);
  EXPECT_EQ(hand_bytes(odd), beast_bytes(odd));
  EXPECT_TRUE(hand_bytes(odd).starts_with("PROPPATCH-X * HTTP/1.0\r\n\r\n"));
}

TEST(HeadWriter, ResponsesAreWrittenAsBeastWritesThem) {
  for (unsigned code : {100u, 200u, 201u, 204u, 304u, 409u, 422u, 499u, 599u, 999u}) {
    HttpResponse r{static_cast<http::status>(code), 11};
    r.set(http::field::content_type, "application/problem+json");
    r.insert("Idempotent-Replayed", "true");
    r.body() = code == 204 || code == 304 ? "" : "{\"n\":1}";
    r.prepare_payload();
    EXPECT_EQ(hand_bytes(r), beast_bytes(r)) << code;
  }
  HttpResponse custom{http::status::ok, 10};
  custom.reason("Fine Thanks");  // a reason phrase the upstream chose is kept
  EXPECT_EQ(hand_bytes(custom), beast_bytes(custom));
  EXPECT_TRUE(hand_bytes(custom).starts_with("HTTP/1.0 200 Fine Thanks\r\n"));
}

// What `write` sends on one end of a loopback connection, read at the other end until the
// writer closed.
std::string sent_by(
    const std::function<asio::awaitable<boost::beast::error_code>(boost::beast::tcp_stream&)>& write) {
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket reader(ioc);
  reader.connect(acceptor.local_endpoint());
  boost::beast::tcp_stream writer(acceptor.accept());
  auto done = asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<boost::beast::error_code> {
        auto ec = co_await write(writer);
        writer.close();
        co_return ec;
      },
      asio::use_future);
  std::string got;
  std::thread io([&] { ioc.run(); });
  boost::system::error_code ec;
  asio::read(reader, asio::dynamic_buffer(got), ec);
  io.join();
  EXPECT_FALSE(done.get());
  EXPECT_EQ(ec, asio::error::eof);
  return got;
}

// `m` written with write_message.
template <class Message>
std::string sent(const Message& m) {
  std::string scratch;
  return sent_by([&](boost::beast::tcp_stream& s) { return write_message(s, m, scratch); });
}

TEST(HeadWriter, AWholeMessageLeavesTheSocketAsBeastWouldSendIt) {
  HttpResponse big{http::status::ok, 11};
  big.set(http::field::content_type, "application/octet-stream");
  big.body().assign(4 * 1024 * 1024, 'x');  // more than one write of the kernel's buffer
  for (std::size_t i = 0; i < big.body().size(); i += 4093) big.body()[i] = static_cast<char>('a' + i % 26);
  big.prepare_payload();
  EXPECT_EQ(sent(big), beast_bytes(big));

  HttpResponse chunked{http::status::ok, 11};
  chunked.body() = "a body sent in chunks";
  chunked.chunked(true);  // framed by Beast's serializer
  EXPECT_EQ(sent(chunked), beast_bytes(chunked));
}

// A chunked body framed by hand part by part (write_chunk: how the relay sends a client's
// chunked body on, and a streamed answer to its client) is what Beast's serializer writes
// for a buffer_body fed the same parts: an empty part writes nothing, the last part ends
// with the last chunk.
TEST(HeadWriter, ChunksAreFramedAsBeastFramesThem) {
  HttpRequest head = request("POST", "/upload", 11);
  head.set(http::field::host, "shop.example");
  head.chunked(true);
  const std::vector<std::string> parts{"first part", "", std::string(70000, 'y'), "", "last"};
  for (const bool empty_last : {false, true}) {
    std::vector<std::string> these = parts;
    if (empty_last) these.emplace_back();
    const std::string by_hand =
        sent_by([&](boost::beast::tcp_stream& s) -> asio::awaitable<boost::beast::error_code> {
          std::string h;
          append_head(h, head.base());
          for (std::size_t i = 0; i < these.size(); ++i)
            if (auto ec = co_await write_chunk(s, i == 0 ? std::string_view(h) : std::string_view(), these[i],
                                               i + 1 == these.size()))
              co_return ec;
          co_return boost::beast::error_code{};
        });
    const std::string by_beast =
        sent_by([&](boost::beast::tcp_stream& s) -> asio::awaitable<boost::beast::error_code> {
          http::request<http::buffer_body> m;
          m.base() = head.base();
          http::request_serializer<http::buffer_body> sr{m};
          for (std::size_t i = 0; i < these.size(); ++i) {
            m.body().data = these[i].empty() ? nullptr : these[i].data();
            m.body().size = these[i].size();
            m.body().more = i + 1 < these.size();
            auto [ec, n] = co_await http::async_write(s, sr, asio::as_tuple(asio::use_awaitable));
            if (ec && ec != http::error::need_buffer) co_return ec;
          }
          co_return boost::beast::error_code{};
        });
    EXPECT_EQ(by_hand, by_beast) << (empty_last ? "an empty last part" : "a last part with bytes");
  }
}

}  // namespace
}  // namespace idem::gateway
