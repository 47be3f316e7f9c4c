// Polls a condition until it holds or a limit passes: for tests that wait on a server's
// state, which gives no event to wait on.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace idem::testutil {

// Polls `done` every 20 ms until it holds or `limit` passes; the last answer.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace idem::testutil
