// The engine (docs/design.md) as one suite for every backend; see contract.h. Most of the contract
// is data, run for every backend by vectors_test.cpp (protocol/vectors/); this suite keeps what
// data does not say well: behaviour that depends on the store (sweep's count, its size limits, an
// ordered listing, the cursors it refuses), loops and races between threads, tokens' randomness,
// and the Asio face.
#include "stores/contract.h"
#include "stores/race.h"

#include <algorithm>
#include <atomic>
#include <latch>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "idem/async.h"

namespace idem::testutil {
namespace {

using Kind = BeginOutcome::Kind;

// ---- records ------------------------------------------------------------------------------

// A fence of another scope is another claim's (protocol/vectors/records.json has the rest).
TEST_P(StoreContract, ScopesIsolateKeys) {
  const Fence f = must_acquire(begin_args("k", "", kLong, kLong, "alice"));
  must_commit("k", f, "alice's", kLong, "alice");
  auto o = must_begin(begin_args("k", "", kLong, kLong, "bob"));
  EXPECT_EQ(o.kind, Kind::acquired);
  EXPECT_EQ(must_begin(begin_args("k", "", kLong, kLong, "alice")).result, "alice's");
  // Bob's fence commits nothing in alice's scope. (Fences are per scope and key: on a store
  // with one shard per scope it may equal alice's, which makes this a retried commit.)
  const auto c = store().commit({"alice", "k", o.fence, "x", kLong}).value();
  if (o.fence != f) {
    EXPECT_EQ(c, CommitOutcome::fenced);
  }
  EXPECT_EQ(must_begin(begin_args("k", "", kLong, kLong, "alice")).result, "alice's");
}

BeginArgs owned(BeginArgs a, std::string owner) {
  a.owner = std::move(owner);
  return a;
}

TEST_P(StoreContract, SweepRemovesOnlyExpiredRecords) {
  for (int i = 0; i < 5; ++i) {
    const std::string key = "short-" + std::to_string(i);
    must_commit(key, must_acquire(begin_args(key)), "r", kShort);
  }
  must_commit("long", must_acquire(begin_args("long")), "r", kLong);
  must_acquire(begin_args("pending"));
  advance(2 * kShort);
  auto swept = store().sweep();
  ASSERT_TRUE(swept.is_ok()) << swept.status().to_string();
  // Backends with native expiry may have dropped some on their own already.
  EXPECT_LE(*swept, 5u);
  if (!store().traits().native_expiry) {
    EXPECT_EQ(*swept, 5u);
  }
  EXPECT_EQ(store().sweep().value(), 0u);
  EXPECT_EQ(must_begin(begin_args("long")).kind, Kind::replay);
  EXPECT_EQ(must_begin(begin_args("pending")).kind, Kind::in_progress);
  EXPECT_EQ(must_begin(begin_args("short-0")).kind, Kind::acquired);
}

TEST_P(StoreContract, FencesNeverRepeatForAKey) {
  std::vector<Fence> seen;
  for (int i = 0; i < 200; ++i) {
    const Fence f = must_acquire(begin_args("k"));
    seen.push_back(f);
    switch (i % 3) {
      case 0:
        ASSERT_EQ(store().release({"s", "k", f}).value(), ReleaseOutcome::released);
        break;
      case 1:
        ASSERT_TRUE(store().remove({"s", "k"}).value());
        break;
      case 2:
        ASSERT_EQ(store().release({"s", "k", f}).value(), ReleaseOutcome::released);
        break;
    }
  }
  for (std::size_t i = 1; i < seen.size(); ++i) ASSERT_GT(seen[i], seen[i - 1]) << "at " << i;
}

// ---- sizes (idem/limits.h, Store::max_result_bytes) -------------------------------------------

// A result one byte over the store's limit is refused at once, naming both sizes, and the
// claim stays as it was (the caller may commit a smaller result, or release).
TEST_P(StoreContract, AResultOverTheStoresLimitIsInvalidArgument) {
  const std::uint64_t limit = store().max_result_bytes();
  EXPECT_GE(limit, 4u << 20);                     // every store holds a few MiB
  ASSERT_LE(limit, (1ull << 30) + (1ull << 20));  // and this test can afford one byte more
  const Fence f = must_acquire(begin_args("k"));
  auto over = store().commit({"s", "k", f, std::string(limit + 1, 'r'), kLong});
  ASSERT_EQ(over.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(over.status().message().find(std::to_string(limit + 1)), std::string::npos)
      << over.status().message();
  EXPECT_NE(over.status().message().find(std::to_string(limit)), std::string::npos);
  auto rec = store().get({"s", "k"});
  ASSERT_TRUE(rec.is_ok() && rec->has_value());
  EXPECT_EQ((*rec)->state, RecordState::pending);
  EXPECT_EQ(must_commit("k", f, "small"), CommitOutcome::committed);
}

// ---- listing --------------------------------------------------------------------------------

// Every page of a listing from the start, checking each page's size.
std::vector<Record> list_all(Store& store, ListArgs a) {
  std::vector<Record> out;
  for (int pages = 0; pages < 10000; ++pages) {
    auto page = store.list(a);
    EXPECT_TRUE(page.is_ok()) << page.status().to_string();
    if (!page) break;
    EXPECT_LE(page->records.size(), a.limit);
    out.insert(out.end(), page->records.begin(), page->records.end());
    if (page->next_cursor.empty()) return out;
    a.cursor = page->next_cursor;
  }
  ADD_FAILURE() << "the listing did not end";
  return out;
}

std::multiset<std::string> keys_of(const std::vector<Record>& records) {
  std::multiset<std::string> out;
  for (const Record& r : records) out.insert(r.scope + "/" + r.key);
  return out;
}

ListArgs list_args(std::string key_prefix = "", std::optional<std::string> scope = std::nullopt,
                   std::optional<RecordState> state = std::nullopt, std::size_t limit = kDefaultListLimit) {
  return {std::move(key_prefix), std::move(scope), state, limit, ""};
}

// Records come back as get() shows them (protocol/vectors/listing.json has the filters).
TEST_P(StoreContract, ListedRecordsAreAsGetShowsThem) {
  must_commit("a:1", must_acquire(begin_args("a:1", "fp")), "r1");
  must_acquire(owned(begin_args("a:2", "fp"), "gw-1"));
  for (const char* key : {"a:1", "a:2"}) {
    auto listed = list_all(store(), list_args(key));
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0], store().get({"s", key}).value().value());
  }
  EXPECT_EQ(keys_of(list_all(store(), list_args("a:"))), (std::multiset<std::string>{"s/a:1", "s/a:2"}));
}

TEST_P(StoreContract, OrderedListIsNewestFirstAndStableUnderInserts) {
  if (!store().traits().ordered_list) GTEST_SKIP() << GetParam().name << " lists in SCAN order";
  // Later expiry is newer: retention kLong + i seconds.
  for (int i = 0; i < 4; ++i) {
    const std::string key = "o:" + std::to_string(i);
    must_commit(key, must_acquire(begin_args(key)), "r", kLong + std::chrono::seconds(i));
  }
  auto first = store().list(list_args("o:", std::nullopt, std::nullopt, 2));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->records.size(), 2u);
  EXPECT_EQ(first->records[0].key, "o:3");
  EXPECT_EQ(first->records[1].key, "o:2");
  ASSERT_FALSE(first->next_cursor.empty());
  // A record written while the operator pages is newer: it shifts nothing.
  must_commit("o:new", must_acquire(begin_args("o:new")), "r", kLong + std::chrono::seconds(10));
  auto rest = list_args("o:", std::nullopt, std::nullopt, 2);
  rest.cursor = first->next_cursor;
  std::vector<std::string> keys;
  for (const Record& r : list_all(store(), rest)) keys.push_back(r.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"o:1", "o:0"}));
}

TEST_P(StoreContract, ListRejectsBadLimitsAndCursors) {
  for (std::size_t limit : {std::size_t{0}, kMaxListLimit + 1}) {
    EXPECT_EQ(store().list(list_args("", std::nullopt, std::nullopt, limit)).status().code(),
              StatusCode::invalid_argument)
        << limit;
  }
  EXPECT_TRUE(store().list(list_args("", std::nullopt, std::nullopt, kMaxListLimit)).is_ok());
  // The last one is a position in uppercase hex: stores hand out lowercase only.
  for (std::string cursor : {"garbage", "k12", "kzz", "s1.x.0", "s99999.0.0", "k00000000000000000000000a",
                             "k000000000000000100000000AB"}) {
    auto a = list_args();
    a.cursor = cursor;
    EXPECT_EQ(store().list(a).status().code(), StatusCode::invalid_argument) << cursor;
  }
}

// ---- concurrency ----------------------------------------------------------------------------

// A ghost claim (its lease already ran out) is abandoned by its owner while others begin
// and may take it over: whoever acquires keeps its claim, before or after the abandon (an
// abandon names an owner and never removes another's claim).
TEST_P(StoreContract, AbandonRacingBeginsNeverRemovesTheNewHoldersClaim) {
  for (int round = 0; round < 6; ++round) {
    const std::string key = "ghost-" + std::to_string(round);
    must_acquire(owned(begin_args(key, "", kShort), "ghost"));
    advance(2 * kShort);
    constexpr int kThreads = 8;
    std::latch start(kThreads + 1);
    std::atomic<int> acquired{0}, errors{0};
    std::atomic<Fence> holder{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        auto r = store().begin(owned(begin_args(key), "gw-" + std::to_string(i)));
        if (!r) return ++errors, void();
        if (r->kind == Kind::acquired) {
          ++acquired;
          holder = r->fence;
        }
      });
    }
    start.arrive_and_wait();
    auto abandoned = store().abandon({"s", key, "ghost"});
    for (auto& t : threads) t.join();
    ASSERT_TRUE(abandoned.is_ok()) << abandoned.status().to_string();
    EXPECT_EQ(errors.load(), 0);
    // Either the abandon or a takeover came first; one begin acquired in any case.
    ASSERT_EQ(acquired.load(), 1) << key;
    auto rec = store().get({"s", key}).value();
    ASSERT_TRUE(rec) << key << ": the new holder's claim went (abandon " << to_string(*abandoned) << ")";
    EXPECT_EQ(rec->fence, holder.load());
    EXPECT_NE(rec->owner, "ghost");
    EXPECT_EQ(must_commit(key, holder.load(), "r"), CommitOutcome::committed);
  }
}

// I1 under churn: threads keep claiming a few keys; whoever acquires marks the key held,
// and no two ever hold one at once. Fences grow with every acquisition.
TEST_P(StoreContract, AtMostOneHolderUnderChurn) {
  constexpr int kThreads = 16, kKeys = 3, kIterations = 150;
  std::array<std::atomic<int>, kKeys> holders{};
  std::array<std::atomic<Fence>, kKeys> last_fence{};
  std::atomic<int> violations{0}, acquisitions{0}, errors{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kIterations; ++i) {
        const int k = (t + i) % kKeys;
        const std::string key = "churn-" + std::to_string(k);
        auto r = store().begin(begin_args(key));
        if (!r) {
          ++errors;
          continue;
        }
        if (r->kind != Kind::acquired) continue;
        ++acquisitions;
        if (holders[k].fetch_add(1) != 0) ++violations;
        if (last_fence[k].exchange(r->fence) >= r->fence) ++violations;
        holders[k].fetch_sub(1);
        auto rel = store().release({"s", key, r->fence});
        if (!rel || *rel != ReleaseOutcome::released) ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations, 0);
  EXPECT_EQ(errors, 0);
  EXPECT_GT(acquisitions, kKeys);
}

// ---- one-time tokens -------------------------------------------------------------------------

TEST_P(StoreContract, TokensAreLongRandomAndUrlSafe) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto t = store().issue_token({"s", kLong});
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    EXPECT_GE(t->size(), 22u);  // ≥ 128 bits in base64url
    EXPECT_TRUE(std::all_of(t->begin(), t->end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    })) << *t;
    EXPECT_TRUE(seen.insert(*t).second);
  }
}

// ---- release with a token restore ----------------------------------------------------------

// The gateway's token mode: the record's key is "<key space>:<token>".
ReleaseArgs release_restoring(std::string key, Fence fence, std::string token, Duration ttl) {
  return {"s", std::move(key), fence, TokenRestore{std::move(token), ttl}};
}

// A duplicate waiting for the key claims it the moment it is released and consumes the
// token at once: it must find the token re-armed, every time.
TEST_P(StoreContract, ADuplicateThatClaimsAfterTheReleaseFindsTheTokenReArmed) {
  for (int round = 0; round < 20; ++round) {
    const std::string token = store().issue_token({"s", kLong}).value();
    const std::string key = "space:" + token;
    const Fence f = must_acquire(begin_args(key));
    ASSERT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::consumed);
    std::atomic<bool> go{false};
    Result<ConsumeOutcome> seen = unavailable("never claimed");
    std::thread duplicate([&] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 100000; ++i) {
        auto b = store().begin(begin_args(key));
        if (b && b->kind == Kind::acquired) {
          seen = store().consume_token({"s", token});
          return;
        }
      }
    });
    go = true;
    auto released = store().release(release_restoring(key, f, token, kLong));
    duplicate.join();
    ASSERT_EQ(released.value(), ReleaseOutcome::released);
    ASSERT_TRUE(seen.is_ok()) << seen.status().to_string();
    EXPECT_EQ(*seen, ConsumeOutcome::consumed) << "round " << round;
  }
}

// ---- locks -----------------------------------------------------------------------------------

TEST_P(StoreContract, LockContentionHasOneOwnerAtATime) {
  constexpr int kThreads = 16, kIterations = 100;
  std::atomic<int> inside{0}, violations{0}, wins{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string owner = "owner-" + std::to_string(t);
      start.arrive_and_wait();
      for (int i = 0; i < kIterations; ++i) {
        auto r = store().lock({"contended", owner, kLong});
        if (!r || r->kind != LockOutcome::Kind::locked) continue;
        ++wins;
        if (inside.fetch_add(1) != 0) ++violations;
        inside.fetch_sub(1);
        if (store().unlock({"contended", owner}).value() != UnlockOutcome::released) ++violations;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations, 0);
  EXPECT_GT(wins, 0);
}

// ---- the Asio face ---------------------------------------------------------------------------

TEST_P(StoreContract, CoroutinesResumeOnTheirOwnExecutor) {
  boost::asio::io_context io;
  bool finished = false;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        namespace asio = boost::asio;
        const auto me = std::this_thread::get_id();
        // Arguments are named locals, never temporaries inside the co_await: g++ 12
        // mis-destroys those.
        BeginArgs first = begin_args("co"), again = begin_args("co"), bad_args = begin_args("");
        auto b = co_await async_begin(store(), std::move(first), asio::use_awaitable);
        EXPECT_EQ(std::this_thread::get_id(), me);
        EXPECT_TRUE(b.is_ok());
        EXPECT_EQ(b->kind, Kind::acquired);
        CommitArgs commit{"s", "co", b->fence, "co-result", kLong};
        auto c = co_await async_commit(store(), std::move(commit), asio::use_awaitable);
        EXPECT_EQ(c.value(), CommitOutcome::committed);
        auto r = co_await async_begin(store(), std::move(again), asio::use_awaitable);
        EXPECT_EQ(r->result, "co-result");
        auto bad = co_await async_begin(store(), std::move(bad_args), asio::use_awaitable);
        EXPECT_EQ(bad.status().code(), StatusCode::invalid_argument);
        finished = true;
      },
      boost::asio::detached);
  io.run();
  EXPECT_TRUE(finished);
}

}  // namespace
}  // namespace idem::testutil
