// The Redis store behind Redis Sentinel (redis+sentinel://, docs/stores.md "Redis
// Sentinel"), and a Redis that cannot be reached (docs/stores.md, "When a store call
// fails"), on servers the tests start on ports of their own (testutil/redis_sentinel.h):
//   - the URI forms of redis+sentinel:// and the rediss schemes, and what each refuses;
//   - a refused connection fails the call at once, naming the server and the reason, not
//     after op_timeout;
//   - the master is found through the sentinels, and followed through a failover (one the
//     sentinels are asked for, and a killed master), its ROLE checked on every connection.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

#include "idem/open.h"
#include "idem/store_uri.h"
#include "stores/redis/redis_uri.h"
#include "testutil/eventually.h"
#include "testutil/redis_sentinel.h"
#include "testutil/redis_server.h"

namespace idem::testutil {
namespace {

using namespace std::chrono_literals;
using Kind = BeginOutcome::Kind;
using redis::Endpoint;

Result<std::unique_ptr<Store>> open(const std::string& uri, Duration op_timeout = 5s) {
  StoreOptions options;
  options.op_timeout = op_timeout;
  return open_store(uri, options);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

BeginArgs begin_args(const std::string& key) { return {"s", key, "fp", 60s, 60s}; }

#define REQUIRE_STARTED(group) \
  if (!(group).started()) GTEST_SKIP() << (group).why_not()

// ---- URIs (no server) ------------------------------------------------------------------------

TEST(SentinelUri, ParsesSentinelsMasterDatabaseAndCredentials) {
  auto c = redis::parse_uri(
               "redis+sentinel://alice:s3cret@10.0.0.1,10.0.0.2:26380/my%2Dmaster/2?prefix=p:&wait=1&"
               "sentinel_user=sen&sentinel_password=x%40y")
               .value();
  EXPECT_TRUE(c.sentinel);
  EXPECT_FALSE(c.cluster);
  EXPECT_FALSE(c.tls.on);
  EXPECT_EQ(c.nodes, (std::vector<Endpoint>{{"10.0.0.1", 26379}, {"10.0.0.2", 26380}}));
  EXPECT_EQ(c.master_name, "my-master");
  EXPECT_EQ(c.db, 2);
  EXPECT_EQ(c.user, "alice");
  EXPECT_EQ(c.password, "s3cret");
  EXPECT_EQ(c.sentinel_user, "sen");
  EXPECT_EQ(c.sentinel_password, "x@y");
  EXPECT_EQ(c.wait_replicas, 1);
  EXPECT_EQ(c.prefix, "p:");

  c = redis::parse_uri("rediss+sentinel://s1/m?tls_ca=/etc/ca.pem&tls_server_name=redis.internal").value();
  EXPECT_TRUE(c.sentinel);
  EXPECT_TRUE(c.tls.on);
  EXPECT_EQ(c.tls.ca_file, "/etc/ca.pem");
  EXPECT_EQ(c.tls.server_name, "redis.internal");
  EXPECT_EQ(c.db, 0);

  c = redis::parse_uri("rediss://h:6380?tls_cert=/c.pem&tls_key=/k.pem").value();
  EXPECT_TRUE(c.tls.on);
  EXPECT_FALSE(c.sentinel);
  EXPECT_EQ(c.nodes, (std::vector<Endpoint>{{"h", 6380}}));
  EXPECT_EQ(c.tls.cert_file, "/c.pem");
  EXPECT_EQ(c.tls.key_file, "/k.pem");
  EXPECT_TRUE(redis::parse_uri("rediss-cluster://a:1,b:2").value().cluster);
}

TEST(SentinelUri, MalformedUrisNameTheirFaultyPartWithoutThePassword) {
  const std::map<std::string, std::string> cases = {
      {"redis+sentinel://h:26379", "no master name"},
      {"redis+sentinel://h:26379/", "no master name"},
      {"redis+sentinel://h:26379/m/x", "database 'x'"},
      {"redis+sentinel://h:0/m", "port '0'"},
      {"redis+sentinel://:s3cret@h/m?sentinel_password=", "an empty sentinel_password"},
      {"redis://:s3cret@h?sentinel_user=u", "for redis+sentinel:// only"},
      {"redis://:s3cret@h?tls_ca=/ca.pem", "tls_* parameters need TLS"},
      {"rediss://:s3cret@h?tls_cert=/c.pem", "tls_cert and tls_key go together"},
      {"rediss://:s3cret@h?tls=1", "unknown parameter 'tls=1'"},
      {"rediss+sentinel://:s3cret@h", "no master name"},
  };
  for (const auto& [uri, part] : cases) {
    auto s = open(uri);
    ASSERT_FALSE(s.is_ok()) << uri;
    EXPECT_EQ(s.status().code(), StatusCode::invalid_argument) << uri << ": " << s.status().to_string();
    EXPECT_TRUE(contains(s.status().message(), part)) << uri << ": " << s.status().message();
    EXPECT_FALSE(contains(s.status().message(), "s3cret")) << s.status().message();
    // The same check without connecting (idem check reads a config's store URI so).
    EXPECT_EQ(check_redis_uri(uri).code(), StatusCode::invalid_argument) << uri;
  }
  EXPECT_TRUE(check_redis_uri("redis+sentinel://a,b:26380/mymaster/1?wait=1").is_ok());
  EXPECT_TRUE(check_redis_uri("rediss://h?tls_ca=/ca.pem").is_ok());
  // A sentinel password is a secret too.
  EXPECT_EQ(redact_uri("redis+sentinel://s/m?sentinel_password=hush"),
            "redis+sentinel://s/m?sentinel_password=***");
}

// ---- a server that cannot be reached (docs/stores.md, "When a store call fails") ---------

// A port where nothing listens: a server started there, then killed.
std::uint16_t closed_port() {
  RedisServer server;
  return server.port();
}

TEST(RedisRefused, OpeningAClosedPortFailsAtOnceNamingTheServerAndTheReason) {
  const std::uint16_t port = closed_port();
  const std::string where = "127.0.0.1:" + std::to_string(port);
  const auto t0 = std::chrono::steady_clock::now();
  auto s = open("redis://" + where, 10s);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::unavailable) << s.status().to_string();
  EXPECT_TRUE(contains(s.status().message(), where)) << s.status().message();
  EXPECT_TRUE(contains(s.status().message(), "refused")) << s.status().message();
  EXPECT_TRUE(contains(s.status().message(), "nothing was applied")) << s.status().message();
  EXPECT_LT(took, 2s) << "op_timeout is 10 s";
}

TEST(RedisRefused, CallsOnAStoreWhoseServerWentAwayFailAtOnce) {
  RedisServer server;
  if (!server.started()) GTEST_SKIP() << "redis-server is not installed or did not start";
  auto store = open("redis://" + server.address(), 10s);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  ASSERT_EQ((*store)->begin(begin_args("before")).value().kind, Kind::acquired);
  server.kill();
  // The first call may still find the old connection (and end outcome unknown when it
  // breaks); every call fails well before op_timeout, and once the connection is known
  // lost, with the refusal.
  Status last;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = (*store)->begin(begin_args("after-" + std::to_string(i)));
    const auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_FALSE(r.is_ok());
    EXPECT_LT(took, 2s) << i << ": " << r.status().to_string();
    last = r.status();
  }
  EXPECT_EQ(last.code(), StatusCode::unavailable) << last.to_string();
  EXPECT_TRUE(contains(last.message(), server.address())) << last.message();
  EXPECT_TRUE(contains(last.message(), "refused")) << last.message();
}

TEST(RedisRefused, SentinelsThatCannotBeReachedFailAtOnceNamingEach) {
  const std::string a = "127.0.0.1:" + std::to_string(closed_port());
  const std::string b = "127.0.0.1:" + std::to_string(closed_port());
  const auto t0 = std::chrono::steady_clock::now();
  auto s = open("redis+sentinel://" + a + "," + b + "/mymaster", 10s);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::unavailable) << s.status().to_string();
  EXPECT_TRUE(contains(s.status().message(), "no sentinel gave the address of master 'mymaster'"))
      << s.status().message();
  EXPECT_TRUE(contains(s.status().message(), a)) << s.status().message();
  EXPECT_TRUE(contains(s.status().message(), b)) << s.status().message();
  EXPECT_LT(took, 2s);
}

// ---- Sentinel ------------------------------------------------------------------------------

TEST(Sentinel, FindsTheMasterThroughTheSentinelsAndFollowsAFailover) {
  SentinelGroup group(1);
  REQUIRE_STARTED(group);
  const std::string uri = "redis+sentinel://" + group.sentinels() + "/" + SentinelGroup::kMaster;
  auto store = open(uri, 2s);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  ASSERT_EQ((*store)->begin(begin_args("before")).value().kind, Kind::acquired);
  EXPECT_NE(group.server(0).command({"DBSIZE"}), "0") << "the master holds the claim";

  // A failover the sentinels are asked for: the old master is demoted (READONLY, then ROLE
  // slave), the replica promoted; the store follows.
  ASSERT_EQ(group.sentinel(0).command({"SENTINEL", "FAILOVER", SentinelGroup::kMaster}), "OK");
  ASSERT_TRUE(group.all_name(group.announced(1), 30s)) << "the sentinels did not promote the replica";
  ASSERT_TRUE(eventually([&] { return (*store)->begin(begin_args("after")).is_ok(); }, 30s));
  // The claim from before the failover was replicated, the new one lives on the new master.
  EXPECT_EQ((*store)->begin(begin_args("before")).value().kind, Kind::in_progress);
  EXPECT_EQ((*store)->begin(begin_args("after")).value().kind, Kind::in_progress);
  EXPECT_NE(group.server(1).command({"INFO", "replication"}).find("role:master"), std::string::npos);
  const std::string on_new = group.server(1).command({"DBSIZE"});
  EXPECT_NE(on_new, "0");
}

TEST(Sentinel, AKilledMasterIsReplacedAndTheStoreFollows) {
  SentinelGroup group(1);
  REQUIRE_STARTED(group);
  auto store = open("redis+sentinel://" + group.sentinels() + "/" + SentinelGroup::kMaster + "?wait=1", 2s);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  ASSERT_EQ((*store)->begin(begin_args("before")).value().kind, Kind::acquired);
  const std::string heir = group.announced(1);
  group.server(0).kill();
  // Until the sentinels agree the master is down and promote the replica, calls fail
  // (unavailable: the master refuses connections); then they go to the new master.
  ASSERT_TRUE(group.all_name(heir, 30s)) << "the sentinels did not promote " << heir;
  // wait=1: the promoted master has no replica left, so a claim is outcome unknown
  // (docs/stores.md, "what a failover can lose"); without wait it is acquired.
  auto no_wait = open("redis+sentinel://" + group.sentinels() + "/" + SentinelGroup::kMaster, 2s);
  ASSERT_TRUE(no_wait.is_ok()) << no_wait.status().to_string();
  ASSERT_TRUE(eventually([&] { return (*no_wait)->begin(begin_args("after")).is_ok(); }, 30s));
  EXPECT_EQ((*no_wait)->begin(begin_args("before")).value().kind, Kind::in_progress)
      << "the claim acknowledged with wait=1 survived the failover";
  auto waited = (*store)->begin(begin_args("waited"));
  EXPECT_EQ(waited.status().code(), StatusCode::deadline_exceeded) << waited.status().to_string();
  EXPECT_TRUE(contains(waited.status().message(), "may be lost in a failover")) << waited.status().message();
}

TEST(Sentinel, AMasterNameNoSentinelWatchesIsNamed) {
  SentinelGroup group(0);
  REQUIRE_STARTED(group);
  const auto t0 = std::chrono::steady_clock::now();
  auto s = open("redis+sentinel://" + group.sentinels() + "/nosuchmaster", 10s);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::unavailable) << s.status().to_string();
  EXPECT_TRUE(contains(s.status().message(), "watches no master of that name")) << s.status().message();
  EXPECT_TRUE(contains(s.status().message(), "nosuchmaster")) << s.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

// Sentinels that ask for a password (requirepass in their config) get sentinel_password;
// the master gets the URI's own. Without it the sentinels' refusal is named.
TEST(Sentinel, SentinelsAndTheMasterEachGetTheirOwnPassword) {
  RedisServer master({"--requirepass", "m4ster"});
  if (!master.started()) GTEST_SKIP() << "redis-server is not installed or did not start";
  RedisServer sentinel({}, 0,
                       {.config = "sentinel monitor mymaster 127.0.0.1 " + std::to_string(master.port()) +
                                  " 1\nsentinel auth-pass mymaster m4ster\nrequirepass s3ntinel\n",
                        .sentinel = true});
  ASSERT_TRUE(sentinel.started());
  const std::string base = "redis+sentinel://:m4ster@" + sentinel.address() + "/mymaster";
  auto store = open(base + "?sentinel_password=s3ntinel");
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  EXPECT_EQ((*store)->begin(begin_args("k")).value().kind, Kind::acquired);
  auto refused = open(base);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_TRUE(contains(refused.status().message(), "NOAUTH")) << refused.status().message();
  EXPECT_FALSE(contains(refused.status().message(), "m4ster")) << refused.status().message();
}

// A sentinel whose master is in truth a replica (here: the sentinels watch a server that
// is then made a replica of another): ROLE says so, and nothing is written there.
TEST(Sentinel, AServerThatIsNotTheMasterIsNeverWrittenTo) {
  SentinelGroup group(0);
  REQUIRE_STARTED(group);
  RedisServer other;
  ASSERT_TRUE(other.started());
  // Made a replica behind the sentinels' back; they keep naming it for a while.
  ASSERT_EQ(group.server(0).command({"REPLICAOF", "127.0.0.1", std::to_string(other.port())}), "OK");
  auto s = open("redis+sentinel://" + group.sentinels() + "/" + SentinelGroup::kMaster, 1s);
  ASSERT_FALSE(s.is_ok()) << "opened on a replica";
  EXPECT_EQ(s.status().code(), StatusCode::unavailable) << s.status().to_string();
  EXPECT_TRUE(contains(s.status().message(), "ROLE is slave")) << s.status().message();
}

}  // namespace
}  // namespace idem::testutil
