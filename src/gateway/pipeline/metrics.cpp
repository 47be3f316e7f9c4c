#include "gateway/pipeline/metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "idem/version.h"

namespace idem::gateway {
namespace {

constexpr double kLadder[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                              0.25,   0.5,   1,      2.5,   5,    10,    30,   60};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
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

double seconds_of(Duration d) { return static_cast<double>(d.count()) / 1e6; }

// What process_* reports, from /proc/self (proc(5)); a field that cannot be read is absent.
struct ProcessStats {
  std::optional<double> cpu_seconds;
  std::optional<double> resident_bytes;
  std::optional<double> virtual_bytes;
  std::optional<double> start_time;  // seconds since the epoch
  std::optional<double> open_fds;
  std::optional<double> max_fds;
};

double boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("btime ")) return std::stod(line.substr(6));
  return -1;
}

ProcessStats read_process_stats() {
  ProcessStats s;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces: fields are counted
  // from the last ')'.
  if (const auto close = stat.rfind(')'); close != std::string::npos && ticks > 0) {
    std::istringstream fields(stat.substr(close + 1));
    std::vector<std::string> f{std::istream_iterator<std::string>(fields),
                               std::istream_iterator<std::string>()};
    // f[0] is field 3 (state): utime 14, stime 15, starttime 22, vsize 23, rss 24.
    if (f.size() > 21) {
      try {
        s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;
        if (const double boot = boot_time(); boot >= 0) s.start_time = boot + std::stod(f[19]) / ticks;
        s.virtual_bytes = std::stod(f[20]);
        s.resident_bytes = std::stod(f[21]) * page;
      } catch (const std::exception&) {
      }
    }
  }
  if (DIR* d = ::opendir("/proc/self/fd")) {
    double n = 0;
    const int own = ::dirfd(d);
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.' && std::to_string(own) != e->d_name) ++n;
    ::closedir(d);
    s.open_fds = n;
  }
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    s.max_fds = static_cast<double>(files.rlim_cur);
  return s;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::vector<double> latency_buckets(Duration longest) {
  std::vector<double> b(std::begin(kLadder), std::end(kLadder));
  const double s = seconds_of(longest);
  if (s > 0 && std::find(b.begin(), b.end(), s) == b.end()) {
    b.push_back(s);
    std::sort(b.begin(), b.end());
  }
  return b;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
  for (std::size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(Duration d) noexcept {
  const double s = seconds_of(d);
  const std::size_t i =
      static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), s) - bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(static_cast<std::uint64_t>(d.count() > 0 ? d.count() : 0), std::memory_order_relaxed);
}

void Histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  const std::string sep = labels.empty() ? "" : std::string(labels) + ",";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += std::string(name) + "_bucket{" + sep + "le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  const std::string braces = labels.empty() ? "" : "{" + std::string(labels) + "}";
  out += std::string(name) + "_sum" + braces + " " +
         number(static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1e6) + "\n";
  out += std::string(name) + "_count" + braces + " " +
         std::to_string(count_.load(std::memory_order_relaxed)) + "\n";
}

Metrics::Metrics(MetricsOptions options)
    : store_bounds_(latency_buckets(options.store_deadline)),
      start_time_(read_process_stats().start_time.value_or(now_seconds())),
      upstream_bounds_(latency_buckets(options.upstream_timeout)),
      last_reload_ms_(static_cast<std::int64_t>(start_time_ * 1000)) {
  upstream_.try_emplace("", upstream_bounds_);
}

void Metrics::count_admin_action(std::string_view action, std::string_view token) {
  // Rare (an operator's action): the whole lock every time.
  std::unique_lock lock(mu_);
  ++admin_actions_[{std::string(action), std::string(token)}];
}

void Metrics::note_audit(std::string line) {
  std::unique_lock lock(mu_);
  audit_trail_.push_back(std::move(line));
  if (audit_trail_.size() > kAuditTrail) audit_trail_.pop_front();
}

std::vector<std::string> Metrics::audit_trail() const {
  std::shared_lock lock(mu_);
  return {audit_trail_.begin(), audit_trail_.end()};
}

void Metrics::count_resolution(std::string_view route, std::string_view decision) {
  // Rare (an unknown outcome): the whole lock every time.
  std::unique_lock lock(mu_);
  ++resolutions_[{std::string(route), std::string(decision)}];
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

Histogram& Metrics::histogram(std::map<std::string, Histogram, std::less<>>& of, std::string_view label,
                              const std::vector<double>& bounds) {
  {
    std::shared_lock lock(mu_);
    if (auto it = of.find(label); it != of.end()) return it->second;  // map nodes are stable
  }
  std::unique_lock lock(mu_);
  auto it = of.find(label);
  if (it == of.end()) it = of.try_emplace(std::string(label), bounds).first;
  return it->second;
}

void Metrics::observe_store(std::string_view op, Duration d) {
  histogram(store_, op, store_bounds_).observe(d);
}

void Metrics::observe_upstream(std::string_view upstream, Duration d) {
  histogram(upstream_, upstream, upstream_bounds_).observe(d);
}

void Metrics::count_reload(bool ok) noexcept {
  if (!ok) {
    reloads_failed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  last_reload_ms_.store(static_cast<std::int64_t>(ms), std::memory_order_relaxed);
  reloads_ok_.fetch_add(1, std::memory_order_relaxed);
}

std::string render_route_info(std::span<const RouteLabels> routes) {
  if (routes.empty()) return {};
  std::string out =
      "# HELP idem_route_info The routes of the running configuration and their key spaces; always 1.\n"
      "# TYPE idem_route_info gauge\n";
  for (const RouteLabels& r : routes)
    out += "idem_route_info{route=\"" + label_value(r.route) + "\",key_space=\"" + label_value(r.key_space) +
           "\"} 1\n";
  return out;
}

std::string Metrics::render() const {
  std::string out;
  auto head = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto counter = [&](const char* name, const char* help, std::uint64_t v) {
    head(name, "counter", help);
    out += std::string(name) + " " + std::to_string(v) + "\n";
  };
  auto gauge = [&](const char* name, const char* help, double v) {
    head(name, "gauge", help);
    out += std::string(name) + " " + number(v) + "\n";
  };

  head("idem_build_info", "gauge", "The version of the running idem; always 1.");
  out += "idem_build_info{version=\"" + label_value(kVersion) + "\"} 1\n";
  {
    std::shared_lock lock(mu_);
    head("idem_requests_total", "counter", "Protected requests by route and outcome.");
    for (const auto& [route, outcomes] : requests_)
      for (const auto& [outcome, v] : outcomes)
        out += "idem_requests_total{route=\"" + label_value(route) + "\",outcome=\"" + label_value(outcome) +
               "\"} " + std::to_string(v.load(std::memory_order_relaxed)) + "\n";
    head("idem_admin_actions_total", "counter",
         "Records deleted or resolved on the admin listener, by action and the token's name.");
    for (const auto& [labels, v] : admin_actions_)
      out += "idem_admin_actions_total{action=\"" + label_value(labels.first) + "\",token=\"" +
             label_value(labels.second) + "\"} " + std::to_string(v) + "\n";
    head("idem_resolutions_total", "counter",
         "Unknown outcomes the service's status endpoint was asked about, by route and what it said.");
    for (const auto& [labels, v] : resolutions_)
      out += "idem_resolutions_total{route=\"" + label_value(labels.first) + "\",decision=\"" +
             label_value(labels.second) + "\"} " + std::to_string(v) + "\n";
    head("idem_store_seconds", "histogram", "Store call latency.");
    for (const auto& [op, h] : store_) h.render(out, "idem_store_seconds", "op=\"" + label_value(op) + "\"");
    head("idem_upstream_seconds", "histogram", "Upstream exchange latency, by upstream (\"\": the default).");
    for (const auto& [name, h] : upstream_)
      h.render(out, "idem_upstream_seconds", "upstream=\"" + label_value(name) + "\"");
  }
  counter("idem_tokens_issued_total", "One-time tokens issued.", tokens_issued_.load());
  counter("idem_tokens_refused_total", "Token requests refused 429 by tokens.per_client or tokens.max_live.",
          tokens_refused_.load());
  counter("idem_store_errors_total", "Store calls that failed.", store_errors_.load());
  counter("idem_store_conflicts_total", "Commits or extends answered fenced.", store_conflicts_.load());
  counter("idem_overloaded_total",
          "Requests refused 503 overloaded: the request bodies held in memory reached their cap.",
          gauges_.overloaded.load());
  head("idem_inflight", "gauge", "Requests being handled.");
  out += "idem_inflight " + std::to_string(gauges_.inflight.load()) + "\n";
  head("idem_config_reloads_total", "counter",
       "Configuration reloads (SIGHUP) applied (ok) or refused (failed).");
  out += "idem_config_reloads_total{result=\"ok\"} " + std::to_string(reloads_ok_.load()) + "\n";
  out += "idem_config_reloads_total{result=\"failed\"} " + std::to_string(reloads_failed_.load()) + "\n";
  gauge("idem_config_last_reload_success_timestamp_seconds",
        "When the configuration in use was last loaded successfully (the start, until a reload succeeds).",
        static_cast<double>(last_reload_ms_.load()) / 1000);

  const ProcessStats p = read_process_stats();
  if (p.cpu_seconds) {
    head("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
    out += "process_cpu_seconds_total " + number(*p.cpu_seconds) + "\n";
  }
  if (p.resident_bytes)
    gauge("process_resident_memory_bytes", "Resident memory size in bytes.", *p.resident_bytes);
  if (p.virtual_bytes)
    gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", *p.virtual_bytes);
  if (p.open_fds) gauge("process_open_fds", "Number of open file descriptors.", *p.open_fds);
  if (p.max_fds) gauge("process_max_fds", "Maximum number of open file descriptors.", *p.max_fds);
  gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", start_time_);
  return out;
}

}  // namespace idem::gateway
