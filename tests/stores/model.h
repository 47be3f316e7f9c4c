// The randomized differential test: random operation sequences from many concurrent
// clients, applied to each backend and to a deliberately naive model of the engine (docs/design.md), compared
// outcome by outcome. The seed is printed on failure; IDEM_SEED=N replays one.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "idem/clock.h"
#include "idem/store.h"
#include "testutil/backends.h"

namespace idem::testutil {

class StoreModel : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    clock_ = std::make_shared<ManualClock>();
    store_ = GetParam().open(clock_);
    if (!store_) GTEST_SKIP() << GetParam().name << ": no server configured (its IDEM_TEST_*_URL is not set)";
  }
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<Store> store_;
};

}  // namespace idem::testutil
