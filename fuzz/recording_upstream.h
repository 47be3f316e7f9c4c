// The upstream of server_fuzz, in-process: a raw TCP server on 127.0.0.1, port 0, on an
// io_context and thread of its own. It reads what the gateway sends with Beast's request
// parser and checks every message strictly (http1.h: check_sent_head and, for a chunked
// body, check_sent_chunked_body); a message Beast cannot parse or that fails the check is a
// finding (abort, reported with the input the fuzzer is running). Each complete request is
// recorded, then answered 200 with a fixed body (none for HEAD), keep-alive as asked. A
// message cut short by the end of its connection is not a request received: the gateway
// may abandon a request it streams when its client goes away.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "fuzz/fuzz_check.h"
#include "fuzz/http1.h"

namespace idem::fuzz {

// A request as the upstream received it: field names in lower case, the body decoded.
struct Received {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> fields;
  std::string body;
  std::size_t count(std::string_view name) const {
    std::size_t n = 0;
    for (const auto& f : fields) n += http1::iequals(f.first, name) ? 1 : 0;
    return n;
  }
};

// Bytes as printable text for a finding's report.
inline std::string escaped(std::string_view bytes, std::size_t limit = 2048) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes.substr(0, limit)) {
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (bytes.size() > limit) out += "...";
  return out;
}

class RecordingUpstream {
 public:
  static constexpr std::string_view kBody = "upstream ok\n";

  // `observe`, when given, sees each request on the upstream's thread as it is recorded,
  // before it is answered.
  explicit RecordingUpstream(std::function<void(const Received&)> observe = {})
      : observe_(std::move(observe)), acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    boost::asio::co_spawn(ioc_, accept_loop(), boost::asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  RecordingUpstream(const RecordingUpstream&) = delete;
  RecordingUpstream& operator=(const RecordingUpstream&) = delete;
  ~RecordingUpstream() {
    ioc_.stop();
    thread_.join();
  }

  unsigned short port() const { return acceptor_.local_endpoint().port(); }

  // The requests received since the last call, in the order they completed.
  std::vector<Received> take() {
    std::lock_guard lock(mu_);
    return std::exchange(received_, {});
  }
  // Messages begun (some bytes read) but neither complete nor abandoned.
  int partial() const { return partial_.load(); }

 private:
  using tcp = boost::asio::ip::tcp;
  static constexpr auto kTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

  boost::asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(kTuple);
      if (ec) co_return;
      boost::asio::co_spawn(ioc_, serve(std::move(socket)), boost::asio::detached);
    }
  }

  boost::asio::awaitable<void> serve(tcp::socket socket) {
    namespace http = boost::beast::http;
    std::string raw;     // bytes read and not yet parsed, from the start of the current message
    bool begun = false;  // raw holds part of a message: counted in partial_
    const auto set_begun = [&](bool b) {
      if (b != begun) partial_.fetch_add(b ? 1 : -1);
      begun = b;
    };
    std::array<char, 16 * 1024> chunk;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(1024 * 1024);
      parser.body_limit(64 * 1024 * 1024);
      parser.eager(false);  // stop after the head, to know where it ends
      std::size_t pos = 0, head_end = 0;
      while (!parser.is_done()) {
        if (pos < raw.size()) {
          boost::beast::error_code ec;
          const std::size_t n = parser.put(boost::asio::buffer(raw.data() + pos, raw.size() - pos), ec);
          pos += n;
          // The gateway streams what it does not protect, whatever length the client
          // declared: a Content-Length beyond what this upstream records (2e17, say) is
          // forwarded as it is, and the message cannot complete within the input.
          if (ec == http::error::body_limit) {
            set_begun(false);
            co_return;
          }
          if (ec && ec != http::error::need_more)
            check(false,
                  "the upstream cannot parse what the gateway sent:", ec.message() + ": " + escaped(raw));
          if (parser.is_header_done() && head_end == 0) {
            head_end = pos;
            parser.eager(true);
          }
          if (n > 0 && !ec) continue;
        }
        auto [ec, n] = co_await socket.async_read_some(boost::asio::buffer(chunk), kTuple);
        if (ec) {
          set_begun(false);
          co_return;  // closed, possibly mid-message: an abandoned message is not a request
        }
        raw.append(chunk.data(), n);
        set_begun(true);
      }
      const std::string_view bytes(raw);
      std::string wrong = http1::check_sent_head(bytes.substr(0, head_end));
      if (wrong.empty() && parser.chunked())
        wrong = http1::check_sent_chunked_body(bytes.substr(head_end, pos - head_end));
      check(wrong.empty(), "the gateway sent the upstream a malformed request:",
            wrong + ": " + escaped(bytes.substr(0, pos)));

      const auto& req = parser.get();
      Received r{std::string(req.method_string()), std::string(req.target()), {}, req.body()};
      for (const auto& f : req)
        r.fields.emplace_back(http1::lowered(f.name_string()), std::string(f.value()));
      const bool head = req.method() == http::verb::head;
      const bool keep = req.keep_alive();
      {
        std::lock_guard lock(mu_);
        if (observe_) observe_(r);
        received_.push_back(std::move(r));
      }
      raw.erase(0, pos);
      set_begun(!raw.empty());

      std::string res =
          "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(kBody.size()) +
          "\r\n" + (keep ? "" : "Connection: close\r\n") + "\r\n";
      if (!head) res += kBody;
      auto [wec, wn] = co_await boost::asio::async_write(socket, boost::asio::buffer(res), kTuple);
      if (wec || !keep) {
        set_begun(false);
        co_return;
      }
    }
  }

  std::function<void(const Received&)> observe_;
  boost::asio::io_context ioc_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Received> received_;  // guarded by mu_
  std::atomic<int> partial_{0};
};

}  // namespace idem::fuzz
