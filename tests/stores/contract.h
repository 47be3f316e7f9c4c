// The store contract suite: the engine (docs/design.md) written once as TEST_P, run against every backend.
// A backend instantiates it with its delegate (tests/testutil/backends.h):
//   INSTANTIATE_TEST_SUITE_P(memory, StoreContract, Values(memory_backend()), backend_name);
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "idem/clock.h"
#include "idem/store.h"
#include "testutil/backends.h"

namespace idem::testutil {

using namespace std::chrono_literals;

class StoreContract : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    clock_ = std::make_shared<ManualClock>();
    store_ = GetParam().open(clock_);
    if (!store_) GTEST_SKIP() << GetParam().name << ": no server configured (its IDEM_TEST_*_URL is not set)";
  }

  Store& store() { return *store_; }

  // Moves the store's time forward: instantly on a controllable clock, otherwise by
  // waiting it out (the leases used with it are short).
  void advance(Duration d) {
    if (GetParam().controllable_clock) {
      clock_->advance(d);
    } else {
      std::this_thread::sleep_for(d);
    }
  }

  // A lease that a test lets run out: short when time is real.
  static constexpr Duration kShort = 200ms;
  // A lease that a test renews every half of it: the other half is the slack for one store
  // call, which under TSan on a busy machine can take well over 100 ms.
  static constexpr Duration kRenewed = 1s;
  // Long enough to comfortably outlast the time a test passes with advance(): lets a test
  // wait out kShort leases without this one running out.
  static constexpr Duration kLong = 60s;

  BeginArgs begin_args(std::string key, std::string fingerprint = "", Duration lease = kLong,
                       Duration retention = kLong, std::string scope = "s") {
    return {std::move(scope), std::move(key), std::move(fingerprint), lease, retention};
  }

  BeginOutcome must_begin(BeginArgs a) {
    auto r = store().begin(std::move(a));
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? *r : BeginOutcome{};
  }

  Fence must_acquire(BeginArgs a) {
    auto o = must_begin(std::move(a));
    EXPECT_EQ(o.kind, BeginOutcome::Kind::acquired);
    return o.fence;
  }

  CommitOutcome must_commit(std::string key, Fence fence, std::string result, Duration retention = kLong,
                            std::string scope = "s") {
    return must_commit({std::move(scope), std::move(key), fence, std::move(result), retention});
  }

  // A commit that may also replace a done record whose result starts with `over_uncertain`.
  CommitOutcome must_commit_over(std::string key, Fence fence, std::string result, std::string over_uncertain,
                                 Duration retention = kLong) {
    return must_commit({"s", std::move(key), fence, std::move(result), retention, std::move(over_uncertain)});
  }

  CommitOutcome must_commit(CommitArgs a) {
    auto r = store().commit(std::move(a));
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? *r : CommitOutcome::fenced;
  }

  // Lets a claim's kShort lease run out, then begins: a takeover, whose answer it returns.
  BeginOutcome take_over(BeginArgs a) {
    advance(2 * kShort);
    auto o = must_begin(std::move(a));
    EXPECT_EQ(o.kind, BeginOutcome::Kind::acquired);
    EXPECT_TRUE(o.recovered);
    return o;
  }

  // What a late holder knows of the uncertain marker a takeover of its claim writes: the
  // first bytes, a NUL among them (results are bytes).
  static std::string uncertain_prefix(Fence late) {
    return std::string("uncertain\0", 10) + std::to_string(late) + "\n";
  }

  struct Uncertain {
    Fence late = 0;   // the claim whose lease ran out
    Fence taker = 0;  // the takeover that completed the record as uncertain
    std::string marker;
  };
  // `key`'s claim `late` ran out, and its takeover committed uncertain_prefix(late) + tail.
  Uncertain complete_as_uncertain(const std::string& key, Duration retention = kLong,
                                  const std::string& tail = "the attempt's details") {
    Uncertain u;
    u.late = must_acquire(begin_args(key, "fp", kShort));
    u.taker = take_over(begin_args(key, "fp")).fence;
    u.marker = uncertain_prefix(u.late) + tail;
    EXPECT_EQ(must_commit(key, u.taker, u.marker, retention), CommitOutcome::committed);
    return u;
  }

  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<Store> store_;
};

}  // namespace idem::testutil
