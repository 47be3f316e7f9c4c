// Whose answer a replay is (docs/http.md, "Whose answer a replay is"; docs/configuration.md,
// `principal`), against the idem binary on each store and the test upstream, which
// counts how often it ran each key: a repeat of another principal, or of none, is refused
// and never runs; a request without credentials binds no one; a token refresh is refused
// unless the route names a stable subject.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>

#include "e2e/e2e_fixture.h"

namespace idem::e2e {
namespace {

const char* const kRoutes = R"(defaults:
  lease: 5s
  wait: 5s
  upstream_timeout: 5s
routes:
  - name: orders
    match: { method: POST, path: /orders }
  - name: pay-callback
    match: { method: POST, path: /pay/callback }
    key: "pay:{json.out_trade_no}"
  - name: users-orders
    match: { method: POST, path: /user-orders }
    subject: header:X-User-Id
  - name: open
    match: { method: POST, path: /open }
    principal: none
  - name: api-client
    match: { method: POST, path: /client-orders }
    principal: header:X-Api-Client
  - name: retry-orders
    match: { method: POST, path: /retry-orders }
    lease: 1s
    on_uncertain: retry
)";

// The store's URI for a parameter: a SQLite file of the test's own, or the shared server the
// environment names ("" when it names none: the case is skipped).
std::string store_uri(const std::string& store, const std::string& dir) {
  if (store == "sqlite") return "sqlite:" + dir + "/idem.db";
  const char* url = std::getenv(store == "redis"      ? "IDEM_TEST_REDIS_URL"
                                : store == "postgres" ? "IDEM_TEST_POSTGRES_URL"
                                                      : "IDEM_TEST_MYSQL_URL");
  return url != nullptr ? url : "";
}

// The binding travels in the fingerprint, which every store keeps as bytes: the same cases
// on each backend. One gateway at a time, started for the store of the case at hand.
class Principals : public GatewayE2E, public ::testing::WithParamInterface<std::string> {
 protected:
  static void SetUpTestSuite() { ::setenv("IDEM_PRINCIPAL_SECRET", "e2e principal secret", 1); }
  // The base's pointers may still name a suite before this one, torn down: only what this
  // suite started is stopped.
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
  static Headers bearer(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

  static inline std::string running_;
};

// The first principal runs; another (other credentials, or none) with the same key and
// body is refused with principal-mismatch, and the service ran once.
TEST_P(Principals, AnotherPrincipalIsRefusedAndNothingRunsAgain) {
  const std::string key = unique("order");
  Response first = post("/orders", key, R"({"sku":"A-1"})", bearer("token-a"));
  ASSERT_EQ(first.result_int(), 201u) << first.body();

  Response other = post("/orders", key, R"({"sku":"A-1"})", bearer("token-b"));
  EXPECT_EQ(other.result_int(), 409u);
  EXPECT_EQ(problem_type(other), "urn:idem:problem:principal-mismatch");
  EXPECT_EQ(header(other, "Idempotent-Replayed"), "");
  EXPECT_EQ(other.body().find("execution"), std::string::npos) << "the stored answer leaked";
  EXPECT_EQ(body_json(other).at("retryable"), json::value(false));

  Response none = post("/orders", key, R"({"sku":"A-1"})");
  EXPECT_EQ(problem_type(none), "urn:idem:problem:principal-mismatch");
  EXPECT_EQ(executions(key), 1);

  // The first principal is replayed, its Authorization read normalised.
  for (const char* same : {"Bearer token-a", "bearer  token-a", "BEARER token-a "}) {
    Response again = post("/orders", key, R"({"sku":"A-1"})", {{"Authorization", same}});
    EXPECT_EQ(header(again, "Idempotent-Replayed"), "true") << same;
    EXPECT_EQ(again.body(), first.body()) << same;
  }
  EXPECT_EQ(executions(key), 1);
}

// Another principal learns nothing about the first request's body: with another body it
// gets principal-mismatch too, not key-reused. The first principal with another body gets
// key-reused, as before.
TEST_P(Principals, AnotherPrincipalCannotTellWhetherItsBodyMatches) {
  const std::string key = unique("order");
  ASSERT_EQ(post("/orders", key, R"({"amount":100})", bearer("token-a")).result_int(), 201u);
  EXPECT_EQ(problem_type(post("/orders", key, R"({"amount":999})", bearer("token-b"))),
            "urn:idem:problem:principal-mismatch");
  EXPECT_EQ(problem_type(post("/orders", key, R"({"amount":999})")), "urn:idem:problem:principal-mismatch");
  EXPECT_EQ(problem_type(post("/orders", key, R"({"amount":999})", bearer("token-a"))),
            "urn:idem:problem:key-reused");
  EXPECT_EQ(executions(key), 1);
}

// A payment platform's callback carries no credentials: its record binds no one, and
// every repeat is replayed as before, with credentials or without.
TEST_P(Principals, ACallbackWithoutCredentialsBindsNoOne) {
  const std::string trade = unique("T");
  const std::string body = R"({"out_trade_no":")" + trade + R"(","amount":1})";
  Response first = post("/pay/callback", "", body);
  ASSERT_EQ(first.result_int(), 201u) << first.body();
  Response again = post("/pay/callback", "", body);
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(again.body(), first.body());
  Response with_credentials = post("/pay/callback", "", body, bearer("token-a"));
  EXPECT_EQ(header(with_credentials, "Idempotent-Replayed"), "true");
  EXPECT_EQ(with_credentials.body(), first.body());
  EXPECT_EQ(executions("pay:" + trade), 1);
}

// A client that retries after refreshing its token is another Authorization: refused,
// never run twice (the documented way out: a stable subject, or a new key once the first
// attempt's outcome is known). A route whose subject names the user replays across the
// refresh.
TEST_P(Principals, ATokenRefreshIsRefusedUnlessTheRouteNamesAStableSubject) {
  const std::string key = unique("refresh");
  ASSERT_EQ(post("/orders", key, "{}", bearer("old-token")).result_int(), 201u);
  Response refreshed = post("/orders", key, "{}", bearer("new-token"));
  EXPECT_EQ(problem_type(refreshed), "urn:idem:problem:principal-mismatch");
  EXPECT_EQ(executions(key), 1);

  const std::string stable = unique("stable");
  Headers old_token{{"Authorization", "Bearer old-token"}, {"X-User-Id", "u-7"}};
  Headers new_token{{"Authorization", "Bearer new-token"}, {"X-User-Id", "u-7"}};
  Response first = post("/user-orders", stable, "{}", old_token);
  ASSERT_EQ(first.result_int(), 201u) << first.body();
  Response again = post("/user-orders", stable, "{}", new_token);
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true") << again.body();
  EXPECT_EQ(again.body(), first.body());
  EXPECT_EQ(executions(stable), 1);
}

// A duplicate of another principal while the first is in flight is refused at once: it
// neither waits for the first's answer (`wait` is 5s here) nor runs.
TEST_P(Principals, AnInFlightDuplicateOfAnotherPrincipalIsRefusedAtOnce) {
  const std::string key = unique("flight");
  Headers slow = bearer("token-a");
  slow.emplace_back("X-Test-Delay-Ms", "2500");
  auto first = std::async(std::launch::async, [&] { return post("/orders", key, "{}", slow); });
  ASSERT_TRUE(reached_upstream(key));
  const auto t0 = std::chrono::steady_clock::now();
  Response other = post("/orders", key, "{}", bearer("token-b"));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(problem_type(other), "urn:idem:problem:principal-mismatch");
  EXPECT_LT(took, std::chrono::milliseconds(1500)) << "it waited for the first request";
  EXPECT_EQ(first.get().result_int(), 201u);
  EXPECT_EQ(executions(key), 1);
  EXPECT_EQ(header(post("/orders", key, "{}", bearer("token-a")), "Idempotent-Replayed"), "true");
}

// `principal: none` keeps the old behaviour: whoever has the key and body gets the answer.
// `principal: header:NAME` binds the header's value instead of Authorization.
TEST_P(Principals, TheRouteChoosesWhatIsBound) {
  const std::string open = unique("open");
  ASSERT_EQ(post("/open", open, "{}", bearer("token-a")).result_int(), 201u);
  EXPECT_EQ(header(post("/open", open, "{}", bearer("token-b")), "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(open), 1);

  const std::string client = unique("client");
  ASSERT_EQ(post("/client-orders", client, "{}", {{"X-Api-Client", "c-1"}, {"Authorization", "Bearer t1"}})
                .result_int(),
            201u);
  EXPECT_EQ(
      header(post("/client-orders", client, "{}", {{"X-Api-Client", "c-1"}, {"Authorization", "Bearer t2"}}),
             "Idempotent-Replayed"),
      "true");
  EXPECT_EQ(problem_type(post("/client-orders", client, "{}", {{"X-Api-Client", "c-2"}})),
            "urn:idem:problem:principal-mismatch");
  EXPECT_EQ(executions(client), 1);
}

// Gateways that share a store agree when they share IDEM_PRINCIPAL_SECRET; one with another
// secret refuses the others' records (docs/configuration.md, "Secrets from the
// environment"), never replays them to a principal it cannot recognise.
TEST_P(Principals, GatewaysOfOneStoreAgreeWhenTheyShareTheSecret) {
  const std::string key = unique("shared");
  Response first = post("/orders", key, "{}", bearer("token-a"));
  ASSERT_EQ(first.result_int(), 201u) << first.body();
  for (const char* secret : {"e2e principal secret", "another secret"}) {
    ::setenv("IDEM_PRINCIPAL_SECRET", secret, 1);
    const unsigned short port = free_port(), admin = free_port();
    write_file(*dir_ + "/second.yaml",
               config_head(port, upstream_->port(), admin, store_uri(running_, *dir_)) + kRoutes);
    Process second({IDEM_BIN, "serve", "--config", *dir_ + "/second.yaml"}, *dir_ + "/second.log");
    ::setenv("IDEM_PRINCIPAL_SECRET", "e2e principal secret", 1);
    ASSERT_TRUE(wait_healthy(admin, 5000)) << "see " << *dir_ << "/second.log";
    Response again =
        request(port, verb::post, "/orders",
                {{"Idempotency-Key", key}, {"Content-Type", "application/json"}, bearer("token-a")[0]}, "{}");
    if (std::string_view(secret) == "e2e principal secret") {
      EXPECT_EQ(header(again, "Idempotent-Replayed"), "true") << again.body();
      EXPECT_EQ(again.body(), first.body());
    } else {
      EXPECT_EQ(problem_type(again), "urn:idem:problem:principal-mismatch");
    }
  }
  EXPECT_EQ(executions(key), 1);
}

// A claim whose gateway died mid-request is taken over by a repeat once its lease passes
// (`on_uncertain: retry`): by the first principal's, never by another's, which the store
// answers `mismatch` whatever the record's state.
TEST_P(Principals, AClaimLeftByADeadGatewayIsNotTakenOverByAnotherPrincipal) {
  const std::string key = unique("takeover");
  const unsigned short port = free_port(), admin = free_port();
  write_file(*dir_ + "/dying.yaml",
             config_head(port, upstream_->port(), admin, store_uri(running_, *dir_)) + kRoutes);
  auto dying = std::make_unique<Process>(
      std::vector<std::string>{IDEM_BIN, "serve", "--config", *dir_ + "/dying.yaml"}, *dir_ + "/dying.log");
  ASSERT_TRUE(wait_healthy(admin, 5000)) << "see " << *dir_ << "/dying.log";
  Headers slow = bearer("token-a");
  slow.emplace_back("X-Test-Delay-Ms", "3000");
  slow.emplace_back("Idempotency-Key", key);
  slow.emplace_back("Content-Type", "application/json");  // as post() sends it: the same request
  auto first = std::async(std::launch::async, [&] {
    try {
      request(port, verb::post, "/retry-orders", slow, "{}");
    } catch (const std::exception&) {  // the gateway is killed under it
    }
  });
  ASSERT_TRUE(reached_upstream(key));
  dying->signal(SIGKILL);
  dying->wait(5000);
  first.get();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the lease (1s) passes

  Response other = post("/retry-orders", key, "{}", bearer("token-b"));
  EXPECT_EQ(problem_type(other), "urn:idem:problem:principal-mismatch") << other.body();
  EXPECT_EQ(executions(key), 1);
  Response same = post("/retry-orders", key, "{}", bearer("token-a"));
  EXPECT_EQ(same.result_int(), 201u) << same.body();
  EXPECT_EQ(executions(key), 2) << "on_uncertain: retry runs the first principal's repeat again";
}

INSTANTIATE_TEST_SUITE_P(Stores, Principals, ::testing::Values("sqlite", "redis", "postgres", "mysql"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace idem::e2e
