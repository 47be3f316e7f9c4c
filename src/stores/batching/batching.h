// What the SQL stores (PostgreSQL, MySQL) share: operations queued by callers and sent by one io
// thread as batches, each batch one transaction on one of a few connections (group commit). This
// holds the parts that do not depend on the driver: the operation in flight, the hand-over from
// callers' threads to the io thread, the deadlines of queued operations, the settling of a batch
// whose transaction ended, the periodic sweep and the shutdown. The stores do the connections
// (postgres_store.cpp, mysql_store.cpp).
#pragma once

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "idem/open.h"
#include "idem/store.h"

namespace idem::batching {

using SteadyClock = std::chrono::steady_clock;

// An operation in flight; `Reply` is what the driver hands its reader (a statement's result).
// The callback runs exactly once.
template <class Reply>
class QueuedOp {
 public:
  using ReplyType = Reply;
  explicit QueuedOp(std::string order) : lock_order(std::move(order)) {}
  virtual ~QueuedOp() = default;
  QueuedOp(const QueuedOp&) = delete;
  QueuedOp& operator=(const QueuedOp&) = delete;

  // Reads the statement's result and keeps the answer. False: the statement met a row it
  // cannot answer from and must run again (in a later transaction).
  virtual bool read(Reply reply) = 0;
  // A step of a longer operation (sweep) made progress: it runs again with a new deadline.
  virtual bool progressing() const { return false; }

  // Each answers the caller once; later calls do nothing.
  void answer() {
    if (!std::exchange(answered_, true)) deliver();
  }
  void fail(Status s) {
    if (!std::exchange(answered_, true)) deliver_error(std::move(s));
  }
  bool answered() const noexcept { return answered_; }

  std::string lock_order;  // batches run their statements sorted by this
  // Locks a record's row and then a token's: runs in a batch of its own, so that every other
  // transaction still takes all its record rows before any token row (no deadlock).
  bool alone = false;
  SteadyClock::time_point deadline{};
  int runs = 0;
  bool again = false;  // set by the last read()

 protected:
  virtual void deliver() = 0;
  virtual void deliver_error(Status s) = 0;

 private:
  bool answered_ = false;
};

// An operation whose outcome a pure reader makes from the reply. `Base` is the store's op
// type (a QueuedOp with the statement it runs); its constructor takes `args`.
template <class Base, class T>
class TypedOp final : public Base {
 public:
  using Reader = bool (*)(typename Base::ReplyType, T& out);
  template <class... Args>
  TypedOp(Reader reader, Callback<T> cb, Args&&... args)
      : Base(std::forward<Args>(args)...), reader_(reader), cb_(std::move(cb)) {}

  bool read(typename Base::ReplyType reply) override {
    this->again = !reader_(reply, out_);
    return !this->again;
  }

 protected:
  void deliver() override { cb_(std::move(out_)); }
  void deliver_error(Status s) override { cb_(std::move(s)); }

 private:
  Reader reader_;
  Callback<T> cb_;
  T out_{};
};

// The io thread and the queue of a batching store. A store derives from it, starts it at the
// end of its constructor (start) and stops it first in its destructor (stop), and implements
// the connections: dispatch() sends queued operations, and the hooks below tell the queue about
// them. Everything but enqueue runs on the io thread.
template <class Op>
class BatchingStore : public Store {
 public:
  using OpPtr = std::unique_ptr<Op>;

 protected:
  // How often an operation may be run again in a row (rows it cannot answer from, deadlocks).
  static constexpr int kMaxRuns = 64;

  explicit BatchingStore(const StoreOptions& options, Status not_connected)
      : op_timeout_(options.op_timeout),
        sweep_interval_(options.sweep_interval),
        tick_interval_(std::clamp<Duration>(op_timeout_ / 20, Duration(std::chrono::milliseconds(1)),
                                            Duration(std::chrono::milliseconds(50)))),
        last_error_(std::move(not_connected)),
        work_(boost::asio::make_work_guard(io_)),
        tick_(io_),
        sweep_timer_(io_) {}

  // ---- the store's part ----------------------------------------------------------------
  virtual void start_connections() = 0;
  // Sends what it can of queue_ on the connections that are ready.
  virtual void dispatch() = 0;
  // Whether a connection is up or on its way up (else queued operations fail at once).
  virtual bool reachable() const = 0;
  // Whether an operation is in flight on a connection.
  virtual bool busy() const = 0;
  // Deadlines of the connections: connecting too long, operations in flight overdue.
  virtual void check_connections(SteadyClock::time_point now) = 0;
  // Closes every connection for good (shutdown).
  virtual void close_connections() = 0;
  virtual OpPtr make_sweep(Callback<std::uint64_t> cb) = 0;
  // "<store> '<where>': what: reason", without secrets.
  virtual std::string message(std::string_view what, std::string_view reason) const = 0;

  // ---- for the store -------------------------------------------------------------------

  void start() {
    boost::asio::post(io_, [this] {
      start_connections();
      schedule_tick();
      schedule_sweep();
    });
    thread_ = std::thread([this] { io_.run(); });
  }

  // Stops accepting; every operation already accepted gets its answer first.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    boost::asio::post(io_, [this] {
      shutting_down_ = true;
      take_incoming();
      maybe_stop();
    });
    thread_.join();
  }

  // From any thread.
  void enqueue(OpPtr op) {
    op->deadline = SteadyClock::now() + op_timeout_;
    std::unique_lock lock(mu_);
    if (stopping_) {
      lock.unlock();
      return op->fail(unavailable(message("cannot run", "the store is closing")));
    }
    incoming_.push_back(std::move(op));
    const bool wake = !std::exchange(wake_posted_, true);
    lock.unlock();
    if (wake) boost::asio::post(io_, [this] { take_incoming(); });
  }

  // For operations that waited out op_timeout in the queue: never sent, nothing happened.
  Status not_run() const {
    std::string why = "no connection was free within op_timeout";
    if (!last_error_.is_ok()) why += "; last: " + last_error_.message();
    return unavailable(message("not run", why));
  }

  // When no connection is up or on its way up, waiting is pointless.
  void fail_queue_if_unreachable() {
    if (queue_.empty() || reachable()) return;
    auto failed = std::move(queue_);
    queue_.clear();
    for (auto& op : failed) op->fail(last_error_);
  }

  // A batch's transaction has ended: committed (error ok), or rolled back by `error`, which
  // `failed(i)` ops get. The others did not happen and run again (at the front of the queue),
  // so one bad call does not fail its neighbours.
  template <class Failed>
  void settle(std::vector<OpPtr>& ops, const Status& error, Failed failed) {
    const auto now = SteadyClock::now();
    const bool ok = error.is_ok();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      OpPtr& op = ops[i];
      if (op->answered()) continue;
      if (!ok && failed(i)) {
        op->fail(error);
        continue;
      }
      if (ok && !op->again) {
        op->answer();
        continue;
      }
      if (op->progressing() && ok) {
        op->deadline = now + op_timeout_;
      } else if (op->runs >= kMaxRuns) {
        op->fail(ok ? unavailable(message("cannot run", "the row kept changing under the statement"))
                    : error);
        continue;
      }
      queue_.push_front(std::move(op));
    }
  }

  // Once closing and every accepted operation has its answer: close the connections and let
  // io_.run() return.
  void maybe_stop() {
    if (!shutting_down_ || stopped_ || !queue_.empty() || busy()) return;
    stopped_ = true;
    close_connections();
    tick_.cancel();
    sweep_timer_.cancel();
    work_.reset();
  }

  const Duration op_timeout_;
  const Duration sweep_interval_;
  const Duration tick_interval_;

  boost::asio::io_context io_;

  // The io thread's own.
  std::deque<OpPtr> queue_;
  Status last_error_;
  bool shutting_down_ = false;
  bool stopped_ = false;

 private:
  void take_incoming() {
    std::vector<OpPtr> taken;
    {
      std::lock_guard lock(mu_);
      taken.swap(incoming_);
      wake_posted_ = false;
    }
    for (auto& op : taken) queue_.push_back(std::move(op));
    fail_queue_if_unreachable();
    dispatch();
  }

  void schedule_tick() {
    tick_.expires_after(tick_interval_);
    tick_.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      check_deadlines();
      if (!stopped_) schedule_tick();
    });
  }

  void check_deadlines() {
    const auto now = SteadyClock::now();
    for (auto it = queue_.begin(); it != queue_.end();) {
      if ((*it)->deadline > now) {
        ++it;
        continue;
      }
      OpPtr op = std::move(*it);
      it = queue_.erase(it);
      op->fail(not_run());
    }
    check_connections(now);
    maybe_stop();
  }

  void schedule_sweep() {
    if (sweep_interval_.count() <= 0) return;
    sweep_timer_.expires_after(sweep_interval_);
    sweep_timer_.async_wait([this](boost::system::error_code ec) {
      if (ec || shutting_down_) return;
      if (!periodic_sweep_running_) {
        periodic_sweep_running_ = true;
        auto op = make_sweep([this](Result<std::uint64_t>) { periodic_sweep_running_ = false; });
        op->deadline = SteadyClock::now() + op_timeout_;
        queue_.push_back(std::move(op));
        dispatch();
      }
      schedule_sweep();
    });
  }

  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;

  // Callers hand operations over here.
  std::mutex mu_;
  std::vector<OpPtr> incoming_;  // guarded by mu_
  bool wake_posted_ = false;     // guarded by mu_
  bool stopping_ = false;        // guarded by mu_

  boost::asio::steady_timer tick_;
  boost::asio::steady_timer sweep_timer_;
  bool periodic_sweep_running_ = false;

  std::thread thread_;
};

}  // namespace idem::batching
