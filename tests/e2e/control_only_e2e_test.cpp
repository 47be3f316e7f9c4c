// End to end: a gateway without upstream and routes, serving the control API alone
// (docs/control-api.md, "A gateway for the control API alone"), with named tokens of the
// `control` and `operator` roles (docs/admin.md, "Tokens and roles"); and `idem check` on
// such configs, on a store made of an unset variable, and on configs that silently do
// nothing (shadowed routes, safe methods, templates that never render).
#include <cstdlib>
#include <string>

#include "e2e/e2e_fixture.h"

namespace idem::e2e {
namespace {

struct TempDir {
  std::string path = temp_dir();
  ~TempDir() { remove_dir(path); }
};

const Headers kJson = {{"Content-Type", "application/json"}};

Headers with(Headers h, const std::string& token) {
  h.emplace_back("Authorization", "Bearer " + token);
  return h;
}

TEST(ControlOnly, TheControlApiWorksWithoutUpstreamAndEachTokenHasItsRoles) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  const unsigned short port = free_port(), admin = free_port();
  write_file(dir + "/control.yaml",
             "store: sqlite:" + dir + "/idem.db\nlisten: 127.0.0.1:" + std::to_string(port) +
                 "\nadmin:\n  listen: 127.0.0.1:" + std::to_string(admin) +
                 "\n  tokens:\n"
                 "    - {name: orders-svc, env: IDEM_E2E_TOKEN_ORDERS, roles: [control]}\n"
                 "    - {name: ops, env: IDEM_E2E_TOKEN_OPS, roles: [operator]}\n");
  ::setenv("IDEM_E2E_TOKEN_ORDERS", "orders-secret", 1);
  ::setenv("IDEM_E2E_TOKEN_OPS", "ops-secret", 1);
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "check", dir + "/control.yaml"}, &out), 0) << out;
  Process idem({IDEM_BIN, "serve", "--config", dir + "/control.yaml"}, dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000)) << read_text(dir + "/idem.log");
  EXPECT_NE(read_text(dir + "/idem.log").find("serving the control API alone"), std::string::npos)
      << read_text(dir + "/idem.log");
  // No client listener: nothing answers on `listen`.
  EXPECT_EQ(request(port, verb::post, "/orders", kJson, "{}", std::chrono::seconds(2)).result_int(), 0u);

  // begin, commit, then a replay of the committed result, with the control token.
  const Headers svc = with(kJson, "orders-secret");
  Response begun = request(admin, verb::post, "/v1/begin", svc, R"({"scope":"orders","key":"k1"})");
  ASSERT_EQ(begun.result_int(), 200u) << begun.body();
  EXPECT_EQ(body_json(begun).at("outcome"), "acquired");
  const std::uint64_t fence = body_json(begun).at("fence").to_number<std::uint64_t>();
  Response committed = request(
      admin, verb::post, "/v1/commit", svc,
      R"({"scope":"orders","key":"k1","fence":)" + std::to_string(fence) + R"(,"result":{"order":42}})");
  EXPECT_EQ(committed.result_int(), 200u) << committed.body();
  Response replay = request(admin, verb::post, "/v1/begin", svc, R"({"scope":"orders","key":"k1"})");
  EXPECT_EQ(replay.result_int(), 200u) << replay.body();
  EXPECT_EQ(replay.body(), R"({"outcome":"replay","result":{"order":42}})");

  // The control token reads one record, but cannot list or delete records; the operator's
  // cannot use the control API: 403 forbidden. No token, or an unknown one: 401 as ever.
  EXPECT_EQ(request(admin, verb::get, "/v1/records/orders/k1", with({}, "orders-secret")).result_int(), 200u);
  Response no_records = request(admin, verb::get, "/v1/records", with({}, "orders-secret"));
  EXPECT_EQ(no_records.result_int(), 403u) << no_records.body();
  EXPECT_EQ(problem_type(no_records), "urn:idem:problem:forbidden");
  EXPECT_NE(no_records.body().find("operator role"), std::string::npos) << no_records.body();
  EXPECT_EQ(request(admin, verb::delete_, "/v1/records/orders/k1", with({}, "orders-secret")).result_int(),
            403u);
  EXPECT_EQ(request(admin, verb::get, "/", with({}, "orders-secret")).result_int(), 403u);
  Response no_control =
      request(admin, verb::post, "/v1/begin", with(kJson, "ops-secret"), R"({"scope":"orders","key":"k2"})");
  EXPECT_EQ(no_control.result_int(), 403u) << no_control.body();
  EXPECT_NE(no_control.body().find("control role"), std::string::npos) << no_control.body();
  EXPECT_EQ(request(admin, verb::get, "/v1/records").result_int(), 401u);
  EXPECT_EQ(request(admin, verb::get, "/v1/records", with({}, "ops-secreT")).result_int(), 401u);
  EXPECT_EQ(request(admin, verb::post, "/v1/begin", kJson, R"({"scope":"orders","key":"k2"})").result_int(),
            401u);
  for (const char* path : {"/healthz", "/readyz", "/metrics"})
    EXPECT_EQ(request(admin, verb::get, path).result_int(), 200u) << path;

  // The operator reads and deletes; the deletion is audited and counted by the token's name.
  EXPECT_EQ(request(admin, verb::get, "/v1/records/orders/k1", with({}, "ops-secret")).result_int(), 200u);
  EXPECT_EQ(request(admin, verb::get, "/", with({}, "ops-secret")).result_int(), 200u);
  Response deleted = request(admin, verb::delete_, "/v1/records/orders/k1", with({}, "ops-secret"));
  EXPECT_EQ(deleted.result_int(), 204u) << deleted.body();
  EXPECT_EQ(request(admin, verb::delete_, "/v1/records/orders/k1", with({}, "ops-secret")).result_int(),
            404u);
  const std::string log = read_text(dir + "/idem.log");
  EXPECT_NE(log.find(R"(","token":"ops","peer":"127.0.0.1","scope":"orders","key":"k1",)"
                     R"("decision":"deleted","fence":)" +
                     std::to_string(fence) + R"(,"state":"done"})"),
            std::string::npos)
      << log;
  EXPECT_NE(
      log.find(R"("token":"ops","peer":"127.0.0.1","scope":"orders","key":"k1","decision":"not_found")"),
      std::string::npos)
      << log;
  // Told from the request log's lines, which start {"time".
  EXPECT_NE(log.find("\n{\"audit\":\"record.delete\",\"time\":\""), std::string::npos) << log;
  EXPECT_EQ(log.find("ops-secret"), std::string::npos) << log;
  const std::string metrics = request(admin, verb::get, "/metrics").body();
  EXPECT_NE(metrics.find("idem_admin_actions_total{action=\"delete\",token=\"ops\"} 1\n"), std::string::npos)
      << metrics;
  ::unsetenv("IDEM_E2E_TOKEN_ORDERS");
  ::unsetenv("IDEM_E2E_TOKEN_OPS");
}

TEST(ControlOnly, RoutesWithoutUpstreamAreStillRefused) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  write_file(dir + "/routes.yaml",
             "store: \"memory:\"\nroutes:\n  - name: orders\n    match: {method: POST, path: /orders}\n");
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "serve", "--config", dir + "/routes.yaml"}, &out), 2) << out;
  EXPECT_NE(out.find("upstream: not set, and routes need one"), std::string::npos) << out;
}

// `store: "${IDEM_STORE}"` with the variable unset: `idem check` warns and does not
// validate the empty value; --strict names the variable (docs/configuration.md, "Secrets
// from the environment").
TEST(ControlOnly, CheckWarnsOfAStoreThatIsAnUnsetVariable) {
  TempDir tmp;
  const std::string file = tmp.path + "/store.yaml";
  write_file(file, "upstream: http://127.0.0.1:9000\nstore: \"${IDEM_E2E_UNSET_STORE}\"\n");
  ::unsetenv("IDEM_E2E_UNSET_STORE");
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "check", file}, &out), 0) << out;
  EXPECT_NE(
      out.find("warning: " + file + ":2: store: the environment variable IDEM_E2E_UNSET_STORE is not set"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find(": ok (1 route, 1 warning)"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "check", "--strict", file}, &out), 2) << out;
  EXPECT_NE(out.find(file + ":2: store: the environment variable IDEM_E2E_UNSET_STORE is not set"),
            std::string::npos)
      << out;
}

// A route that can never match, and one on a safe method: warnings for `idem check`, errors
// for --strict; `idem serve` says them and runs (docs/configuration.md, "What idem check
// warns of").
TEST(ControlOnly, CheckWarnsOfShadowedRoutesAndSafeMethods) {
  TempDir tmp;
  const std::string file = tmp.path + "/routes.yaml";
  write_file(file,
             "upstream: http://127.0.0.1:9000\nroutes:\n"
             "  - {name: orders, match: {method: POST, path: \"/orders/{id}\"}}\n"
             "  - {name: order-42, match: {method: POST, path: /orders/42}}\n"
             "  - {name: reads, match: {method: GET, path: /reads}}\n");
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "check", file}, &out), 0) << out;
  EXPECT_NE(out.find("warning: " + file + ":4: routes[1].match: route 'order-42' never matches: routes[0]"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("warning: " + file + ":5: routes[2].match.method: GET is a safe method"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(": ok (3 routes, 2 warnings)"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "check", "--strict", file}, &out), 2) << out;
  EXPECT_NE(out.find("idem: " + file + ":4: routes[1].match: route 'order-42' never matches"),
            std::string::npos)
      << out;
  // A template that can never render is an error, with the spelling it likely meant.
  write_file(file,
             "upstream: http://127.0.0.1:9000\nroutes:\n"
             "  - {name: orders, match: {method: POST, path: /orders}, key: \"sku:{json.items[0].sku}\"}\n");
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "check", file}, &out), 2) << out;
  EXPECT_NE(out.find(file + ":3: routes[0].key: {json.items[0].sku} never renders"), std::string::npos)
      << out;
  EXPECT_NE(out.find("did you mean {json.items.0.sku}?"), std::string::npos) << out;
}

}  // namespace
}  // namespace idem::e2e
