// What a Redis store refuses and what it waits for (docs/stores.md), on redis-servers the
// tests start on ports of their own (the shared servers must keep their settings):
//   - a server that may evict keys (maxmemory-policy other than noeviction) is refused at
//     open, naming the setting and the fix, unless ?allow_eviction=true; on a cluster,
//     every master is checked;
//   - ?wait=N makes claims and commits WAIT for N replicas: with the replica gone the call
//     is outcome unknown (and was applied on the master).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "idem/open.h"
#include "stores/redis/redis_uri.h"
#include "testutil/eventually.h"
#include "testutil/redis_server.h"

namespace idem::testutil {
namespace {

using namespace std::chrono_literals;
using Kind = BeginOutcome::Kind;

Result<std::unique_ptr<Store>> open(const std::string& uri, Duration op_timeout = 2s) {
  StoreOptions options;
  options.op_timeout = op_timeout;
  return open_store(uri, options);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

#define REQUIRE_STARTED(server) \
  if (!(server).started()) GTEST_SKIP() << "redis-server is not installed or did not start"

// ---- eviction ------------------------------------------------------------------------------

class EvictionPolicy : public ::testing::TestWithParam<const char*> {};

TEST_P(EvictionPolicy, IsRefusedNamingTheSettingUnlessAllowed) {
  RedisServer server({"--maxmemory", "3mb", "--maxmemory-policy", GetParam()});
  REQUIRE_STARTED(server);
  const std::string uri = "redis://" + server.address();
  auto refused = open(uri);
  ASSERT_FALSE(refused.is_ok());
  const Status& s = refused.status();
  EXPECT_EQ(s.code(), StatusCode::failed_precondition) << s.to_string();
  EXPECT_TRUE(contains(s.message(), std::string("maxmemory-policy is ") + GetParam())) << s.message();
  EXPECT_TRUE(contains(s.message(), server.address())) << s.message();
  EXPECT_TRUE(contains(s.message(), "noeviction")) << s.message();            // the fix...
  EXPECT_TRUE(contains(s.message(), "?allow_eviction=true")) << s.message();  // ...or the waiver

  auto allowed = open(uri + "?allow_eviction=true");
  ASSERT_TRUE(allowed.is_ok()) << allowed.status().to_string();
  EXPECT_EQ((*allowed)->begin({"s", "k", "", 60s, 60s}).value().kind, Kind::acquired);
  EXPECT_TRUE(open(uri + "?allow_eviction=false").status().code() == StatusCode::failed_precondition);

  // Fixed on the server: opens.
  server.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  auto fixed = open(uri);
  EXPECT_TRUE(fixed.is_ok()) << fixed.status().to_string();
}

INSTANTIATE_TEST_SUITE_P(Policies, EvictionPolicy, ::testing::Values("allkeys-lru", "volatile-lru"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// A cluster of two masters: the second may evict, and is named.
TEST(EvictionPolicy, EveryMasterOfAClusterIsChecked) {
  const std::vector<std::string> cluster = {"--cluster-enabled", "yes", "--cluster-config-file",
                                            "nodes.conf"};
  RedisServer a(cluster);
  auto with_policy = cluster;
  with_policy.insert(with_policy.end(), {"--maxmemory", "3mb", "--maxmemory-policy", "allkeys-lru"});
  RedisServer b(with_policy);
  REQUIRE_STARTED(a);
  REQUIRE_STARTED(b);
  a.command({"CLUSTER", "ADDSLOTSRANGE", "0", "8191"});
  b.command({"CLUSTER", "ADDSLOTSRANGE", "8192", "16383"});
  a.command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(b.port())});
  ASSERT_TRUE(eventually([&] {
    return contains(a.command({"CLUSTER", "INFO"}), "cluster_state:ok") &&
           contains(b.command({"CLUSTER", "INFO"}), "cluster_state:ok");
  }));
  // Seeded with the node that does not evict: the other is found and checked.
  const std::string uri = "redis-cluster://" + a.address();
  auto refused = open(uri);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::failed_precondition) << refused.status().to_string();
  EXPECT_TRUE(contains(refused.status().message(), "master " + b.address())) << refused.status().message();
  EXPECT_TRUE(contains(refused.status().message(), "allkeys-lru")) << refused.status().message();
  auto allowed = open(uri + "?allow_eviction=true");
  EXPECT_TRUE(allowed.is_ok()) << allowed.status().to_string();
  b.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  auto fixed = open(uri);
  EXPECT_TRUE(fixed.is_ok()) << fixed.status().to_string();
}

// ---- URI parameters --------------------------------------------------------------------------

TEST(RedisSafetyUri, ParametersAreParsedAndBadValuesNamed) {
  auto c = redis::parse_uri("redis://h:1?prefix=p:&allow_eviction=true&wait=2");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_TRUE(c->allow_eviction);
  EXPECT_EQ(c->wait_replicas, 2);
  EXPECT_EQ(c->prefix, "p:");
  auto d = redis::parse_uri("redis-cluster://h:1,h:2?wait=1");
  ASSERT_TRUE(d.is_ok());
  EXPECT_FALSE(d->allow_eviction);
  EXPECT_EQ(d->wait_replicas, 1);
  for (const auto& [uri, named] : std::vector<std::pair<std::string, std::string>>{
           {"redis://h?wait=", "wait=''"},
           {"redis://h?wait=x", "wait='x'"},
           {"redis://h?wait=-1", "wait='-1'"},
           {"redis://h?wait=1.5", "wait='1.5'"},
           {"redis://h?wait=1001", "wait='1001'"},
           {"redis-cluster://h?wait=two", "wait='two'"},
           {"redis://h?allow_eviction=yes", "allow_eviction='yes'"},
           {"redis://h?allow_eviction", "allow_eviction"},
       }) {
    auto bad = redis::parse_uri(uri);
    ASSERT_FALSE(bad.is_ok()) << uri;
    EXPECT_EQ(bad.status().code(), StatusCode::invalid_argument);
    EXPECT_TRUE(contains(bad.status().message(), named)) << bad.status().message();
  }
  EXPECT_EQ(open_store("redis://127.0.0.1:1?wait=x").status().code(), StatusCode::invalid_argument);
}

// ---- wait=N ----------------------------------------------------------------------------------

struct Replicated {
  RedisServer master;
  RedisServer replica;
  bool ready = false;

  Replicated() : replica({"--replicaof", "127.0.0.1", std::to_string(master.port())}) {
    if (!master.started() || !replica.started()) return;
    ready = eventually([&] {
      return contains(master.command({"INFO", "replication"}), "connected_slaves:1") &&
             contains(replica.command({"INFO", "replication"}), "master_link_status:up");
    });
  }
};

TEST(RedisWait, ClaimsAndCommitsWaitForTheirReplicas) {
  Replicated r;
  if (!r.master.started()) GTEST_SKIP() << "redis-server is not installed";
  ASSERT_TRUE(r.ready) << "the replica did not connect";
  auto store = open("redis://" + r.master.address() + "?wait=1", 2s);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto& s = **store;

  auto claim = s.begin({"s", "k", "fp", 60s, 60s});
  ASSERT_TRUE(claim.is_ok()) << claim.status().to_string();
  ASSERT_EQ(claim->kind, Kind::acquired);
  auto done = s.commit({"s", "k", claim->fence, "result", 60s});
  ASSERT_TRUE(done.is_ok()) << done.status().to_string();
  EXPECT_EQ(*done, CommitOutcome::committed);
  // Acknowledged: the replica has it.
  EXPECT_TRUE(eventually([&] { return r.replica.command({"DBSIZE"}) != "0"; }));
  // Calls that write nothing do not wait (a replay, an in-progress answer).
  EXPECT_EQ(s.begin({"s", "k", "fp", 60s, 60s}).value().kind, Kind::replay);

  // More replicas than there are: outcome unknown, though the master has the claim.
  auto too_many = open("redis://" + r.master.address() + "?wait=2", 500ms);
  ASSERT_TRUE(too_many.is_ok());
  auto unknown = (*too_many)->begin({"s", "k2", "fp", 60s, 60s});
  EXPECT_EQ(unknown.status().code(), StatusCode::deadline_exceeded) << unknown.status().to_string();
  EXPECT_TRUE(contains(unknown.status().message(), "1 of 2 replicas")) << unknown.status().message();

  // The replica stops: claims and commits are outcome unknown, and were applied on the master.
  const Fence k3 = s.begin({"s", "k3", "fp", 60s, 60s}).value().fence;
  r.replica.kill();
  ASSERT_TRUE(eventually([&] {
    return contains(r.master.command({"INFO", "replication"}), "connected_slaves:0");
  }));
  auto claim_unknown = s.begin({"s", "k4", "fp", 60s, 60s});
  EXPECT_EQ(claim_unknown.status().code(), StatusCode::deadline_exceeded)
      << claim_unknown.status().to_string();
  EXPECT_TRUE(contains(claim_unknown.status().message(), "outcome is unknown"))
      << claim_unknown.status().message();
  auto commit_unknown = s.commit({"s", "k3", k3, "late", 60s});
  EXPECT_EQ(commit_unknown.status().code(), StatusCode::deadline_exceeded)
      << commit_unknown.status().to_string();

  auto plain = open("redis://" + r.master.address());
  ASSERT_TRUE(plain.is_ok());
  auto k4 = (*plain)->get({"s", "k4"}).value();
  ASSERT_TRUE(k4.has_value());
  EXPECT_EQ(k4->state, RecordState::pending);
  auto k3_record = (*plain)->get({"s", "k3"}).value();
  ASSERT_TRUE(k3_record.has_value());
  EXPECT_EQ(k3_record->state, RecordState::done);
  // Calls that need no replica still answer at once.
  EXPECT_TRUE(s.get({"s", "k"}).is_ok());
  EXPECT_TRUE(s.release({"s", "k4", k4->fence}).is_ok());
}

// On a cluster too: WAIT goes to the master that wrote. A one-node cluster has no replica,
// so wait=1 is outcome unknown and wait=0 is not waited for.
TEST(RedisWait, ClusterMastersWaitToo) {
  RedisServer node({"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"});
  REQUIRE_STARTED(node);
  node.command({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
  ASSERT_TRUE(eventually([&] { return contains(node.command({"CLUSTER", "INFO"}), "cluster_state:ok"); }));
  auto waiting = open("redis-cluster://" + node.address() + "?wait=1", 500ms);
  ASSERT_TRUE(waiting.is_ok()) << waiting.status().to_string();
  auto unknown = (*waiting)->begin({"s", "k", "fp", 60s, 60s});
  EXPECT_EQ(unknown.status().code(), StatusCode::deadline_exceeded) << unknown.status().to_string();
  EXPECT_TRUE(contains(unknown.status().message(), "0 of 1 replicas")) << unknown.status().message();
  auto plain = open("redis-cluster://" + node.address() + "?wait=0");
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ((*plain)->begin({"s", "k", "fp", 60s, 60s}).value().kind, Kind::in_progress);  // it was applied
}

}  // namespace
}  // namespace idem::testutil
