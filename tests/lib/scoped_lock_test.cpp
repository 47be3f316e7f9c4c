// ScopedLock on the memory store.
#include "idem/scoped_lock.h"

#include <atomic>
#include <chrono>
#include <latch>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "idem/open.h"

namespace idem {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

std::unique_ptr<Store> memory_store(std::shared_ptr<const Clock> clock = nullptr) {
  auto s = open_store("memory:", StoreOptions{.clock = std::move(clock)});
  EXPECT_TRUE(s) << s.status().to_string();
  return std::move(s).value();
}

TEST(ScopedLock, AcquireGivesAFenceAndARandomOwner) {
  auto store = memory_store();
  auto a = ScopedLock::acquire(*store, "a");
  auto b = ScopedLock::acquire(*store, "b");
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->owns_lock());
  EXPECT_GT(a->fence(), 0u);
  EXPECT_GE(a->owner().size(), 22u);  // >= 128 bits in base64url
  EXPECT_NE(a->owner(), b->owner());
  EXPECT_EQ(a->name(), "a");
}

TEST(ScopedLock, SecondOwnerIsBusyUntilTheFirstUnlocks) {
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_store(clock);
  auto first = ScopedLock::acquire(*store, "stock:42", {.ttl = 10s});
  ASSERT_TRUE(first && first->owns_lock());
  clock->advance(4s);
  auto second = ScopedLock::acquire(*store, "stock:42", {.ttl = 10s});
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->owns_lock());
  EXPECT_EQ(second->retry_after(), 6s);
  EXPECT_EQ(second->unlock().value(), UnlockOutcome::not_owner) << "a busy handle owns nothing";

  EXPECT_EQ(first->unlock().value(), UnlockOutcome::released);
  EXPECT_FALSE(first->owns_lock());
  EXPECT_EQ(first->unlock().value(), UnlockOutcome::not_owner);
  auto third = ScopedLock::acquire(*store, "stock:42", {.ttl = 10s});
  ASSERT_TRUE(third && third->owns_lock());
  EXPECT_GT(third->fence(), first->fence());
}

TEST(ScopedLock, DestructorUnlocks) {
  auto store = memory_store();
  Fence first_fence = 0;
  {
    auto lock = ScopedLock::acquire(*store, "n");
    ASSERT_TRUE(lock && lock->owns_lock());
    first_fence = lock->fence();
    EXPECT_FALSE(ScopedLock::acquire(*store, "n")->owns_lock());
  }
  auto again = ScopedLock::acquire(*store, "n");
  ASSERT_TRUE(again && again->owns_lock());
  EXPECT_GT(again->fence(), first_fence);
}

TEST(ScopedLock, MovedFromHandleReleasesNothing) {
  auto store = memory_store();
  auto lock = ScopedLock::acquire(*store, "n");
  ASSERT_TRUE(lock);
  std::optional<ScopedLock> moved;
  {
    ScopedLock tmp = std::move(*lock);
    EXPECT_FALSE(lock->owns_lock());
    moved.emplace(std::move(tmp));
  }  // tmp (moved from) goes: the lock stays
  EXPECT_TRUE(moved->owns_lock());
  EXPECT_FALSE(ScopedLock::acquire(*store, "n")->owns_lock());
  moved.reset();
  EXPECT_TRUE(ScopedLock::acquire(*store, "n")->owns_lock());
}

TEST(ScopedLock, ExpiredLockIsNotOwnedAndTheNewOwnerKeepsIt) {
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_store(clock);
  auto old = ScopedLock::acquire(*store, "n", {.ttl = 5s});
  ASSERT_TRUE(old && old->owns_lock());
  clock->advance(6s);
  auto fresh = ScopedLock::acquire(*store, "n", {.ttl = 5s});
  ASSERT_TRUE(fresh && fresh->owns_lock());
  EXPECT_GT(fresh->fence(), old->fence());
  // The old holder cannot release (or extend) the new owner's lock.
  EXPECT_EQ(old->unlock().value(), UnlockOutcome::not_owner);
  EXPECT_FALSE(ScopedLock::acquire(*store, "n")->owns_lock());
  EXPECT_EQ(fresh->unlock().value(), UnlockOutcome::released);
}

TEST(ScopedLock, ExtendRenewsAndReportsALapsedLock) {
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_store(clock);
  auto lock = ScopedLock::acquire(*store, "n", {.ttl = 5s});
  ASSERT_TRUE(lock);
  clock->advance(4s);
  EXPECT_EQ(lock->extend(5s).value(), LockExtendOutcome::extended);
  clock->advance(4s);  // 8 s after acquiring: alive thanks to the extend
  EXPECT_FALSE(ScopedLock::acquire(*store, "n")->owns_lock());
  clock->advance(2s);
  EXPECT_EQ(lock->extend(5s).value(), LockExtendOutcome::not_owner);
  EXPECT_FALSE(lock->owns_lock());
}

TEST(ScopedLock, NamedOwnerReacquiresItsOwnLock) {
  auto store = memory_store();
  auto a = ScopedLock::acquire(*store, "n", {.owner = "worker-1"});
  auto b = ScopedLock::acquire(*store, "n", {.owner = "worker-1"});
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(b->owns_lock());
  EXPECT_EQ(a->fence(), b->fence());
  EXPECT_EQ(b->owner(), "worker-1");
}

TEST(ScopedLock, WaitRetriesUntilFreeOrGivesUp) {
  auto store = memory_store();
  auto held = ScopedLock::acquire(*store, "n", {.ttl = 30s});
  ASSERT_TRUE(held);
  const auto t0 = std::chrono::steady_clock::now();
  auto gave_up = ScopedLock::acquire(*store, "n", {.ttl = 30s, .wait = 30ms});
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);
  ASSERT_TRUE(gave_up);
  EXPECT_FALSE(gave_up->owns_lock());

  std::latch waiting(1);
  std::optional<Result<ScopedLock>> waiter;
  std::thread t([&] {
    waiting.count_down();
    waiter.emplace(ScopedLock::acquire(*store, "n", {.ttl = 30s, .wait = 30s}));
  });
  waiting.wait();
  ASSERT_EQ(held->unlock().value(), UnlockOutcome::released);
  t.join();
  ASSERT_TRUE(*waiter);
  EXPECT_TRUE((*waiter)->owns_lock());
}

TEST(ScopedLock, ExclusiveAcrossThreads) {
  constexpr int kThreads = 8, kRounds = 25;
  auto store = memory_store();
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  long counter = 0;  // protected by the store lock alone
  Fence last_fence = 0;
  std::vector<std::thread> threads;
  std::latch start(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int r = 0; r < kRounds; ++r) {
        auto lock = ScopedLock::acquire(*store, "counter", {.ttl = 30s, .wait = 60s});
        ASSERT_TRUE(lock && lock->owns_lock());
        if (inside.fetch_add(1) != 0) overlap = true;
        ++counter;
        EXPECT_GT(lock->fence(), last_fence) << "fences increase";
        last_fence = lock->fence();
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_EQ(counter, kThreads * kRounds);
}

TEST(ScopedLockAsync, AcquireUnlockAndRelease) {
  auto store = memory_store();
  asio::io_context ioc;
  auto f = asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        // Options as named variables: GCC 12 miscompiles aggregate temporaries in a co_await
        // expression (see scoped_lock.h).
        const LockOptions hold{.ttl = 10s};
        const LockOptions try_briefly{.ttl = 10s, .wait = 20ms};
        auto a = co_await ScopedLock::async_acquire(*store, "n", hold);
        EXPECT_TRUE(a && a->owns_lock());
        auto busy = co_await ScopedLock::async_acquire(*store, "n", try_briefly);
        EXPECT_TRUE(busy && !busy->owns_lock());
        EXPECT_EQ((co_await a->async_extend(10s)).value(), LockExtendOutcome::extended);
        EXPECT_EQ((co_await a->async_unlock()).value(), UnlockOutcome::released);
        {
          auto b = co_await ScopedLock::async_acquire(*store, "n", hold);
          EXPECT_TRUE(b && b->owns_lock());
        }  // released without waiting: the memory store answers inline
        auto c = co_await ScopedLock::async_acquire(*store, "n", hold);
        EXPECT_TRUE(c && c->owns_lock());
      },
      asio::use_future);
  ioc.run();
  f.get();
}

}  // namespace
}  // namespace idem
