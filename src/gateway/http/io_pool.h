// The gateway's threads: one io_context per thread, each run by exactly that thread. A
// client connection is accepted onto one of them and lives there until it closes, with its
// upstream exchange and store answers, so its handlers need no strand and each scheduler
// runs without locks (measured against one io_context shared by every thread: see
// bench/gateway). Work that crosses threads (a store answering from its own thread, a
// waiter woken by another connection's commit) is posted to the connection's context.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace idem::gateway {

class IoPool {
 public:
  explicit IoPool(unsigned threads);
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  // The context of listeners, signals and timers that belong to no connection.
  boost::asio::io_context& main() noexcept { return *contexts_.front(); }
  // The context for a new connection, round robin.
  boost::asio::io_context& next() noexcept;
  std::size_t size() const noexcept { return contexts_.size(); }
  // Context i (0 is main()), for work that must visit each thread, such as the watchdog.
  boost::asio::io_context& at(std::size_t i) noexcept { return *contexts_[i]; }

  // Runs every context, one thread each (the caller's thread runs main()), until stop().
  void run();
  // Lets run() return: every context stops. Safe from any thread, also before run().
  void stop();

 private:
  using Guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  std::vector<Guard> guards_;  // keep contexts without connections running
  std::atomic<std::size_t> next_{0};
};

}  // namespace idem::gateway
