// Guard: begin → fn → commit or release, in a blocking and a coroutine form that share
// every decision (decide(), finish()) and differ only in how they wait.
#include "idem/guard.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "helpers/wait_budget.h"
#include "idem/async.h"

namespace idem {

namespace asio = boost::asio;
using SteadyClock = std::chrono::steady_clock;

// ---- GuardResult -------------------------------------------------------------------------

GuardResult GuardResult::make_executed(std::string value, Fence fence, bool recovered, Status store_status) {
  GuardResult r(Outcome::executed, Status::ok());
  r.value_ = std::move(value);
  r.fence_ = fence;
  r.recovered_ = recovered;
  r.stored_ = store_status.is_ok();
  r.store_status_ = std::move(store_status);
  return r;
}

GuardResult GuardResult::make_replayed(std::string value, Fence fence) {
  GuardResult r(Outcome::replayed, Status::ok());
  r.value_ = std::move(value);
  r.fence_ = fence;
  r.stored_ = true;
  return r;
}

GuardResult GuardResult::make_in_progress(Duration retry_after) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(retry_after).count();
  GuardResult r(Outcome::in_progress,
                unavailable("key in progress: another caller is running it; retry after " +
                            std::to_string(ms) + " ms"));
  r.retry_after_ = retry_after;
  return r;
}

GuardResult GuardResult::make_key_reused() {
  return {Outcome::key_reused, failed_precondition("key reused with a different fingerprint")};
}

GuardResult GuardResult::make_outcome_unknown() {
  return {Outcome::outcome_unknown,
          failed_precondition("outcome of an earlier attempt is unknown (its lease expired mid-run); "
                              "remove the record to run again")};
}

GuardResult GuardResult::make_failed(Status why) {
  if (why.is_ok()) why = internal_error("guard: failed without a reason");
  return {Outcome::failed, std::move(why)};
}

const char* to_string(GuardResult::Outcome o) noexcept {
  switch (o) {
    case GuardResult::Outcome::executed:
      return "executed";
    case GuardResult::Outcome::replayed:
      return "replayed";
    case GuardResult::Outcome::in_progress:
      return "in_progress";
    case GuardResult::Outcome::key_reused:
      return "key_reused";
    case GuardResult::Outcome::outcome_unknown:
      return "outcome_unknown";
    case GuardResult::Outcome::failed:
      return "failed";
  }
  return "?";
}

using helpers::WaitBudget;

namespace {

// What a run does after one begin.
struct Decision {
  enum class Action { answer, wait, execute, hold_uncertain };
  Action action = Action::answer;
  std::optional<GuardResult> answer;  // answer
  SteadyClock::duration sleep{};      // wait
  Fence fence = 0;                    // execute, hold_uncertain
  bool recovered = false;             // execute
};

Decision decide(Result<BeginOutcome>& begun, WaitBudget& budget, OnRecovered on_recovered) {
  using Kind = BeginOutcome::Kind;
  using Action = Decision::Action;
  if (!begun) return {Action::answer, GuardResult::make_failed(begun.status())};
  BeginOutcome& b = *begun;
  switch (b.kind) {
    case Kind::replay:
      return {Action::answer, GuardResult::make_replayed(std::move(b.result), b.fence)};
    case Kind::mismatch:
      return {Action::answer, GuardResult::make_key_reused()};
    case Kind::in_progress:
      if (auto sleep = budget.next(b.retry_after)) return {Action::wait, std::nullopt, *sleep};
      return {Action::answer, GuardResult::make_in_progress(b.retry_after)};
    case Kind::acquired:
      if (b.recovered && on_recovered == OnRecovered::fail) {
        return {Action::hold_uncertain, std::nullopt, {}, b.fence};
      }
      return {Action::execute, std::nullopt, {}, b.fence, b.recovered};
  }
  return {Action::answer, GuardResult::make_failed(internal_error("guard: unknown begin outcome"))};
}

// Under on_recovered = fail the record stays pending, its lease shortened to the least
// the store accepts: every repeat then takes it over at once and is told `outcome_unknown`
// (instead of `in_progress` for a whole lease) until an operator removes it or it expires.
ExtendArgs hold_uncertain_args(const BeginArgs& args, Fence fence) {
  return ExtendArgs{args.scope, args.key, fence, Duration{1}};
}

// The guard's answer once fn returned a result and commit answered.
GuardResult finish(std::string value, Fence fence, bool recovered, const Result<CommitOutcome>& committed) {
  Status store_status;
  if (!committed) {
    store_status = committed.status();
  } else if (*committed == CommitOutcome::fenced) {
    store_status =
        failed_precondition("fenced: the claim was lost while the function ran; result not stored");
  }
  return GuardResult::make_executed(std::move(value), fence, recovered, std::move(store_status));
}

Duration renew_interval(Duration lease) {
  return std::max<Duration>(lease / 3, std::chrono::milliseconds(1));
}

}  // namespace

// ---- the blocking form's lease renewal -------------------------------------------------------

// One thread per Guard, started with the first renewal, extends every registered claim at
// lease/3. Extends are issued in the store's callback form, so a slow store never delays
// the others; at most one extend per claim is in flight. A claim answered `fenced` is
// dropped (commit will say so). The thread sleeps on a condition variable: registering
// wakes it for an earlier deadline, and the Guard's destructor wakes it to exit.
class Guard::Renewer {
 public:
  explicit Renewer(Store& store) : store_(store) {}

  ~Renewer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Renews the claim until the returned ticket goes.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Renewer* r, std::uint64_t id) : renewer_(r), id_(id) {}
    Ticket(Ticket&& o) noexcept : renewer_(std::exchange(o.renewer_, nullptr)), id_(o.id_) {}
    Ticket& operator=(Ticket&& o) noexcept {
      if (this != &o) {
        reset();
        renewer_ = std::exchange(o.renewer_, nullptr);
        id_ = o.id_;
      }
      return *this;
    }
    ~Ticket() { reset(); }
    void reset() {
      if (renewer_) std::exchange(renewer_, nullptr)->remove(id_);
    }

   private:
    Renewer* renewer_ = nullptr;
    std::uint64_t id_ = 0;
  };

  Ticket start(ExtendArgs args) {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) {
      try {
        thread_ = std::thread([this] { loop(); });
      } catch (const std::system_error&) {
        return {};  // no thread: run without renewal rather than fail the call
      }
    }
    const std::uint64_t id = next_id_++;
    const Duration every = renew_interval(args.lease);
    entries_.emplace(id,
                     Entry{std::move(args), every, SteadyClock::now() + every, std::make_shared<InFlight>()});
    cv_.notify_all();
    return {this, id};
  }

 private:
  struct InFlight {
    std::atomic<bool> busy{false};
    std::atomic<bool> lost{false};
  };
  struct Entry {
    ExtendArgs args;
    Duration every;
    SteadyClock::time_point due;
    std::shared_ptr<InFlight> state;  // shared with the callback of an extend in flight
  };

  void remove(std::uint64_t id) {
    std::lock_guard lock(mu_);
    entries_.erase(id);  // an extend already in flight is harmless: fenced once committed
  }

  void loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      const auto now = SteadyClock::now();
      auto next = SteadyClock::time_point::max();
      std::vector<std::pair<ExtendArgs, std::shared_ptr<InFlight>>> due;
      for (auto it = entries_.begin(); it != entries_.end();) {
        Entry& e = it->second;
        if (e.state->lost.load()) {
          it = entries_.erase(it);
          continue;
        }
        if (e.due <= now) {
          e.due = now + e.every;
          if (!e.state->busy.exchange(true)) due.emplace_back(e.args, e.state);
        }
        next = std::min(next, e.due);
        ++it;
      }
      if (!due.empty()) {
        lock.unlock();  // the store may answer inline, and may take its time
        for (auto& [args, state] : due) {
          store_.extend(std::move(args), [state = state](Result<ExtendOutcome> r) {
            if (r && *r == ExtendOutcome::fenced) state->lost.store(true);
            state->busy.store(false);
          });
        }
        lock.lock();
        continue;
      }
      if (next == SteadyClock::time_point::max()) {
        cv_.wait(lock);
      } else {
        cv_.wait_until(lock, next);
      }
    }
  }

  Store& store_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Entry> entries_;  // guarded by mu_
  std::uint64_t next_id_ = 0;               // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::thread thread_;                      // started under mu_
};

Guard::Guard(Store& store, GuardOptions options)
    : store_(store),
      options_(std::move(options)),
      renewer_(options_.renew ? std::make_unique<Renewer>(store) : nullptr) {}

Guard::~Guard() = default;

// ---- blocking ---------------------------------------------------------------------------------

GuardResult Guard::run_body(std::string scope, std::string key, std::string fingerprint, Body body) {
  BeginArgs args{std::move(scope), std::move(key), std::move(fingerprint), options_.lease,
                 options_.retention};
  WaitBudget budget(options_.wait);
  for (;;) {
    auto begun = store_.begin(args);
    Decision d = decide(begun, budget, options_.on_recovered);
    switch (d.action) {
      case Decision::Action::answer:
        return std::move(*d.answer);
      case Decision::Action::wait:
        std::this_thread::sleep_for(d.sleep);
        continue;
      case Decision::Action::hold_uncertain:
        (void)store_.extend(hold_uncertain_args(args, d.fence));  // best effort: the lease ends anyway
        return GuardResult::make_outcome_unknown();
      case Decision::Action::execute:
        break;
    }

    const Attempt attempt{args.scope, args.key, d.fence, d.recovered};
    std::optional<Result<std::string>> out;
    {
      Renewer::Ticket renewal;
      if (renewer_) renewal = renewer_->start(ExtendArgs{args.scope, args.key, d.fence, options_.lease});
      try {
        out.emplace(body(attempt));
      } catch (...) {
        renewal.reset();
        (void)store_.release(ReleaseArgs{args.scope, args.key, d.fence});
        throw;
      }
    }
    if (!*out) {
      // Nothing is stored so that a retry runs again. A failed release leaves the claim
      // to expire after its lease.
      (void)store_.release(ReleaseArgs{args.scope, args.key, d.fence});
      return GuardResult::make_failed(out->status());
    }
    auto committed =
        store_.commit(CommitArgs{args.scope, args.key, d.fence, out->value(), options_.retention});
    return finish(std::move(*out).value(), d.fence, d.recovered, committed);
  }
}

// ---- asynchronous -----------------------------------------------------------------------------

namespace {

// Extends the claim every lease/3 until cancelled (by the `||` in async_run_body when fn
// completes). Once the claim is lost it only idles: commit will report it.
asio::awaitable<void> keep_alive(Store& store, ExtendArgs args) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const Duration every = renew_interval(args.lease);
  for (;;) {
    timer.expires_after(every);
    co_await timer.async_wait(asio::use_awaitable);
    auto extended = co_await async_extend(store, args, asio::use_awaitable);
    if (extended && *extended == ExtendOutcome::fenced) {
      timer.expires_at(asio::steady_timer::time_point::max());
      co_await timer.async_wait(asio::use_awaitable);
    }
  }
}

}  // namespace

// GCC 12 mishandles non-trivial temporaries in a full-expression that contains co_await
// (they may be destroyed twice), so every argument built for a co_await is a named local.
asio::awaitable<GuardResult> Guard::async_run_body(std::string scope, std::string key,
                                                   std::string fingerprint, AsyncBody body) {
  using namespace asio::experimental::awaitable_operators;
  BeginArgs args{std::move(scope), std::move(key), std::move(fingerprint), options_.lease,
                 options_.retention};
  WaitBudget budget(options_.wait);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    auto begun = co_await async_begin(store_, args, asio::use_awaitable);
    Decision d = decide(begun, budget, options_.on_recovered);
    switch (d.action) {
      case Decision::Action::answer:
        co_return std::move(*d.answer);
      case Decision::Action::wait:
        timer.expires_after(d.sleep);
        co_await timer.async_wait(asio::use_awaitable);
        continue;
      case Decision::Action::hold_uncertain: {
        ExtendArgs shorten = hold_uncertain_args(args, d.fence);
        (void)co_await async_extend(store_, std::move(shorten), asio::use_awaitable);
        co_return GuardResult::make_outcome_unknown();
      }
      case Decision::Action::execute:
        break;
    }

    const Attempt attempt{args.scope, args.key, d.fence, d.recovered};
    std::optional<Result<std::string>> out;
    std::exception_ptr thrown;
    // Never fails, so that `||` (which waits for the first *success*) ends with fn —
    // also when fn throws or is cancelled — and then cancels the renewal.
    auto run_fn = [&]() -> asio::awaitable<void> {
      try {
        Result<std::string> r = co_await body(attempt);
        out.emplace(std::move(r));
      } catch (...) {
        thrown = std::current_exception();
      }
    };
    try {
      if (options_.renew) {
        auto fn_done = run_fn();
        ExtendArgs renew{args.scope, args.key, d.fence, options_.lease};
        auto renewal = keep_alive(store_, std::move(renew));
        co_await (std::move(fn_done) || std::move(renewal));
      } else {
        co_await run_fn();
      }
    } catch (...) {
      // Cancelled before fn started.
      if (!thrown) thrown = std::current_exception();
    }
    // fn has finished; the claim must now be settled even if this coroutine was cancelled
    // meanwhile, and a cancelled coroutine would refuse to start the store call.
    co_await asio::this_coro::reset_cancellation_state();
    ReleaseArgs release{args.scope, args.key, d.fence};
    if (thrown) {
      (void)co_await async_release(store_, std::move(release), asio::use_awaitable);
      std::rethrow_exception(thrown);
    }
    if (!*out) {
      (void)co_await async_release(store_, std::move(release), asio::use_awaitable);
      co_return GuardResult::make_failed(out->status());
    }
    CommitArgs commit{args.scope, args.key, d.fence, out->value(), options_.retention};
    auto committed = co_await async_commit(store_, std::move(commit), asio::use_awaitable);
    co_return finish(std::move(*out).value(), d.fence, d.recovered, committed);
  }
}

}  // namespace idem
