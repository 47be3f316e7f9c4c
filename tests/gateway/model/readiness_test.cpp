// readiness (model/readiness.h): every row of its table, and which routes need the store,
// on routes read from configs as an operator writes them.
#include "gateway/model/readiness.h"

#include <gtest/gtest.h>

#include "gateway/model/config/config.h"

namespace idem::gateway {
namespace {

Config config(const std::string& routes_and_defaults) {
  return load_config_text("upstream: http://127.0.0.1:9000\n" + routes_and_defaults, "test.yaml");
}

constexpr const char* kAllPass = R"(defaults:
  on_store_error: pass
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

TEST(Readiness, EveryRowOfTheTable) {
  const Config pass = config(kAllPass);
  const Config reject = config(R"(routes:
  - name: orders
    match: { method: POST, path: /orders }
)");
  struct Case {
    const char* what;
    bool draining, store_answers;
    const Config& config;
    std::optional<Problem> problem;
    std::string body;
  };
  const Case cases[] = {
      {"draining, store answers", true, true, pass, Problem::shutting_down, ""},
      {"draining, store down", true, false, pass, Problem::shutting_down, ""},
      {"draining, a refusing route", true, true, reject, Problem::shutting_down, ""},
      {"store answers, every route passes", false, true, pass, std::nullopt,
       R"({"status":"ready","store":"ok"})"},
      {"store answers, a refusing route", false, true, reject, std::nullopt,
       R"({"status":"ready","store":"ok"})"},
      {"store down, every route passes", false, false, pass, std::nullopt,
       R"({"status":"ready","store":"unavailable","detail":"the idempotency store is unavailable; every route )"
       R"x(forwards requests unprotected (on_store_error: pass)"})x"},
      {"store down, a refusing route", false, false, reject, Problem::store_unavailable, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Readiness r = readiness(c.draining, c.store_answers, c.config.routes);
    EXPECT_EQ(r.problem, c.problem);
    EXPECT_EQ(r.body, c.body);
    EXPECT_EQ(r.detail.empty(), !r.problem);  // a 503 always says why
  }
}

TEST(Readiness, RoutesThatPassAndLockRoutesThatPassDoNotNeedTheStore) {
  EXPECT_TRUE(routes_needing_store(config(kAllPass).routes).empty());
}

TEST(Readiness, OneRefusingRouteAmongPassingOnesIsNamed) {
  const Config c = config(std::string(kAllPass) + R"(  - name: payments
    match: { method: POST, path: /payments }
    on_store_error: reject
)");
  const Readiness r = readiness(false, false, c.routes);
  EXPECT_EQ(r.problem, Problem::store_unavailable);
  EXPECT_EQ(r.detail,
            "the idempotency store is unavailable, and a route needs it: payments (on_store_error: reject)");
}

TEST(Readiness, ALockRouteThatRejectsNeedsTheStore) {
  const Config c = config(R"(defaults:
  on_store_error: pass
routes:
  - name: stock
    match: { method: POST, path: "/skus/{sku}/deduct" }
    key: "stock:{path.sku}"
    mode: lock
    on_store_error: reject
)");
  ASSERT_EQ(routes_needing_store(c.routes).size(), 1u);
  EXPECT_EQ(routes_needing_store(c.routes)[0].why, StoreDependence::Why::on_store_error_reject);
}

// Its clients cannot get a token without the store (POST /_idem/tokens), whatever the
// route's on_store_error says.
TEST(Readiness, ATokenRouteNeedsTheStoreEvenWhenItPasses) {
  const Config c = config(std::string(kAllPass) + R"(  - name: form
    match: { method: POST, path: "/forms/*" }
    key: token
)");
  const std::vector<StoreDependence> needing = routes_needing_store(c.routes);
  ASSERT_EQ(needing.size(), 1u);
  EXPECT_EQ(needing[0].route->name, "form");
  EXPECT_EQ(needing[0].why, StoreDependence::Why::token_key);
  EXPECT_EQ(readiness(false, false, c.routes).detail,
            "the idempotency store is unavailable, and a route needs it: form (key: token)");
}

// Without `routes`, the default route takes defaults.on_store_error: reject unless said.
TEST(Readiness, TheDefaultRouteFollowsTheDefaults) {
  EXPECT_EQ(routes_needing_store(config("").routes).size(), 1u);
  EXPECT_TRUE(routes_needing_store(config("defaults:\n  on_store_error: pass\n").routes).empty());
}

TEST(Readiness, ALongListIsCut) {
  std::string routes = "routes:\n";
  for (int i = 0; i < 8; ++i)
    routes += "  - name: r" + std::to_string(i) + "\n    match: { method: POST, path: /r" +
              std::to_string(i) + " }\n";
  EXPECT_EQ(readiness(false, false, config(routes).routes).detail,
            "the idempotency store is unavailable, and 8 routes need it: r0 (on_store_error: reject), r1 "
            "(on_store_error: reject), r2 (on_store_error: reject), r3 (on_store_error: reject), r4 "
            "(on_store_error: reject), and 3 more");
}

}  // namespace
}  // namespace idem::gateway
