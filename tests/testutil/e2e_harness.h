// Real processes for the gateway's end-to-end tests: the test upstream and `idem serve`
// on free ports, and a small blocking HTTP client.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <boost/beast/http.hpp>

namespace idem::e2e {

namespace http = boost::beast::http;
using Headers = std::vector<std::pair<std::string, std::string>>;
using Response = http::response<http::string_body>;

// A free TCP port on 127.0.0.1, held for the rest of the test process: bound with
// SO_REUSEADDR and not listening. A server that sets SO_REUSEADDR (idem, Redis, an Asio
// acceptor) can listen on it; connecting before one does is refused; and no test running
// alongside, nor a later free_port() call, picks it meanwhile.
unsigned short free_port();

// Closes free_port's hold on `port`, for a server that binds without SO_REUSEADDR.
void release_port(unsigned short port);

// A port where nothing listens until the test starts a server there (free_port's
// reservation, named for what the test means by it).
class HeldPort {
 public:
  HeldPort() : port_(free_port()) {}
  ~HeldPort() { release(); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  unsigned short port() const { return port_; }
  void release() { release_port(port_); }

 private:
  unsigned short port_ = 0;
};

// A child process; killed (SIGKILL) on destruction if still running.
class Process {
 public:
  // Runs argv[0] with argv; stdout and stderr are appended to `log_file`.
  // With `read_port`, the first line of stdout is read as a port number instead.
  Process(std::vector<std::string> argv, const std::string& log_file, bool read_port = false);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  int pid() const { return pid_; }
  unsigned short port() const { return port_; }
  void signal(int sig) const;
  // The exit code, or -1 when it did not exit within `timeout_ms` (or died of a signal).
  int wait(int timeout_ms);

 private:
  int pid_ = -1;
  unsigned short port_ = 0;
  bool reaped_ = false;
};

// Runs a command to completion; its exit code (stdout+stderr into `output`).
int run(const std::vector<std::string>& argv, std::string* output = nullptr);

// One request on a fresh connection (Connection: close); status 0 when the exchange failed
// or the server sent nothing for `timeout` (the body says which). Sends `Host: 127.0.0.1` unless
// `headers` name a Host of their own.
Response request(unsigned short port, http::verb method, const std::string& target,
                 const Headers& headers = {}, const std::string& body = "",
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));

// `argv` run under libfaketime (preloaded; env execs the program itself, so one process,
// whose pid is the program's): with `offset` ("-30s") a fixed offset, otherwise the wall
// clock read from `timestamp_file` on every call ("+0", "-3600"), which a test rewrites
// while the program runs. steady_clock is left alone either way.
std::vector<std::string> under_libfaketime(std::vector<std::string> argv, const std::string& offset,
                                           const std::string& timestamp_file = "");

// Sends raw bytes on one connection and reads until the server closes it (or 5 s pass).
std::string raw_exchange(unsigned short port, const std::string& bytes);

// Sends raw bytes on one connection and closes it at once, without reading an answer.
void send_and_close(unsigned short port, const std::string& bytes);

// Polls GET /healthz until it answers 200 (or `timeout_ms` pass).
bool wait_healthy(unsigned short admin_port, int timeout_ms);

// A fresh directory under /tmp; remove_dir deletes it and everything in it.
std::string temp_dir();
void remove_dir(const std::string& dir);
void write_file(const std::string& path, const std::string& text);
// The whole file, empty when it cannot be read (a log for a failure message).
std::string read_text(const std::string& path);

}  // namespace idem::e2e
