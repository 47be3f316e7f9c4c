// Guard on the memory store: at most one execution per key, replay byte for byte,
// release on failure, waiting, lease renewal, the recovered policies, and the coroutine form.
#include "idem/guard.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <latch>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "idem/open.h"
#include "idem/store_wrapper.h"

namespace idem {

void PrintTo(GuardResult::Outcome o, std::ostream* os) { *os << to_string(o); }

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using Outcome = GuardResult::Outcome;

std::unique_ptr<Store> memory_store(std::shared_ptr<const Clock> clock = nullptr) {
  auto s = open_store("memory:", StoreOptions{.clock = std::move(clock)});
  EXPECT_TRUE(s) << s.status().to_string();
  return std::move(s).value();
}

// Forwards to a real store and lets a test watch begin's answers and count extends, so
// that tests synchronise on what callers observed instead of sleeping.
class ObservingStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;

  // Called with each begin's answer, before the caller receives it. Set before use.
  std::function<void(const Result<BeginOutcome>&)> on_begin;
  std::atomic<int> extends{0};

  // Blocks until `pred()` holds (checked after every begin), or 30 s pass.
  bool wait_until(const std::function<bool()>& pred) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 30s, pred);
  }
  std::mutex& mutex() { return mu_; }

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    target().begin(std::move(a), [this, cb = std::move(cb)](Result<BeginOutcome> r) mutable {
      {
        std::lock_guard lock(mu_);
        if (on_begin) on_begin(r);
      }
      cv_.notify_all();
      cb(std::move(r));
    });
  }
  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override {
    ++extends;
    StoreWrapper::do_extend(std::move(a), std::move(cb));
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

bool is_in_progress(const Result<BeginOutcome>& r) { return r && r->kind == BeginOutcome::Kind::in_progress; }

// ---- blocking ---------------------------------------------------------------------------

TEST(Guard, FirstRunExecutesAndRepeatsReplayByteForByte) {
  auto store = memory_store();
  Guard guard(*store);
  const std::string bytes("order \x00\xff\x01 42", 13);
  int runs = 0;
  auto fn = [&](Fence fence) -> Result<std::string> {
    ++runs;
    EXPECT_GT(fence, 0u);
    return bytes;
  };

  auto first = guard.run("user-1", "k1", "fp", fn);
  ASSERT_TRUE(first) << first.status().to_string();
  EXPECT_EQ(first.outcome(), Outcome::executed);
  EXPECT_TRUE(first.stored());
  EXPECT_FALSE(first.recovered());
  EXPECT_EQ(first.value(), bytes);

  for (int i = 0; i < 3; ++i) {
    auto again = guard.run("user-1", "k1", "fp", fn);
    ASSERT_TRUE(again) << again.status().to_string();
    EXPECT_TRUE(again.replayed());
    EXPECT_EQ(*again, bytes);
    EXPECT_EQ(again.fence(), first.fence());
  }
  EXPECT_EQ(runs, 1);

  // Another scope is another key.
  auto other = guard.run("user-2", "k1", "fp", fn);
  EXPECT_TRUE(other.executed());
  EXPECT_EQ(runs, 2);
}

TEST(Guard, FunctionMayTakeAttemptFenceOrNothing) {
  auto store = memory_store();
  Guard guard(*store);
  auto a = guard.run("s", "attempt", "", [](const Attempt& at) -> Result<std::string> {
    return std::string(at.scope) + "/" + std::string(at.key) + (at.recovered ? " recovered" : "");
  });
  EXPECT_EQ(a.value(), "s/attempt");
  auto b = guard.run("s", "nothing", "", [] { return std::string("plain"); });
  EXPECT_EQ(b.value(), "plain");
  auto c = guard.run("s", "status", "", [](Fence) { return Status::ok(); });
  EXPECT_TRUE(c.executed());
  EXPECT_EQ(c.value(), "");
  int ran = 0;
  auto d = guard.run("s", "void", "", [&] { ++ran; });
  EXPECT_TRUE(d.executed());
  EXPECT_TRUE(guard.run("s", "void", "", [&] { ++ran; }).replayed());
  EXPECT_EQ(ran, 1);
}

TEST(Guard, RacingThreadsRunOnceAndAllGetTheFirstResult) {
  constexpr int kThreads = 32;
  ObservingStore store(memory_store());
  std::set<std::thread::id> saw_in_progress;  // guarded by store.mutex()
  store.on_begin = [&](const Result<BeginOutcome>& r) {
    if (is_in_progress(r)) saw_in_progress.insert(std::this_thread::get_id());
  };
  Guard guard(store, {.wait = 60s});
  std::atomic<int> runs{0};
  std::latch start(kThreads);
  std::vector<std::optional<GuardResult>> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      results[i].emplace(guard.run("orders", "double-click", "fp", [&](Fence fence) -> Result<std::string> {
        ++runs;
        // Hold the first run until every other caller has found it in progress.
        EXPECT_TRUE(store.wait_until([&] { return saw_in_progress.size() == kThreads - 1; }));
        return "order-" + std::to_string(fence);
      }));
    });
  }
  for (auto& t : threads) t.join();

  EXPECT_EQ(runs.load(), 1);
  int executed = 0;
  for (auto& r : results) {
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(*r) << r->status().to_string();
    executed += r->executed();
    EXPECT_EQ(r->value(), results[0]->value());
  }
  EXPECT_EQ(executed, 1);
}

TEST(Guard, FailingFunctionReleasesSoTheNextRunExecutes) {
  auto store = memory_store();
  Guard guard(*store);
  auto failed =
      guard.run("s", "k", "fp", [](Fence) -> Result<std::string> { return unavailable("payment down"); });
  EXPECT_FALSE(failed);
  EXPECT_EQ(failed.outcome(), Outcome::failed);
  EXPECT_EQ(failed.status().code(), StatusCode::unavailable);
  EXPECT_EQ(failed.status().message(), "payment down");
  EXPECT_FALSE(store->get(RecordId{"s", "k"}).value().has_value()) << "nothing stored";

  Fence second_fence = 0;
  auto ok = guard.run("s", "k", "fp", [&](Fence f) -> Result<std::string> {
    second_fence = f;
    return std::string("done");
  });
  EXPECT_TRUE(ok.executed());
  EXPECT_EQ(ok.value(), "done");
  EXPECT_GT(second_fence, 0u);
}

TEST(Guard, ThrowingFunctionReleasesAndRethrows) {
  auto store = memory_store();
  Guard guard(*store);
  Fence thrown_fence = 0;
  EXPECT_THROW((void)guard.run("s", "k", "",
                               [&](Fence f) -> Result<std::string> {
                                 thrown_fence = f;
                                 throw std::runtime_error("boom");
                               }),
               std::runtime_error);
  EXPECT_FALSE(store->get(RecordId{"s", "k"}).value().has_value());
  auto ok = guard.run("s", "k", "", [&](Fence f) -> Result<std::string> {
    EXPECT_GT(f, thrown_fence);
    return std::string("second");
  });
  EXPECT_TRUE(ok.executed());
}

TEST(Guard, KeyReusedWithAnotherFingerprintIsRefused) {
  auto store = memory_store();
  Guard guard(*store);
  int runs = 0;
  auto fn = [&] {
    ++runs;
    return std::string("r");
  };
  ASSERT_TRUE(guard.run("s", "k", "amount=10", fn).executed());
  auto reused = guard.run("s", "k", "amount=99", fn);
  EXPECT_FALSE(reused);
  EXPECT_EQ(reused.outcome(), Outcome::key_reused);
  EXPECT_EQ(reused.status().code(), StatusCode::failed_precondition);
  EXPECT_EQ(reused.status().message(), "key reused with a different fingerprint");
  // An empty fingerprint matches any.
  EXPECT_TRUE(guard.run("s", "k", "", fn).replayed());
  EXPECT_EQ(runs, 1);
}

TEST(Guard, RepeatWithoutWaitAnswersInProgressThenReplays) {
  auto store = memory_store();
  Guard first(*store, {.lease = 30s});
  Guard impatient(*store, {.lease = 30s, .wait = 0s});
  std::latch entered(1), release(1);
  std::thread holder([&] {
    auto r = first.run("s", "k", "", [&] {
      entered.count_down();
      release.wait();
      return std::string("first");
    });
    EXPECT_TRUE(r.executed());
  });
  entered.wait();
  int runs = 0;
  auto busy = impatient.run("s", "k", "", [&] {
    ++runs;
    return std::string("second");
  });
  EXPECT_FALSE(busy);
  EXPECT_EQ(busy.outcome(), Outcome::in_progress);
  EXPECT_EQ(busy.status().code(), StatusCode::unavailable);
  EXPECT_GT(busy.retry_after(), 29s);
  EXPECT_LE(busy.retry_after(), 30s);
  release.count_down();
  holder.join();
  auto later = impatient.run("s", "k", "", [&] { return std::string("second"); });
  EXPECT_TRUE(later.replayed());
  EXPECT_EQ(later.value(), "first");
  EXPECT_EQ(runs, 0);
}

TEST(Guard, RepeatWaitsForTheFirstAndReplaysIt) {
  ObservingStore store(memory_store());
  int in_progress_seen = 0;  // guarded by store.mutex()
  store.on_begin = [&](const Result<BeginOutcome>& r) { in_progress_seen += is_in_progress(r); };
  Guard guard(store, {.wait = 60s});
  std::latch entered(1), release(1);
  std::thread first([&] {
    auto r = guard.run("s", "k", "", [&] {
      entered.count_down();
      release.wait();
      return std::string("first result");
    });
    EXPECT_TRUE(r.executed());
  });
  entered.wait();
  std::optional<GuardResult> repeat;
  std::thread second([&] { repeat.emplace(guard.run("s", "k", "", [] { return std::string("second"); })); });
  ASSERT_TRUE(store.wait_until([&] { return in_progress_seen > 0; }));
  release.count_down();
  first.join();
  second.join();
  ASSERT_TRUE(repeat && *repeat) << repeat->status().to_string();
  EXPECT_TRUE(repeat->replayed());
  EXPECT_EQ(repeat->value(), "first result");
}

TEST(Guard, WaitEndsWithInProgress) {
  auto store = memory_store();
  Guard guard(*store, {.lease = 30s, .wait = 50ms});
  std::latch entered(1), release(1);
  std::thread holder([&] {
    (void)guard.run("s", "k", "", [&] {
      entered.count_down();
      release.wait();
    });
  });
  entered.wait();
  const auto t0 = std::chrono::steady_clock::now();
  auto r = guard.run("s", "k", "", [] {});
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 50ms);
  EXPECT_EQ(r.outcome(), Outcome::in_progress);
  release.count_down();
  holder.join();
}

TEST(Guard, RenewalKeepsTheLeasePastItsExpiry) {
  // Real time: a 300 ms lease on the system clock, held for about a second.
  ObservingStore store(memory_store());
  Guard guard(store, {.lease = 300ms, .wait = 0s, .renew = true, .on_uncertain = OnUncertain::retry});
  Guard other(store, {.lease = 300ms, .wait = 0s, .renew = false, .on_uncertain = OnUncertain::retry});
  std::latch entered(1), release(1);
  std::optional<GuardResult> first;
  std::thread holder([&] {
    first.emplace(guard.run("s", "slow", "", [&] {
      entered.count_down();
      release.wait();
      return std::string("slow result");
    }));
  });
  entered.wait();
  const auto t0 = std::chrono::steady_clock::now();
  int checks = 0;
  while (std::chrono::steady_clock::now() - t0 < 1s) {
    auto r = other.run("s", "slow", "", [] { return std::string("must not run"); });
    EXPECT_EQ(r.outcome(), Outcome::in_progress) << "check " << checks << ": " << to_string(r.outcome());
    ++checks;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_GE(store.extends.load(), 3);
  release.count_down();
  holder.join();
  ASSERT_TRUE(first && first->executed());
  EXPECT_TRUE(first->stored()) << first->store_status().to_string();
  auto replay = other.run("s", "slow", "", [] { return std::string("must not run"); });
  EXPECT_TRUE(replay.replayed());
  EXPECT_EQ(replay.value(), "slow result");

  // Renewal stopped with the function: no extend after the run returned.
  const int extends_after = store.extends.load();
  std::this_thread::sleep_for(250ms);
  EXPECT_EQ(store.extends.load(), extends_after);
}

TEST(Guard, LostClaimIsNotOverwritten) {
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_store(clock);
  GuardOptions o{.lease = 10s, .wait = 0s, .renew = false, .on_uncertain = OnUncertain::retry};
  Guard slow(*store, o), takeover(*store, o);
  std::latch entered(1), release(1);
  std::optional<GuardResult> first;
  std::thread holder([&] {
    first.emplace(slow.run("s", "k", "", [&] {
      entered.count_down();
      release.wait();
      return std::string("late");
    }));
  });
  entered.wait();
  clock->advance(11s);  // the slow holder's lease lapses
  auto second = takeover.run("s", "k", "", [](const Attempt& a) {
    EXPECT_TRUE(a.recovered);
    return std::string("newer");
  });
  EXPECT_TRUE(second.executed());
  EXPECT_TRUE(second.recovered());
  EXPECT_TRUE(second.stored());
  release.count_down();
  holder.join();

  ASSERT_TRUE(first && first->executed());
  EXPECT_EQ(first->value(), "late");  // the caller still gets its result ...
  EXPECT_FALSE(first->stored());      // ... but it is not stored over the newer holder's
  EXPECT_EQ(first->store_status().code(), StatusCode::failed_precondition);
  EXPECT_LT(first->fence(), second.fence());
  EXPECT_EQ(takeover.run("s", "k", "", [] { return std::string("x"); }).value(), "newer");
}

// A holder that crashed: begin directly, never commit, let the lease lapse.
Fence crash_holding(Store& store, ManualClock& clock, const std::string& key) {
  auto b = store.begin(BeginArgs{"s", key, "", 10s, 24h});
  EXPECT_TRUE(b && b->kind == BeginOutcome::Kind::acquired);
  clock.advance(11s);
  return b->fence;
}

TEST(Guard, RecoveredClaimFailsUnderFailPolicy) {
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_store(clock);
  Guard guard(*store, {.lease = 10s, .wait = 0s, .on_uncertain = OnUncertain::hold});
  crash_holding(*store, *clock, "k");
  int runs = 0;
  auto fn = [&] {
    ++runs;
    return std::string("ran");
  };
  auto r = guard.run("s", "k", "", fn);
  EXPECT_EQ(r.outcome(), Outcome::outcome_unknown);
  EXPECT_EQ(r.status().code(), StatusCode::failed_precondition);
  // Repeats keep failing the same way at once, not in_progress for a whole lease: the
  // record was completed as uncertain.
  EXPECT_EQ(guard.run("s", "k", "", fn).outcome(), Outcome::outcome_unknown);
  auto rec = store->get(RecordId{"s", "k"}).value();
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->state, RecordState::done);
  EXPECT_EQ(runs, 0);
  // An operator decides: removing the record lets the next run execute.
  ASSERT_TRUE(store->remove(RecordId{"s", "k"}).value());
  EXPECT_TRUE(guard.run("s", "k", "", fn).executed());
  EXPECT_EQ(runs, 1);
}

TEST(Guard, UncertainRecordExpiresAfterItsRetentionWhateverTheRepeats) {
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_store(clock);
  Guard guard(*store, {.lease = 10s, .retention = 1h, .wait = 0s, .on_uncertain = OnUncertain::hold});
  crash_holding(*store, *clock, "k");
  int runs = 0;
  auto fn = [&] {
    ++runs;
    return std::string("ran");
  };
  EXPECT_EQ(guard.run("s", "k", "", fn).outcome(), Outcome::outcome_unknown);
  const TimePoint expires = store->get(RecordId{"s", "k"}).value()->expires_at;
  for (int i = 0; i < 5; ++i) {
    clock->advance(10min);
    EXPECT_EQ(guard.run("s", "k", "", fn).outcome(), Outcome::outcome_unknown) << i;
    EXPECT_EQ(store->get(RecordId{"s", "k"}).value()->expires_at, expires) << "a repeat kept it alive";
  }
  EXPECT_EQ(runs, 0);
  clock->advance(11min);
  EXPECT_TRUE(guard.run("s", "k", "", fn).executed());
  EXPECT_EQ(runs, 1);
}

TEST(Guard, ResultsThatLookLikeTheUncertainMarkerAreReplayedAsThemselves) {
  auto store = memory_store();
  Guard guard(*store);
  for (const std::string& value :
       {std::string("\0uncertain", 10), std::string("\0\0x", 3), std::string(1, '\0')}) {
    auto first = guard.run("s", "k" + std::to_string(value.size()), "", [&] { return value; });
    ASSERT_TRUE(first.executed());
    auto again = guard.run("s", "k" + std::to_string(value.size()), "", [&] { return std::string("other"); });
    ASSERT_TRUE(again.replayed()) << to_string(again.outcome());
    EXPECT_EQ(again.value(), value);
  }
}

TEST(Guard, RecoveredClaimRunsAgainUnderRunAgainPolicy) {
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_store(clock);
  Guard guard(*store, {.lease = 10s, .on_uncertain = OnUncertain::retry});
  const Fence crashed = crash_holding(*store, *clock, "k");
  auto r = guard.run("s", "k", "", [&](const Attempt& a) {
    EXPECT_TRUE(a.recovered);
    EXPECT_GT(a.fence, crashed);
    return std::string("again");
  });
  EXPECT_TRUE(r.executed());
  EXPECT_TRUE(r.recovered());
  EXPECT_TRUE(guard.run("s", "k", "", [] { return std::string("x"); }).replayed());
}

TEST(Guard, StoreErrorsAreReturnedAndNothingRuns) {
  auto store = memory_store();
  Guard guard(*store, {.lease = Duration{0}});
  bool ran = false;
  auto r = guard.run("s", "k", "", [&] { ran = true; });
  EXPECT_EQ(r.outcome(), Outcome::failed);
  EXPECT_EQ(r.status().code(), StatusCode::invalid_argument);
  EXPECT_FALSE(ran);
  Guard ok_guard(*store);
  EXPECT_EQ(ok_guard.run("s", "", "", [&] { ran = true; }).status().code(), StatusCode::invalid_argument);
  EXPECT_FALSE(ran);
}

// A store that applies the next `lose_begins` begins and `lose_commits` commits and loses
// their answers, as a network store does when the connection drops after the command was
// sent, and refuses (applies nothing) the next `refuse_commits` commits.
class LosingStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  std::atomic<int> lose_begins{0}, lose_commits{0}, refuse_commits{0};

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    target().begin(std::move(a), [this, cb = std::move(cb)](Result<BeginOutcome> r) mutable {
      if (lose_begins.fetch_sub(1) > 0) return cb(deadline_exceeded("begin: answer lost"));
      cb(std::move(r));
    });
  }
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    if (refuse_commits.fetch_sub(1) > 0) return cb(unavailable("commit: refused"));
    target().commit(std::move(a), [this, cb = std::move(cb)](Result<CommitOutcome> r) mutable {
      if (lose_commits.fetch_sub(1) > 0) return cb(deadline_exceeded("commit: answer lost"));
      cb(std::move(r));
    });
  }
};

TEST(Guard, ABeginWhoseAnswerIsLostLeavesNoGhostClaim) {
  LosingStore store(memory_store());
  store.lose_begins = 1;
  // A long lease: a claim left behind would hold the key far beyond the test's wait.
  Guard guard(store, {.lease = 1h, .wait = 30s, .on_uncertain = OnUncertain::hold});
  int runs = 0;
  auto fn = [&] {
    ++runs;
    return std::string("ran");
  };
  auto lost = guard.run("s", "k", "", fn);
  EXPECT_EQ(lost.outcome(), Outcome::failed);
  EXPECT_EQ(lost.status().code(), StatusCode::deadline_exceeded);
  EXPECT_EQ(runs, 0);
  // The retry waits, if it must, for the claim to be given back, then runs: once, fresh.
  auto retry = guard.run("s", "k", "", fn);
  ASSERT_TRUE(retry.executed()) << to_string(retry.outcome());
  EXPECT_FALSE(retry.recovered());
  EXPECT_EQ(runs, 1);
}

TEST(Guard, ACommitThatFailsIsRetriedWhileRepeatsWaitThenReplay) {
  for (bool lost : {false, true}) {
    LosingStore store(memory_store());
    (lost ? store.lose_commits : store.refuse_commits) = 2;
    Guard guard(store, {.wait = 30s});
    int runs = 0;
    auto first = guard.run("s", "k", "", [&] { return std::to_string(++runs); });
    ASSERT_TRUE(first.executed());
    EXPECT_FALSE(first.stored());
    EXPECT_EQ(first.store_status().code(), lost ? StatusCode::deadline_exceeded : StatusCode::unavailable);
    auto again = guard.run("s", "k", "", [&] { return std::to_string(++runs); });
    ASSERT_TRUE(again.replayed()) << to_string(again.outcome());
    EXPECT_EQ(again.value(), "1");
    EXPECT_EQ(runs, 1);
  }
}

// ---- asynchronous --------------------------------------------------------------------------

// Runs a coroutine to completion on a fresh single-threaded io_context; rethrows.
template <class T>
T run_async(std::function<asio::awaitable<T>()> coro) {
  asio::io_context ioc;
  auto f = asio::co_spawn(ioc, coro(), asio::use_future);
  ioc.run();
  return f.get();
}

TEST(GuardAsync, ExecutesThenReplays) {
  auto store = memory_store();
  Guard guard(*store);
  int runs = 0;
  auto results = run_async<std::vector<GuardResult>>([&]() -> asio::awaitable<std::vector<GuardResult>> {
    std::vector<GuardResult> out;
    for (int i = 0; i < 2; ++i) {
      out.push_back(
          co_await guard.async_run("s", "k", "fp", [&](Fence f) -> asio::awaitable<Result<std::string>> {
            ++runs;
            asio::steady_timer t(co_await asio::this_coro::executor, 1ms);
            co_await t.async_wait(asio::use_awaitable);
            co_return "async-" + std::to_string(f);
          }));
    }
    co_return out;
  });
  EXPECT_EQ(runs, 1);
  ASSERT_TRUE(results[0].executed());
  ASSERT_TRUE(results[1].replayed());
  EXPECT_EQ(results[0].value(), results[1].value());
}

TEST(GuardAsync, FailureReleasesAndExceptionReleasesAndRethrows) {
  auto store = memory_store();
  Guard guard(*store);
  auto failed = run_async<GuardResult>([&]() -> asio::awaitable<GuardResult> {
    co_return co_await guard.async_run(
        "s", "k", "", [](Fence) -> asio::awaitable<Status> { co_return unavailable("later"); });
  });
  EXPECT_EQ(failed.outcome(), Outcome::failed);
  EXPECT_FALSE(store->get(RecordId{"s", "k"}).value().has_value());

  EXPECT_THROW((void)run_async<GuardResult>([&]() -> asio::awaitable<GuardResult> {
                 co_return co_await guard.async_run("s", "k", "", []() -> asio::awaitable<void> {
                   throw std::runtime_error("boom");
                   co_return;
                 });
               }),
               std::runtime_error);
  EXPECT_FALSE(store->get(RecordId{"s", "k"}).value().has_value());

  auto ok = run_async<GuardResult>([&]() -> asio::awaitable<GuardResult> {
    co_return co_await guard.async_run("s", "k", "",
                                       []() -> asio::awaitable<std::string> { co_return "third"; });
  });
  EXPECT_TRUE(ok.executed());
  EXPECT_EQ(ok.value(), "third");
}

TEST(GuardAsync, RepeatWaitsForTheFirstAndReplaysIt) {
  ObservingStore store(memory_store());
  Guard guard(store, {.wait = 60s});
  asio::io_context ioc;
  asio::steady_timer gate(ioc, asio::steady_timer::time_point::max());
  // The first run is held until the second has found it in progress.
  store.on_begin = [&](const Result<BeginOutcome>& r) {
    if (is_in_progress(r)) gate.cancel();
  };
  auto first =
      asio::co_spawn(ioc,
                     guard.async_run("s", "k", "",
                                     [&]() -> asio::awaitable<std::string> {
                                       (void)co_await gate.async_wait(asio::as_tuple(asio::use_awaitable));
                                       co_return "first";
                                     }),
                     asio::use_future);
  auto second = asio::co_spawn(
      ioc, guard.async_run("s", "k", "", []() -> asio::awaitable<std::string> { co_return "second"; }),
      asio::use_future);
  ioc.run();
  auto a = first.get(), b = second.get();
  EXPECT_TRUE(a.executed());
  EXPECT_TRUE(b.replayed());
  EXPECT_EQ(b.value(), "first");
}

TEST(GuardAsync, RenewalKeepsTheLeaseAlive) {
  ObservingStore store(memory_store());
  Guard guard(store, {.lease = 300ms, .wait = 0s, .renew = true, .on_uncertain = OnUncertain::retry});
  Guard other(store, {.lease = 300ms, .wait = 0s, .renew = false, .on_uncertain = OnUncertain::retry});
  asio::io_context ioc;
  int other_runs = 0;
  std::vector<Outcome> seen;
  // The slow work lasts until the checker has looked for three leases (one thread: the
  // timer is touched by both coroutines on it), however slowly the machine runs.
  asio::steady_timer* slow_timer = nullptr;
  auto slow = asio::co_spawn(ioc,
                             guard.async_run("s", "slow", "",
                                             [&]() -> asio::awaitable<std::string> {
                                               asio::steady_timer t(co_await asio::this_coro::executor, 60s);
                                               slow_timer = &t;
                                               co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
                                               slow_timer = nullptr;
                                               co_return "slow";
                                             }),
                             asio::use_future);
  auto checker = asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor);
        const auto until = std::chrono::steady_clock::now() + 900ms;  // three leases
        while (std::chrono::steady_clock::now() < until) {
          t.expires_after(50ms);
          co_await t.async_wait(asio::use_awaitable);
          auto r = co_await other.async_run("s", "slow", "", [&]() -> asio::awaitable<void> {
            ++other_runs;
            co_return;
          });
          seen.push_back(r.outcome());
        }
        if (slow_timer) slow_timer->cancel();
      },
      asio::use_future);
  ioc.run();
  checker.get();
  auto r = slow.get();
  EXPECT_TRUE(r.executed());
  EXPECT_TRUE(r.stored());
  EXPECT_EQ(other_runs, 0);
  EXPECT_GE(seen.size(), 2u);
  for (auto o : seen) EXPECT_EQ(o, Outcome::in_progress) << to_string(o);
  EXPECT_GE(store.extends.load(), 2);
  EXPECT_TRUE(other.run("s", "slow", "", [] {}).replayed());
}

TEST(GuardAsync, RacingCoroutinesOnAThreadPoolRunOnce) {
  auto store = memory_store();
  Guard guard(*store, {.wait = 60s});
  std::atomic<int> runs{0};
  asio::thread_pool pool(4);
  std::vector<std::future<GuardResult>> futures;
  for (int i = 0; i < 32; ++i) {
    futures.push_back(asio::co_spawn(pool,
                                     guard.async_run("s", "k", "",
                                                     [&]() -> asio::awaitable<std::string> {
                                                       ++runs;
                                                       asio::steady_timer t(
                                                           co_await asio::this_coro::executor, 20ms);
                                                       co_await t.async_wait(asio::use_awaitable);
                                                       co_return "once";
                                                     }),
                                     asio::use_future));
  }
  int executed = 0;
  for (auto& f : futures) {
    auto r = f.get();
    ASSERT_TRUE(r) << r.status().to_string();
    EXPECT_EQ(r.value(), "once");
    executed += r.executed();
  }
  pool.join();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(executed, 1);
}

TEST(GuardAsync, RecoveredClaimFollowsThePolicy) {
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_store(clock);
  Guard strict(*store, {.lease = 10s, .wait = 0s, .on_uncertain = OnUncertain::hold});
  Guard lenient(*store, {.lease = 10s, .wait = 0s, .on_uncertain = OnUncertain::retry});
  crash_holding(*store, *clock, "k");
  int runs = 0;
  auto outcomes = run_async<std::vector<GuardResult>>([&]() -> asio::awaitable<std::vector<GuardResult>> {
    auto fn = [&](const Attempt& a) -> asio::awaitable<std::string> {
      ++runs;
      co_return a.recovered ? "recovered" : "fresh";
    };
    std::vector<GuardResult> out;
    out.push_back(co_await strict.async_run("s", "k", "", fn));
    // Completed as uncertain: a caller under retry does not run it either.
    out.push_back(co_await lenient.async_run("s", "k", "", fn));
    crash_holding(*store, *clock, "k2");
    out.push_back(co_await lenient.async_run("s", "k2", "", fn));
    co_return out;
  });
  EXPECT_EQ(outcomes[0].outcome(), Outcome::outcome_unknown);
  EXPECT_EQ(outcomes[1].outcome(), Outcome::outcome_unknown);
  ASSERT_TRUE(outcomes[2].executed());
  EXPECT_EQ(outcomes[2].value(), "recovered");
  EXPECT_EQ(runs, 1);
}

// The caller's cancel interrupts fn mid-way: fn may have taken effect, so the key is not
// handed to the next caller as if nothing ran (the gateway's rule for an unanswered request).
TEST(GuardAsync, CancellingTheRunLeavesAnUnknownOutcomeToOnUncertain) {
  using namespace asio::experimental::awaitable_operators;
  for (OnUncertain on : {OnUncertain::hold, OnUncertain::retry}) {
    auto store = memory_store();
    Guard guard(*store, GuardOptions{.on_uncertain = on});
    asio::io_context ioc;
    auto done = asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
          asio::steady_timer timeout(co_await asio::this_coro::executor, 20ms);
          auto winner = co_await (guard.async_run("s", "k", "", []() -> asio::awaitable<std::string> {
            asio::steady_timer forever(co_await asio::this_coro::executor, 1h);
            co_await forever.async_wait(asio::use_awaitable);
            co_return "never";
          }) || timeout.async_wait(asio::use_awaitable));
          EXPECT_EQ(winner.index(), 1u);
        },
        asio::use_future);
    ioc.run();
    done.get();
    auto r = store->get(RecordId{"s", "k"}).value();
    ASSERT_TRUE(r.has_value()) << "the claim was not released: " << to_string(on);
    if (on == OnUncertain::hold) {
      EXPECT_EQ(r->state, RecordState::done);
      EXPECT_EQ(guard.run("s", "k", "", [] { return std::string("again"); }).outcome(),
                GuardResult::Outcome::outcome_unknown);
    } else {
      EXPECT_EQ(r->state, RecordState::pending) << "left to its lease";
    }
  }
}

// fn's own exception says it failed: released, and a retry runs it.
TEST(GuardAsync, AnExceptionFromFnReleasesTheClaim) {
  auto store = memory_store();
  Guard guard(*store);
  asio::io_context ioc;
  auto done = asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        EXPECT_THROW((void)co_await guard.async_run("s", "k", "",
                                                    []() -> asio::awaitable<std::string> {
                                                      throw std::runtime_error("boom");
                                                      co_return "never";
                                                    }),
                     std::runtime_error);
      },
      asio::use_future);
  ioc.run();
  done.get();
  EXPECT_FALSE(store->get(RecordId{"s", "k"}).value().has_value());
}

}  // namespace
}  // namespace idem
