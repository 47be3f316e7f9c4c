// Store outages as a client of `idem serve` sees them (issue 11): the idem binary in front of
// the test upstream, its store a real Redis, PostgreSQL or Redis Cluster that the test starts
// on ports of its own and then breaks for real.
//
//   - GhostClaim: a fault proxy (tests/testutil/fault_proxy.h) forwards one request's begin
//     and loses its reply, so the claim exists although the gateway never learnt it. The
//     gateway answers 503 and gives the claim back by its owner once the store answers
//     again (docs/gateway.md, "When the store fails"): the client's retry runs once, and is
//     never held as in progress for the ghost's lease nor found outcome-uncertain.
//   - LostCommit: the commit after the upstream answered finds the store unreachable; the
//     gateway retries it once the store answers, and the repeat is replayed.
//   - A PostgreSQL restart and a Redis Cluster master failover (kill -9) under load: no key
//     runs twice, every answer is definitive or 503 store-unavailable within the client's
//     deadline, lost claims are given back, and protection resumes.
//
// The route's lease is 60 s, longer than the test, so a claim left behind shows as a key
// that stays pending; every wait for the gateway's background work polls the record.
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "e2e/outage_load.h"
#include "e2e/outage_rig.h"
#include "idem/open.h"
#include "testutil/eventually.h"
#include "testutil/fault_proxy.h"
#include "testutil/redis_server.h"

namespace idem::e2e {
namespace {

using Clock = OutageClock;
using namespace std::chrono_literals;
using testutil::eventually;
using testutil::FaultProxy;

// ---- case 1: a begin whose reply is lost ---------------------------------------------------

// Where the begin's reply is lost: the proxy holds it until the gateway's store deadline
// passes, or holds it and then cuts every connection (and refuses new ones until restored).
enum class Loss { held_past_deadline, cut };

struct GhostCase {
  std::string name;
  bool postgres;
  Loss loss;
  friend std::ostream& operator<<(std::ostream& os, const GhostCase& c) { return os << c.name; }
};

class GhostClaim : public ::testing::TestWithParam<GhostCase> {
 protected:
  void SetUp() override {
    if (GetParam().postgres) {
      pg_ = std::make_unique<PostgresServer>();
      if (!pg_->started()) GTEST_SKIP() << pg_->why_not();
      proxy_ = std::make_unique<FaultProxy>("127.0.0.1", pg_->port());
      direct_uri_ = pg_->uri();
      gateway_uri_ = "postgres://postgres@" + proxy_->address() + "/postgres";
    } else {
      redis_ = std::make_unique<testutil::RedisServer>();
      if (!redis_->started()) GTEST_SKIP() << "redis-server is not installed or did not start";
      proxy_ = std::make_unique<FaultProxy>("127.0.0.1", redis_->port());
      direct_uri_ = "redis://" + redis_->address();
      gateway_uri_ = "redis://" + proxy_->address();
    }
    auto direct = open_store(direct_uri_);
    ASSERT_TRUE(direct.is_ok()) << direct.status().to_string();
    direct_ = std::move(*direct);
    gateway_ = std::make_unique<Gateway>(dir_, gateway_uri_);
    ASSERT_TRUE(gateway_->started()) << "idem did not start; see " << dir_ << "/idem.log";
  }
  void TearDown() override {
    gateway_.reset();
    direct_.reset();
    proxy_.reset();
    remove_dir(dir_);
  }

  // The record of `key` on route orders, read from the server itself (not through the proxy).
  std::string state_in_store(const std::string& key) {
    auto r = direct_->get({"", "orders:" + key});
    if (!r.is_ok()) return "error " + r.status().to_string();
    if (!r->has_value()) return "absent";
    return (*r)->state == RecordState::pending ? "pending" : "done";
  }

  std::string dir_ = temp_dir();
  std::unique_ptr<PostgresServer> pg_;
  std::unique_ptr<testutil::RedisServer> redis_;
  std::unique_ptr<FaultProxy> proxy_;
  std::string direct_uri_, gateway_uri_;
  std::unique_ptr<Store> direct_;
  std::unique_ptr<Gateway> gateway_;
};

TEST_P(GhostClaim, IsGivenBackSoTheRetryRunsOnceAndIsNeverHeldOrUncertain) {
  const Gateway& g = *gateway_;
  // Connected, and the store's scripts and tables in place, before the fault.
  const std::string warm = unique_key("warm");
  ASSERT_EQ(g.post(warm).result_int(), 201u);

  const std::string key = unique_key("ghost");
  const auto before = proxy_->counters();
  proxy_->drop_replies();
  auto first = std::async(std::launch::async, [&] { return g.post(key); });
  // The begin reached the server, which ran it: the key is claimed, the answer lost.
  ASSERT_TRUE(proxy_->wait_for(
      [&](const FaultProxy::Counters& c) { return c.replies_dropped > before.replies_dropped; }));
  ASSERT_TRUE(eventually([&] { return state_in_store(key) == "pending"; }, 10s))
      << "the begin did not claim the key: " << state_in_store(key);
  if (GetParam().loss == Loss::cut) {
    // Nothing reaches the store from now on: the gateway cannot give the claim back yet.
    proxy_->refuse();
    proxy_->cut_all();
  }
  const auto t0 = Clock::now();
  Response lost = first.get();
  EXPECT_EQ(lost.result_int(), 503u) << lost.body();
  EXPECT_EQ(problem_type(lost), "urn:idem:problem:store-unavailable");
  EXPECT_FALSE(header(lost, "Retry-After").empty());
  if (GetParam().loss == Loss::cut) {
    EXPECT_LT(Clock::now() - t0, 3s) << "a lost connection is an unknown outcome at once";
    EXPECT_EQ(state_in_store(key), "pending") << "the claim went away while the store was unreachable";
  }

  // The store answers again: the gateway gives the claim back, in the background.
  proxy_->cut_all();
  proxy_->forward();
  const auto restored = Clock::now();
  ASSERT_TRUE(eventually([&] { return g.record_state(key) == "absent"; }, 30s))
      << "the lost claim was not given back: the record is " << g.record_state(key);
  std::printf("claim given back %lld ms after the store was reachable again\n",
              millis(Clock::now() - restored));

  // The client's retry runs the request, once; its repeat is replayed.
  Response retry = g.post(key);
  EXPECT_EQ(retry.result_int(), 201u) << retry.body();
  EXPECT_NE(problem_type(retry), "urn:idem:problem:outcome-uncertain");
  EXPECT_FALSE(replayed(retry));
  EXPECT_EQ(execution_of(retry), 1) << retry.body();
  Response again = g.post(key);
  EXPECT_EQ(again.result_int(), 201u) << again.body();
  EXPECT_TRUE(replayed(again));
  EXPECT_EQ(again.body(), retry.body());
  const auto runs = g.executions();
  EXPECT_EQ(runs.count(key) ? runs.at(key) : 0, 1);
  EXPECT_EQ(runs.count(warm) ? runs.at(warm) : 0, 1);
}

INSTANTIATE_TEST_SUITE_P(Stores, GhostClaim,
                         ::testing::Values(GhostCase{"redis_reply_held", false, Loss::held_past_deadline},
                                           GhostCase{"redis_reply_cut", false, Loss::cut},
                                           GhostCase{"postgres_reply_held", true, Loss::held_past_deadline},
                                           GhostCase{"postgres_reply_cut", true, Loss::cut}),
                         [](const auto& p) { return p.param.name; });

// The same rig, the other end of the claim: the upstream has answered and the gateway's
// commit finds the store unreachable (nothing applied: a retry is safe, docs/stores.md).
// The client gets the upstream's response; once the store is back, the commit is retried
// (docs/gateway.md, "When the store fails") and the repeat gets that response again, not
// 409 in-progress for the rest of the lease and then 409 outcome-uncertain.
class LostCommit : public GhostClaim {};

TEST_P(LostCommit, IsRetriedOnceTheStoreAnswersSoTheRepeatIsReplayed) {
  const Gateway& g = *gateway_;
  ASSERT_EQ(g.post(unique_key("warm")).result_int(), 201u);
  const std::string key = unique_key("commit");
  auto first = std::async(std::launch::async, [&] { return g.post(key, {{"X-Test-Delay-Ms", "1000"}}); });
  // The upstream runs it (it counts before it waits): the claim is taken, the commit to come.
  ASSERT_TRUE(eventually([&] { return g.executions()[key] == 1; }, 10s));
  proxy_->refuse();
  proxy_->cut_all();
  Response ran = first.get();
  EXPECT_EQ(ran.result_int(), 201u) << ran.body();
  EXPECT_EQ(execution_of(ran), 1);
  EXPECT_EQ(state_in_store(key), "pending");

  proxy_->forward();
  EXPECT_TRUE(eventually([&] { return g.record_state(key) == "done"; }, 30s))
      << "the failed commit was not retried: the record is " << g.record_state(key);
  Response repeat = g.post(key);
  EXPECT_EQ(repeat.result_int(), 201u) << repeat.body();
  EXPECT_TRUE(replayed(repeat));
  EXPECT_EQ(repeat.body(), ran.body());
  EXPECT_EQ(g.executions()[key], 1);
}

INSTANTIATE_TEST_SUITE_P(Stores, LostCommit,
                         ::testing::Values(GhostCase{"redis", false, Loss::cut},
                                           GhostCase{"postgres", true, Loss::cut}),
                         [](const auto& p) { return p.param.name; });

// ---- a known answer is never lost (docs/gateway.md, "When the store fails") ----------------

// A Redis of the test's own made read-only (a replica of an address where nothing listens):
// every write fails and nothing is lost, as when a managed Redis fails over or runs out of
// memory.
class ReadOnlyRedis : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    redis_ = std::make_unique<testutil::RedisServer>();
    if (!redis_->started()) GTEST_SKIP() << "redis-server is not installed or did not start";
  }
  void TearDown() override {
    gateway_.reset();
    remove_dir(dir_);
  }
  void start(const std::string& config) {
    gateway_ = std::make_unique<Gateway>(dir_, "redis://" + redis_->address(), config);
    ASSERT_TRUE(gateway_->started()) << "idem did not start; see " << dir_ << "/idem.log";
  }
  void read_only() {
    ASSERT_TRUE(contains(redis_cli(redis_->port(), {"REPLICAOF", "127.0.0.1", "1"}), "OK"));
  }
  void writable() { ASSERT_TRUE(contains(redis_cli(redis_->port(), {"REPLICAOF", "NO", "ONE"}), "OK")); }

  std::string dir_ = temp_dir();
  std::unique_ptr<testutil::RedisServer> redis_;
  std::unique_ptr<Gateway> gateway_;
};

// The upstream answers 201 while the store is read-only, for four times the 1 s lease: the
// commit cannot land and the lease is not renewed. When the store is writable again the
// client's retry reaches the gateway before the commit's next try. The gateway holds the
// answer, so the retry is replayed it: never run again (`retry`), never 409
// outcome-uncertain (`hold`), and the record ends holding the first answer.
TEST_P(ReadOnlyRedis, AnOutageLongerThanTheLeaseLosesNoAnswerAndRunsNothingTwice) {
  start("defaults:\n  lease: 1s\n  wait: 2s\n  upstream_timeout: 5s\n  on_uncertain: " + GetParam() +
        "\nroutes:\n  - name: orders\n    match: { method: POST, path: /orders }\n");
  const Gateway& g = *gateway_;
  ASSERT_EQ(g.post(unique_key("warm")).result_int(), 201u);
  const std::string key = unique_key("outage");
  auto first = std::async(std::launch::async, [&] { return g.post(key, {{"X-Test-Delay-Ms", "500"}}); });
  ASSERT_TRUE(eventually([&] { return g.executions()[key] == 1; }, 10s));
  read_only();
  Response ran = first.get();
  ASSERT_EQ(ran.result_int(), 201u) << ran.body();
  std::this_thread::sleep_for(4s);  // the outage outlasting the lease is the subject
  writable();

  Response retry = g.post(key);
  EXPECT_EQ(retry.result_int(), 201u) << retry.body();
  EXPECT_TRUE(replayed(retry));
  EXPECT_EQ(retry.body(), ran.body());
  EXPECT_EQ(g.executions()[key], 1) << "the request ran twice";
  EXPECT_TRUE(eventually([&] { return g.record_state(key) == "done"; }, 20s)) << g.record_state(key);
  Response later = g.post(key);
  EXPECT_EQ(later.result_int(), 201u) << later.body();
  EXPECT_EQ(later.body(), ran.body());
  EXPECT_EQ(g.executions()[key], 1);
}

// A token route whose service answered 503 while the store could not take the release: the
// release is retried with the token's re-arming, so the user's resubmission with the same
// token runs (nothing ran the first time), not 400 token-invalid.
TEST_P(ReadOnlyRedis, AReleaseRetriedAfterAnOutageReArmsTheToken) {
  start("defaults:\n  wait: 2s\n  upstream_timeout: 5s\n  on_uncertain: " + GetParam() +
        "\nroutes:\n  - name: forms\n    match: { method: POST, path: /forms }\n    key: token\n");
  const Gateway& g = *gateway_;
  Response issued = request(g.port(), verb::post, "/_idem/tokens", {}, "");
  ASSERT_EQ(issued.result_int(), 201u) << issued.body();
  const std::string token(body_json(issued).at("token").as_string());
  auto first = std::async(std::launch::async, [&] {
    return g.post_to("/forms", "form",
                     {{"Idempotency-Token", token}, {"X-Test-Status", "503"}, {"X-Test-Delay-Ms", "500"}});
  });
  ASSERT_TRUE(eventually([&] { return g.upstream_requests() == 1; }, 10s));
  read_only();
  EXPECT_EQ(first.get().result_int(), 503u);
  std::this_thread::sleep_for(1s);  // a few failed retries of the release
  writable();
  Response again = g.post_to("/forms", "form", {{"Idempotency-Token", token}});
  EXPECT_EQ(again.result_int(), 201u) << again.body();
  EXPECT_EQ(g.upstream_requests(), 2u);
}

INSTANTIATE_TEST_SUITE_P(OnUncertain, ReadOnlyRedis, ::testing::Values("hold", "retry"),
                         [](const auto& p) { return p.param; });

// Two gateways on one Redis; gateway A reaches it through a proxy that the test cuts. A's
// upstream answers 201 but A's commit (and every renewal) cannot land for longer than the
// lease, so the client's retry at gateway B takes the claim over: under hold B answers 409
// outcome-uncertain and marks the record with the fence A's request carried (not its own).
// When A reaches the store again, its commit replaces that mark: the repeats at B are
// replayed A's answer, and nothing ran twice.
TEST(TwoGateways, ATakeoverMarksTheFenceTheServiceSawAndTheLateCommitRecoversTheAnswer) {
  testutil::RedisServer redis;
  if (!redis.started()) GTEST_SKIP() << "redis-server is not installed or did not start";
  FaultProxy proxy("127.0.0.1", redis.port());
  const std::string dir_a = temp_dir(), dir_b = temp_dir();
  {
    const std::string config =
        "defaults:\n  lease: 1s\n  wait: 0s\n  upstream_timeout: 5s\nroutes:\n  - name: orders\n"
        "    match: { method: POST, path: /orders }\n";
    Gateway a(dir_a, "redis://" + proxy.address(), config);
    Gateway b(dir_b, "redis://" + redis.address(), config);
    ASSERT_TRUE(a.started() && b.started()) << "see " << dir_a << " and " << dir_b;
    ASSERT_EQ(a.post(unique_key("warm")).result_int(), 201u);
    const std::string key = unique_key("takeover");
    auto first = std::async(std::launch::async, [&] { return a.post(key, {{"X-Test-Delay-Ms", "500"}}); });
    ASSERT_TRUE(eventually([&] { return a.executions()[key] == 1; }, 10s));
    proxy.refuse();
    proxy.cut_all();
    Response ran = first.get();
    ASSERT_EQ(ran.result_int(), 201u) << ran.body();
    const auto service_fence = std::stoull(std::string(body_json(ran).at("fence").as_string()));
    std::this_thread::sleep_for(2500ms);  // past A's lease, which it cannot renew: the subject

    Response uncertain = b.post(key);
    EXPECT_EQ(uncertain.result_int(), 409u) << uncertain.body();
    EXPECT_EQ(problem_type(uncertain), "urn:idem:problem:outcome-uncertain");
    const json::value rec = b.record(key);
    ASSERT_TRUE(rec.is_object()) << "no record";
    ASSERT_TRUE(rec.as_object().contains("uncertain")) << json::serialize(rec);
    const auto& mark = rec.at("uncertain").as_object();
    EXPECT_EQ(mark.at("fence").to_number<std::uint64_t>(), service_fence)
        << "the mark names the fence the service received: " << json::serialize(rec);
    EXPECT_NE(rec.at("fence").to_number<std::uint64_t>(), service_fence)
        << "the record's own is the takeover's";
    EXPECT_FALSE(std::string(mark.at("instance").as_string()).empty());

    proxy.forward();  // A's pending commit lands and replaces the mark
    Response recovered;
    EXPECT_TRUE(eventually(
        [&] {
          recovered = b.post(key);
          return recovered.result_int() == 201u;
        },
        20s))
        << recovered.body();
    EXPECT_TRUE(replayed(recovered));
    EXPECT_EQ(recovered.body(), ran.body());
    EXPECT_EQ(a.executions()[key] + b.executions()[key], 1) << "the request ran twice";
  }
  remove_dir(dir_a);
  remove_dir(dir_b);
}

// ---- a failover to a standby (docs/stores.md, "PostgreSQL and MySQL behind a failover") -----

// The primary acknowledges a claim its asynchronous standby never received; the primary
// fails and the standby is promoted: the claim is gone, and the retry acquires the key as if
// nothing had run (the work would run twice), as a Redis failover without ?wait loses it.
// With the standby named in synchronous_standby_names, the same claim is never acknowledged
// while the standby cannot take it: its begin ends outcome unknown, and nothing runs.
TEST(StandbyFailover, AnAsynchronousStandbyLosesAnAcknowledgedClaimASynchronousOneNeverAcknowledgesIt) {
  for (const bool synchronous : {false, true}) {
    SCOPED_TRACE(synchronous ? "synchronous standby" : "asynchronous standby");
    PostgresServer primary(synchronous ? "synchronous_standby_names = 'standby'\nsynchronous_commit = on"
                                       : "");
    if (!primary.started()) GTEST_SKIP() << primary.why_not();
    auto standby = PostgresServer::standby_of(primary);
    ASSERT_TRUE(standby->started()) << standby->why_not();
    {
      auto store = open_store(primary.uri());  // its tables reach the standby too
      ASSERT_TRUE(store.is_ok()) << store.status().to_string();
      ASSERT_TRUE((*store)->begin(BeginArgs{"", "warm", "", 60s, 1h, "o"}).is_ok());
      const std::string lsn = primary.query("SELECT pg_current_wal_lsn()");
      ASSERT_FALSE(lsn.empty());
      ASSERT_TRUE(eventually(
          [&] { return standby->query("SELECT pg_last_wal_replay_lsn() >= $$" + lsn + "$$::pg_lsn") == "t"; },
          30s))
          << "the standby did not catch up to " << lsn << ": "
          << standby->query(
                 "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn(), pg_last_wal_receive_lsn()");
      ASSERT_TRUE(standby->stop());  // from here on it receives nothing
      auto claim = (*store)->begin(BeginArgs{"", "k", "", 60s, 1h, "first"});
      if (synchronous) {
        ASSERT_FALSE(claim.is_ok()) << "acknowledged without the synchronous standby";
        EXPECT_EQ(claim.status().code(), StatusCode::deadline_exceeded) << claim.status().to_string();
      } else {
        ASSERT_TRUE(claim.is_ok()) << claim.status().to_string();
        ASSERT_EQ(claim->kind, BeginOutcome::Kind::acquired)
            << "the claim is acknowledged: the work would run";
      }
    }
    ASSERT_TRUE(primary.crash());
    ASSERT_TRUE(standby->start());
    ASSERT_TRUE(standby->promote());
    auto promoted = open_store(standby->uri());
    ASSERT_TRUE(promoted.is_ok()) << promoted.status().to_string();
    auto retry = (*promoted)->begin(BeginArgs{"", "k", "", 60s, 1h, "second"});
    ASSERT_TRUE(retry.is_ok()) << retry.status().to_string();
    // Either way the new primary has no claim: after the asynchronous failover that is a lost
    // acknowledged claim (a second execution); after the synchronous one nothing ever ran.
    EXPECT_EQ(retry->kind, BeginOutcome::Kind::acquired);
    EXPECT_FALSE(retry->recovered);
  }
}

// `mode: lock` with a service slower than upstream_timeout: the first request is answered
// 504, but the service still works on it, so the lock runs out on its lease; a second
// request meanwhile is refused 409 locked instead of running alongside (docs/gateway.md).
TEST(LockMode, AnUnansweredRequestKeepsTheLockUntilItsLease) {
  const std::string dir = temp_dir();
  {
    Gateway g(dir, "memory:",
              "defaults:\n  lease: 3s\n  upstream_timeout: 500ms\nroutes:\n  - name: stock\n"
              "    match: { method: POST, path: '/skus/{sku}/deduct' }\n    key: 'stock:{path.sku}'\n"
              "    mode: lock\n");
    ASSERT_TRUE(g.started()) << "see " << dir << "/idem.log";
    Response slow = g.post_to("/skus/A-1/deduct", "a", {{"X-Test-Delay-Ms", "2000"}});
    EXPECT_EQ(slow.result_int(), 504u) << slow.body();
    Response second = g.post_to("/skus/A-1/deduct", "b");
    EXPECT_EQ(second.result_int(), 409u) << second.body();
    EXPECT_EQ(problem_type(second), "urn:idem:problem:locked");
    EXPECT_EQ(g.upstream_requests(), 1u) << "the second ran while the first still worked";
    // Once the lease has run out the lock is free again.
    EXPECT_TRUE(eventually([&] { return g.post_to("/skus/A-1/deduct", "c").result_int() == 201u; }, 10s));
    // A service that answers opens the lock at once.
    EXPECT_EQ(g.post_to("/skus/B-2/deduct", "d").result_int(), 201u);
    EXPECT_EQ(g.post_to("/skus/B-2/deduct", "e").result_int(), 201u);
  }
  remove_dir(dir);
}

// ---- cases 2 and 3: the store fails under load ---------------------------------------------

// A Redis Cluster of the test's own.
// A free loopback port whose cluster bus port (+10000) is free too.
unsigned short free_cluster_port() {
  for (;;) {
    const unsigned short port = free_port();
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    at.sin_port = htons(static_cast<std::uint16_t>(port + 10000));
    const bool free = ::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) == 0;
    ::close(fd);
    if (free) return port;
  }
}

// One redis-server of a cluster, in a directory of its own; SIGKILLed with the object.
class ClusterNode {
 public:
  explicit ClusterNode(const std::string& parent) : dir_(parent + "/" + std::to_string(port_)) {
    std::filesystem::create_directories(dir_);
    process_ = std::make_unique<Process>(
        std::vector<std::string>{kRedisServer, "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                 "--dir", dir_, "--save", "", "--appendonly", "no", "--cluster-enabled",
                                 "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout",
                                 "1000"},
        dir_ + "/redis.log");
    up_ = eventually([&] { return contains(cli({"PING"}), "PONG"); }, 10s);
  }

  bool up() const { return up_; }
  unsigned short port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string cli(std::vector<std::string> args) const { return redis_cli(port_, std::move(args)); }
  bool is_master() const { return cli({"ROLE"}).starts_with("master"); }
  void kill() {
    process_.reset();
    up_ = false;
  }

 private:
  unsigned short port_ = free_cluster_port();
  std::string dir_;
  std::unique_ptr<Process> process_;
  bool up_ = false;
};

// 3 masters with one replica each, node timeout 1 s (a failover takes seconds).
class RedisCluster {
 public:
  explicit RedisCluster(const std::string& dir) : dir_(dir) {
    if (::access(kRedisServer, X_OK) != 0 || ::access(kRedisCli, X_OK) != 0) {
      why_ = "redis-server or redis-cli is not installed";
      return;
    }
    std::vector<std::string> create{kRedisCli, "--cluster", "create"};
    for (int i = 0; i < 6; ++i) {
      nodes_.push_back(std::make_unique<ClusterNode>(dir_));
      if (!nodes_.back()->up()) {
        why_ = "a redis-server did not start";
        return;
      }
      create.push_back(nodes_.back()->address());
    }
    create.insert(create.end(), {"--cluster-replicas", "1", "--cluster-yes"});
    std::string out;
    if (run(create, &out) != 0) {
      why_ = "redis-cli --cluster create failed: " + out;
      return;
    }
    if (!healthy(30s)) {
      why_ = "the cluster did not reach cluster_state:ok with every replica in sync";
      return;
    }
    started_ = true;
  }

  bool started() const { return started_; }
  const std::string& why_not() const { return why_; }

  std::string seeds() const {
    std::string s;
    for (const auto& n : nodes_) s += (s.empty() ? "" : ",") + n->address();
    return s;
  }

  // Every live node says cluster_state:ok and every live replica's link to its master is up.
  bool healthy(std::chrono::seconds limit) const {
    return eventually(
        [&] {
          for (const auto& n : nodes_) {
            if (!n->up()) continue;
            if (!contains(n->cli({"CLUSTER", "INFO"}), "cluster_state:ok")) return false;
            const std::string repl = n->cli({"INFO", "replication"});
            if (contains(repl, "role:slave") && !contains(repl, "master_link_status:up")) return false;
          }
          return true;
        },
        limit);
  }

  ClusterNode* master() const {
    for (const auto& n : nodes_)
      if (n->up() && n->is_master()) return n.get();
    return nullptr;
  }

  // The replica of `master` (by the port its INFO replication names).
  ClusterNode* replica_of(const ClusterNode& master) const {
    for (const auto& n : nodes_)
      if (n->up() && n.get() != &master &&
          contains(n->cli({"INFO", "replication"}), "master_port:" + std::to_string(master.port()) + "\r"))
        return n.get();
    return nullptr;
  }

  // A fresh node joins as the replica of `master` and syncs, so that ?wait=1 can be met
  // on its slots again (an operator replacing the failed node).
  bool add_replica(const ClusterNode& master, std::string* out) {
    nodes_.push_back(std::make_unique<ClusterNode>(dir_));
    ClusterNode& fresh = *nodes_.back();
    if (!fresh.up()) return false;
    std::string id = master.cli({"CLUSTER", "MYID"});
    id.erase(id.find_last_not_of(" \n") + 1);
    if (run({kRedisCli, "--cluster", "add-node", fresh.address(), master.address(), "--cluster-slave",
             "--cluster-master-id", id},
            out) != 0)
      return false;
    return eventually(
               [&] {
                 return contains(master.cli({"INFO", "replication"}), "state=online");
               },
               30s) &&
           healthy(30s);
  }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<ClusterNode>> nodes_;
  std::string why_;
  bool started_ = false;
};

TEST(PostgresRestart, UnderLoadNothingRunsTwiceEveryAnswerIsDefinitiveOr503AndProtectionResumes) {
  PostgresServer pg;
  if (!pg.started()) GTEST_SKIP() << pg.why_not();
  const testutil::TempDir dir;
  Gateway g(dir.path().string(), pg.uri());
  ASSERT_TRUE(g.started()) << "idem did not start; see " << dir.file("idem.log");
  expect_protected(g, unique_key("before"));

  Load load(g, 12);
  ASSERT_TRUE(load.wait_answers(100));
  const std::uint64_t errors_before = g.store_errors();
  const auto t0 = Clock::now();
  ASSERT_TRUE(pg.restart()) << "pg_ctl restart failed";
  std::printf("pg_ctl restart took %lld ms\n", millis(Clock::now() - t0));
  expect_resumed(g, 10, 30s);
  ASSERT_TRUE(load.wait_answers(100));
  load.stop();
  EXPECT_GT(g.store_errors(), errors_before) << "the gateway did not see the restart: nothing was tested";
  expect_nothing_ran_twice(g, load.answers());
}

TEST(RedisClusterFailover,
     MasterKilledUnderLoadNothingRunsTwiceEveryAnswerIsDefinitiveOr503AndServiceResumes) {
  const testutil::TempDir dir;
  RedisCluster cluster(dir.path().string());
  if (!cluster.started()) GTEST_SKIP() << cluster.why_not();
  // wait=1: a claim or commit is acknowledged once its master's replica has it, so the
  // promotion of that replica loses none (docs/stores.md, "what a failover can lose").
  Gateway g(dir.path().string(), "redis-cluster://" + cluster.seeds() + "?wait=1");
  ASSERT_TRUE(g.started()) << "idem did not start; see " << dir.file("idem.log");
  expect_protected(g, unique_key("before"));

  Load load(g, 12);
  ASSERT_TRUE(load.wait_answers(100));
  const std::uint64_t errors_before = g.store_errors();
  ClusterNode* victim = cluster.master();
  ASSERT_TRUE(victim);
  ClusterNode* heir = cluster.replica_of(*victim);
  ASSERT_TRUE(heir) << "no replica of " << victim->address();
  const auto t0 = Clock::now();
  victim->kill();
  ASSERT_TRUE(eventually([&] { return heir->is_master(); }, 30s)) << heir->address() << " was not promoted";
  ASSERT_TRUE(cluster.healthy(30s)) << "the cluster did not recover";
  std::printf("replica promoted %lld ms after kill -9 of its master\n", millis(Clock::now() - t0));
  // The promoted master has no replica, so writes on its slots cannot meet wait=1 (they
  // are outcome unknown: 503) until one joins.
  std::string out;
  ASSERT_TRUE(cluster.add_replica(*heir, &out)) << out;
  expect_resumed(g, 20, 30s);
  expect_failover_kept_the_promise(g, load, errors_before, dir.file("idem.log"));
}

}  // namespace
}  // namespace idem::e2e
