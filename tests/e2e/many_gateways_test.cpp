// Many gateways, one store (issue 4): several `idem serve` processes share one Redis, one
// Redis Cluster, one PostgreSQL or one MySQL, and together keep the promise one gateway keeps
// alone. The servers come from the environment (scripts/services): IDEM_TEST_REDIS_URL,
// IDEM_TEST_REDIS_CLUSTER_URL, IDEM_TEST_POSTGRES_URL, IDEM_TEST_MYSQL_URL; a backend whose URL
// is unset is skipped, visibly. Each test uses a namespace of its own in the shared server.
//
// Also here: gateways whose process clocks are 60 s apart (libfaketime, docs/design.md I7), and a
// store that goes away under load and comes back (a private redis-server).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "e2e/e2e_fixture.h"

namespace idem::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct SharedStore {
  std::string name;
  const char* env;              // the server's URL
  std::string namespace_param;  // a query parameter that gives each test its own keys or tables
  friend std::ostream& operator<<(std::ostream& os, const SharedStore& s) { return os << s.name; }
};

// The store URI for this test, or "" when the server's URL is not set.
std::string store_uri(const SharedStore& s, const std::string& unique) {
  const char* url = std::getenv(s.env);
  if (!url || !*url) return "";
  std::string uri = url;
  uri += uri.find('?') == std::string::npos ? '?' : '&';
  return uri + s.namespace_param + unique;
}

std::string unique_name(const char* what) {
  static std::atomic<int> n{0};
  return std::string(what) + std::to_string(::getpid()) + "_" + std::to_string(++n);
}

constexpr const char* kRoutes = R"(defaults:
  lease: 10s
  wait: 10s
  upstream_timeout: 5s
routes:
  - name: orders
    match: { method: POST, path: /orders }
  - name: short
    match: { method: POST, path: /short }
    retention: 3s
  - name: pass
    match: { method: POST, path: /pass }
    on_store_error: pass
)";

// How a test's gateway differs from the others.
struct Launch {
  std::string clock_offset{};    // libfaketime's FAKETIME ("-30s"): a fixed offset
  std::string clock_file{};      // or a FAKETIME_TIMESTAMP_FILE the test rewrites while it runs
  std::string config = kRoutes;  // what follows listen, upstream, store and admin
};

// One `idem serve` on free ports, optionally under libfaketime with a clock offset.
struct Gateway {
  unsigned short port = free_port();
  unsigned short admin = free_port();
  std::string config;  // its file
  std::unique_ptr<Process> process;

  Gateway(const std::string& dir, int index, unsigned short upstream, const std::string& store,
          const Launch& launch = {})
      : config(dir + "/idem-" + std::to_string(index) + ".yaml") {
    write_file(config, config_head(port, upstream, admin, store) + launch.config);
    std::vector<std::string> argv{IDEM_BIN, "serve", "--config", config};
    if (!launch.clock_offset.empty() || !launch.clock_file.empty())
      argv = under_libfaketime(std::move(argv), launch.clock_offset, launch.clock_file);
    process = std::make_unique<Process>(argv, dir + "/idem-" + std::to_string(index) + ".log");
  }
};

class ManyGateways : public ::testing::TestWithParam<SharedStore> {
 protected:
  void SetUp() override {
    // Table names take no '-'.
    store_ =
        store_uri(GetParam(), unique_name(GetParam().namespace_param == "table_prefix=" ? "mg_" : "mg-"));
    if (store_.empty()) GTEST_SKIP() << GetParam().env << " is not set (scripts/services starts the servers)";
    dir_ = temp_dir();
    upstream_ =
        std::make_unique<Process>(std::vector<std::string>{IDEM_TEST_UPSTREAM}, dir_ + "/upstream.log", true);
  }
  void TearDown() override {
    gateways_.clear();
    upstream_.reset();
    if (!dir_.empty()) remove_dir(dir_);
  }
  void start(int n, const std::vector<std::string>& clock_offsets = {}) {
    std::vector<Launch> launches(n);
    for (int i = 0; i < n && i < static_cast<int>(clock_offsets.size()); ++i)
      launches[i].clock_offset = clock_offsets[i];
    start(launches);
  }
  void start(const std::vector<Launch>& launches) {
    for (const Launch& launch : launches)
      gateways_.push_back(std::make_unique<Gateway>(dir_, static_cast<int>(gateways_.size()),
                                                    upstream_->port(), store_, launch));
    for (auto& g : gateways_)
      ASSERT_TRUE(wait_healthy(g->admin, 10000)) << "a gateway did not start; see " << dir_;
  }
  int executions(const std::string& key) {
    return std::stoi(request(upstream_->port(), verb::get, "/_count?key=" + key).body());
  }
  Response post(const Gateway& g, const std::string& path, const std::string& key, Headers extra = {}) {
    extra.emplace_back("Idempotency-Key", key);
    extra.emplace_back("Content-Type", "application/json");
    return request(g.port, verb::post, path, extra, R"({"key":")" + key + "\"}");
  }
  // Polls a gateway's admin API until the record of `key` on route `orders` is in `state`
  // (or 10 s pass).
  bool wait_record(const Gateway& g, const std::string& key, const std::string& state) {
    const auto until = Clock::now() + 10s;
    while (Clock::now() < until) {
      Response r = request(g.admin, verb::get, "/v1/records/_/" + key + "?key_space=orders");
      if (r.result_int() == 200 && body_json(r).at("state").as_string() == state) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  std::string store_;
  std::string dir_;
  std::unique_ptr<Process> upstream_;
  std::vector<std::unique_ptr<Gateway>> gateways_;
};

TEST_P(ManyGateways, HundredKeysTwentyDuplicatesAcrossThreeInstancesExecuteOnce) {
  ASSERT_NO_FATAL_FAILURE(start(3));
  constexpr int kKeys = 100;
  constexpr int kDuplicates = 20;
  const std::string run = unique_name("k");
  struct Item {
    int key;
    int gateway;
  };
  std::vector<Item> work;
  for (int k = 0; k < kKeys; ++k)
    for (int d = 0; d < kDuplicates; ++d) work.push_back({k, d % 3});
  std::shuffle(work.begin(), work.end(), std::mt19937(7));

  std::mutex mu;
  std::map<int, std::vector<Response>> answers;  // guarded by mu
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 64; ++t)
    threads.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < work.size();) {
        const Item item = work[i];
        // Every execution takes 200 ms, so duplicates meet the first one in flight.
        Response r = post(*gateways_[item.gateway], "/orders", run + "-" + std::to_string(item.key),
                          {{"X-Test-Delay-Ms", "200"}});
        std::lock_guard lock(mu);
        answers[item.key].push_back(std::move(r));
      }
    });
  for (auto& t : threads) t.join();

  int executed = 0;
  for (int k = 0; k < kKeys; ++k) {
    const std::string key = run + "-" + std::to_string(k);
    const int n = executions(key);
    executed += n;
    EXPECT_EQ(n, 1) << key;
    const auto& rs = answers[k];
    ASSERT_EQ(rs.size(), static_cast<std::size_t>(kDuplicates));
    int replayed = 0;
    for (const auto& r : rs) {
      EXPECT_EQ(r.result_int(), 201u) << key << ": " << r.body();
      EXPECT_EQ(r.body(), rs.front().body()) << key;
      replayed += header(r, "Idempotent-Replayed") == "true";
    }
    EXPECT_EQ(replayed, kDuplicates - 1) << key;
  }
  EXPECT_EQ(executed, kKeys);
}

TEST_P(ManyGateways, GatewaysWhoseClocksDifferBySixtySecondsAgreeOnLeasesAndExpiry) {
  // Gateway 0 runs 30 s behind, gateway 1 30 s ahead. Were leases or expiry judged by a
  // gateway's own clock, one of them would see the other's live claim as expired (and run
  // the request again) or a fresh record as expired (and run it again).
  ASSERT_NO_FATAL_FAILURE(start(2, {"-30s", "+30s"}));
  const Gateway& behind = *gateways_[0];
  const Gateway& ahead = *gateways_[1];

  for (const auto* first : {&behind, &ahead}) {
    const Gateway* second = first == &behind ? &ahead : &behind;
    const std::string key = unique_name("skew-");
    // The first holds its claim for 3 s: room for the other gateway to see it pending on a
    // machine busy with other tests.
    Response held;
    std::thread slow([&] { held = post(*first, "/orders", key, {{"X-Test-Delay-Ms", "3000"}}); });
    if (!wait_record(*second, key, "pending")) {
      slow.join();
      FAIL() << "the other gateway never saw the claim pending; the first answered " << held.result_int()
             << ": " << held.body();
    }
    Response r = post(*second, "/orders", key);  // waits for the first, across instances
    slow.join();
    EXPECT_EQ(r.result_int(), 201u) << r.body();
    EXPECT_EQ(header(r, "Idempotent-Replayed"), "true");
    EXPECT_EQ(executions(key), 1) << "a live claim was taken over by a gateway with another clock";
  }

  // Retention 3 s on /short, judged by the store's clock whichever gateway asks. Committed
  // through the gateway behind, the gateway ahead must still replay it (by the behind
  // gateway's clock it would expire 27 s ago); committed through the gateway ahead, the
  // gateway behind must run it again once 3 s have passed (by the ahead gateway's clock it
  // would live 30 s longer).
  const std::string fresh = unique_name("fresh-");
  ASSERT_EQ(post(behind, "/short", fresh).result_int(), 201u);
  Response replay = post(ahead, "/short", fresh);
  EXPECT_EQ(header(replay, "Idempotent-Replayed"), "true") << "a fresh record was treated as expired";
  EXPECT_EQ(executions(fresh), 1);

  const std::string stale = unique_name("stale-");
  ASSERT_EQ(post(ahead, "/short", stale).result_int(), 201u);
  std::this_thread::sleep_for(4s);  // the retention passes: real time is what is tested
  Response again = post(behind, "/short", stale);
  EXPECT_EQ(again.result_int(), 201u);
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "") << "an expired record was still replayed";
  EXPECT_EQ(executions(stale), 2);
}

// A rolling config change (issue 7): two gateways on one store whose route differs in its
// fingerprint rule refuse each other's records (422 key-reused) instead of replaying one
// body's response to another; and `idem check --store` reports the records each config
// would misread or orphan (here a subject gained, which no request could refuse).
TEST_P(ManyGateways, ARouteWhoseSemanticsDifferBetweenGatewaysIsRefusedOrReported) {
  auto routes = [](const char* fingerprint, const char* subject) {
    return std::string(
               "routes:\n  - name: orders\n    match: { method: POST, path: /orders }\n    fingerprint: ") +
           fingerprint + "\n  - name: scoped\n    match: { method: POST, path: /scoped }\n" + subject;
  };
  ASSERT_NO_FATAL_FAILURE(
      start({Launch{.config = routes("body", "")},
             Launch{.config = routes("none", "    subject: header-hash:Authorization\n")}}));
  const Gateway& body = *gateways_[0];
  const Gateway& none = *gateways_[1];
  auto send = [&](const Gateway& g, const std::string& key, const std::string& payload) {
    return request(g.port, verb::post, "/orders",
                   {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, payload);
  };

  const std::string first_body = unique_name("fp-body-");
  ASSERT_EQ(send(body, first_body, R"({"sku":1})").result_int(), 201u);
  Response other = send(none, first_body, R"({"sku":2})");
  EXPECT_EQ(other.result_int(), 422u) << "replayed another body's response: " << other.body();
  EXPECT_EQ(problem_type(other), "urn:idem:problem:key-reused");
  EXPECT_EQ(executions(first_body), 1);

  const std::string first_none = unique_name("fp-none-");
  ASSERT_EQ(send(none, first_none, R"({"sku":1})").result_int(), 201u);
  Response same = send(none, first_none, R"({"sku":2})");
  EXPECT_EQ(header(same, "Idempotent-Replayed"), "true") << "two requests under none match";
  Response reused = send(body, first_none, R"({"sku":2})");
  EXPECT_EQ(reused.result_int(), 422u) << reused.body();
  EXPECT_EQ(executions(first_none), 1);

  // The subject: the same request runs on both (two scopes, two records); the check sees it.
  ASSERT_EQ(post(body, "/scoped", unique_name("scoped-")).result_int(), 201u);
  std::string out;  // run() appends
  EXPECT_EQ(run({IDEM_BIN, "check", none.config, "--store", store_}, &out), 0) << out;
  EXPECT_NE(out.find("warning: store"), std::string::npos) << out;
  EXPECT_NE(out.find("1 record in key space 'scoped' with a scope no route"), std::string::npos) << out;
  EXPECT_NE(out.find("1 record in key space 'orders' fingerprinted under another rule"), std::string::npos)
      << out;
  EXPECT_NE(out.find("3 live records checked"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "check", "--strict", none.config, "--store", store_}, &out), 2) << out;
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "check", body.config, "--store", store_}, &out), 0) << out;
  EXPECT_EQ(out.find("'scoped'"), std::string::npos) << out;
  EXPECT_NE(out.find("1 record in key space 'orders' fingerprinted under another rule"), std::string::npos)
      << out;
}

// A gateway whose wall clock steps back 1 h while it runs (libfaketime reading a file the
// test rewrites; steady_clock left alone) must not replay a record from memory past its
// expiry: the other gateway has run the key again by then. shared_ttl is an hour, so only
// the entry's own life can end it.
TEST_P(ManyGateways, AGatewayWhoseClockStepsBackDoesNotReplayAnExpiredRecordFromMemory) {
  const std::string clock = dir_ + "/faketime";
  write_file(clock, "+0\n");
  const std::string config = std::string("replay_cache:\n  shared_ttl: 1h\n") + kRoutes;
  ASSERT_NO_FATAL_FAILURE(start({Launch{.clock_file = clock, .config = config}, Launch{.config = config}}));
  const Gateway& stepped = *gateways_[0];
  const Gateway& other = *gateways_[1];

  const std::string key = unique_name("step-");
  ASSERT_EQ(post(stepped, "/short", key).result_int(), 201u);
  ASSERT_EQ(header(post(stepped, "/short", key), "Idempotent-Replayed"), "true");
  write_file(clock, "-3600\n");
  std::this_thread::sleep_for(4s);  // the retention (3 s) passes: real time is what is tested
  Response again = post(other, "/short", key);
  ASSERT_EQ(again.result_int(), 201u);
  ASSERT_EQ(header(again, "Idempotent-Replayed"), "") << "the record outlived its retention in the store";
  Response r = post(stepped, "/short", key);
  EXPECT_EQ(r.body(), again.body()) << "replayed the expired first answer from memory";
  EXPECT_EQ(executions(key), 2);
  // Its request log says the step took effect: the third line (flushed within a second)
  // is an hour before the first.
  std::vector<std::string> hours;  // "2026-12-05T12" of each line
  for (const auto until = Clock::now() + 5s; hours.size() < 3 && Clock::now() < until;) {
    std::this_thread::sleep_for(100ms);
    hours.clear();
    const std::string log = read_text(dir_ + "/idem-0.log");
    for (std::size_t at = 0; (at = log.find("{\"time\":\"", at)) != std::string::npos; at += 9)
      hours.push_back(log.substr(at + 9, 13));
  }
  ASSERT_EQ(hours.size(), 3u) << read_text(dir_ + "/idem-0.log");
  EXPECT_NE(hours[0], hours[2]) << "the clock did not step back (libfaketime not in effect?)";
}

INSTANTIATE_TEST_SUITE_P(Stores, ManyGateways,
                         ::testing::Values(SharedStore{"redis", "IDEM_TEST_REDIS_URL", "prefix="},
                                           SharedStore{"redis_cluster", "IDEM_TEST_REDIS_CLUSTER_URL",
                                                       "prefix="},
                                           SharedStore{"postgres", "IDEM_TEST_POSTGRES_URL", "table_prefix="},
                                           SharedStore{"mysql", "IDEM_TEST_MYSQL_URL", "table_prefix="}),
                         [](const auto& p) { return p.param.name; });

// A private redis-server (AOF fsync always, so acknowledged records survive its kill -9)
// that a test stops and starts again on the same port.
class RedisServer {
 public:
  explicit RedisServer(std::string dir) : dir_(std::move(dir)) { start(); }
  unsigned short port() const { return port_; }
  void kill() { process_.reset(); }
  // Starts it again and returns when it accepts connections.
  void start() {
    process_ = std::make_unique<Process>(
        std::vector<std::string>{"/usr/bin/redis-server", "--port", std::to_string(port_), "--bind",
                                 "127.0.0.1", "--dir", dir_, "--save", "", "--appendonly", "yes",
                                 "--appendfsync", "always"},
        dir_ + "/redis.log");
    const auto until = Clock::now() + 10s;
    while (Clock::now() < until && run({"/usr/bin/redis-cli", "-p", std::to_string(port_), "ping"}) != 0)
      std::this_thread::sleep_for(20ms);
  }

 private:
  std::string dir_;
  unsigned short port_ = free_port();
  std::unique_ptr<Process> process_;
};

TEST(StoreOutage, RedisGoneUnderLoadIs503OrUnprotectedThenServiceResumesWithinTwoSeconds) {
  if (::access("/usr/bin/redis-server", X_OK) != 0) GTEST_SKIP() << "redis-server is not installed";
  const std::string dir = temp_dir();
  RedisServer redis(dir);
  Process upstream({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true);
  Gateway g(dir, 0, upstream.port(),
            "redis://127.0.0.1:" + std::to_string(redis.port()) + "?prefix=" + unique_name("outage-"));
  ASSERT_TRUE(wait_healthy(g.admin, 10000));
  auto post = [&](const std::string& path, const std::string& key) {
    return request(g.port, verb::post, path, {{"Idempotency-Key", key}, {"Content-Type", "application/json"}},
                   "{}");
  };
  auto executions = [&](const std::string& key) {
    return std::stoi(request(upstream.port(), verb::get, "/_count?key=" + key).body());
  };
  const std::string before = unique_name("before-");
  ASSERT_EQ(post("/orders", before).result_int(), 201u);

  // Load throughout: 8 clients sending new keys, each answer recorded.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<std::pair<std::string, Response>> answers;  // guarded by mu
  std::vector<std::thread> load;
  for (int t = 0; t < 8; ++t)
    load.emplace_back([&] {
      while (!stop) {
        const std::string key = unique_name("load-");
        Response r = post("/orders", key);
        std::lock_guard lock(mu);
        answers.emplace_back(key, std::move(r));
      }
    });

  redis.kill();
  Response down;
  for (const auto until = Clock::now() + 10s; Clock::now() < until;) {
    down = post("/orders", unique_name("down-"));
    if (down.result_int() == 503u) break;
  }
  EXPECT_EQ(down.result_int(), 503u);
  EXPECT_EQ(problem_type(down), "urn:idem:problem:store-unavailable");
  EXPECT_FALSE(header(down, "Retry-After").empty());
  Response passed = post("/pass", unique_name("pass-"));
  EXPECT_EQ(passed.result_int(), 201u);
  EXPECT_EQ(header(passed, "Idempotency-Status"), "unprotected");
  EXPECT_EQ(request(g.admin, verb::get, "/readyz").result_int(), 503u);
  EXPECT_EQ(request(g.admin, verb::get, "/healthz").result_int(), 200u);

  redis.start();
  const auto back = Clock::now();
  Response resumed;
  while (Clock::now() - back < 10s) {
    resumed = post("/orders", unique_name("after-"));
    if (resumed.result_int() == 201u) break;
  }
  const auto took = Clock::now() - back;
  EXPECT_EQ(resumed.result_int(), 201u);
  EXPECT_LE(took, 2s) << "service resumed only after "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  stop = true;
  for (auto& t : load) t.join();

  // Nothing ran twice: the acknowledged record survived, answers during the outage ran nothing.
  Response replay = post("/orders", before);
  EXPECT_EQ(header(replay, "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(before), 1);
  int ok = 0, refused = 0;
  for (const auto& [key, r] : answers) {
    if (r.result_int() == 201u) {
      ++ok;
      EXPECT_EQ(executions(key), 1) << key;
    } else {
      ++refused;
      EXPECT_EQ(r.result_int(), 503u) << r.body();
      EXPECT_EQ(executions(key), 0) << key;
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(refused, 0);
  remove_dir(dir);
}

}  // namespace
}  // namespace idem::e2e
