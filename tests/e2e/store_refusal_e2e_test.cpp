// End to end: a store that refuses to open for a setting of its server is a configuration
// error of `idem serve` (exit 2, naming the setting and the fix), not a runtime failure
// (docs/stores.md, "Redis: eviction"); a store that refuses connections is reported at once
// (docs/stores.md, "When a store call fails").
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

#include "testutil/e2e_harness.h"
#include "testutil/redis_server.h"

namespace idem::e2e {
namespace {

TEST(GatewayProcess, ARedisThatMayEvictKeysIsAConfigurationError) {
  testutil::RedisServer redis({"--maxmemory", "3mb", "--maxmemory-policy", "allkeys-lru"});
  if (!redis.started()) GTEST_SKIP() << "redis-server is not installed or did not start";
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:9", "--listen",
                 "127.0.0.1:" + std::to_string(free_port()), "--admin",
                 "127.0.0.1:" + std::to_string(free_port()), "--store", "redis://" + redis.address()},
                &out),
            2)
      << out;
  EXPECT_NE(out.find("maxmemory-policy is allkeys-lru"), std::string::npos) << out;
  EXPECT_NE(out.find("maxmemory-policy noeviction"), std::string::npos) << out;
  EXPECT_NE(out.find("?allow_eviction=true"), std::string::npos) << out;

  // With the waiver it serves.
  const std::string dir = temp_dir();
  const unsigned short admin = free_port();
  Process idem({IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:9", "--listen",
                "127.0.0.1:" + std::to_string(free_port()), "--admin", "127.0.0.1:" + std::to_string(admin),
                "--store", "redis://" + redis.address() + "?allow_eviction=true"},
               dir + "/idem.log");
  EXPECT_TRUE(wait_healthy(admin, 5000));
  idem.signal(SIGTERM);
  EXPECT_EQ(idem.wait(10000), 0);
  remove_dir(dir);
}

// Nothing listens on the store's port: `idem serve` says so at once, naming the server and
// the reason, and serves (readiness 503) instead of waiting the store's op_timeout (5 s)
// in silence first.
TEST(GatewayProcess, AStoreThatRefusesConnectionsIsReportedAtOnce) {
  std::uint16_t closed = 0;
  {
    testutil::RedisServer gone;
    if (!gone.started()) GTEST_SKIP() << "redis-server is not installed or did not start";
    closed = gone.port();
  }
  const std::string where = "127.0.0.1:" + std::to_string(closed);
  const std::string dir = temp_dir();
  const unsigned short admin = free_port();
  const auto t0 = std::chrono::steady_clock::now();
  Process idem({IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:9", "--listen",
                "127.0.0.1:" + std::to_string(free_port()), "--admin", "127.0.0.1:" + std::to_string(admin),
                "--store", "redis://" + where},
               dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 10000)) << read_text(dir + "/idem.log");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << read_text(dir + "/idem.log");
  const std::string log = read_text(dir + "/idem.log");
  EXPECT_NE(log.find("store redis://" + where + " is not reachable"), std::string::npos) << log;
  EXPECT_NE(log.find(where + ": connect: Connection refused"), std::string::npos) << log;
  idem.signal(SIGTERM);
  EXPECT_EQ(idem.wait(10000), 0);
  remove_dir(dir);
}

}  // namespace
}  // namespace idem::e2e
