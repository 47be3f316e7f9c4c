#include "cli/service_notify.h"

#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/http/io_pool.h"
#include "util/asio_tokens.h"

namespace asio = boost::asio;

namespace idem::cli {
namespace {

bool supervised() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  return socket != nullptr && *socket != '\0';
}

// One state line for systemd: a newline would start another assignment, so none passes.
std::string one_line(std::string_view text) {
  std::string s(text);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

void send(const std::string& state) {
  if (!supervised()) return;
  (void)::sd_notify(0, state.c_str());
}

// One round through io contexts i, i+1, ... of the pool; the last marks the round done.
// The handlers hold only pointers: one left unrun when the pool stops is dropped harmlessly.
void visit(gateway::IoPool& pool, std::size_t i, std::atomic<bool>& done) {
  if (i >= pool.size()) {
    done.store(true);
    return;
  }
  asio::post(pool.at(i), [&pool, i, &done] { visit(pool, i + 1, done); });
}

// Each tick pings if the round that the last tick sent through the other threads came back
// (main() itself runs the timer), and sends the next one.
asio::awaitable<void> ping(gateway::IoPool& pool, std::chrono::microseconds interval) {
  std::atomic<bool> round_done{true};
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    if (round_done.exchange(false)) {
      send("WATCHDOG=1");
      visit(pool, 1, round_done);
    }
    timer.expires_after(interval);
    auto [ec] = co_await timer.async_wait(util::kUseTuple);
    if (ec) co_return;
  }
}

}  // namespace

void notify_ready(std::string_view status) {
  send("READY=1\nMAINPID=" + std::to_string(::getpid()) + "\nSTATUS=" + one_line(status));
}

void notify_reloading() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const auto usec =
      static_cast<std::uint64_t>(now.tv_sec) * 1000000u + static_cast<std::uint64_t>(now.tv_nsec) / 1000u;
  send("RELOADING=1\nSTATUS=reloading the configuration\nMONOTONIC_USEC=" + std::to_string(usec));
}

void notify_stopping() { send("STOPPING=1\nSTATUS=draining: finishing the requests in flight"); }

long long start_watchdog(gateway::IoPool& pool) {
  if (!supervised()) return 0;
  std::uint64_t usec = 0;
  const int r = ::sd_watchdog_enabled(0, &usec);
  if (r < 0) {
    std::cerr << "idem: ignoring the watchdog settings (WATCHDOG_USEC, WATCHDOG_PID): unreadable"
              << std::endl;
    return 0;
  }
  if (r == 0 || usec == 0) return 0;
  // Half the interval, as sd_watchdog_enabled(3) advises; never a busy loop.
  const auto interval = std::chrono::microseconds(std::max<std::uint64_t>(usec / 2, 1000));
  asio::co_spawn(pool.main(), ping(pool, interval), asio::detached);
  return static_cast<long long>(usec);
}

}  // namespace idem::cli
