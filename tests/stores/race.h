// Racing begins on one key, shared by the contract suite and the distributed stores' own
// tests (two stores on one server are two gateways sharing it).
#pragma once

#include <atomic>
#include <initializer_list>
#include <latch>
#include <thread>
#include <vector>

#include "idem/store.h"

namespace idem::testutil {

struct RaceCounts {
  int acquired = 0;
  int in_progress = 0;
  int other = 0;  // any other outcome, or an error
};

// `threads` threads, released together, each call begin(args) once; thread i uses the
// i-th store of `stores` in turn. Returns how the calls were answered.
inline RaceCounts race_begin(std::initializer_list<Store*> stores, const BeginArgs& args, int threads) {
  const std::vector<Store*> on(stores);
  std::latch start(threads);
  std::atomic<int> acquired{0}, in_progress{0}, other{0};
  std::vector<std::thread> racers;
  for (int i = 0; i < threads; ++i) {
    racers.emplace_back([&, i] {
      Store& s = *on[static_cast<std::size_t>(i) % on.size()];
      start.arrive_and_wait();
      auto r = s.begin(args);
      if (!r) return ++other, void();
      const auto kind = r->kind;
      (kind == BeginOutcome::Kind::acquired      ? acquired
       : kind == BeginOutcome::Kind::in_progress ? in_progress
                                                 : other)++;
    });
  }
  for (auto& t : racers) t.join();
  return {acquired.load(), in_progress.load(), other.load()};
}

}  // namespace idem::testutil
