// End to end: /healthz and /readyz of the `idem` process for orchestrators (docs/admin.md,
// "Readiness"), on a Redis of the test's own reached through a fault proxy, which the test
// turns away to take the store down and lets through again to bring it back. Liveness
// never follows the store; readiness follows the routes' store policy, the running config
// (SIGHUP) and the drain.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "e2e/e2e_fixture.h"
#include "testutil/fault_proxy.h"
#include "testutil/redis_server.h"

namespace idem::e2e {
namespace {

// Every route forwards without the store: a replay route, a lock route, an optional key.
constexpr const char* kAllPass = R"(defaults:
  on_store_error: pass
  upstream_timeout: 10s
routes:
  - name: orders
    match: { method: POST, path: /orders }
  - name: stock
    match: { method: POST, path: "/skus/{sku}/deduct" }
    key: "stock:{path.sku}"
    mode: lock
  - name: optional
    match: { method: POST, path: /optional }
    required: false
)";

// The same, and one route that refuses without the store.
const std::string kOneRefuses = std::string(kAllPass) + R"(  - name: payments
    match: { method: POST, path: /payments }
    on_store_error: reject
)";

class Readiness : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!redis_.started()) GTEST_SKIP() << "redis-server is not installed or did not start";
    proxy_ = std::make_unique<testutil::FaultProxy>("127.0.0.1", redis_.port());
    upstream_ =
        std::make_unique<Process>(std::vector<std::string>{IDEM_TEST_UPSTREAM}, dir_ + "/upstream.log", true);
    write_config(kAllPass);
    idem_ = std::make_unique<Process>(
        std::vector<std::string>{IDEM_BIN, "serve", "--config", dir_ + "/idem.yaml"}, dir_ + "/idem.log");
    ASSERT_TRUE(wait_healthy(admin_, 10000)) << "idem did not start; see " << dir_ << "/idem.log";
  }
  void TearDown() override {
    idem_.reset();
    upstream_.reset();
    proxy_.reset();
    remove_dir(dir_);
  }

  // Starts `idem serve` on the all-pass config.
  void start() {
    idem_ = std::make_unique<Process>(
        std::vector<std::string>{IDEM_BIN, "serve", "--config", dir_ + "/idem.yaml"}, dir_ + "/idem.log");
    ASSERT_TRUE(wait_healthy(admin_, 10000)) << "idem did not start; see " << dir_ << "/idem.log";
  }
  void write_config(const std::string& routes) {
    write_file(dir_ + "/idem.yaml",
               config_head(port_, upstream_->port(), admin_, "redis://" + proxy_->address()) + routes);
  }
  // SIGHUP, and waits until the gateway says it reloaded (`n` reloads so far).
  bool reload(const std::string& routes, int n) {
    write_config(routes);
    idem_->signal(SIGHUP);
    const std::string done = "idem_config_reloads_total{result=\"ok\"} " + std::to_string(n) + "\n";
    return testutil::eventually(
        [&] { return request(admin_, verb::get, "/metrics").body().find(done) != std::string::npos; });
  }
  // The store goes away: new connections are refused and open ones cut.
  void store_down() {
    proxy_->refuse();
    proxy_->cut_all();
  }
  Response readyz() const { return request(admin_, verb::get, "/readyz"); }
  static std::string store_of(const Response& r) {
    const json::object o = body_json(r);
    return o.contains("store") && o.at("store").is_string() ? std::string(o.at("store").as_string()) : "";
  }
  // /healthz answers 200 at once, whatever the store is doing.
  void expect_alive() const {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(request(admin_, verb::get, "/healthz", {}, "", std::chrono::seconds(2)).result_int(), 200u);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  }

  testutil::RedisServer redis_;
  std::unique_ptr<testutil::FaultProxy> proxy_;
  std::string dir_ = temp_dir();
  std::unique_ptr<Process> upstream_;
  std::unique_ptr<Process> idem_;
  unsigned short port_ = free_port();
  unsigned short admin_ = free_port();
};

TEST_F(Readiness, StoreDownWithEveryRoutePassingStaysReady) {
  ASSERT_NO_FATAL_FAILURE(start());
  Response r = readyz();
  EXPECT_EQ(r.result_int(), 200u) << r.body();
  EXPECT_EQ(store_of(r), "ok") << r.body();
  expect_alive();

  // A store that does not answer: each ping waits for the store's deadline, so every
  // call with the store down is counted here.
  store_down();
  ASSERT_TRUE(testutil::eventually([&] { return store_of(r = readyz()) == "unavailable"; })) << r.body();
  EXPECT_EQ(r.result_int(), 200u) << r.body();
  EXPECT_EQ(std::string(body_json(r).at("status").as_string()), "ready") << r.body();
  expect_alive();
  // What readiness promises: the routes are served, unprotected.
  const Response served = request(port_, verb::post, "/orders", {{"Idempotency-Key", "o-1"}}, "{}");
  EXPECT_EQ(served.result_int(), 201u) << served.body();
  EXPECT_EQ(header(served, "Idempotency-Status"), "unprotected");

  // The store back: ready with it.
  proxy_->forward();
  ASSERT_TRUE(testutil::eventually([&] { return store_of(r = readyz()) == "ok"; })) << r.body();
  EXPECT_EQ(r.result_int(), 200u);
}

TEST_F(Readiness, StoreDownWithARefusingRouteIsNotReadyAndReloadDecides) {
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_TRUE(reload(kOneRefuses, 1));
  EXPECT_EQ(readyz().result_int(), 200u) << "the store answers: the refusing route is served";

  store_down();
  Response r;
  ASSERT_TRUE(testutil::eventually([&] { return (r = readyz()).result_int() == 503u; })) << r.body();
  EXPECT_EQ(problem_type(r), "urn:idem:problem:store-unavailable");
  EXPECT_NE(r.body().find("payments (on_store_error: reject)"), std::string::npos) << r.body();
  EXPECT_EQ(header(r, "Retry-After"), "1");
  expect_alive();

  // SIGHUP without the refusing route: ready again, the store still down; and back.
  ASSERT_TRUE(reload(kAllPass, 2));
  r = readyz();
  EXPECT_EQ(r.result_int(), 200u) << r.body();
  EXPECT_EQ(store_of(r), "unavailable") << r.body();
  ASSERT_TRUE(reload(kOneRefuses, 3));
  EXPECT_EQ(readyz().result_int(), 503u);
}

// Started while its store cannot be reached (docs/admin.md, "When the store is down"): ready
// all the same, since every route passes; not ready once the drain begins.
TEST_F(Readiness, DrainingIsNotReadyEvenWhenEveryRoutePasses) {
  store_down();
  ASSERT_NO_FATAL_FAILURE(start());
  Response r;
  ASSERT_TRUE(testutil::eventually([&] { return store_of(r = readyz()) == "unavailable"; })) << r.body();
  // A request in flight holds the drain open (the store is down: it passes, unprotected).
  Response answer;
  std::thread client([&] {
    answer = request(port_, verb::post, "/orders", {{"Idempotency-Key", "slow"}, {"X-Test-Delay-Ms", "1000"}},
                     "{}");
  });
  ASSERT_TRUE(testutil::eventually([&] {
    return request(admin_, verb::get, "/metrics").body().find("\nidem_inflight 1\n") != std::string::npos;
  }));
  idem_->signal(SIGTERM);
  ASSERT_TRUE(testutil::eventually([&] { return (r = readyz()).result_int() == 503u; }));
  EXPECT_EQ(problem_type(r), "urn:idem:problem:shutting-down");
  expect_alive();
  client.join();
  EXPECT_EQ(answer.result_int(), 201u) << answer.body();
  EXPECT_EQ(idem_->wait(10000), 0);
}

}  // namespace
}  // namespace idem::e2e
