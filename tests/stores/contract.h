// The store contract suite: the engine (docs/design.md) written once as TEST_P, run against every backend.
// Most of the contract is data (protocol/vectors/, run by vectors_test.cpp); this suite holds the rest.
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

  CommitOutcome must_commit(CommitArgs a) {
    auto r = store().commit(std::move(a));
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? *r : CommitOutcome::fenced;
  }

  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<Store> store_;
};

}  // namespace idem::testutil
