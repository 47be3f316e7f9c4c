// The two ways a store call fails (docs/stores.md, "When a store call fails"), told apart
// by every networked backend, with a fault proxy (tests/testutil/fault_proxy.h) between
// the store and a real server:
//   the reply is lost after the command reached the server → deadline_exceeded, and the
//     call did take effect (so "outcome unknown" is the honest answer);
//   the connection is refused → unavailable, and nothing took effect;
//   once the proxy forwards again, the store reconnects and works.
// Redis, PostgreSQL and MariaDB (for the MySQL store) are the shared servers of
// scripts/services (skipped when their IDEM_TEST_*_URL is unset); the Redis Cluster is a
// one-node cluster of the test's own whose node announces the proxy's port, since a
// cluster sends clients to the addresses its nodes announce.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "idem/open.h"
#include "stores/redis/redis_uri.h"
#include "testutil/backends.h"
#include "testutil/eventually.h"
#include "testutil/fault_proxy.h"
#include "testutil/redis_server.h"

namespace idem::testutil {
namespace {

using namespace std::chrono_literals;
using Kind = BeginOutcome::Kind;

constexpr Duration kOpTimeout = 1s;

using Rig = BehindProxy;

// The calls under test, each with the state it needs and a way to tell whether it took
// effect.
enum class Op { begin, commit, release, consume_token };
const Op kOps[] = {Op::begin, Op::commit, Op::release, Op::consume_token};

const char* name(Op op) {
  switch (op) {
    case Op::begin:
      return "begin";
    case Op::commit:
      return "commit";
    case Op::release:
      return "release";
    case Op::consume_token:
      return "consume_token";
  }
  return "?";
}

class Call {
 public:
  Call(Store& store, Op op, std::string key) : store_(store), op_(op), key_(std::move(key)) {}

  // With the proxy forwarding: what the call needs before it can run.
  void prepare() {
    if (op_ == Op::commit || op_ == Op::release) fence_ = store_.begin(args()).value().fence;
    if (op_ == Op::consume_token) token_ = store_.issue_token({"s", 60s}).value();
  }

  Status run() {
    switch (op_) {
      case Op::begin:
        return store_.begin(args()).status();
      case Op::commit:
        return store_.commit({"s", key_, fence_, "result", 60s}).status();
      case Op::release:
        return store_.release({"s", key_, fence_}).status();
      case Op::consume_token:
        return store_.consume_token({"s", token_}).status();
    }
    return internal_error("?");
  }

  // Whether the call took effect, read back through the store.
  bool applied() {
    if (op_ == Op::consume_token)
      return store_.consume_token({"s", token_}).value() == ConsumeOutcome::invalid;
    const auto record = store_.get({"s", key_}).value();
    switch (op_) {
      case Op::begin:
        return record.has_value();
      case Op::commit:
        return record && record->state == RecordState::done;
      case Op::release:
        return !record;
      default:
        return false;
    }
  }

 private:
  BeginArgs args() const { return {"s", key_, "fp", 60s, 60s}; }

  Store& store_;
  Op op_;
  std::string key_;
  Fence fence_ = 0;
  std::string token_;
};

// Runs `op` once on a key of its own, so that the store is connected and the server has
// what the call needs (Redis's script cache) before a fault is switched on.
void warm_up(Store& store, Op op) {
  static std::atomic<int> n{0};
  Call warm(store, op, "warm-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  warm.prepare();
  const Status s = warm.run();
  ASSERT_TRUE(s.is_ok()) << s.to_string();
}

class StoreFailure : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    setup_ = GetParam().behind_proxy();
    if (!setup_.skip.empty()) GTEST_SKIP() << setup_.skip;
    store_ = open(kOpTimeout);
  }

  std::unique_ptr<Store> open(Duration op_timeout) {
    StoreOptions options;
    options.op_timeout = op_timeout;
    auto s = open_store(setup_.uri, options);
    if (!s) ADD_FAILURE() << "cannot open " << setup_.uri << ": " << s.status().to_string();
    return s ? std::move(*s) : nullptr;
  }

  FaultProxy& proxy() { return *setup_.proxy; }

  // Back to normal: cut what the fault left behind, forward, and wait until the store
  // answers again (it reconnects by itself).
  void restore() {
    proxy().cut_all();
    proxy().forward();
    EXPECT_TRUE(eventually([&] { return store_->ping().is_ok(); })) << "the store did not come back";
  }

  static std::string key(Op op) {
    static std::atomic<int> n{0};
    return std::string(name(op)) + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  }

  Rig setup_;
  std::unique_ptr<Store> store_;
};

// The command reaches the server, which runs it; its reply is lost and the connection
// hangs. The call is outcome unknown after op_timeout, and it did take effect.
TEST_P(StoreFailure, LostReplyIsOutcomeUnknownAndTheCallMayHaveRun) {
  for (Op op : kOps) {
    SCOPED_TRACE(name(op));
    warm_up(*store_, op);
    Call call(*store_, op, key(op));
    call.prepare();
    proxy().drop_replies();
    const auto before = proxy().counters();
    const Status s = call.run();
    EXPECT_EQ(s.code(), StatusCode::deadline_exceeded) << s.to_string();
    EXPECT_NE(s.message().find("outcome is unknown"), std::string::npos) << s.message();
    const auto after = proxy().counters();
    EXPECT_GT(after.bytes_to_server, before.bytes_to_server);      // it was sent...
    EXPECT_GT(after.bytes_from_server, before.bytes_from_server);  // ...and answered, in vain
    restore();
    EXPECT_TRUE(call.applied()) << "the call reported as outcome unknown did not run: " << s.to_string();
  }
}

// The same, but the connection breaks as the reply comes: outcome unknown at once, without
// waiting for op_timeout.
TEST_P(StoreFailure, ConnectionLostAfterSendingIsOutcomeUnknownAtOnce) {
  auto patient = open(20s);
  ASSERT_TRUE(patient);
  for (Op op : kOps) {
    SCOPED_TRACE(name(op));
    warm_up(*patient, op);
    Call call(*patient, op, key(op));
    call.prepare();
    proxy().drop_and_cut();
    const auto started = std::chrono::steady_clock::now();
    const Status s = call.run();
    EXPECT_EQ(s.code(), StatusCode::deadline_exceeded) << s.to_string();
    EXPECT_NE(s.message().find("after sending"), std::string::npos) << s.message();
    EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
    proxy().forward();
    EXPECT_TRUE(eventually([&] { return patient->ping().is_ok(); }));
    if (!setup_.replies_before_commit) {
      EXPECT_TRUE(call.applied());
    }
  }
}

// No connection can be made: the call is unavailable, and nothing happened.
TEST_P(StoreFailure, RefusedConnectionIsUnavailableAndNothingRan) {
  for (Op op : kOps) {
    SCOPED_TRACE(name(op));
    Call call(*store_, op, key(op));
    call.prepare();
    proxy().refuse();
    proxy().cut_all();
    // Until the store has seen its connections go (a call written to a connection that
    // is being cut is rightly outcome unknown).
    ASSERT_TRUE(eventually([&] { return store_->ping().status().code() == StatusCode::unavailable; }));
    const Status s = call.run();
    EXPECT_EQ(s.code(), StatusCode::unavailable) << s.to_string();
    EXPECT_NE(s.message().find("connect"), std::string::npos) << s.message();  // it says why
    restore();
    EXPECT_FALSE(call.applied()) << "a call reported as unavailable had run";
  }
}

// Replies late beyond op_timeout: outcome unknown; late within it: answered.
TEST_P(StoreFailure, SlowRepliesWithinTheDeadlineAreAnswered) {
  proxy().delay_replies(100ms);
  auto r = store_->begin({"s", key(Op::begin), "fp", 60s, 60s});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->kind, Kind::acquired);
  proxy().delay_replies(3 * std::chrono::duration_cast<std::chrono::milliseconds>(kOpTimeout));
  EXPECT_EQ(store_->begin({"s", key(Op::begin), "fp", 60s, 60s}).status().code(),
            StatusCode::deadline_exceeded);
  restore();
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreFailure,
                         ::testing::Values(redis_backend(), redis_cluster_backend(), postgres_backend(),
                                           mysql_backend()),
                         backend_name);

}  // namespace
}  // namespace idem::testutil
