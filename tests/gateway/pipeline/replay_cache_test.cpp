// The replay cache (docs/gateway.md, "Replays from memory"): what it serves, and the three
// things that end an entry: expiry (monotonic, never stretched by the wall clock), a removal (also one racing
// with a put), and a write by someone else.
#include "gateway/pipeline/replay_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "idem/open.h"
#include "idem/store_wrapper.h"

namespace idem::gateway {
namespace {

using namespace std::chrono_literals;

// A store whose foreign_writes() the test controls: nullopt models a shared server.
class WatchedStore final : public StoreWrapper {
 public:
  WatchedStore() : StoreWrapper(std::move(open_store("memory:")).value()) {}
  std::optional<std::uint64_t> foreign_writes() const noexcept override {
    if (shared) return std::nullopt;
    return writes.load();
  }
  std::atomic<std::uint64_t> writes{0};
  bool shared = false;
};

std::shared_ptr<const std::string> bytes(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}

class ReplayCacheTest : public ::testing::Test {
 protected:
  ReplayCache make(ReplayCache::Options o = {}) { return ReplayCache(store_, o, clock_); }
  WatchedStore store_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
};

TEST_F(ReplayCacheTest, ServesWhatWasPutForTheSameFingerprintOnly) {
  ReplayCache c = make();
  c.put(c.ticket(), "s", "k", "fp", bytes("first"), 1h);
  auto hit = c.get("s", "k", "fp");
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, "first");
  EXPECT_FALSE(c.get("s", "k", "other-fp")) << "a differing fingerprint is the store's to answer";
  EXPECT_FALSE(c.get("s2", "k", "fp"));
  EXPECT_FALSE(c.get("", std::string("s\0k", 3), "fp")) << "scope and key are kept apart";
  EXPECT_EQ(c.hits(), 1u);
}

TEST_F(ReplayCacheTest, NeverServesAResultPastItsExpiry) {
  ReplayCache c = make();
  const auto ticket = c.ticket();  // taken before the commit: the store's expiry is later
  clock_->advance(5ms);            // the commit itself
  c.put(ticket, "s", "k", "fp", bytes("r"), 10s);
  clock_->advance(10s - 5ms - 1us);
  EXPECT_TRUE(c.get("s", "k", "fp"));
  clock_->advance(1us);
  EXPECT_FALSE(c.get("s", "k", "fp")) << "served at retention after the ticket";
  EXPECT_EQ(c.bytes(), 0u) << "an expired entry is dropped when met";
}

// A gateway whose wall clock steps back (an NTP correction, a VM restored) must not keep
// an answer past the record's expiry: on a shared store another gateway runs the key again
// once the record is gone. The life is counted on the monotonic clock; the wall clock
// going back 1 h changes nothing.
TEST_F(ReplayCacheTest, AWallClockSteppedBackDoesNotStretchAnEntry) {
  for (bool shared : {false, true}) {
    store_.shared = shared;
    ReplayCache c = make({.max_bytes = 1 << 20, .shared_ttl = 1h});
    c.put(c.ticket(), "s", "k", "fp", bytes("r"), 50ms);
    ASSERT_TRUE(c.get("s", "k", "fp")) << shared;
    clock_->advance(-1h);
    std::this_thread::sleep_for(60ms);  // real time passes the entry's 50 ms
    EXPECT_FALSE(c.get("s", "k", "fp")) << "served 1 h past its life (shared: " << shared << ")";
    clock_->advance(1h);
  }
}

// The wall clock may only shorten an entry: for memory and SQLite it is the clock the
// record expires by, so a step forward ends the entry with the record.
TEST_F(ReplayCacheTest, AWallClockSteppedForwardEndsAnEntryWithItsRecord) {
  ReplayCache c = make();
  c.put(c.ticket(), "s", "k", "fp", bytes("r"), 1h);
  clock_->advance(1h);
  EXPECT_FALSE(c.get("s", "k", "fp"));
}

TEST_F(ReplayCacheTest, KeepsNothingThatDoesNotLive) {
  ReplayCache c = make();
  c.put(c.ticket(), "s", "k", "fp", bytes("r"), Duration::zero());  // a store that did not say
  c.put(c.ticket(), "s", "k2", "fp", bytes("r"), -1s);
  EXPECT_EQ(c.bytes(), 0u);
  EXPECT_FALSE(c.get("s", "k", "fp"));
}

TEST_F(ReplayCacheTest, ARemovedRecordIsNotServed) {
  ReplayCache c = make();
  c.put(c.ticket(), "s", "k", "fp", bytes("r"), 1h);
  c.erase("s", "k");
  EXPECT_FALSE(c.get("s", "k", "fp"));
}

TEST_F(ReplayCacheTest, APutWhoseCommitBeganBeforeARemovalIsRefused) {
  ReplayCache c = make();
  const auto ticket = c.ticket();
  // The commit is acknowledged, an operator removes the record (and the cache forgets it,
  // finding nothing), and only then does the committing request put its result.
  c.erase("s", "k");
  c.put(ticket, "s", "k", "fp", bytes("r"), 1h);
  EXPECT_FALSE(c.get("s", "k", "fp"));
  c.put(c.ticket(), "s", "k", "fp", bytes("r"), 1h);
  EXPECT_TRUE(c.get("s", "k", "fp")) << "a later commit is cached again";
}

TEST_F(ReplayCacheTest, AWriteBySomeoneElseEmptiesIt) {
  ReplayCache c = make();
  c.put(c.ticket(), "s", "a", "fp", bytes("r"), 1h);
  c.put(c.ticket(), "s", "b", "fp", bytes("r"), 1h);
  store_.writes++;  // `idem record delete` from another process, say
  EXPECT_FALSE(c.get("s", "a", "fp"));
  EXPECT_FALSE(c.get("s", "b", "fp"));
  EXPECT_EQ(c.bytes(), 0u);
  c.put(c.ticket(), "s", "a", "fp", bytes("r"), 1h);
  EXPECT_TRUE(c.get("s", "a", "fp"));
}

TEST_F(ReplayCacheTest, APutWhoseCommitRacedAForeignWriteIsRefused) {
  ReplayCache c = make();
  const auto ticket = c.ticket();
  store_.writes++;
  c.put(ticket, "s", "k", "fp", bytes("r"), 1h);
  EXPECT_FALSE(c.get("s", "k", "fp"));
}

// An entry whose ticket is older than a foreign write the cache has already seen (a put
// racing the emptying) is never served, and goes at the first lookup.
TEST_F(ReplayCacheTest, AnEntryOlderThanASeenForeignWriteIsDropped) {
  ReplayCache c = make();
  store_.writes++;
  c.put(c.ticket(), "s", "other", "fp", bytes("r"), 1h);
  EXPECT_FALSE(c.get("s", "other", "fp"));  // the cache sees the write (and empties)
  ReplayCache::Ticket old = c.ticket();
  old.foreign = 0;  // as a ticket taken before the write
  c.put(old, "s", "k", "fp", bytes("r"), 1h);
  ASSERT_GT(c.bytes(), 0u);
  EXPECT_FALSE(c.get("s", "k", "fp"));
  EXPECT_EQ(c.bytes(), 0u) << "the stale entry stayed";
  c.put(c.ticket(), "s", "k", "fp", bytes("r"), 1h);
  EXPECT_TRUE(c.get("s", "k", "fp"));
}

TEST_F(ReplayCacheTest, AStoreThatCanNoLongerTellEmptiesIt) {
  ReplayCache c = make();
  c.put(c.ticket(), "s", "k", "fp", bytes("r"), 1h);
  store_.shared = true;  // the SQLite store failed to read data_version, say
  EXPECT_FALSE(c.get("s", "k", "fp"));
  EXPECT_EQ(c.bytes(), 0u);
}

TEST_F(ReplayCacheTest, OnASharedStoreAnEntryLivesSharedTtlAtMost) {
  store_.shared = true;
  ReplayCache zero = make({.max_bytes = 1 << 20, .shared_ttl = 0s});
  zero.put(zero.ticket(), "s", "k", "fp", bytes("r"), 1h);
  EXPECT_FALSE(zero.get("s", "k", "fp"));
  ReplayCache hour = make({.max_bytes = 1 << 20, .shared_ttl = 1h});
  hour.put(hour.ticket(), "s", "k", "fp", bytes("r"), 1h);
  EXPECT_TRUE(hour.get("s", "k", "fp"));
  clock_->advance(1h);
  EXPECT_FALSE(hour.get("s", "k", "fp")) << "retention still bounds it";
}

TEST_F(ReplayCacheTest, StaysWithinItsBytesDroppingTheLeastRecentlyUsed) {
  ReplayCache c = make({.max_bytes = 64 << 10, .shared_ttl = 1s});
  c.put(c.ticket(), "s", "hot", "fp", bytes(std::string(100, 'h')), 1h);
  for (int i = 0; i < 2000; ++i) {
    c.put(c.ticket(), "s", "k" + std::to_string(i), "fp", bytes(std::string(200, 'x')), 1h);
    ASSERT_TRUE(c.get("s", "hot", "fp")) << "used after every put, so never the oldest: " << i;
    ASSERT_LE(c.bytes(), 64u << 10);
  }
  EXPECT_FALSE(c.get("s", "k0", "fp"));
  EXPECT_TRUE(c.get("s", "k1999", "fp"));
  c.put(c.ticket(), "s", "huge", "fp", bytes(std::string(64 << 10, 'x')), 1h);
  EXPECT_FALSE(c.get("s", "huge", "fp")) << "larger than a shard: not kept";
  EXPECT_TRUE(c.get("s", "hot", "fp")) << "and it pushed nothing out";
}

TEST_F(ReplayCacheTest, OffWhenMaxBytesIsZero) {
  ReplayCache c = make({.max_bytes = 0, .shared_ttl = 1s});
  c.put(c.ticket(), "s", "k", "fp", bytes("r"), 1h);
  EXPECT_FALSE(c.get("s", "k", "fp"));
  EXPECT_FALSE(c.enabled());
}

TEST_F(ReplayCacheTest, ConcurrentPutsGetsAndErasesNeverServeAnErasedKeyAfterItsErase) {
  ReplayCache c = make({.max_bytes = 1 << 20, .shared_ttl = 1s});
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&] {
      while (!stop)
        for (int k = 0; k < 50; ++k) (void)c.get("s", std::to_string(k), "fp");
    });
  for (int round = 0; round < 200; ++round) {
    const std::string key = std::to_string(round % 50);
    const auto ticket = c.ticket();
    std::thread putter([&] { c.put(ticket, "s", key, "fp", bytes("r"), 1h); });
    c.erase("s", key);
    putter.join();
    // The put came before the erase (erased) or after it (refused by its ticket).
    ASSERT_FALSE(c.get("s", key, "fp")) << round;
  }
  stop = true;
  for (auto& r : readers) r.join();
}

}  // namespace
}  // namespace idem::gateway
