// Deduplicator on the memory store: a redelivered message is handled once, a failed
// handling runs again on redelivery, a message in progress elsewhere is handed back.
#include "idem/deduplicator.h"

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
using Kind = Delivery::Kind;

std::unique_ptr<Store> memory_store(std::shared_ptr<const Clock> clock = nullptr) {
  auto s = open_store("memory:", StoreOptions{.clock = std::move(clock)});
  EXPECT_TRUE(s) << s.status().to_string();
  return std::move(s).value();
}

TEST(Deduplicator, RedeliveredMessageIsADuplicate) {
  auto store = memory_store();
  Deduplicator dedup(*store, "points-consumer");
  int granted = 0;
  auto grant = [&](Fence) {
    ++granted;
    return Status::ok();
  };
  auto first = dedup.handle("msg-1", grant);
  ASSERT_TRUE(first) << first.status().to_string();
  EXPECT_EQ(first->kind, Kind::processed);
  EXPECT_TRUE(first->ack());
  EXPECT_TRUE(first->stored);
  EXPECT_GT(first->fence, 0u);

  for (int i = 0; i < 3; ++i) {
    auto again = dedup.handle("msg-1", grant);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->kind, Kind::duplicate);
    EXPECT_TRUE(again->ack());
  }
  EXPECT_EQ(dedup.handle("msg-2", grant)->kind, Kind::processed);
  EXPECT_EQ(granted, 2);
}

TEST(Deduplicator, FailedHandlingRunsAgainOnRedelivery) {
  auto store = memory_store();
  Deduplicator dedup(*store, "orders-consumer");
  int attempts = 0;
  auto flaky = [&]() -> Status {
    ++attempts;
    if (attempts == 1) return unavailable("database restarting");
    return Status::ok();
  };
  auto failed = dedup.handle("msg-1", flaky);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.status().code(), StatusCode::unavailable);
  EXPECT_EQ(failed.status().message(), "database restarting");
  EXPECT_EQ(dedup.handle("msg-1", flaky)->kind, Kind::processed);
  EXPECT_EQ(dedup.handle("msg-1", flaky)->kind, Kind::duplicate);
  EXPECT_EQ(attempts, 2);
}

TEST(Deduplicator, ExceptionReleasesTheMessage) {
  auto store = memory_store();
  Deduplicator dedup(*store, "c");
  EXPECT_THROW((void)dedup.handle("m", []() -> Status { throw std::runtime_error("bug"); }),
               std::runtime_error);
  EXPECT_EQ(dedup.handle("m", [] {})->kind, Kind::processed);
}

TEST(Deduplicator, MessageInProgressElsewhereIsHandedBack) {
  auto store = memory_store();
  Deduplicator a(*store, "c", {.lease = 30s}), b(*store, "c", {.lease = 30s});
  std::latch entered(1), release(1);
  std::thread first([&] {
    auto d = a.handle("m", [&] {
      entered.count_down();
      release.wait();
    });
    EXPECT_EQ(d->kind, Kind::processed);
  });
  entered.wait();
  bool ran = false;
  auto d = b.handle("m", [&] { ran = true; });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Kind::in_progress);
  EXPECT_FALSE(d->ack());
  EXPECT_GT(d->retry_after, 0us);
  release.count_down();
  first.join();
  EXPECT_EQ(b.handle("m", [&] { ran = true; })->kind, Kind::duplicate);
  EXPECT_FALSE(ran);
}

TEST(Deduplicator, ConsumerGroupsAreSeparateScopes) {
  auto store = memory_store();
  Deduplicator billing(*store, "billing"), email(*store, "email");
  int runs = 0;
  auto fn = [&] { ++runs; };
  EXPECT_EQ(billing.handle("m", fn)->kind, Kind::processed);
  EXPECT_EQ(email.handle("m", fn)->kind, Kind::processed);
  EXPECT_EQ(billing.handle("m", fn)->kind, Kind::duplicate);
  EXPECT_EQ(runs, 2);
}

TEST(Deduplicator, CrashedConsumersMessageRunsAgainByDefault) {
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_store(clock);
  // A consumer took the message and died.
  ASSERT_TRUE(store->begin(BeginArgs{"c", "m", "", 10s, 24h}));
  clock->advance(11s);
  Deduplicator dedup(*store, "c", {.lease = 10s});
  auto d = dedup.handle("m", [](const Attempt& a) { EXPECT_TRUE(a.recovered); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Kind::processed);
  EXPECT_TRUE(d->recovered);

  // Under `fail` the same situation is reported, not run.
  ASSERT_TRUE(store->begin(BeginArgs{"c", "m2", "", 10s, 24h}));
  clock->advance(11s);
  Deduplicator strict(*store, "c", {.lease = 10s, .on_uncertain = OnUncertain::hold});
  bool ran = false;
  auto u = strict.handle("m2", [&] { ran = true; });
  ASSERT_TRUE(u);
  EXPECT_EQ(u->kind, Kind::uncertain);
  EXPECT_FALSE(u->ack());
  EXPECT_FALSE(ran);
}

TEST(Deduplicator, UncertainMessageIsReportedUntilItsRetentionPasses) {
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_store(clock);
  ASSERT_TRUE(store->begin(BeginArgs{"c", "m", "", 10s, 24h}));
  clock->advance(11s);
  Deduplicator strict(*store, "c", {.lease = 10s, .retention = 1h, .on_uncertain = OnUncertain::hold});
  int runs = 0;
  // Redelivered every 10 minutes: each is reported, none runs, and none keeps it longer.
  for (int i = 0; i < 5; ++i) {
    auto u = strict.handle("m", [&] { ++runs; });
    ASSERT_TRUE(u);
    EXPECT_EQ(u->kind, Kind::uncertain) << i;
    clock->advance(10min);
  }
  EXPECT_EQ(runs, 0);
  clock->advance(11min);  // 61 minutes after it was found uncertain
  auto d = strict.handle("m", [&] { ++runs; });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Kind::processed);
  EXPECT_EQ(runs, 1);
}

TEST(Deduplicator, SmallResultsAreKeptForDuplicates) {
  auto store = memory_store();
  Deduplicator dedup(*store, "c");
  EXPECT_EQ(dedup.handle("m", [] { return std::string("points=10"); })->result, "points=10");
  auto dup = dedup.handle("m", [] { return std::string("other"); });
  EXPECT_EQ(dup->kind, Kind::duplicate);
  EXPECT_EQ(dup->result, "points=10");
}

TEST(Deduplicator, ConcurrentRedeliveriesProcessOnce) {
  constexpr int kThreads = 16;
  auto store = memory_store();
  Deduplicator dedup(*store, "c");
  std::atomic<int> runs{0};
  std::latch start(kThreads);
  std::vector<std::optional<Result<Delivery>>> out(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      out[i].emplace(dedup.handle("m", [&] { ++runs; }));
    });
  }
  for (auto& t : threads) t.join();
  int processed = 0;
  for (auto& d : out) {
    ASSERT_TRUE(*d) << d->status().to_string();
    EXPECT_NE((*d)->kind, Kind::uncertain);
    processed += (*d)->kind == Kind::processed;
  }
  EXPECT_EQ(processed, 1);
  EXPECT_EQ(runs.load(), 1);
}

TEST(DeduplicatorAsync, FailureThenProcessedThenDuplicate) {
  auto store = memory_store();
  Deduplicator dedup(*store, "c");
  asio::io_context ioc;
  int attempts = 0, granted = 0;
  auto f = asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<std::vector<std::string>> {
        std::vector<std::string> seen;
        for (int i = 0; i < 3; ++i) {  // three deliveries of one message; the first handling fails
          auto d = co_await dedup.async_handle("m", [&]() -> asio::awaitable<Status> {
            if (attempts++ == 0) co_return unavailable("try again");
            ++granted;
            co_return Status::ok();
          });
          seen.push_back(d ? to_string(d->kind) : d.status().to_string());
        }
        co_return seen;
      },
      asio::use_future);
  ioc.run();
  EXPECT_EQ(f.get(), (std::vector<std::string>{"unavailable: try again", "processed", "duplicate"}));
  EXPECT_EQ(granted, 1);
}

}  // namespace
}  // namespace idem
