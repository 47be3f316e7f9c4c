// docs/design.md I8 as one check for every durable store: each round starts durability_child on the
// store's URI, reads a random number of its acknowledgements, kills it at once with
// SIGKILL, and checks through a freshly opened store that every acknowledged key is done
// with its exact result.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>

#include "idem/store.h"
#include "stores/durability_result.h"
#include "testutil/child.h"

namespace idem::testutil {

inline void expect_acknowledged_commits_survive_kill9(const std::string& child_program,
                                                      const std::string& uri, int rounds,
                                                      const std::function<std::unique_ptr<Store>()>& reopen) {
  const auto seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::uniform_int_distribution<int> acks(1, 20);
  for (int round = 0; round < rounds; ++round) {
    const std::string scope = "round-" + std::to_string(round);
    const int want = acks(rng);
    long seen = 0;
    {
      Child child({child_program, uri, scope});
      ASSERT_TRUE(child.started()) << "cannot start " << child_program;
      while (seen < want) {
        const long ack = child.next_ack(std::chrono::seconds(60));
        ASSERT_EQ(ack, seen) << "round " << round << ": the child stopped or answered out of order";
        ++seen;
      }
      const int status = child.kill_now();
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "round " << round;
    }
    auto store = reopen();
    ASSERT_TRUE(store) << "round " << round;
    for (long i = 0; i < seen; ++i) {
      auto r = store->get({scope, "k" + std::to_string(i)});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      ASSERT_TRUE(r->has_value()) << "round " << round << ": acknowledged key k" << i << " is lost";
      EXPECT_EQ((*r)->state, RecordState::done) << "round " << round << " k" << i;
      EXPECT_EQ((*r)->result, result_for(scope, static_cast<std::uint64_t>(i)))
          << "round " << round << " k" << i;
    }
  }
}

}  // namespace idem::testutil
