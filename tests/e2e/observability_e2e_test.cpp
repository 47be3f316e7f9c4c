// End to end: what the gateway tells the upstream and the operator (docs/observability.md):
// X-Forwarded-For, X-Forwarded-Proto, X-Request-Id and traceparent on forwarded requests,
// the request log's fields (hostile values included), the /metrics additions, and the
// Grafana dashboard, every metric of which must be exposed.
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "e2e/e2e_fixture.h"
#include "idem/version.h"

namespace idem::e2e {
namespace {

const std::string kTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

bool is_uuid4(const std::string& s) {
  static const std::regex uuid4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  return std::regex_match(s.begin(), s.end(), uuid4);
}

// What the upstream received: its fields ([name, value] in order) of the first request
// whose `name` field (or target, with name "") is `value`.
class Seen {
 public:
  Seen(unsigned short upstream, const std::string& name, const std::string& value) {
    json::value all = json::parse(request(upstream, verb::get, "/_seen?from=0").body());
    for (const auto& r : all.as_array()) {
      const auto& o = r.as_object();
      bool match = name.empty() && o.at("target").as_string() == value;
      for (const auto& f : o.at("fields").as_array())
        if (!name.empty() && f.as_array()[0].as_string() == name && f.as_array()[1].as_string() == value)
          match = true;
      if (!match) continue;
      found_ = true;
      for (const auto& f : o.at("fields").as_array())
        fields_.emplace_back(f.as_array()[0].as_string(), f.as_array()[1].as_string());
      return;
    }
  }
  bool found() const { return found_; }
  // Every value of the fields named `name` (case-insensitive), in order.
  std::vector<std::string> all(const std::string& name) const {
    std::vector<std::string> out;
    for (const auto& [n, v] : fields_)
      if (boost::beast::iequals(n, name)) out.push_back(v);
    return out;
  }
  // The value of the one field named `name`; "(n fields)" when there is not exactly one.
  std::string one(const std::string& name) const {
    auto v = all(name);
    return v.size() == 1 ? v[0] : "(" + std::to_string(v.size()) + " fields)";
  }

 private:
  bool found_ = false;
  std::vector<std::pair<std::string, std::string>> fields_;
};

class Observability : public GatewayE2E {
 protected:
  // The request log's lines, once one holds `marker` (the log is written every 100 ms).
  static std::vector<std::string> log_lines_with(const std::string& marker) {
    std::string log;
    for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
         std::chrono::steady_clock::now() < until && log.find(marker) == std::string::npos;) {
      std::ifstream f(*dir_ + "/idem.log");
      std::stringstream s;
      s << f.rdbuf();
      log = s.str();
      if (log.find(marker) == std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::vector<std::string> lines;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  // The request log's line whose request_id is `id`, parsed.
  static json::object log_line(const std::string& id) {
    const std::string quoted = json::serialize(json::string(id));  // as the log writes it
    for (const std::string& line : log_lines_with(quoted.substr(1, quoted.size() - 2))) {
      if (!line.starts_with("{\"time\"")) continue;
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      EXPECT_FALSE(ec) << line;
      if (!ec && v.as_object().at("request_id").as_string() == id) return v.as_object();
    }
    ADD_FAILURE() << "no log line with request_id " << id;
    return {};
  }
  static std::string metrics() { return request(admin_, verb::get, "/metrics").body(); }
};

TEST_F(Observability, ProtectedRequestsReachTheUpstreamWithForwardingFieldsAndTrace) {
  const std::string key = unique("fwd");
  const std::string id = unique("client-id");
  Response first = post("/orders", key, "{}",
                        {{"X-Forwarded-For", "1.2.3.4"},
                         {"X-Forwarded-Proto", "https"},
                         {"traceparent", kTraceparent},
                         {"tracestate", "vendor=opaque,other=1"},
                         {"X-Request-Id", id}});
  ASSERT_EQ(first.result_int(), 201u) << first.body();
  EXPECT_EQ(header(first, "X-Request-Id"), id);
  Seen seen(upstream_->port(), "Idempotency-Key", key);
  ASSERT_TRUE(seen.found());
  EXPECT_EQ(seen.one("X-Forwarded-For"), "127.0.0.1") << "a client that is no trusted proxy is not believed";
  EXPECT_EQ(seen.one("X-Forwarded-Proto"), "http") << "a client-sent value is replaced";
  EXPECT_EQ(seen.one("Forwarded"), "for=127.0.0.1;proto=http");
  EXPECT_EQ(seen.one("traceparent"), kTraceparent);
  EXPECT_EQ(seen.one("tracestate"), "vendor=opaque,other=1");
  EXPECT_EQ(seen.one("X-Request-Id"), id);

  // A replay names the repeat's request id; its body is the stored one, byte for byte.
  const std::string id2 = unique("client-id");
  Response again = post("/orders", key, "{}", {{"X-Request-Id", id2}});
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(again.body(), first.body());
  EXPECT_EQ(header(again, "X-Request-Id"), id2);
  Response third = post("/orders", key, "{}");
  EXPECT_EQ(third.body(), first.body());
  EXPECT_TRUE(is_uuid4(header(third, "X-Request-Id"))) << header(third, "X-Request-Id");
  EXPECT_EQ(executions(key), 1);
}

TEST_F(Observability, UnmatchedRequestsGetAGeneratedIdUnlessTheClientSentOneSaneId) {
  const std::string plain = "/" + unique("plain");
  Response r = request(port_, verb::get, plain);
  ASSERT_EQ(r.result_int(), 200u);
  Seen seen(upstream_->port(), "", plain);
  ASSERT_TRUE(seen.found());
  EXPECT_EQ(seen.one("X-Forwarded-For"), "127.0.0.1");
  EXPECT_EQ(seen.one("X-Forwarded-Proto"), "http");
  EXPECT_TRUE(is_uuid4(seen.one("X-Request-Id"))) << seen.one("X-Request-Id");
  EXPECT_EQ(header(r, "X-Request-Id"), seen.one("X-Request-Id"));

  // Not one sane id: replaced by a generated one, and only that one reaches the upstream.
  const std::string too_long(129, 'x');
  const std::vector<Headers> insane = {{{"X-Request-Id", "has space"}},
                                       {{"X-Request-Id", too_long}},
                                       {{"X-Request-Id", "caf\xc3\xa9"}},
                                       {{"X-Request-Id", "a"}, {"X-Request-Id", "b"}},
                                       {{"X-Request-Id", ""}}};
  for (const Headers& h : insane) {
    const std::string target = "/" + unique("insane");
    Response a = request(port_, verb::get, target, h);
    ASSERT_EQ(a.result_int(), 200u);
    Seen s(upstream_->port(), "", target);
    EXPECT_TRUE(is_uuid4(s.one("X-Request-Id"))) << h[0].second << ": " << s.one("X-Request-Id");
    EXPECT_EQ(header(a, "X-Request-Id"), s.one("X-Request-Id"));
  }
  const std::string target = "/" + unique("sane");
  const std::string uuid = "7f8e2c1a-0b9d-4c3e-8f1a-2b3c4d5e6f70";
  Response a = request(port_, verb::get, target, {{"X-Request-Id", uuid}, {"X-Forwarded-For", "1.2.3.4"}});
  Seen s(upstream_->port(), "", target);
  EXPECT_EQ(s.one("X-Request-Id"), uuid);
  EXPECT_EQ(s.one("X-Forwarded-For"), "127.0.0.1");
  EXPECT_EQ(header(a, "X-Request-Id"), uuid);
}

// A field the client's Connection header names is hop-by-hop and removed; the forwarding
// fields are added after that, so a client cannot make them disappear.
TEST_F(Observability, TheClientsConnectionHeaderCannotRemoveTheForwardingFields) {
  const std::string key = unique("conn");
  const std::string id = unique("conn-id");
  const std::string raw = "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
                          "\r\nX-Request-Id: " + id +
                          "\r\nX-Forwarded-For: 1.2.3.4\r\nX-Forwarded-Proto: https\r\n"
                          "Connection: close, X-Forwarded-For, X-Request-Id, X-Forwarded-Proto\r\n"
                          "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
  const std::string answer = raw_exchange(port_, raw);
  ASSERT_TRUE(answer.starts_with("HTTP/1.1 201")) << answer;
  Seen seen(upstream_->port(), "Idempotency-Key", key);
  ASSERT_TRUE(seen.found());
  EXPECT_EQ(seen.one("X-Forwarded-For"), "127.0.0.1");
  EXPECT_EQ(seen.one("X-Forwarded-Proto"), "http");
  EXPECT_EQ(seen.one("X-Request-Id"), id);

  const std::string target = "/" + unique("conn-plain");
  const std::string plain = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: " + id +
                            "\r\nConnection: close, X-Forwarded-For, X-Request-Id, X-Forwarded-Proto\r\n\r\n";
  ASSERT_TRUE(raw_exchange(port_, plain).starts_with("HTTP/1.1 200"));
  Seen s(upstream_->port(), "", target);
  EXPECT_EQ(s.one("X-Forwarded-For"), "127.0.0.1");
  EXPECT_EQ(s.one("X-Forwarded-Proto"), "http");
  EXPECT_EQ(s.one("X-Request-Id"), id);
}

TEST_F(Observability, TheLogLineHasEveryFieldAndNeverTheKey) {
  const std::string key = unique("secret-key");
  const std::string id = unique("log-id");
  ASSERT_EQ(post("/orders?q=hidden", key, "{}", {{"X-Request-Id", id}}).result_int(), 201u);
  const json::object o = log_line(id);
  ASSERT_FALSE(o.empty());
  EXPECT_TRUE(std::regex_match(std::string(o.at("time").as_string()),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << o.at("time");
  EXPECT_EQ(o.at("route").as_string(), "orders");
  EXPECT_EQ(o.at("method").as_string(), "POST");
  EXPECT_EQ(o.at("path").as_string(), "/orders");
  EXPECT_EQ(o.at("outcome").as_string(), "forwarded");
  EXPECT_EQ(o.at("status").to_number<int>(), 201);
  EXPECT_GT(o.at("latency_us").to_number<long long>(), 0);
  EXPECT_EQ(o.at("client").as_string(), "127.0.0.1");
  EXPECT_EQ(o.at("key_hash").as_string().size(), 12u);
  for (const std::string& line : log_lines_with(id)) EXPECT_EQ(line.find(key), std::string::npos) << line;
}

// The path and the request id are the client's: quotes, backslashes and bytes that are
// not UTF-8 still give one line of valid JSON, and a long path is cut.
TEST_F(Observability, HostilePathsAndIdsStillGiveOneValidJsonLine) {
  const std::string id = unique(R"(a"b\c{})");
  const std::string path = "/forms/x\"y\xff\xc3{}";
  const std::string raw = "POST " + path + "?q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: " + id +
                          "\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  const std::string answer = raw_exchange(port_, raw);
  ASSERT_TRUE(answer.starts_with("HTTP/1.1 400")) << answer;  // token-missing, logged
  EXPECT_NE(answer.find("X-Request-Id: " + id + "\r\n"), std::string::npos) << answer;
  json::object o = log_line(id);
  ASSERT_FALSE(o.empty());
  EXPECT_EQ(o.at("route").as_string(), "form");
  EXPECT_EQ(o.at("outcome").as_string(), "token_missing");
  EXPECT_EQ(o.at("path").as_string(), "/forms/x\"y\xef\xbf\xbd\xef\xbf\xbd{}");
  EXPECT_EQ(o.at("request_id").as_string(), id);

  const std::string long_id = unique("long-path");
  const std::string long_path = "/forms/" + std::string(4000, 'p');
  Response r = request(port_, verb::post, long_path, {{"X-Request-Id", long_id}});
  EXPECT_EQ(r.result_int(), 400u);
  o = log_line(long_id);
  ASSERT_FALSE(o.empty());
  const std::string logged(o.at("path").as_string());
  EXPECT_EQ(logged, long_path.substr(0, 1024) + "...");
  // Every line the request log holds is one JSON object.
  for (const std::string& line : log_lines_with(long_id)) {
    if (!line.starts_with("{")) continue;
    boost::system::error_code ec;
    json::parse(line, ec);
    EXPECT_FALSE(ec) << line;
  }
}

// On a listener on every interface (one IPv6 socket that takes IPv4 too), an IPv4 client is
// named as IPv4, not as ::ffff:127.0.0.1.
TEST(ObservabilityProcess, AnIpv4ClientOfADualStackListenerIsNamedAsIpv4) {
  const std::string dir = temp_dir();
  {
    Process upstream({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true);
    const unsigned short port = free_port(), admin = free_port();
    Process idem(
        {IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:" + std::to_string(upstream.port()), "--store",
         "memory:", "--listen", ":" + std::to_string(port), "--admin", "127.0.0.1:" + std::to_string(admin)},
        dir + "/idem.log");
    ASSERT_TRUE(wait_healthy(admin, 5000));
    Response r = request(port, verb::get, "/dual", {{"X-Forwarded-For", "203.0.113.9"}});
    ASSERT_EQ(r.result_int(), 200u);
    Seen seen(upstream.port(), "", "/dual");
    EXPECT_EQ(seen.one("X-Forwarded-For"), "127.0.0.1");
    EXPECT_EQ(seen.one("Forwarded"), "for=127.0.0.1;proto=http");
  }
  remove_dir(dir);
}

// The value of the first sample line `series` (name with labels, exactly as rendered).
std::optional<double> sample(const std::string& text, const std::string& series) {
  const std::string needle = "\n" + series + " ";
  const auto at = text.find(needle);
  if (at == std::string::npos) return std::nullopt;
  return std::stod(text.substr(at + needle.size(), text.find('\n', at + needle.size())));
}

TEST_F(Observability, MetricsHaveBuildInfoProcessReloadsAndBucketsUpToTheTimeouts) {
  ASSERT_EQ(post("/orders", unique("m")).result_int(), 201u);
  const std::string m = metrics();
  EXPECT_EQ(sample(m, "idem_build_info{version=\"" + std::string(kVersion) + "\"}"), 1.0) << m;
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const char* name :
       {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
        "process_open_fds", "process_max_fds", "process_start_time_seconds"}) {
    EXPECT_NE(m.find(std::string("# HELP ") + name + " "), std::string::npos) << name;
    EXPECT_NE(m.find(std::string("# TYPE ") + name + " "), std::string::npos) << name;
    ASSERT_TRUE(sample(m, name)) << name;
    EXPECT_GE(*sample(m, name), 0) << name;
  }
  EXPECT_GT(*sample(m, "process_resident_memory_bytes"), 1e6);
  EXPECT_GT(*sample(m, "process_open_fds"), 3);
  EXPECT_GE(*sample(m, "process_max_fds"), *sample(m, "process_open_fds"));
  const double start = *sample(m, "process_start_time_seconds");
  EXPECT_LT(start, now + 1);
  EXPECT_GT(start, now - 600);
  // Both reload series from the start; the last success is the start until a reload.
  EXPECT_EQ(sample(m, "idem_config_reloads_total{result=\"ok\"}"), 0.0);
  EXPECT_EQ(sample(m, "idem_config_reloads_total{result=\"failed\"}"), 0.0);
  EXPECT_NEAR(*sample(m, "idem_config_last_reload_success_timestamp_seconds"), start, 1.0);
  // The fixture's longest upstream_timeout is 3s; the store's deadline 5s.
  EXPECT_TRUE(sample(m, "idem_upstream_seconds_bucket{upstream=\"\",le=\"3\"}")) << m;
  EXPECT_TRUE(sample(m, "idem_upstream_seconds_bucket{upstream=\"\",le=\"60\"}")) << m;
  EXPECT_TRUE(sample(m, "idem_store_seconds_bucket{op=\"begin\",le=\"5\"}")) << m;
  EXPECT_TRUE(sample(m, "idem_store_seconds_bucket{op=\"begin\",le=\"60\"}")) << m;
}

// The metric names a PromQL expression reads: string literals, label matchers, ranges and
// grouping label lists removed, then every identifier that is not a function (followed by
// '('), an aggregation or a keyword.
std::set<std::string> metric_names(std::string expr) {
  static const std::set<std::string> kKeywords = {
      "by",  "without", "on",     "ignoring", "group_left", "group_right", "bool",    "and",
      "or",  "unless",  "offset", "inf",      "nan",        "sum",         "min",     "max",
      "avg", "count",   "group",  "stddev",   "stdvar",     "topk",        "bottomk", "quantile"};
  expr = std::regex_replace(expr, std::regex(R"("(\\.|[^"\\])*")"), " ");
  expr = std::regex_replace(expr, std::regex(R"(\{[^}]*\})"), " ");
  expr = std::regex_replace(expr, std::regex(R"(\[[^\]]*\])"), " ");
  expr = std::regex_replace(
      expr, std::regex(R"(\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\))"), " ");
  std::set<std::string> names;
  const std::regex ident(R"([A-Za-z_:][A-Za-z0-9_:]*)");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), ident); it != std::sregex_iterator(); ++it) {
    const std::string name = it->str();
    const auto after =
        expr.find_first_not_of(" \t\n", static_cast<std::size_t>(it->position() + it->length()));
    if (after != std::string::npos && expr[after] == '(') continue;  // a function
    if (it->position() > 0 && expr[static_cast<std::size_t>(it->position()) - 1] == '$') continue;
    if (kKeywords.count(name)) continue;
    names.insert(name);
  }
  return names;
}

void collect_exprs(const json::value& v, std::vector<std::string>& out) {
  if (v.is_object()) {
    for (const auto& [k, child] : v.as_object()) {
      if (k == "expr" && child.is_string()) out.emplace_back(child.as_string());
      collect_exprs(child, out);
    }
  } else if (v.is_array()) {
    for (const auto& child : v.as_array()) collect_exprs(child, out);
  }
}

TEST(DashboardQueries, MetricNamesAreExtractedFromPromQL) {
  EXPECT_EQ(
      metric_names(
          "histogram_quantile(0.99, sum by (le, op) (rate(idem_store_seconds_bucket[$__rate_interval])))"),
      std::set<std::string>{"idem_store_seconds_bucket"});
  EXPECT_EQ(metric_names(
                R"(sum(rate(idem_requests_total{outcome=~"replayed|waited"}[5m])) / sum(rate(x_total[5m])))"),
            (std::set<std::string>{"idem_requests_total", "x_total"}));
  EXPECT_EQ(metric_names("rate(process_cpu_seconds_total[1m]) and on (instance, job) idem_build_info"),
            (std::set<std::string>{"process_cpu_seconds_total", "idem_build_info"}));
  EXPECT_EQ(metric_names("time() - process_start_time_seconds"),
            std::set<std::string>{"process_start_time_seconds"});
}

// Every metric the dashboard queries is exposed by a real gateway that has served
// protected, replayed and token requests.
TEST_F(Observability, TheDashboardQueriesOnlyMetricsTheGatewayExposes) {
  std::ifstream f(IDEM_SOURCE_DIR "/deploy/grafana/idem-dashboard.json");
  ASSERT_TRUE(f) << "deploy/grafana/idem-dashboard.json";
  std::stringstream text;
  text << f.rdbuf();
  boost::system::error_code ec;
  const json::value dash = json::parse(text.str(), ec);
  ASSERT_FALSE(ec) << "the dashboard is not JSON: " << ec.message();
  // Importable: the datasource is an input every panel and query uses.
  bool input = false;
  for (const auto& i : dash.at("__inputs").as_array())
    input = input ||
            (i.at("name").as_string() == "DS_PROMETHEUS" && i.at("pluginId").as_string() == "prometheus");
  EXPECT_TRUE(input);
  for (const auto& p : dash.at("panels").as_array()) {
    EXPECT_EQ(p.at("datasource").at("uid").as_string(), "${DS_PROMETHEUS}") << p.at("title");
    for (const auto& t : p.at("targets").as_array())
      EXPECT_EQ(t.at("datasource").at("uid").as_string(), "${DS_PROMETHEUS}") << p.at("title");
  }

  // Traffic, so that every series exists: forwarded, replayed, a token.
  const std::string key = unique("dash");
  ASSERT_EQ(post("/orders", key).result_int(), 201u);
  ASSERT_EQ(header(post("/orders", key), "Idempotent-Replayed"), "true");
  ASSERT_EQ(request(port_, verb::post, "/_idem/tokens").result_int(), 201u);
  const std::string m = metrics();
  auto exposed = [&](const std::string& name) {
    return m.find("\n" + name + "{") != std::string::npos || m.find("\n" + name + " ") != std::string::npos;
  };
  auto is_histogram = [&](const std::string& name) {
    return m.find("# TYPE " + name + " histogram\n") != std::string::npos;
  };

  std::vector<std::string> exprs;
  collect_exprs(dash, exprs);
  ASSERT_GE(exprs.size(), 10u);
  std::set<std::string> queried;
  for (const std::string& e : exprs)
    for (std::string name : metric_names(e)) {
      for (const char* suffix : {"_bucket", "_sum", "_count"})
        if (name.ends_with(suffix) && is_histogram(name.substr(0, name.size() - std::strlen(suffix))))
          name = name.substr(0, name.size() - std::strlen(suffix));
      queried.insert(name);
    }
  for (const std::string& name : queried) {
    const bool ok = is_histogram(name) ? exposed(name + "_bucket") : exposed(name);
    EXPECT_TRUE(ok) << "the dashboard queries " << name << ", which /metrics does not expose";
  }
  // And it shows what an operator needs.
  for (const char* name : {"idem_requests_total", "idem_upstream_seconds", "idem_store_seconds",
                           "idem_store_errors_total", "idem_store_conflicts_total", "idem_inflight",
                           "idem_tokens_issued_total", "process_cpu_seconds_total",
                           "process_resident_memory_bytes", "process_open_fds", "idem_config_reloads_total"})
    EXPECT_TRUE(queried.count(name)) << "the dashboard does not show " << name;
}

}  // namespace
}  // namespace idem::e2e
