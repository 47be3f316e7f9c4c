// Time as the engine sees it. Leases and expiry are judged by the store's clock (docs/design.md):
// for the in-process stores (memory, SQLite) that is the Clock given at open, so tests can
// inject a ManualClock instead of sleeping.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace idem {

using Duration = std::chrono::microseconds;
using TimePoint = std::chrono::time_point<std::chrono::system_clock, Duration>;

// Microseconds since the Unix epoch: the unit in which stores keep times and fences.
inline std::int64_t to_micros(TimePoint t) noexcept { return t.time_since_epoch().count(); }
inline TimePoint from_micros(std::int64_t us) noexcept { return TimePoint(Duration(us)); }

// Implementations are safe for concurrent use.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const noexcept = 0;
};

// The process's wall clock (std::chrono::system_clock).
class SystemClock final : public Clock {
 public:
  TimePoint now() const noexcept override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
};

// A clock that moves only when told to. Starts at a fixed, realistic instant so that
// fences derived from it look like real ones.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = from_micros(1'800'000'000'000'000)) : us_(to_micros(start)) {}

  TimePoint now() const noexcept override { return from_micros(us_.load(std::memory_order_acquire)); }
  void advance(Duration d) noexcept { us_.fetch_add(d.count(), std::memory_order_acq_rel); }
  void set(TimePoint t) noexcept { us_.store(to_micros(t), std::memory_order_release); }

 private:
  std::atomic<std::int64_t> us_;
};

}  // namespace idem
