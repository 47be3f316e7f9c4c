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
#include <memory>

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
  // No gateway of the default config: SetUp starts the one of the store under test.
  static void SetUpTestSuite() {}
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

namespace idem::e2e {
namespace {

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Bulk resolve (docs/admin.md, "Resolving uncertain records in bulk"): the operator's role
// alone, a dry run that changes nothing, an age filter, release (the retry runs) and
// complete (the given answer is replayed), one audit line and one count per record; the
// command line does the same from the store.
TEST(BulkResolve, OperatorsReleaseOrCompleteUncertainRecordsWithAnAuditLineEach) {
  const std::string dir = temp_dir();
  std::unique_ptr<std::string, void (*)(std::string*)> cleanup(new std::string(dir), [](std::string* d) {
    remove_dir(*d);
    delete d;
  });
  Process upstream({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true);
  const unsigned short port = free_port(), admin = free_port();
  const std::string store = "sqlite:" + dir + "/idem.db";
  write_file(dir + "/idem.yaml", config_head(port, upstream.port(), admin, store) +
                                     "  tokens:\n"
                                     "    - {name: svc, env: IDEM_E2E_RESOLVE_SVC, roles: [control]}\n"
                                     "    - {name: ops, env: IDEM_E2E_RESOLVE_OPS, roles: [operator]}\n"
                                     "routes:\n"
                                     "  - name: orders\n    match: { method: POST, path: /orders }\n"
                                     "  - name: refunds\n    match: { method: POST, path: /refunds }\n");
  ::setenv("IDEM_E2E_RESOLVE_SVC", "svc-secret", 1);
  ::setenv("IDEM_E2E_RESOLVE_OPS", "ops-secret", 1);
  Process idem({IDEM_BIN, "serve", "--config", dir + "/idem.yaml"}, dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000));
  auto send = [&](const std::string& path, const std::string& key, Headers h = {}) {
    h.emplace_back("Idempotency-Key", key);
    h.emplace_back("Content-Type", "application/json");
    return request(port, verb::post, path, h, "{}");
  };
  for (const char* key : {"o-1", "o-2"})
    ASSERT_EQ(send("/orders", key, {{"X-Test-Drop", "after"}}).result_int(), 502u);
  ASSERT_EQ(send("/refunds", "r-1", {{"X-Test-Drop", "after"}}).result_int(), 502u);
  ASSERT_EQ(problem_type(send("/orders", "o-1")), "urn:idem:problem:outcome-uncertain");

  auto resolve = [&](const std::string& token, const std::string& body) {
    return request(admin, verb::post, "/v1/records/resolve",
                   {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}}, body);
  };
  Response control = resolve("svc-secret", R"({"key_space":"orders","decision":"release"})");
  EXPECT_EQ(control.result_int(), 403u) << control.body();
  EXPECT_EQ(problem_type(control), "urn:idem:problem:forbidden");

  Response dry = resolve("ops-secret", R"({"key_space":"orders","decision":"release","dry_run":true})");
  ASSERT_EQ(dry.result_int(), 200u) << dry.body();
  EXPECT_EQ(body_json(dry).at("matched"), json::value(2));
  EXPECT_EQ(body_json(dry).at("applied"), json::value(0));
  EXPECT_EQ(problem_type(send("/orders", "o-1")), "urn:idem:problem:outcome-uncertain");
  Response young = resolve("ops-secret", R"({"key_space":"orders","decision":"release","older_than":"1h"})");
  EXPECT_EQ(body_json(young).at("matched"), json::value(0)) << young.body();

  Response released = resolve("ops-secret", R"({"key_space":"orders","decision":"release"})");
  ASSERT_EQ(released.result_int(), 200u) << released.body();
  EXPECT_EQ(body_json(released).at("applied"), json::value(2)) << released.body();
  Response rerun = send("/orders", "o-1");
  EXPECT_EQ(rerun.result_int(), 201u) << rerun.body();
  EXPECT_EQ(body_json(rerun).at("execution"), json::value(2));  // the test upstream had run it

  Response completed = resolve(
      "ops-secret",
      R"({"key_space":"refunds","decision":"complete","answer":{"status":200,"body":"{\"refund\":\"done\"}","content_type":"application/json"}})");
  EXPECT_EQ(body_json(completed).at("applied"), json::value(1)) << completed.body();
  Response replayed = send("/refunds", "r-1");
  EXPECT_EQ(replayed.result_int(), 200u);
  EXPECT_EQ(replayed.body(), R"({"refund":"done"})");
  EXPECT_EQ(header(replayed, "Idempotent-Replayed"), "true");

  std::string log;
  ASSERT_TRUE(testutil::eventually([&] {
    log = read_text(dir + "/idem.log");
    return count_of(log, R"("audit":"record.resolve")") >= 3;
  }));
  EXPECT_EQ(count_of(log, R"("audit":"record.resolve")"), 3) << log;
  EXPECT_NE(log.find(R"("token":"ops","peer":"127.0.0.1","scope":"","key":"orders:o-1")"), std::string::npos)
      << log;
  EXPECT_NE(log.find(R"("decision":"completed")"), std::string::npos) << log;
  EXPECT_NE(request(admin, verb::get, "/metrics")
                .body()
                .find(R"(idem_admin_actions_total{action="resolve",token="ops"} 3)"),
            std::string::npos);

  // The command line, on the store itself: a dry run, then the release, each audited.
  ASSERT_EQ(send("/orders", "o-3", {{"X-Test-Drop", "after"}}).result_int(), 502u);
  std::string out;
  ASSERT_EQ(run({IDEM_BIN, "record", "resolve", "--store", store, "--key-space", "orders", "--decision",
                 "release", "--dry-run"},
                &out),
            0)
      << out;
  EXPECT_NE(out.find(R"("matched":1,"applied":0)"), std::string::npos) << out;
  ASSERT_EQ(
      run({IDEM_BIN, "record", "resolve", "--store", store, "--key-space", "orders", "--decision", "release"},
          &out),
      0)
      << out;
  EXPECT_NE(out.find(R"("audit":"record.resolve")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("key":"orders:o-3","fence":)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("decision":"released")"), std::string::npos) << out;
  EXPECT_EQ(send("/orders", "o-3").result_int(), 201u);
  EXPECT_EQ(run({IDEM_BIN, "record", "resolve", "--store", store, "--decision", "complete"}, &out), 2) << out;
}

}  // namespace
}  // namespace idem::e2e
