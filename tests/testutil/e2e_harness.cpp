#include "testutil/e2e_harness.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>

namespace idem::e2e {
namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;

namespace {

int loopback_socket(unsigned short port, bool reuse) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int on = 1;
  if (reuse) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The sockets that hold the ports free_port handed out, by port.
std::map<unsigned short, int>& reservations() {
  static std::map<unsigned short, int> held;
  return held;
}

}  // namespace

unsigned short free_port() {
  // A random port below the kernel's ephemeral range (32768 and up), so that no outgoing
  // connection of a test running alongside takes it; and away from the ports
  // scripts/services uses.
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  for (;;) {
    const auto port = static_cast<unsigned short>(std::uniform_int_distribution<int>(20000, 24999)(rng));
    // Free when a bind without SO_REUSEADDR succeeds: no socket anywhere holds it.
    const int probe = loopback_socket(port, false);
    if (probe < 0) continue;
    ::close(probe);
    // Held, bound and not listening, by a socket with SO_REUSEADDR: a server that sets it
    // too (idem, Redis, Asio's acceptors) binds and listens there, while every other
    // test's probe fails, and connecting before a server listens is refused.
    const int held = loopback_socket(port, true);
    if (held < 0) continue;  // taken between the two binds
    reservations()[port] = held;
    return port;
  }
}

void release_port(unsigned short port) {
  auto& held = reservations();
  if (auto it = held.find(port); it != held.end()) {
    ::close(it->second);
    held.erase(it);
  }
}

Process::Process(std::vector<std::string> argv, const std::string& log_file, bool read_port) {
  int out[2];
  if (read_port && ::pipe(out) != 0) std::abort();
  pid_ = ::fork();
  if (pid_ == 0) {
    int log = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(read_port ? out[1] : log, 1);
    ::dup2(log, 2);
    if (read_port) {
      ::close(out[0]);
      ::close(out[1]);
    }
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::_Exit(127);
  }
  if (read_port) {
    ::close(out[1]);
    std::string line;
    char c;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
    port_ = static_cast<unsigned short>(std::atoi(line.c_str()));
    // Keep the pipe's read end open: the child may print more.
  }
}

Process::~Process() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void Process::signal(int sig) const { ::kill(pid_, sig); }

int Process::wait(int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

int run(const std::vector<std::string>& argv, std::string* output) {
  std::string cmd;
  for (const auto& a : argv) cmd += "'" + a + "' ";
  cmd += "2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    if (output) output->append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

namespace {

// Status 0: no answer. The body says what failed, for a test's failure message.
Response failed(std::string why) {
  Response r;
  r.result(0u);
  r.body() = std::move(why);
  return r;
}

// Runs one asynchronous operation of `stream` to its end: the stream's expiry bounds it
// (blocking socket calls would wait for ever: Asio polls again after SO_RCVTIMEO).
template <typename Start>
beast::error_code run_one(asio::io_context& ioc, beast::tcp_stream& stream, std::chrono::milliseconds timeout,
                          Start start) {
  beast::error_code result;
  stream.expires_after(timeout);
  start([&](beast::error_code ec, std::size_t) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

}  // namespace

Response request(unsigned short port, http::verb method, const std::string& target, const Headers& headers,
                 const std::string& body, std::chrono::milliseconds timeout) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  beast::error_code ec;
  stream.socket().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return failed("connect: " + ec.message());
  http::request<http::string_body> req{method, target, 11};
  for (const auto& [k, v] : headers) req.insert(k, v);
  if (req.count(http::field::host) == 0) req.set(http::field::host, "127.0.0.1");
  req.body() = body;
  req.keep_alive(false);
  req.prepare_payload();
  // On a failed write the server may still have answered (413).
  const beast::error_code wrote =
      run_one(ioc, stream, timeout, [&](auto handler) { http::async_write(stream, req, handler); });
  beast::flat_buffer buffer;
  for (;;) {  // interim (1xx) answers such as 100 Continue come before the final one
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    if (method == http::verb::head) parser.skip(true);
    ec = run_one(ioc, stream, timeout,
                 [&](auto handler) { http::async_read(stream, buffer, parser, handler); });
    if (ec)
      return failed("read: " + ec.message() + " (write: " + (wrote ? wrote.message() : "ok") + ", " +
                    std::to_string(buffer.size()) + " bytes unparsed)");
    if (parser.get().result_int() >= 200) return parser.release();
  }
}

std::vector<std::string> under_libfaketime(std::vector<std::string> argv, const std::string& offset,
                                           const std::string& timestamp_file) {
  // libfaketime is preloaded ahead of the sanitizer runtimes in ASan builds: allow it.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string options =
      std::string(asan ? asan : "") + (asan && *asan ? ":" : "") + "verify_asan_link_order=0";
  // env execs the program itself (the faketime command would fork it, and killing the
  // wrapper would leave the program running).
  std::vector<std::string> env{"/usr/bin/env", "ASAN_OPTIONS=" + options,
                               "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"};
  if (!offset.empty()) {
    env.push_back("FAKETIME=" + offset);
  } else {
    // Read on every call (no cache), and only the wall clock moves: steady_clock is the
    // process's own.
    env.insert(env.end(), {"FAKETIME_TIMESTAMP_FILE=" + timestamp_file, "FAKETIME_NO_CACHE=1",
                           "FAKETIME_DONT_FAKE_MONOTONIC=1"});
  }
  argv.insert(argv.begin(), env.begin(), env.end());
  return argv;
}

std::string raw_exchange(unsigned short port, const std::string& bytes) {
  asio::io_context ioc;
  tcp::socket socket(ioc);
  beast::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return {};
  timeval tv{5, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  asio::write(socket, asio::buffer(bytes), ec);
  std::string out;
  char buf[4096];
  for (;;) {
    std::size_t n = socket.read_some(asio::buffer(buf), ec);
    if (ec) break;
    out.append(buf, n);
  }
  return out;
}

void send_and_close(unsigned short port, const std::string& bytes) {
  asio::io_context ioc;
  tcp::socket socket(ioc);
  beast::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return;
  asio::write(socket, asio::buffer(bytes), ec);
  socket.close(ec);
}

bool wait_healthy(unsigned short admin_port, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    if (request(admin_port, http::verb::get, "/healthz").result_int() == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string temp_dir() {
  std::string t = "/tmp/idem-e2e-XXXXXX";
  if (!::mkdtemp(t.data())) std::abort();
  return t;
}

void remove_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace idem::e2e
