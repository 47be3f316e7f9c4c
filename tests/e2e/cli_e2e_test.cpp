// End to end: the command line (README.md) — serve with flags, check, record, schema, exit codes,
// admin token rules, SIGTERM and a crash mid-request.
#include <signal.h>

#include <chrono>
#include <future>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "e2e/e2e_fixture.h"
#include "gateway/model/request_identity.h"
#include "testutil/eventually.h"
#include "testutil/redis_server.h"

namespace idem::e2e {
namespace {

// A temporary directory removed at the end of the test.
struct TempDir {
  std::string path = temp_dir();
  ~TempDir() { remove_dir(path); }
};

// `idem serve` with its flags on a SQLite file of its own, in front of the test upstream.
struct SqliteGateway {
  TempDir tmp;
  Process upstream{{IDEM_TEST_UPSTREAM}, tmp.path + "/upstream.log", true};
  unsigned short port = free_port(), admin = free_port();
  std::string store = "sqlite:" + tmp.path + "/idem.db";
  Process idem{{IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:" + std::to_string(upstream.port()),
                "--store", store, "--listen", "127.0.0.1:" + std::to_string(port), "--admin",
                "127.0.0.1:" + std::to_string(admin)},
               tmp.path + "/idem.log"};
};

TEST(GatewayProcess, ConnectionRefusedIs502AndReleases) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  const unsigned short port = free_port(), admin = free_port();
  const HeldPort dead;
  Process idem({IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:" + std::to_string(dead.port()), "--store",
                "memory:", "--listen", "127.0.0.1:" + std::to_string(port), "--admin",
                "127.0.0.1:" + std::to_string(admin)},
               dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000));
  Response r = request(port, verb::post, "/x", {{"Idempotency-Key", "k"}});
  EXPECT_EQ(r.result_int(), 502u);
  EXPECT_EQ(problem_type(r), "urn:idem:problem:upstream-unavailable");
  EXPECT_EQ(request(admin, verb::get, "/v1/records/_/k").result_int(), 404u);
}

TEST(GatewayProcess, CheckExitCodes) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  write_file(dir + "/good.yaml", "upstream: http://127.0.0.1:9000\n");
  write_file(dir + "/bad.yaml", "defaults:\n  lease: 0\n");
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "check", dir + "/good.yaml"}, &out), 0) << out;
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "check", dir + "/bad.yaml"}, &out), 2);
  EXPECT_NE(out.find("lease"), std::string::npos) << out;
  EXPECT_EQ(run({IDEM_BIN, "serve", "--no-such-flag"}), 2);
  EXPECT_EQ(run({IDEM_BIN, "serve", "--store", "memory:"}), 2);  // no upstream
  EXPECT_EQ(run({IDEM_BIN}), 2);
  EXPECT_EQ(run({IDEM_BIN, "version"}), 0);
}

// `idem schema --store URI` (docs/stores.md, "The protocol folder and the DDL"): the DDL of a
// PostgreSQL or MySQL store with the URI's table prefix, asking no server and never printing the
// password; a store without tables or a bad URI is a usage error (2) that says why.
TEST(GatewayProcess, SchemaPrintsTheDdlOfSqlStoresOnly) {
  const auto has = [](const std::string& out, const std::string& part) {
    return out.find(part) != std::string::npos;
  };
  std::string out;
  EXPECT_EQ(
      run({IDEM_BIN, "schema", "--store", "postgres://app:s3cret@db.invalid:5432/shop?table_prefix=shop_"},
          &out),
      0)
      << out;
  EXPECT_TRUE(has(out, "CREATE TABLE IF NOT EXISTS shop_records (")) << out;
  EXPECT_TRUE(has(out, "hashtext('idem schema shop_')")) << out;
  EXPECT_TRUE(has(out, "COMMIT;")) << out;
  EXPECT_FALSE(has(out, "s3cret")) << out;
  EXPECT_FALSE(has(out, "{p}")) << out;
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "schema", "--store", "mysql://app:s3cret@db.invalid/shop"}, &out), 0) << out;
  EXPECT_TRUE(has(out, "CREATE TABLE IF NOT EXISTS idem_locks (")) << out;
  EXPECT_TRUE(has(out, "--   ALTER TABLE idem_records MODIFY `key` VARBINARY(320) NOT NULL;")) << out;
  EXPECT_FALSE(has(out, "s3cret")) << out;
  for (const std::string store : {"redis://127.0.0.1:6379", "redis-cluster://127.0.0.1:7000",
                                  "redis+sentinel://127.0.0.1:26379/mymaster", "rediss://127.0.0.1:6380",
                                  "memory:", "sqlite:./idem.db"}) {
    out.clear();
    EXPECT_EQ(run({IDEM_BIN, "schema", "--store", store}, &out), 2) << store;
    EXPECT_TRUE(has(out, "idem schema is for postgres:// and mysql://")) << out;
  }
  for (const std::string store :
       {"mysql://u:s3cret@h/db?table_prefix=Bad-", "postgres://h/db?create_tables=no", "ftp://s3cret@h/x",
        "no-scheme", "redis+sentinel://:s3cret@h:26379"}) {
    out.clear();
    EXPECT_EQ(run({IDEM_BIN, "schema", "--store", store}, &out), 2) << store;
    EXPECT_FALSE(has(out, "s3cret")) << out;
  }
  EXPECT_EQ(run({IDEM_BIN, "schema"}), 2);
}

// A route whose max_result the store cannot hold is a config error, named at the line that set
// it: by `idem check --store URI`, and by `idem serve` before it listens. SQLite holds half its
// length limit (500,000,000 bytes), less than a 1GiB max_result.
TEST(GatewayProcess, AMaxResultTheStoreCannotHoldIsRefused) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  const std::string store = "sqlite:" + dir + "/idem.db";
  const auto config = [&](const std::string& max_result) {
    return "upstream: http://127.0.0.1:9000\nlisten: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nstore: " +
           store +
           "\nroutes:\n  - name: big\n    match: {method: POST, path: /big}\n    max_result: " + max_result +
           "\n";
  };
  write_file(dir + "/big.yaml", config("1GiB"));
  write_file(dir + "/fits.yaml", config("400MiB"));
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "check", dir + "/big.yaml"}, &out), 0) << out;  // no store: not checked
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "check", "--store", store, dir + "/big.yaml"}, &out), 2) << out;
  const std::string why = dir +
                          "/big.yaml:9: routes[0].max_result: route 'big' stores responses of up to "
                          "1073741824 bytes, and the sqlite store holds results of 500000000 bytes";
  EXPECT_NE(out.find(why), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "check", "--store", store, dir + "/fits.yaml"}, &out), 0) << out;
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "serve", "--config", dir + "/big.yaml"}, &out), 2) << out;
  EXPECT_NE(out.find(why), std::string::npos) << out;
}

// `idem version` and `idem --version` (README.md) print the same line.
TEST(GatewayProcess, VersionTwoWays) {
  std::string a, b;
  EXPECT_EQ(run({IDEM_BIN, "version"}, &a), 0);
  EXPECT_EQ(run({IDEM_BIN, "--version"}, &b), 0);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(a.starts_with("idem ")) << a;
  EXPECT_NE(a.find('.'), std::string::npos) << a;
}

// `idem check` reports unset variables as warnings, `--strict` as errors
// (docs/configuration.md, "Secrets from the environment").
TEST(GatewayProcess, CheckWarnsOfUnsetVariablesAndStrictRefuses) {
  TempDir tmp;
  const std::string file = tmp.path + "/idem.yaml";
  write_file(file,
             "upstream: http://127.0.0.1:9000\n"
             "store: redis://:${IDEM_TEST_UNSET_PASSWORD}@127.0.0.1:6379\n"
             "admin:\n"
             "  token_env: IDEM_TEST_UNSET_TOKEN\n");
  ::unsetenv("IDEM_TEST_UNSET_PASSWORD");
  ::unsetenv("IDEM_TEST_UNSET_TOKEN");
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "check", file}, &out), 0) << out;
  EXPECT_NE(out.find("warning: " + file +
                     ":2: store: the environment variable IDEM_TEST_UNSET_PASSWORD is not set"),
            std::string::npos)
      << out;
  EXPECT_NE(
      out.find("warning: " + file + ":4: admin.token_env: the environment variable IDEM_TEST_UNSET_TOKEN"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find(": ok (1 route, 2 warnings)"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "check", "--strict", file}, &out), 2) << out;
  EXPECT_NE(out.find(file + ":2: store: the environment variable IDEM_TEST_UNSET_PASSWORD is not set"),
            std::string::npos)
      << out;
  // serve is strict: it never runs with a secret missing.
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "serve", "--config", file}, &out), 2) << out;
  ::setenv("IDEM_TEST_UNSET_PASSWORD", "pw", 1);
  ::setenv("IDEM_TEST_UNSET_TOKEN", "tok", 1);
  out.clear();
  EXPECT_EQ(run({IDEM_BIN, "check", "--strict", file}, &out), 0) << out;
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
  ::unsetenv("IDEM_TEST_UNSET_PASSWORD");
  ::unsetenv("IDEM_TEST_UNSET_TOKEN");
}

// A port in use: the message names the listener and the address, exit 1.
TEST(GatewayProcess, AListenerThatCannotBindIsNamed) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor taken(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const std::string busy = "127.0.0.1:" + std::to_string(taken.local_endpoint().port());
  const std::string free_address = "127.0.0.1:" + std::to_string(free_port());
  struct Case {
    std::string listen, admin, expected;
  };
  for (const Case& c :
       {Case{busy, free_address,
             "idem: cannot listen on " + busy + " (client listener): address already in use"},
        Case{free_address, busy,
             "idem: cannot listen on " + busy + " (admin listener): address already in use"}}) {
    std::string out;
    EXPECT_EQ(run({IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:9", "--store", "memory:", "--listen",
                   c.listen, "--admin", c.admin},
                  &out),
              1)
        << out;
    EXPECT_NE(out.find(c.expected), std::string::npos) << out;
    EXPECT_EQ(out.find("boost"), std::string::npos) << out;
  }
}

TEST(GatewayProcess, AdminTokenAndNonLoopbackRefusal) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  write_file(dir + "/open.yaml", "upstream: http://127.0.0.1:9000\nadmin:\n  listen: 0.0.0.0:9901\n");
  EXPECT_EQ(run({IDEM_BIN, "serve", "--config", dir + "/open.yaml"}), 2);
  // Without a token, no address but a loopback one, from the file or the flag: a config error.
  write_file(dir + "/any6.yaml", "upstream: http://127.0.0.1:9000\nadmin:\n  listen: \"[::]:9901\"\n");
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "serve", "--config", dir + "/any6.yaml"}, &out), 2) << out;
  EXPECT_NE(out.find("admin.token_env"), std::string::npos) << out;
  for (const char* addr : {"0.0.0.0:9901", "192.0.2.1:9901", "example.com:9901"}) {
    out.clear();
    EXPECT_EQ(
        run({IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:9000", "--store", "memory:", "--admin", addr},
            &out),
        2)
        << addr << ": " << out;
    EXPECT_NE(out.find("--admin"), std::string::npos) << out;
    EXPECT_NE(out.find("non-loopback"), std::string::npos) << out;
    EXPECT_NE(out.find("admin.token_env"), std::string::npos) << out;
  }

  const unsigned short port = free_port(), admin = free_port();
  write_file(dir + "/token.yaml",
             "upstream: http://127.0.0.1:9\nstore: \"memory:\"\nlisten: 127.0.0.1:" + std::to_string(port) +
                 "\nadmin:\n  listen: 127.0.0.1:" + std::to_string(admin) +
                 "\n  token_env: IDEM_E2E_TOKEN\n");
  ::setenv("IDEM_E2E_TOKEN", "s3cret", 1);
  Process idem({IDEM_BIN, "serve", "--config", dir + "/token.yaml"}, dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000));
  EXPECT_EQ(request(admin, verb::get, "/v1/records").result_int(), 401u);
  EXPECT_EQ(request(admin, verb::get, "/v1/records", {{"Authorization", "Bearer s3cret"}}).result_int(),
            200u);
  Response denied = request(admin, verb::get, "/v1/records/_/k");
  EXPECT_EQ(denied.result_int(), 401u);
  EXPECT_EQ(problem_type(denied), "urn:idem:problem:unauthorized");
  EXPECT_EQ(request(admin, verb::get, "/v1/records/_/k", {{"Authorization", "Bearer s3cret"}}).result_int(),
            404u);
  // The scheme in any case; the token exactly, whatever its length.
  EXPECT_EQ(request(admin, verb::get, "/v1/records/_/k", {{"Authorization", "bearer s3cret"}}).result_int(),
            404u);
  EXPECT_EQ(request(admin, verb::get, "/v1/records/_/k", {{"Authorization", "BEARER s3cret"}}).result_int(),
            404u);
  for (const char* wrong : {"Bearer s3creT", "Bearer s3cre", "Bearer s3cret-and-more", "Bearer ", "s3cret",
                            "Basic s3cret", "Bearer S3CRET"}) {
    Response r = request(admin, verb::get, "/v1/records/_/k", {{"Authorization", wrong}});
    EXPECT_EQ(r.result_int(), 401u) << wrong;
    EXPECT_EQ(problem_type(r), "urn:idem:problem:unauthorized") << wrong;
  }
  const Headers json = {{"Content-Type", "application/json"}};
  EXPECT_EQ(request(admin, verb::post, "/v1/begin", json, R"({"scope":"s","key":"k"})").result_int(), 401u);
  Response plain = request(admin, verb::post, "/v1/begin",
                           {{"Authorization", "bearer s3cret"}, {"Content-Type", "text/plain"}},
                           R"({"scope":"s","key":"k"})");
  EXPECT_EQ(plain.result_int(), 415u) << plain.body();
  Response begun = request(admin, verb::post, "/v1/begin",
                           {{"Authorization", "bearer s3cret"}, {"Content-Type", "application/json"}},
                           R"({"scope":"s","key":"k"})");
  EXPECT_EQ(begun.result_int(), 200u) << begun.body();
  // With a token, the token is the guard against DNS rebinding: any Host is served. Another
  // site's page is refused all the same (docs/admin.md): a browser with Basic credentials
  // sends them on its own.
  EXPECT_EQ(request(admin, verb::get, "/v1/records/s/k",
                    {{"Authorization", "Bearer s3cret"}, {"Host", "admin.example:9901"}})
                .result_int(),
            200u);
  EXPECT_EQ(request(admin, verb::get, "/v1/records/s/k",
                    {{"Authorization", "Bearer s3cret"},
                     {"Host", "admin.example:9901"},
                     {"Origin", "https://ops.example"}})
                .result_int(),
            403u);
  // Health, readiness and metrics never need the token.
  for (const char* path : {"/healthz", "/readyz", "/metrics"})
    EXPECT_EQ(request(admin, verb::get, path).result_int(), 200u) << path;
  std::string log;
  run({"/bin/cat", dir + "/idem.log"}, &log);
  EXPECT_EQ(log.find("s3cret"), std::string::npos) << log;
}

// The output of `idem serve` with `args` until it exits, or until 8 s have passed (it is then
// stopped): an unreachable store may stop it at once or leave it serving with /readyz 503.
std::string serve_output(const std::string& dir, std::vector<std::string> args) {
  static int n = 0;
  const std::string log = dir + "/serve-" + std::to_string(++n) + ".log";
  args.insert(args.begin(), {IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:9", "--listen",
                             "127.0.0.1:" + std::to_string(free_port()), "--admin",
                             "127.0.0.1:" + std::to_string(free_port())});
  Process idem(args, log);
  std::string out;
  // Once it says it serves, everything it says at start has been said.
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(8);
       idem.wait(50) == -1 && std::chrono::steady_clock::now() < until;) {
    out.clear();
    run({"/bin/cat", log}, &out);
    if (out.find("idem: serving on") != std::string::npos) break;
  }
  idem.signal(SIGTERM);
  idem.wait(10000);
  out.clear();
  run({"/bin/cat", log}, &out);
  return out;
}

// A password in a store URI is never printed: not at start, not when the store cannot be
// opened, not by `record`, `sweep` or `check` (docs/admin.md).
TEST(GatewayProcess, StorePasswordsAreNeverPrinted) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  // A Redis that does not answer costs op_timeout (5 s) per command: a few forms suffice here,
  // the unit tests of redact_uri cover the rest.
  for (const std::string& uri : std::vector<std::string>{
           "postgres://u:s3cret@127.0.0.1:1/db", "postgresql://u:s3cret%21x@127.0.0.1:1/db",
           "postgres://u@127.0.0.1:1/db?sslmode=disable&password=s3cret", "redis://:s3cret@127.0.0.1:1",
           "redis-cluster://u:s3cret@127.0.0.1:1,127.0.0.1:2", "mysql://u:s3cret@127.0.0.1:1/db"}) {
    const std::string out = serve_output(dir, {"--store", uri});
    EXPECT_EQ(out.find("s3cret"), std::string::npos) << out;
    EXPECT_NE(out.find("***"), std::string::npos) << out;  // it still says which store
  }
  for (const std::string& uri :
       std::vector<std::string>{"postgres://u:s3cret@127.0.0.1:1/db?password=s3cret",
                                "redis://s3cret@127.0.0.1:1", "mysql://u:s3cret@127.0.0.1:1/db"}) {
    std::string out;
    EXPECT_EQ(run({IDEM_BIN, "record", "get", "--store", uri, "k"}, &out), 1) << out;
    EXPECT_EQ(out.find("s3cret"), std::string::npos) << out;
    EXPECT_NE(out.find("***"), std::string::npos) << out;
  }
  std::string cli;
  EXPECT_EQ(run({IDEM_BIN, "sweep", "--store", "postgres://u:s3cret@127.0.0.1:1/db"}, &cli), 1) << cli;
  EXPECT_EQ(cli.find("s3cret"), std::string::npos) << cli;
  // From a config file too; and malformed URIs, refused as config errors.
  write_file(dir + "/pg.yaml",
             "upstream: http://127.0.0.1:9\nstore: \"postgres://u:s3cret@127.0.0.1:1/db\"\n");
  std::string out = serve_output(dir, {"--config", dir + "/pg.yaml"});
  EXPECT_EQ(out.find("s3cret"), std::string::npos) << out;
  for (const std::string& uri : std::vector<std::string>{"redsi://:s3cret@127.0.0.1:1", "s3cret@127.0.0.1",
                                                         "postgres://u:s3c/ret@h/db", "redis://:s3c?ret@h",
                                                         "postgres://u:s3cret@h/db?password=s3c%ret&x=a@b"}) {
    write_file(dir + "/bad.yaml", "store: \"" + uri + "\"\n");
    out.clear();
    EXPECT_EQ(run({IDEM_BIN, "check", dir + "/bad.yaml"}, &out), 2) << uri << ": " << out;
    EXPECT_EQ(out.find("s3c"), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(run({IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:9", "--store", uri}, &out), 2) << out;
    EXPECT_EQ(out.find("s3c"), std::string::npos) << out;
    out.clear();
    EXPECT_NE(run({IDEM_BIN, "record", "get", "--store", uri, "k"}, &out), 0) << out;
    EXPECT_EQ(out.find("s3c"), std::string::npos) << out;
  }
}

// A real Redis that requires a password: the startup line names the store with the
// password hidden, and once the store is gone the answers say so without naming it.
TEST(GatewayProcess, AStoreWithAPasswordIsNamedWithoutItAndItsFailuresWithoutItsAddress) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  auto redis = std::make_unique<testutil::RedisServer>(std::vector<std::string>{"--requirepass", "s3cret"});
  if (!redis->started()) GTEST_SKIP() << "redis-server is not installed or did not start";
  const unsigned short redis_port = redis->port();

  Process upstream({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true);
  const unsigned short port = free_port(), admin = free_port();
  const std::string store = "redis://:s3cret@127.0.0.1:" + std::to_string(redis_port);
  Process idem({IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:" + std::to_string(upstream.port()),
                "--store", store, "--listen", "127.0.0.1:" + std::to_string(port), "--admin",
                "127.0.0.1:" + std::to_string(admin)},
               dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000));
  EXPECT_EQ(request(port, verb::post, "/orders", {{"Idempotency-Key", "k1"}}, "{}").result_int(), 201u);

  redis.reset();  // the store goes away
  const std::string address = std::to_string(redis_port);
  // At once: each waits for the store's op_timeout.
  std::vector<std::future<Response>> answers;
  answers.push_back(std::async(std::launch::async, [&] {
    return request(port, verb::post, "/orders", {{"Idempotency-Key", "k2"}}, "{}");
  }));
  answers.push_back(std::async(std::launch::async, [&] { return request(admin, verb::get, "/readyz"); }));
  answers.push_back(
      std::async(std::launch::async, [&] { return request(admin, verb::get, "/v1/records/_/k1"); }));
  answers.push_back(std::async(std::launch::async, [&] {
    return request(admin, verb::post, "/v1/begin", {{"Content-Type", "application/json"}},
                   R"({"scope":"","key":"k3"})");
  }));
  for (auto& answer : answers) {
    const Response r = answer.get();
    EXPECT_EQ(r.result_int(), 503u) << r.body();
    EXPECT_EQ(problem_type(r), "urn:idem:problem:store-unavailable");
    EXPECT_EQ(r.body().find(address), std::string::npos) << r.body();
    EXPECT_EQ(r.body().find("127.0.0.1"), std::string::npos) << r.body();
    EXPECT_EQ(r.body().find("redis"), std::string::npos) << r.body();
  }
  idem.signal(SIGTERM);
  idem.wait(10000);
  std::string log;
  run({"/bin/cat", dir + "/idem.log"}, &log);
  EXPECT_EQ(log.find("s3cret"), std::string::npos) << log;
  EXPECT_NE(log.find("store redis://:***@127.0.0.1:" + address), std::string::npos) << log;
  // What the answers leave out, the operator finds on standard error.
  EXPECT_NE(log.find("127.0.0.1:" + address + ":"), std::string::npos) << log;
}

// A store that is down when the gateway starts does not stop it (docs/admin.md, "When the
// store is down"): it serves, /readyz is 503 (a route refuses without the store) and
// protected requests follow on_store_error; once the store comes up, without a restart,
// requests are protected again.
TEST(GatewayProcess, AStoreDownAtTheStartIsWaitedForWhileServing) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  Process upstream({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true);
  HeldPort redis_port;  // no Redis there until the test starts one
  const unsigned short port = free_port(), admin = free_port();
  write_file(dir + "/idem.yaml", "upstream: http://127.0.0.1:" + std::to_string(upstream.port()) +
                                     "\nstore: redis://127.0.0.1:" + std::to_string(redis_port.port()) + R"(
routes:
  - name: orders
    match: { method: POST, path: /orders }
  - name: passes
    match: { method: POST, path: /passes }
    on_store_error: pass
)");
  Process idem({IDEM_BIN, "serve", "--config", dir + "/idem.yaml", "--listen",
                "127.0.0.1:" + std::to_string(port), "--admin", "127.0.0.1:" + std::to_string(admin)},
               dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 10000));
  EXPECT_EQ(request(admin, verb::get, "/readyz").result_int(), 503u);
  Response r = request(port, verb::post, "/orders", {{"Idempotency-Key", "k1"}}, "{}");
  EXPECT_EQ(r.result_int(), 503u) << r.body();
  EXPECT_EQ(problem_type(r), "urn:idem:problem:store-unavailable");
  EXPECT_EQ(r[http::field::retry_after], "1");
  r = request(port, verb::post, "/passes", {{"Idempotency-Key", "p1"}}, "{}");
  EXPECT_EQ(r.result_int(), 201u) << r.body();
  EXPECT_EQ(r["Idempotency-Status"], "unprotected");

  redis_port.release();
  testutil::RedisServer redis({}, redis_port.port());
  if (!redis.started()) GTEST_SKIP() << "redis-server is not installed or did not start";
  bool ready = false;
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       !ready && std::chrono::steady_clock::now() < until;) {
    ready = request(admin, verb::get, "/readyz").result_int() == 200u;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling a probe
  }
  ASSERT_TRUE(ready) << "the gateway never reached the store that came up";
  r = request(port, verb::post, "/orders", {{"Idempotency-Key", "k1"}}, "{}");
  EXPECT_EQ(r.result_int(), 201u) << r.body();
  const Response again = request(port, verb::post, "/orders", {{"Idempotency-Key", "k1"}}, "{}");
  EXPECT_EQ(again.result_int(), 201u);
  EXPECT_EQ(again["Idempotent-Replayed"], "true");
  EXPECT_EQ(again.body(), r.body());
  idem.signal(SIGTERM);
  EXPECT_EQ(idem.wait(10000), 0);
  std::string log;
  run({"/bin/cat", dir + "/idem.log"}, &log);
  EXPECT_NE(log.find("is not reachable"), std::string::npos) << log;
  EXPECT_NE(log.find("reached"), std::string::npos) << log;
}

// kill -9 of the gateway while the upstream works, then a restart on the same SQLite file:
// the claim survived in the store, and once its lease expires on_uncertain decides.
class KilledGateway : public ::testing::TestWithParam<std::string> {};

TEST_P(KilledGateway, AClaimOfAKilledGatewayIsDecidedByOnUncertainAfterARestart) {
  const std::string on_uncertain = GetParam();
  TempDir tmp;
  const std::string& dir = tmp.path;
  Process upstream({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true);
  const unsigned short port = free_port(), admin = free_port();
  write_file(dir + "/idem.yaml", "listen: 127.0.0.1:" + std::to_string(port) +
                                     "\nupstream: http://127.0.0.1:" + std::to_string(upstream.port()) +
                                     "\nstore: sqlite:" + dir +
                                     "/idem.db\nadmin:\n  listen: 127.0.0.1:" + std::to_string(admin) +
                                     "\ndefaults:\n  lease: 1s\n  on_uncertain: " + on_uncertain + "\n");
  const std::vector<std::string> argv = {IDEM_BIN, "serve", "--config", dir + "/idem.yaml"};
  auto first = std::make_unique<Process>(argv, dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000));
  std::thread client([&] {
    request(port, verb::post, "/orders", {{"Idempotency-Key", "crash"}, {"X-Test-Delay-Ms", "1500"}}, "{}");
  });
  // Kill it once the claim is in the store and the upstream has the request.
  std::int64_t claimed_fence = 0;
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       std::chrono::steady_clock::now() < until && claimed_fence == 0;) {
    Response rec = request(admin, verb::get, "/v1/records/_/default:crash");  // the default route's key space
    if (rec.result_int() == 200 && request(upstream.port(), verb::get, "/_count?key=crash").body() == "1")
      claimed_fence = boost::json::parse(rec.body()).at("fence").as_int64();
  }
  ASSERT_NE(claimed_fence, 0) << "the claim never appeared";
  first->signal(SIGKILL);
  first->wait(5000);
  client.join();
  Process second(argv, dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000));
  // The repeat waits out the dead gateway's lease (defaults.wait is 5 s), then:
  Response r = request(port, verb::post, "/orders", {{"Idempotency-Key", "crash"}}, "{}");
  if (on_uncertain == "hold") {  // nothing runs twice: 409 until an operator decides
    EXPECT_EQ(r.result_int(), 409u) << r.body();
    EXPECT_EQ(problem_type(r), "urn:idem:problem:outcome-uncertain");
    EXPECT_EQ(request(upstream.port(), verb::get, "/_count?key=crash").body(), "1");
  } else {  // runs again, with a higher fence the service can check
    EXPECT_EQ(r.result_int(), 201u) << r.body();
    EXPECT_EQ(request(upstream.port(), verb::get, "/_count?key=crash").body(), "2");
    const std::string fence(boost::json::parse(r.body()).at("fence").as_string());
    EXPECT_GT(std::stoll(fence), claimed_fence);
  }
}

// `idem record list` prints what GET /v1/records answers (docs/admin.md, "Listing
// records"), from the store directly, while the gateway runs.
TEST(GatewayProcess, RecordListPrintsTheAdminListing) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  Process upstream({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true);
  const unsigned short port = free_port(), admin = free_port();
  const std::string store = "sqlite:" + dir + "/idem.db";
  write_file(dir + "/idem.yaml", config_head(port, upstream.port(), admin, store) +
                                     "routes:\n  - name: orders\n    match: { method: POST, path: /orders }\n"
                                     "    upstream_timeout: 300ms\n");
  Process idem({IDEM_BIN, "serve", "--config", dir + "/idem.yaml"}, dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000));
  auto post = [&](const char* key, Headers extra) {
    extra.emplace_back("Idempotency-Key", key);
    extra.emplace_back("Content-Type", "application/json");
    return request(port, verb::post, "/orders", extra, "{}").result_int();
  };
  ASSERT_EQ(post("first", {}), 201u);
  ASSERT_EQ(post("lost", {{"X-Test-Delay-Ms", "1000"}}), 504u);  // held as uncertain
  ASSERT_EQ(post("last", {}), 201u);

  // The same document, byte for byte, as the admin API's.
  auto cli = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{IDEM_BIN, "record", "list", "--store", store};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::string out;
    EXPECT_EQ(run(argv, &out), 0) << out;
    return out;
  };
  const std::string all = cli({"--key-space", "orders"});
  EXPECT_EQ(all, request(admin, verb::get, "/v1/records?key_space=orders").body() + "\n");
  auto doc = json::parse(all).as_object();
  ASSERT_EQ(doc.at("records").as_array().size(), 3u) << all;
  EXPECT_EQ(doc.at("next_cursor").as_string(), "");
  // The command docs/admin.md shows.
  const std::string uncertain = cli({"--key-space", "orders", "--uncertain"});
  EXPECT_EQ(uncertain,
            request(admin, verb::get, "/v1/records?key_space=orders&uncertain=true").body() + "\n");
  doc = json::parse(uncertain).as_object();
  ASSERT_EQ(doc.at("records").as_array().size(), 1u) << uncertain;
  EXPECT_EQ(doc.at("records").as_array()[0].as_object().at("key").as_string(), "orders:lost");
  EXPECT_EQ(doc.at("records").as_array()[0].as_object().at("result").as_string(), "uncertain");
  EXPECT_EQ(json::parse(cli({"--state", "pending"})).as_object().at("records").as_array().size(), 0u);
  EXPECT_EQ(json::parse(cli({"--key-space", "other"})).as_object().at("records").as_array().size(), 0u);

  // Two pages: --limit, then --cursor with the first page's next_cursor.
  auto first = json::parse(cli({"--key-space", "orders", "--limit", "2"})).as_object();
  ASSERT_EQ(first.at("records").as_array().size(), 2u);
  const std::string cursor(first.at("next_cursor").as_string());
  ASSERT_FALSE(cursor.empty());
  auto second = json::parse(cli({"--key-space", "orders", "--limit", "2", "--cursor", cursor})).as_object();
  ASSERT_EQ(second.at("records").as_array().size(), 1u);
  EXPECT_EQ(second.at("next_cursor").as_string(), "");
  // Newest first: "last" was written last.
  EXPECT_EQ(first.at("records").as_array()[0].as_object().at("key").as_string(), "orders:last");

  for (std::vector<std::string> bad : {std::vector<std::string>{"--state", "gone"},
                                       {"--limit", "0"},
                                       {"--limit", "1001"},
                                       {"--limit", "x"},
                                       {"--key-space", "a:b"},
                                       {"--cursor", "garbage"},
                                       {"--state", "pending", "--uncertain"}}) {
    std::vector<std::string> argv{IDEM_BIN, "record", "list", "--store", store};
    argv.insert(argv.end(), bad.begin(), bad.end());
    std::string out;
    EXPECT_EQ(run(argv, &out), 2) << bad[0] << ": " << out;
  }
  EXPECT_EQ(run({IDEM_BIN, "record", "list"}), 2);  // --store is required
}

INSTANTIATE_TEST_SUITE_P(OnUncertain, KilledGateway, ::testing::Values("hold", "retry"),
                         [](const auto& p) { return p.param; });

TEST(GatewayProcess, SigtermFinishesTheRequestInFlightAndStoresIt) {
  SqliteGateway g;
  const std::string& store = g.store;
  const unsigned short port = g.port;
  ASSERT_TRUE(wait_healthy(g.admin, 5000));
  Response answer;
  std::thread client([&] {
    answer =
        request(port, verb::post, "/orders", {{"Idempotency-Key", "term"}, {"X-Test-Delay-Ms", "800"}}, "{}");
  });
  // An idle keep-alive client must not hold the shutdown up until its read deadline.
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket idle(ioc);
  idle.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  g.idem.signal(SIGTERM);
  client.join();
  EXPECT_EQ(answer.result_int(), 201u);
  EXPECT_EQ(g.idem.wait(3000), 0) << "an idle connection delayed the shutdown";
  std::string out;
  // The default route's key space: the stored key, or the key as sent with --key-space.
  EXPECT_EQ(run({IDEM_BIN, "record", "get", "--store", store, "--key-space", "default", "term"}, &out), 0)
      << out;
  EXPECT_NE(out.find("\"state\":\"done\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"key\":\"default:term\""), std::string::npos) << out;
  EXPECT_EQ(run({IDEM_BIN, "record", "get", "--store", store, "default:term"}, &out), 0) << out;
  EXPECT_EQ(run({IDEM_BIN, "record", "get", "--store", store, "term"}), 1);
  EXPECT_EQ(run({IDEM_BIN, "record", "get", "--store", store, "--key-space", "a:b", "term"}), 2);
  EXPECT_EQ(run({IDEM_BIN, "record", "get", "--store", store, "absent"}), 1);
  // An operator removes it: gone for `get`, and a second delete finds nothing.
  EXPECT_EQ(run({IDEM_BIN, "record", "delete", "--store", store, "--key-space", "default", "term"}, &out), 0)
      << out;
  EXPECT_EQ(run({IDEM_BIN, "record", "get", "--store", store, "default:term"}), 1);
  EXPECT_EQ(run({IDEM_BIN, "record", "delete", "--store", store, "default:term"}), 1);
}

// A key looked up without its key space finds nothing: the message says where it looked and
// the form records are stored in (docs/gateway.md, "Key spaces"), for get and delete alike.
TEST(GatewayProcess, RecordNotFoundNamesTheKeySpaceItLookedIn) {
  SqliteGateway g;
  ASSERT_TRUE(wait_healthy(g.admin, 5000));
  ASSERT_EQ(request(g.port, verb::post, "/orders", {{"Idempotency-Key", "k-1"}}, "{}").result_int(), 201u);
  // The arguments after the store, and what the message must say.
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases{
      {{"k-1"},
       {"no record with the stored key \"k-1\", which names no key space", "<key_space>:<key>",
        "try ROUTE:k-1 or --key-space ROUTE k-1"}},
      {{"--key-space", "orders", "k-1"},
       {"no record for key \"k-1\" in key space orders (stored key \"orders:k-1\")"}},
      {{"--scope", "u-7", "orders:k-1"},
       {"no record with the stored key \"orders:k-1\" in scope \"u-7\" (key space orders)"}},
  };
  std::string out;
  for (const char* verb : {"get", "delete"})
    for (const auto& [args, says] : cases) {
      std::vector<std::string> command{IDEM_BIN, "record", verb, "--store", g.store};
      command.insert(command.end(), args.begin(), args.end());
      out.clear();
      EXPECT_EQ(run(command, &out), 1) << out;
      for (const std::string& text : says)
        EXPECT_NE(out.find(text), std::string::npos) << text << "\n" << out;
    }
  // Where the record is: the default route's key space.
  EXPECT_EQ(run({IDEM_BIN, "record", "get", "--store", g.store, "--key-space", "default", "k-1"}, &out), 0)
      << out;
}

// The replay cache is exact on SQLite (docs/gateway.md, "Replays from memory"): a record an
// operator removes with `idem record delete` from another process runs again at the next
// request, although the gateway had its response in memory.
TEST(GatewayProcess, ARecordDeletedByAnotherProcessIsNotReplayedFromMemory) {
  SqliteGateway g;
  const std::string& store = g.store;
  const unsigned short port = g.port;
  ASSERT_TRUE(wait_healthy(g.admin, 5000));
  auto post = [&] { return request(port, verb::post, "/orders", {{"Idempotency-Key", "gone"}}, "{}"); };
  ASSERT_EQ(post().result_int(), 201u);
  ASSERT_EQ(post()["Idempotent-Replayed"], "true");  // from memory from now on
  std::string out;
  ASSERT_EQ(run({IDEM_BIN, "record", "delete", "--store", store, "--key-space", "default", "gone"}, &out), 0)
      << out;
  const Response again = post();
  EXPECT_EQ(again.result_int(), 201u);
  EXPECT_EQ(again["Idempotent-Replayed"], "") << again.body();
  EXPECT_EQ(request(g.upstream.port(), verb::get, "/_count?key=gone").body(), "2");
}

}  // namespace
}  // namespace idem::e2e

namespace idem::e2e {
namespace {

// SIGHUP (docs/operations.md, "Reloading the config"): new routes and policies apply to new
// requests, on connections opened before the reload too; an invalid file changes nothing;
// what needs a restart is kept and said.
TEST(GatewayProcess, SighupReloadsRoutesAndPoliciesWithoutDroppingAConnection) {
  TempDir tmp;
  Process upstream({IDEM_TEST_UPSTREAM}, tmp.path + "/upstream.log", true);
  const unsigned short port = free_port(), admin = free_port();
  const std::string file = tmp.path + "/idem.yaml", log = tmp.path + "/idem.log";
  const std::string head = "listen: 127.0.0.1:" + std::to_string(port) +
                           "\nupstream: http://127.0.0.1:" + std::to_string(upstream.port()) +
                           "\nstore: \"memory:\"\nadmin:\n  listen: 127.0.0.1:" + std::to_string(admin) +
                           "\n";
  const std::string orders = "routes:\n  - name: orders\n    match: {method: POST, path: /orders}\n";
  write_file(file, head + orders);
  Process idem({IDEM_BIN, "serve", "--config", file}, log);
  ASSERT_TRUE(wait_healthy(admin, 5000));

  KeepAlive conn(port);
  EXPECT_EQ(conn.post("/orders", "k1").result_int(), 201u);
  EXPECT_EQ(header(conn.post("/orders", "k1"), "Idempotent-Replayed"), "true");
  EXPECT_EQ(header(conn.post("/payments", "p1"), "Idempotent-Replayed"), "");  // no route yet
  EXPECT_EQ(header(conn.post("/payments", "p1"), "Idempotent-Replayed"), "");

  auto reloads = [&] {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = read_text(log).find("idem: reload", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  write_file(file, head + orders + "    on_duplicate: reject\n" +
                       "  - name: payments\n    match: {method: POST, path: /payments}\n");
  idem.signal(SIGHUP);
  // Waited for whole: the log is read while the gateway may still be writing the line.
  const auto logged = [&](const std::string& line) {
    return testutil::eventually([&] { return read_text(log).find(line) != std::string::npos; });
  };
  ASSERT_TRUE(logged("idem: reloaded " + file + " (2 routes)\n")) << read_text(log);
  EXPECT_EQ(reloads(), 1u) << read_text(log);
  // The same connection, the new routes.
  Response dup = conn.post("/orders", "k1");
  EXPECT_EQ(dup.result_int(), 409u);
  EXPECT_EQ(problem_type(dup), "urn:idem:problem:duplicate");
  EXPECT_EQ(conn.post("/payments", "p2").result_int(), 201u);
  EXPECT_EQ(header(conn.post("/payments", "p2"), "Idempotent-Replayed"), "true");

  // An invalid file: logged with its line and key, and the running config stays.
  write_file(file, head + orders + "    on_duplicate: sometimes\n");
  idem.signal(SIGHUP);
  ASSERT_TRUE(logged("idem: reload failed, the running config is kept: " + file +
                     ":9: routes[0].on_duplicate: expected replay, reject, got 'sometimes'\n"))
      << read_text(log);
  EXPECT_EQ(reloads(), 2u) << read_text(log);
  EXPECT_EQ(header(conn.post("/payments", "p2"), "Idempotent-Replayed"), "true");
  EXPECT_EQ(conn.post("/orders", "k1").result_int(), 409u);

  // A new listener address needs a restart: kept, and said; the routes apply.
  const unsigned short other = free_port();
  std::string moved = head + orders;
  moved.replace(moved.find(std::to_string(port)), std::to_string(port).size(), std::to_string(other));
  write_file(file, moved);
  idem.signal(SIGHUP);
  ASSERT_TRUE(logged("(1 route); kept the running listen (a restart applies them)\n")) << read_text(log);
  EXPECT_EQ(reloads(), 3u) << read_text(log);
  EXPECT_EQ(header(conn.post("/orders", "k1"), "Idempotent-Replayed"), "true");  // on_duplicate: replay again
  EXPECT_EQ(header(conn.post("/payments", "p2"), "Idempotent-Replayed"), "");    // no route again
  EXPECT_EQ(request(other, verb::get, "/").result_int(), 0u) << "nothing listens on the new address";

  const std::string metrics = request(admin, verb::get, "/metrics").body();
  EXPECT_NE(metrics.find("idem_config_reloads_total{result=\"ok\"} 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("idem_config_reloads_total{result=\"failed\"} 1"), std::string::npos) << metrics;
  idem.signal(SIGTERM);
  EXPECT_EQ(idem.wait(5000), 0);
}

// SIGTERM (docs/operations.md, "Stopping"): /readyz answers 503 at once while the admin
// listener stays up for the drain; new clients are refused; the request in flight ends.
TEST(GatewayProcess, SigtermTurnsReadyzTo503AndKeepsTheAdminListenerForTheDrain) {
  SqliteGateway g;
  ASSERT_TRUE(wait_healthy(g.admin, 5000));
  EXPECT_EQ(request(g.admin, verb::get, "/readyz").result_int(), 200u);
  Response answer;
  std::thread client([&] {
    answer = request(g.port, verb::post, "/orders",
                     {{"Idempotency-Key", "slow"}, {"X-Test-Delay-Ms", "3000"}}, "{}");
  });
  ASSERT_TRUE(testutil::eventually([&] {
    return request(g.admin, verb::get, "/metrics").body().find("\nidem_inflight 1\n") != std::string::npos;
  }));
  g.idem.signal(SIGTERM);
  ASSERT_TRUE(
      testutil::eventually([&] { return request(g.admin, verb::get, "/readyz").result_int() == 503u; }));
  // While the request is still in flight: the admin listener takes new connections.
  Response ready = request(g.admin, verb::get, "/readyz");
  EXPECT_EQ(problem_type(ready), "urn:idem:problem:shutting-down");
  EXPECT_EQ(request(g.admin, verb::get, "/healthz").result_int(), 200u);
  EXPECT_NE(request(g.admin, verb::get, "/metrics").body().find("\nidem_inflight 1\n"), std::string::npos);
  EXPECT_EQ(request(g.port, verb::post, "/orders", {{"Idempotency-Key", "late"}}, "{}").result_int(), 0u)
      << "the client listener no longer accepts";
  client.join();
  EXPECT_EQ(answer.result_int(), 201u);
  EXPECT_EQ(g.idem.wait(5000), 0);
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "record", "get", "--store", g.store, "--key-space", "default", "slow"}, &out), 0)
      << out;
  EXPECT_NE(out.find("\"state\":\"done\""), std::string::npos) << out;
}

// A second SIGTERM does not wait for the drain.
TEST(GatewayProcess, ASecondSignalStopsWithoutWaiting) {
  SqliteGateway g;
  ASSERT_TRUE(wait_healthy(g.admin, 5000));
  std::thread client([&] {
    request(g.port, verb::post, "/orders", {{"Idempotency-Key", "long"}, {"X-Test-Delay-Ms", "20000"}}, "{}");
  });
  ASSERT_TRUE(testutil::eventually([&] {
    return request(g.admin, verb::get, "/metrics").body().find("\nidem_inflight 1\n") != std::string::npos;
  }));
  g.idem.signal(SIGTERM);
  ASSERT_TRUE(
      testutil::eventually([&] { return request(g.admin, verb::get, "/readyz").result_int() == 503u; }));
  g.idem.signal(SIGINT);
  EXPECT_EQ(g.idem.wait(5000), 0) << "still draining after the second signal";
  client.join();
}

}  // namespace
}  // namespace idem::e2e
