// The gateway's Prometheus metrics (docs/observability.md): what it counts and how /metrics
// renders it. All members are safe for concurrent use from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/http/handler.h"
#include "idem/clock.h"

namespace idem::gateway {

// The bucket bounds (seconds, ascending) of a latency histogram whose calls may last up to
// `longest` (a timeout or deadline): a fixed ladder from 0.5 ms to 60 s, plus `longest`
// itself, so that calls cut off by it land in a bucket of their own and every configured
// timeout, however long, is covered.
std::vector<double> latency_buckets(Duration longest);

// A latency histogram with fixed buckets (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(Duration d) noexcept;
  // Appends the _bucket, _sum and _count lines; `labels` is "" or `op="begin"`.
  void render(std::string& out, std::string_view name, std::string_view labels) const;
  const std::vector<double>& bounds() const noexcept { return bounds_; }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // bounds_.size() + 1 (+Inf)
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_us_{0};
};

struct MetricsOptions {
  Duration upstream_timeout = std::chrono::seconds(30);  // the longest configured
  Duration store_deadline = std::chrono::seconds(5);     // of one store call
};

// idem_route_info{route,key_space} 1 for each route of the running config, so that a
// dashboard or the operator's page can tell which key space a route's records live in
// (docs/observability.md); "" for a config without routes.
struct RouteLabels {
  std::string_view route;
  std::string_view key_space;
};
std::string render_route_info(std::span<const RouteLabels> routes);

class Metrics {
 public:
  explicit Metrics(MetricsOptions options = {});

  // idem_requests_total{route,outcome}: outcome is forwarded, replayed, waited, unprotected
  // or a problem's metric name.
  void count_request(std::string_view route, std::string_view outcome);
  // idem_admin_actions_total{action,token}: a record deleted (or resolved) on the admin
  // listener, by the name of the token that asked (docs/admin.md, "Tokens and roles").
  void count_admin_action(std::string_view action, std::string_view token);
  // idem_resolutions_total{route,decision}: an unknown outcome the service's status
  // endpoint was asked about (docs/observability.md): done | never_happened | unknown.
  void count_resolution(std::string_view route, std::string_view decision);
  // The audit trail (docs/admin.md, "The operator's page"): every audit line this process
  // wrote (admin deletions and resolutions, status endpoint answers), the last
  // kAuditTrail of them kept for the page, oldest first.
  static constexpr std::size_t kAuditTrail = 50;
  void note_audit(std::string line);
  std::vector<std::string> audit_trail() const;
  void count_token_issued() noexcept { tokens_issued_.fetch_add(1, std::memory_order_relaxed); }
  void count_token_refused() noexcept { tokens_refused_.fetch_add(1, std::memory_order_relaxed); }
  void count_store_error() noexcept { store_errors_.fetch_add(1, std::memory_order_relaxed); }
  void count_store_conflict() noexcept { store_conflicts_.fetch_add(1, std::memory_order_relaxed); }
  void observe_store(std::string_view op, Duration d);
  // idem_upstream_seconds{upstream}: an exchange with the named upstream, "" for the default
  // one (whose series exists from the start).
  void observe_upstream(std::string_view upstream, Duration d);
  // What the HTTP layer counts (idem_inflight, idem_overloaded_total): the Server counts
  // into it.
  ServerGauges& gauges() noexcept { return gauges_; }
  std::int64_t inflight() const noexcept { return gauges_.inflight.load(std::memory_order_relaxed); }
  // A configuration reload (SIGHUP) that was applied (`ok`) or refused:
  // idem_config_reloads_total{result="ok"|"failed"}, and on success
  // idem_config_last_reload_success_timestamp_seconds (the process start until then).
  void count_reload(bool ok) noexcept;

  // The Prometheus text exposition format, version 0.0.4, with idem_build_info and the
  // process_* metrics of the Prometheus client libraries (read from /proc/self).
  std::string render() const;

 private:
  // The histogram of `label` in `of`, made with `bounds` on its first observation.
  Histogram& histogram(std::map<std::string, Histogram, std::less<>>& of, std::string_view label,
                       const std::vector<double>& bounds);

  const std::vector<double> store_bounds_;
  const double start_time_;       // seconds since the epoch, as process_start_time_seconds
  mutable std::shared_mutex mu_;  // insertions take it whole; counting and rendering share it
  std::map<std::string, std::map<std::string, std::atomic<std::uint64_t>, std::less<>>, std::less<>>
      requests_;                                         // route → outcome → count
  std::map<std::string, Histogram, std::less<>> store_;  // by op
  const std::vector<double> upstream_bounds_;
  std::map<std::string, Histogram, std::less<>> upstream_;  // by upstream name, "" the default
  std::map<std::pair<std::string, std::string>, std::uint64_t> admin_actions_;  // (action, token), under mu_
  std::map<std::pair<std::string, std::string>, std::uint64_t> resolutions_;  // (route, decision), under mu_
  std::deque<std::string> audit_trail_;                                       // under mu_
  std::atomic<std::uint64_t> tokens_issued_{0};
  std::atomic<std::uint64_t> tokens_refused_{0};
  std::atomic<std::uint64_t> store_errors_{0};
  std::atomic<std::uint64_t> store_conflicts_{0};
  ServerGauges gauges_;
  std::atomic<std::uint64_t> reloads_ok_{0};
  std::atomic<std::uint64_t> reloads_failed_{0};
  std::atomic<std::int64_t> last_reload_ms_;  // ms since the epoch
};

}  // namespace idem::gateway
