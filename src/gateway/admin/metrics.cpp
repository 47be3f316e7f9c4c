#include "gateway/admin/metrics.h"

#include <cstdio>
#include <mutex>

namespace idem::gateway {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

void Histogram::observe(Duration d) noexcept {
  const double s = static_cast<double>(d.count()) / 1e6;
  std::size_t i = 0;
  while (i < kBounds.size() && s > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(static_cast<std::uint64_t>(d.count() > 0 ? d.count() : 0), std::memory_order_relaxed);
}

void Histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  const std::string sep = labels.empty() ? "" : std::string(labels) + ",";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    const std::string le = i < kBounds.size() ? number(kBounds[i]) : "+Inf";
    out += std::string(name) + "_bucket{" + sep + "le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  const std::string braces = labels.empty() ? "" : "{" + std::string(labels) + "}";
  out += std::string(name) + "_sum" + braces + " " +
         number(static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1e6) + "\n";
  out += std::string(name) + "_count" + braces + " " +
         std::to_string(count_.load(std::memory_order_relaxed)) + "\n";
}

void Metrics::count_request(std::string_view route, std::string_view outcome) {
  {
    // Every pair but the first of its kind is counted under the shared lock, without
    // building a key: this runs once per request on every thread.
    std::shared_lock lock(mu_);
    if (auto r = requests_.find(route); r != requests_.end())
      if (auto o = r->second.find(outcome); o != r->second.end()) {
        o->second.fetch_add(1, std::memory_order_relaxed);
        return;
      }
  }
  std::unique_lock lock(mu_);
  auto r = requests_.find(route);
  if (r == requests_.end()) r = requests_.try_emplace(std::string(route)).first;
  auto o = r->second.find(outcome);
  if (o == r->second.end()) o = r->second.try_emplace(std::string(outcome)).first;
  o->second.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::observe_store(std::string_view op, Duration d) {
  Histogram* h = nullptr;
  {
    std::shared_lock lock(mu_);
    if (auto it = store_.find(op); it != store_.end()) h = &it->second;  // map nodes are stable
  }
  if (!h) {
    std::unique_lock lock(mu_);
    auto it = store_.find(op);
    if (it == store_.end()) it = store_.try_emplace(std::string(op)).first;
    h = &it->second;
  }
  h->observe(d);
}

std::string Metrics::render() const {
  std::string out;
  std::shared_lock lock(mu_);
  out += "# HELP idem_requests_total Protected requests by route and outcome.\n";
  out += "# TYPE idem_requests_total counter\n";
  for (const auto& [route, outcomes] : requests_)
    for (const auto& [outcome, v] : outcomes)
      out += "idem_requests_total{route=\"" + label_value(route) + "\",outcome=\"" + label_value(outcome) +
             "\"} " + std::to_string(v.load(std::memory_order_relaxed)) + "\n";
  auto counter = [&](const char* name, const char* help, std::uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
           std::to_string(v) + "\n";
  };
  counter("idem_tokens_issued_total", "One-time tokens issued.", tokens_issued_.load());
  counter("idem_store_errors_total", "Store calls that failed.", store_errors_.load());
  counter("idem_store_conflicts_total", "Commits or extends answered fenced.", store_conflicts_.load());
  counter("idem_overloaded_total",
          "Requests refused 503 overloaded: the request bodies held in memory reached their cap.",
          overloaded_.load());
  out += "# HELP idem_store_seconds Store call latency.\n# TYPE idem_store_seconds histogram\n";
  for (const auto& [op, h] : store_) h.render(out, "idem_store_seconds", "op=\"" + label_value(op) + "\"");
  out += "# HELP idem_upstream_seconds Upstream exchange latency.\n# TYPE idem_upstream_seconds histogram\n";
  upstream_.render(out, "idem_upstream_seconds", "");
  out += "# HELP idem_inflight Requests being handled.\n# TYPE idem_inflight gauge\nidem_inflight " +
         std::to_string(inflight_.load()) + "\n";
  return out;
}

}  // namespace idem::gateway
