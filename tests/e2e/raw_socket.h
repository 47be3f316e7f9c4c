// A raw client socket and idem's resident set, for the end-to-end tests that attack the
// HTTP edge with bytes no HTTP client would send (edge_test.cpp, tokens_e2e_test.cpp).
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

namespace idem::e2e {

// Under AddressSanitizer (the asan preset builds idem with it too) freed memory waits in a
// quarantine of up to 256 MiB instead of being reused, so the resident set measures the
// sanitizer, not what idem holds: memory bounds are asserted in the release build only
// (the behaviour around them in both).
// (GCC says so with __SANITIZE_ADDRESS__, clang with __has_feature.)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IDEM_E2E_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(IDEM_E2E_ASAN)
constexpr long kMemoryFactor = 1L << 20;
#else
constexpr long kMemoryFactor = 1;
#endif

// idem's resident set in KiB (VmRSS of /proc/PID/status).
inline long rss_kib(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  return -1;
}

// The CPU time idem's threads have used, in nanoseconds (the first field of each
// /proc/PID/task/TID/schedstat; /proc/PID/stat counts in 10 ms ticks).
inline std::uint64_t cpu_ns(int pid) {
  std::uint64_t total = 0;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    std::ifstream f(task.path() / "schedstat");
    std::uint64_t ns = 0;
    if (f >> ns) total += ns;
  }
  return total;
}

// A raw client connection with a receive timeout (blocking calls only, so every
// connection shares one io_context).
class Raw {
  using tcp = boost::asio::ip::tcp;

 public:
  // `from`: the loopback address to connect from (idem counts connections and bodies per
  // client address).
  explicit Raw(unsigned short port, int timeout_ms = 5000, const char* from = "127.0.0.1") : socket_(ioc()) {
    socket_.open(tcp::v4());
    socket_.bind(tcp::endpoint(boost::asio::ip::make_address(from), 0));
    socket_.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  // False once the peer stopped taking bytes (it answered and closed).
  bool send(std::string_view bytes) {
    boost::system::error_code ec;
    boost::asio::write(socket_, boost::asio::buffer(bytes.data(), bytes.size()), ec);
    return !ec;
  }
  // What arrives within `wait_ms` (what one read returns), or "".
  std::string read_within(int wait_ms) {
    pollfd p{socket_.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, wait_ms) != 1) return {};
    char buf[4096];
    const ssize_t n = ::recv(socket_.native_handle(), buf, sizeof buf, MSG_DONTWAIT);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }
  // Whether the peer has closed (or reset) the connection, without waiting.
  bool closed_by_peer() {
    char byte;
    const ssize_t n = ::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  void shutdown_send() {
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
  }
  // Whatever arrives until the peer closes or the timeout passes.
  std::string read_all() {
    std::string out;
    char buf[4096];
    for (;;) {
      boost::system::error_code ec;
      const std::size_t n = socket_.read_some(boost::asio::buffer(buf), ec);
      if (ec) return out;
      out.append(buf, n);
    }
  }
  // Reads until `needle` has arrived (true) or the peer closes / times out (false).
  bool read_until(std::string& out, std::string_view needle) {
    while (out.find(needle) == std::string::npos)
      if (!read_some(out)) return false;
    return true;
  }
  // Appends what arrives next (at least a byte) to `out`; false when the peer closed or
  // the timeout passed.
  bool read_some(std::string& out) {
    char buf[4096];
    boost::system::error_code ec;
    const std::size_t n = socket_.read_some(boost::asio::buffer(buf), ec);
    if (ec) return false;
    out.append(buf, n);
    return true;
  }

  // One response framed by Content-Length (what remains after it stays in `rest`); empty
  // when the peer closes or times out first.
  std::string read_response(std::string& rest) {
    std::string out = std::move(rest);
    rest.clear();
    if (!read_until(out, "\r\n\r\n")) return {};
    const std::size_t head = out.find("\r\n\r\n") + 4;
    const std::size_t at = out.find("Content-Length: ");
    const std::size_t length = at < head ? std::stoul(out.substr(at + 16)) : 0;
    char buf[4096];
    while (out.size() < head + length) {
      boost::system::error_code ec;
      const std::size_t n = socket_.read_some(boost::asio::buffer(buf), ec);
      if (ec) return {};
      out.append(buf, n);
    }
    rest = out.substr(head + length);
    out.resize(head + length);
    return out;
  }

 private:
  static boost::asio::io_context& ioc() {
    static boost::asio::io_context ioc;
    return ioc;
  }
  tcp::socket socket_;
};

}  // namespace idem::e2e
