// A redis-server of the test's own, on a free loopback port, for tests that need settings
// the shared servers must not get (an eviction policy, a replica to stop) or a server to
// kill. Stopped (SIGKILL) when the object goes. Needs hiredis in the test binary.
#pragma once

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "testutil/temp_dir.h"

extern char** environ;

namespace idem::testutil {

struct RedisServerOptions {
  // The text of a config file read before the arguments (a sentinel's `sentinel monitor`
  // lines: a sentinel rewrites its config file, so it must have one).
  std::string config;
  bool sentinel = false;  // run as a Redis Sentinel (redis-server --sentinel)
};

class RedisServer {
 public:
  using Options = RedisServerOptions;

  // Starts redis-server with `args` after its own (port, bind, no persistence, a log file
  // in a temporary directory), on `port` (0: a free one). started() is false when
  // redis-server is not installed or did not answer PING within 10 s (a server that asks
  // for a password counts as answering).
  explicit RedisServer(std::vector<std::string> args = {}, std::uint16_t port = 0,
                       const Options& options = {}) {
    const char* binary = nullptr;
    for (const char* candidate : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
      if (::access(candidate, X_OK) == 0) binary = candidate;
    }
    if (!binary) return;
    port_ = port != 0 ? port : pick_port();
    std::vector<std::string> argv = {binary};
    if (!options.config.empty() || options.sentinel) {
      const std::string file = (dir_.path() / "redis.conf").string();
      std::FILE* f = std::fopen(file.c_str(), "w");
      if (!f) return;
      std::fputs(options.config.c_str(), f);
      std::fclose(f);
      argv.push_back(file);
      if (options.sentinel) argv.push_back("--sentinel");
    }
    argv.insert(argv.end(),
                {"--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", dir_.path().string(), "--logfile", "redis.log", "--daemonize", "no"});
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    if (posix_spawn(&pid_, binary, &actions, nullptr, raw.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    if (pid_ <= 0) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      try {
        if (const std::string pong = command({"PING"}); pong == "PONG" || pong.starts_with("NOAUTH")) {
          started_ = true;
          return;
        }
      } catch (const std::exception&) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~RedisServer() { kill(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  bool started() const { return started_; }
  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Its temporary directory (its log is redis.log there).
  std::string dir() const { return dir_.path().string(); }

  // One command on a new connection; the reply as text (an integer in decimal, an error
  // or status as such). Throws when the server cannot be reached.
  std::string command(const std::vector<std::string>& argv) const {
    redisContext* c = redisConnect("127.0.0.1", port_);
    if (!c || c->err) {
      if (c) redisFree(c);
      throw std::runtime_error("cannot connect to redis on port " + std::to_string(port_));
    }
    std::vector<const char*> parts;
    std::vector<std::size_t> sizes;
    for (const auto& a : argv) {
      parts.push_back(a.data());
      sizes.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), parts.data(), sizes.data()));
    redisFree(c);
    if (!r) throw std::runtime_error("connection lost");
    std::string out = r->type == REDIS_REPLY_INTEGER ? std::to_string(r->integer)
                      : r->str                       ? std::string(r->str, r->len)
                                                     : std::string();
    freeReplyObject(r);
    return out;
  }

  // A random free port away from the shared services (scripts/services) and from the
  // range the gateway tests draw from (20000-24999).
  static std::uint16_t pick_port() {
    static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
    for (;;) {
      const auto port = static_cast<std::uint16_t>(std::uniform_int_distribution<int>(25000, 29999)(rng));
      redisContext* probe = redisConnect("127.0.0.1", port);
      const bool taken = probe && !probe->err;
      if (probe) redisFree(probe);
      if (!taken) return port;
    }
  }

  // SIGKILL, then reap.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    started_ = false;
  }

 private:
  TempDir dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  bool started_ = false;
};

}  // namespace idem::testutil
