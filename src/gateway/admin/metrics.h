// The gateway's Prometheus metrics (docs/admin.md): what it counts and how /metrics renders
// it. All members are safe for concurrent use from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>

#include "idem/clock.h"

namespace idem::gateway {

// A latency histogram with fixed buckets (seconds).
class Histogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,   0.25,   0.5,   1,    5};
  void observe(Duration d) noexcept;
  // Appends the _bucket, _sum and _count lines; `labels` is "" or `op="begin"`.
  void render(std::string& out, std::string_view name, std::string_view labels) const;

 private:
  std::array<std::atomic<std::uint64_t>, kBounds.size() + 1> buckets_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_us_{0};
};

class Metrics {
 public:
  // idem_requests_total{route,outcome}: outcome is forwarded, replayed, waited, unprotected
  // or a problem's metric name.
  void count_request(std::string_view route, std::string_view outcome);
  void count_token_issued() noexcept { tokens_issued_.fetch_add(1, std::memory_order_relaxed); }
  void count_store_error() noexcept { store_errors_.fetch_add(1, std::memory_order_relaxed); }
  void count_store_conflict() noexcept { store_conflicts_.fetch_add(1, std::memory_order_relaxed); }
  void count_overloaded() noexcept { overloaded_.fetch_add(1, std::memory_order_relaxed); }
  void observe_store(std::string_view op, Duration d);
  void observe_upstream(Duration d) noexcept { upstream_.observe(d); }
  void inflight_add(int delta) noexcept { inflight_.fetch_add(delta, std::memory_order_relaxed); }
  std::int64_t inflight() const noexcept { return inflight_.load(std::memory_order_relaxed); }

  // The Prometheus text exposition format, version 0.0.4.
  std::string render() const;

 private:
  mutable std::shared_mutex mu_;  // insertions take it whole; counting and rendering share it
  std::map<std::string, std::map<std::string, std::atomic<std::uint64_t>, std::less<>>, std::less<>>
      requests_;                                         // route → outcome → count
  std::map<std::string, Histogram, std::less<>> store_;  // by op
  std::atomic<std::uint64_t> tokens_issued_{0};
  std::atomic<std::uint64_t> store_errors_{0};
  std::atomic<std::uint64_t> store_conflicts_{0};
  std::atomic<std::uint64_t> overloaded_{0};
  std::atomic<std::int64_t> inflight_{0};
  Histogram upstream_;
};

}  // namespace idem::gateway
