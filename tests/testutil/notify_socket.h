// A unix datagram socket standing in for systemd's notification socket (NOTIFY_SOCKET),
// and an environment variable set for the length of a scope.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace idem::testutil {

class NotifySocket {
 public:
  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (fd_ < 0 || path_.size() >= sizeof(addr.sun_path)) throw std::runtime_error("notify socket: " + path_);
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0)
      throw std::runtime_error("notify socket: cannot bind " + path_);
  }
  ~NotifySocket() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& path() const { return path_; }

  // The next datagram, or nothing when none arrives within `timeout`.
  std::optional<std::string> next(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<std::size_t>(n));
  }

  // Datagrams until one holds the line `line`: that datagram, or nothing at `timeout`.
  std::optional<std::string> until(std::string_view line, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      auto d = next(left);
      if (!d) return std::nullopt;
      if (has_line(*d, line)) return d;
    }
  }

  static bool has_line(std::string_view datagram, std::string_view line) {
    std::size_t at = 0;
    while (at <= datagram.size()) {
      std::size_t end = datagram.find('\n', at);
      if (end == std::string_view::npos) end = datagram.size();
      if (datagram.substr(at, end - at) == line) return true;
      at = end + 1;
    }
    return false;
  }

  // The value of `name=` in a datagram, empty when absent.
  static std::string value(std::string_view datagram, std::string_view name) {
    std::size_t at = 0;
    while (at < datagram.size()) {
      std::size_t end = datagram.find('\n', at);
      if (end == std::string_view::npos) end = datagram.size();
      std::string_view l = datagram.substr(at, end - at);
      if (l.size() > name.size() && l.substr(0, name.size()) == name && l[name.size()] == '=')
        return std::string(l.substr(name.size() + 1));
      at = end + 1;
    }
    return {};
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// Sets an environment variable (inherited by the processes started meanwhile) until the
// end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace idem::testutil
