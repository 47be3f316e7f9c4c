// Unknown outcomes the service resolves (docs/http.md, "When the service can say what
// happened"; docs/configuration.md, `status`), against the idem binary on SQLite and Redis
// and the test upstream, whose GET /_status/KEY says whether KEY ran and counts every
// execution: an upstream timeout the service calls done is stored and replayed, a broken
// connection it calls never happened is released and the retry runs once, a status
// endpoint that fails or has no definite answer leaves the outcome uncertain, and a
// gateway killed mid-request is resolved by the takeover of its expired claim.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iterator>

#include "e2e/e2e_fixture.h"

namespace idem::e2e {
namespace {

const char* const kRoutes = R"(defaults:
  lease: 5s
  wait: 0
  upstream_timeout: 500ms
routes:
  - name: ask
    match: { method: POST, path: /ask }
    status: { path: "/_status/{key}", timeout: 1s }
  - name: ask-error
    match: { method: POST, path: /ask-error }
    status: { path: "/_status/{key}?mode=error" }
  - name: ask-slow
    match: { method: POST, path: /ask-slow }
    status: { path: "/_status/{key}?mode=slow", timeout: 300ms }
  - name: ask-bare
    match: { method: POST, path: /ask-bare }
    status: { path: "/_status/{key}?mode=bare" }
  - name: takeover
    match: { method: POST, path: /takeover }
    lease: 1s
    upstream_timeout: 30s
    status: { path: "/_status/{key}" }
)";

// A SQLite file of the test's own, or the shared Redis under a key prefix of this run's.
std::string store_uri(const std::string& store, const std::string& dir) {
  if (store == "sqlite") return "sqlite:" + dir + "/idem.db";
  const char* url = std::getenv("IDEM_TEST_REDIS_URL");
  if (url == nullptr) return "";
  const std::string u = url;
  return u + (u.find('?') == std::string::npos ? "?" : "&") + "prefix=resolve-" + std::to_string(::getpid()) +
         "-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ":";
}

class Resolve : public GatewayE2E, public ::testing::WithParamInterface<std::string> {
 protected:
  static void TearDownTestSuite() {
    if (running_.empty()) return;
    GatewayE2E::TearDownTestSuite();
    dir_ = nullptr;
    idem_ = nullptr;
    upstream_ = nullptr;
    running_.clear();
  }
  void SetUp() override {
    if (GetParam() != "sqlite" && store_uri(GetParam(), "").empty())
      GTEST_SKIP() << "no " << GetParam() << " server (scripts/services env)";
    if (running_ == GetParam()) return;
    TearDownTestSuite();
    running_ = GetParam();
    start(routes_on);
  }
  static std::string routes_on(unsigned short l, unsigned short u, unsigned short a) {
    return config_head(l, u, a, store_uri(running_, *dir_)) + kRoutes;
  }
  static std::string metrics() { return request(admin_, verb::get, "/metrics").body(); }
  static std::string log() {
    std::ifstream in(*dir_ + "/idem.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  static inline std::string running_;
};

// The upstream ran, then answered after upstream_timeout: the service says done, so its
// answer is the client's, stored, and every retry replays it. The service ran once.
TEST_P(Resolve, ATimeoutTheServiceCallsDoneIsStoredAndReplayed) {
  const std::string key = unique("timeout-done");
  Response first = post("/ask", key, "{}", {{"X-Test-Delay-Ms", "1500"}});
  ASSERT_EQ(first.result_int(), 201u) << first.body();
  EXPECT_EQ(body_json(first).at("resolved"), json::value(true)) << first.body();
  Response again = post("/ask", key, "{}");
  EXPECT_EQ(again.result_int(), 201u);
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(again.body(), first.body());
  EXPECT_EQ(executions(key), 1);
  EXPECT_NE(log().find("\"audit\":\"record.resolve\""), std::string::npos);
  EXPECT_NE(metrics().find("idem_resolutions_total{route=\"ask\",decision=\"done\"}"), std::string::npos);
}

// The connection broke before the service ran: it says never happened, the key is
// released, and the retry runs, once.
TEST_P(Resolve, ABrokenConnectionTheServiceCallsNeverHappenedIsReleased) {
  const std::string key = unique("broken-none");
  Response first = post("/ask", key, "{}", {{"X-Test-Drop", "before"}});
  EXPECT_EQ(first.result_int(), 502u) << first.body();
  EXPECT_EQ(executions(key), 0);
  Response retry = post("/ask", key, "{}");
  ASSERT_EQ(retry.result_int(), 201u) << retry.body();
  EXPECT_EQ(header(retry, "Idempotent-Replayed"), "");
  EXPECT_EQ(executions(key), 1);
  Response again = post("/ask", key, "{}");
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(key), 1);
  EXPECT_NE(metrics().find("idem_resolutions_total{route=\"ask\",decision=\"never_happened\"}"),
            std::string::npos);
}

// The connection broke after the service ran: done, replayed, never run twice.
TEST_P(Resolve, ABrokenConnectionAfterTheWorkIsDone) {
  const std::string key = unique("broken-done");
  Response first = post("/ask", key, "{}", {{"X-Test-Drop", "after"}});
  ASSERT_EQ(first.result_int(), 201u) << first.body();
  Response again = post("/ask", key, "{}");
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(again.body(), first.body());
  EXPECT_EQ(executions(key), 1);
}

// A status endpoint that fails, times out, or answers without a definite outcome (a
// plain 404: the path may not exist) leaves the outcome unknown: on_uncertain: hold.
TEST_P(Resolve, NoDefiniteAnswerStaysUncertain) {
  for (const char* path : {"/ask-error", "/ask-slow", "/ask-bare"}) {
    const std::string key = unique("unsure");
    Response first = post(path, key, "{}", {{"X-Test-Delay-Ms", "1000"}});
    EXPECT_EQ(first.result_int(), 504u) << path << ": " << first.body();
    Response again = post(path, key, "{}");
    EXPECT_EQ(again.result_int(), 409u) << path;
    EXPECT_EQ(problem_type(again), "urn:idem:problem:outcome-uncertain") << path;
    EXPECT_EQ(executions(key), 1) << path;
  }
  EXPECT_NE(metrics().find("idem_resolutions_total{route=\"ask-error\",decision=\"unknown\"}"),
            std::string::npos);
}

// The gateway is killed while the service works; a restarted gateway takes the expired
// claim over, asks the service, and replays its answer instead of running it again.
TEST_P(Resolve, ATakeoverAfterTheGatewayDiedAsksTheService) {
  const std::string key = unique("takeover");
  auto lost = std::async(std::launch::async, [&] {
    return post("/takeover", key, "{}", {{"X-Test-Delay-Ms", "4000"}});
  });
  ASSERT_TRUE(reached_upstream(key));
  idem_->signal(SIGKILL);
  idem_->wait(5000);
  EXPECT_EQ(lost.get().result_int(), 0u);
  delete idem_;
  idem_ = new Process({IDEM_BIN, "serve", "--config", *dir_ + "/idem.yaml"}, *dir_ + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin_, 5000));
  // Until the dead gateway's lease (1s) ends, a retry is told the request is in progress.
  Response retry;
  ASSERT_TRUE(testutil::eventually([&] {
    retry = post("/takeover", key, "{}");
    return problem_type(retry) != "urn:idem:problem:in-progress";
  }));
  ASSERT_EQ(retry.result_int(), 201u) << retry.body();
  EXPECT_EQ(body_json(retry).at("resolved"), json::value(true)) << retry.body();
  Response again = post("/takeover", key, "{}");
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(again.body(), retry.body());
  EXPECT_EQ(executions(key), 1);
}

INSTANTIATE_TEST_SUITE_P(Stores, Resolve, ::testing::Values("sqlite", "redis"));

}  // namespace
}  // namespace idem::e2e
