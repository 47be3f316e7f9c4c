// Duplicates in flight and replays from memory (docs/gateway.md), in the in-process
// runtime (runtime_fixture.h) whose store counts the begins that reach it: a duplicate of a
// request in flight waits for it without a store call, one attached to a first that fails
// runs again, and a completed key is answered from memory until it is removed.
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "gateway/pipeline/coalescer.h"
#include "gateway/app/runtime_fixture.h"

namespace idem::gateway {
namespace {

using namespace idem::gateway::testing;
using namespace std::chrono_literals;

class Coalescing : public GatewayRuntime {
 protected:
  // Until `n` duplicates are attached to flights on this gateway (or 10 s pass).
  bool wait_following(std::size_t n) {
    for (const auto until = std::chrono::steady_clock::now() + 10s;
         std::chrono::steady_clock::now() < until;) {
      if (gateway_->coalescer().following() == n) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
  std::future<e2e::Response> post_async(std::string key, e2e::Headers extra = {}) {
    return std::async(std::launch::async, [this, key = std::move(key), extra = std::move(extra)] {
      e2e::Headers h = {{"Idempotency-Key", key}};
      h.insert(h.end(), extra.begin(), extra.end());
      return request(port_, verb::post, "/orders", h, "{}");
    });
  }
  static std::int64_t execution(const e2e::Response& r) {
    return boost::json::parse(r.body()).at("execution").as_int64();
  }
};

TEST_F(Coalescing, DuplicatesOfARequestInFlightWaitForItWithoutAStoreCall) {
  auto first = post_async("in-flight", {{"X-Test-Delay-Ms", "3000"}});
  ASSERT_TRUE(wait_at_upstream("in-flight"));
  const int begins = store_.begins.load();
  std::vector<std::future<e2e::Response>> dups;
  for (int i = 0; i < 8; ++i) dups.push_back(post_async("in-flight"));
  ASSERT_TRUE(wait_following(8)) << "attached: " << gateway_->coalescer().following();
  EXPECT_EQ(store_.begins.load(), begins) << "waiting duplicates asked the store";
  const auto f = first.get();
  ASSERT_EQ(f.result_int(), 201u) << f.body();
  for (auto& d : dups) {
    const auto r = d.get();
    EXPECT_EQ(r.result_int(), 201u);
    EXPECT_EQ(r.body(), f.body());
    EXPECT_EQ(r["Idempotent-Replayed"], "true");
  }
  EXPECT_EQ(upstream_count("in-flight"), "1");
  EXPECT_EQ(store_.begins.load(), begins);
  EXPECT_NE(metrics_->render().find("route=\"orders\",outcome=\"waited\"} 8"), std::string::npos)
      << metrics_->render();
}

TEST_F(Coalescing, ADuplicateAttachedToAFirstThatFailsWith5xxRunsAgain) {
  auto first = post_async("fails", {{"X-Test-Status", "503"}, {"X-Test-Delay-Ms", "3000"}});
  ASSERT_TRUE(wait_at_upstream("fails"));
  std::vector<std::future<e2e::Response>> dups;
  for (int i = 0; i < 4; ++i) dups.push_back(post_async("fails"));
  ASSERT_TRUE(wait_following(4));
  EXPECT_EQ(first.get().result_int(), 503u);
  for (auto& d : dups) {
    const auto r = d.get();
    ASSERT_EQ(r.result_int(), 201u) << r.body();
    EXPECT_EQ(execution(r), 2) << "every duplicate gets the one second execution";
  }
  EXPECT_EQ(upstream_count("fails"), "2");
}

TEST_F(Coalescing, ADuplicateWithAnotherBodyIsAnsweredByTheStore) {
  auto first = post_async("other-body", {{"X-Test-Delay-Ms", "2000"}});
  ASSERT_TRUE(wait_at_upstream("other-body"));
  // Not attached to the first: the store answers it at once (the fingerprint is checked
  // before anything else).
  auto other = request(port_, verb::post, "/orders", {{"Idempotency-Key", "other-body"}}, R"({"x":1})");
  EXPECT_EQ(other.result_int(), 422u) << other.body();
  EXPECT_EQ(type_of(other), "urn:idem:problem:key-reused");
  EXPECT_EQ(first.get().result_int(), 201u);
  EXPECT_EQ(upstream_count("other-body"), "1");
}

TEST_F(Coalescing, AReplayIsAnsweredFromMemory) {
  const auto r1 = post("/orders", "memo");
  ASSERT_EQ(r1.result_int(), 201u);
  const int begins = store_.begins.load();
  for (int i = 0; i < 5; ++i) {
    const auto r = post("/orders", "memo");
    EXPECT_EQ(r.result_int(), 201u);
    EXPECT_EQ(r.body(), r1.body());
    EXPECT_EQ(r["Idempotent-Replayed"], "true");
  }
  EXPECT_EQ(store_.begins.load(), begins);
  EXPECT_EQ(gateway_->replay_cache().hits(), 5u);
  // The record is in the store all the same: another gateway (or a restart) replays it.
  const auto rec = request(admin_port_, verb::get, "/v1/records/_/memo?key_space=orders");
  EXPECT_EQ(rec.result_int(), 200u) << rec.body();
}

// A record this gateway no longer has in memory (committed by another gateway, or pushed
// out of the cache) is replayed by the store once, then from memory.
TEST_F(Coalescing, AReplayTheStoreAnsweredIsAnsweredFromMemoryNextTime) {
  const auto r1 = post("/orders", "elsewhere");
  ASSERT_EQ(r1.result_int(), 201u);
  gateway_->replay_cache().clear();
  const int begins = store_.begins.load();
  const auto hits = gateway_->replay_cache().hits();
  const auto r2 = post("/orders", "elsewhere");
  EXPECT_EQ(r2["Idempotent-Replayed"], "true");
  EXPECT_EQ(r2.body(), r1.body());
  EXPECT_EQ(store_.begins.load(), begins + 1) << "the store answered the first repeat";
  for (int i = 0; i < 3; ++i) {
    const auto r = post("/orders", "elsewhere");
    EXPECT_EQ(r["Idempotent-Replayed"], "true");
    EXPECT_EQ(r.body(), r1.body());
  }
  EXPECT_EQ(store_.begins.load(), begins + 1) << "later repeats asked the store";
  EXPECT_EQ(gateway_->replay_cache().hits(), hits + 3);
}

// What the store replayed is kept for what the record still lives, not for the route's
// retention from the replay: here the replay comes half the retention after the commit,
// and once the record has expired the next request runs again.
TEST_F(Coalescing, AReplayTheStoreAnsweredIsNotServedPastTheRecordsExpiry) {
  const auto r1 = post("/short", "expiring");              // retention: 2s
  const auto answered = std::chrono::steady_clock::now();  // the commit came before this
  ASSERT_EQ(r1.result_int(), 201u);
  gateway_->replay_cache().clear();
  std::this_thread::sleep_for(1s);  // the time that passes is what is tested
  const auto r2 = post("/short", "expiring");
  EXPECT_EQ(r2["Idempotent-Replayed"], "true");
  const int begins = store_.begins.load();
  std::this_thread::sleep_until(answered + 2s + 200ms);  // the record has expired
  const auto r3 = post("/short", "expiring");
  EXPECT_EQ(store_.begins.load(), begins + 1) << "answered from memory past the record's expiry";
  EXPECT_EQ(r3.result_int(), 201u);
  EXPECT_EQ(r3["Idempotent-Replayed"], "");
  EXPECT_EQ(execution(r3), 2);
}

TEST_F(Coalescing, ARecordRemovedThroughTheAdminApiIsNotReplayedByThisGateway) {
  ASSERT_EQ(post("/orders", "removed").result_int(), 201u);
  ASSERT_EQ(post("/orders", "removed")["Idempotent-Replayed"], "true");
  ASSERT_EQ(request(admin_port_, verb::delete_, "/v1/records/_/removed?key_space=orders").result_int(), 204u);
  const auto again = post("/orders", "removed");
  EXPECT_EQ(again.result_int(), 201u);
  EXPECT_EQ(again["Idempotent-Replayed"], "");
  EXPECT_EQ(execution(again), 2);
}

TEST_F(Coalescing, ARemovalTheStoreMayHaveAppliedStillEmptiesTheCache) {
  ASSERT_EQ(post("/orders", "maybe-removed").result_int(), 201u);
  store_.fail_records = true;  // DELETE answers 503: the removal may or may not have happened
  ASSERT_EQ(request(admin_port_, verb::delete_, "/v1/records/_/maybe-removed?key_space=orders").result_int(),
            503u);
  store_.fail_records = false;
  const int begins = store_.begins.load();
  const auto r = post("/orders", "maybe-removed");
  EXPECT_EQ(r["Idempotent-Replayed"], "true") << "the store still has it";
  EXPECT_EQ(store_.begins.load(), begins + 1) << "asked the store, not the cache";
}

// Many keys, many duplicates each, all at once: one execution per key, and every answer of
// a key is the first's.
TEST_F(Coalescing, ConcurrentDuplicatesOfManyKeysRunEachKeyOnce) {
  constexpr int kKeys = 12, kDuplicates = 6;
  std::vector<std::future<e2e::Response>> answers;
  for (int d = 0; d < kDuplicates; ++d)
    for (int k = 0; k < kKeys; ++k)
      answers.push_back(post_async("many-" + std::to_string(k), {{"X-Test-Delay-Ms", "50"}}));
  std::vector<std::string> bodies(kKeys);
  for (int i = 0; i < static_cast<int>(answers.size()); ++i) {
    const auto r = answers[i].get();
    ASSERT_EQ(r.result_int(), 201u) << r.body();
    std::string& first = bodies[i % kKeys];
    if (first.empty()) first = r.body();
    EXPECT_EQ(r.body(), first);
  }
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(upstream_count("many-" + std::to_string(k)), "1") << k;
  EXPECT_EQ(gateway_->coalescer().in_flight(), 0u);
}

}  // namespace
}  // namespace idem::gateway
