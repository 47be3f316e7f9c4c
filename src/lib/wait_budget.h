// How the Guard and ScopedLock wait for a key or lock held by someone else: poll with a
// backoff that starts small (a short holder is noticed quickly), doubles up to a cap, and
// never sleeps past the holder's remaining lease or the caller's own wait. Time is the process's steady
// clock: `wait` is the caller's patience, not store time.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

#include "idem/clock.h"

namespace idem::lib {

class WaitBudget {
 public:
  using SteadyClock = std::chrono::steady_clock;

  explicit WaitBudget(Duration wait) : deadline_(SteadyClock::now() + std::max(wait, Duration{0})) {}

  // How long to sleep before asking again, or nullopt when the wait is spent.
  std::optional<SteadyClock::duration> next(Duration retry_after) {
    const auto left = deadline_ - SteadyClock::now();
    if (left <= SteadyClock::duration::zero()) return std::nullopt;
    const SteadyClock::duration sleep = std::min<SteadyClock::duration>({backoff_, retry_after, left});
    backoff_ = std::min<Duration>(backoff_ * 2, kMaxBackoff);
    return std::max<SteadyClock::duration>(sleep, kMinSleep);
  }

 private:
  static constexpr Duration kFirstBackoff = std::chrono::milliseconds(2);
  static constexpr Duration kMaxBackoff = std::chrono::milliseconds(200);
  static constexpr Duration kMinSleep = std::chrono::microseconds(100);

  SteadyClock::time_point deadline_;
  Duration backoff_ = kFirstBackoff;
};

}  // namespace idem::lib
