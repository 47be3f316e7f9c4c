// The Redis stores' own behaviour, against the real servers of `scripts/services start
// redis` (tests that need a server skip when its IDEM_TEST_REDIS_*_URL is not set):
// URIs, key slots, racing stores, the NOSCRIPT fallback, AUTH and SELECT, deadlines,
// reconnects, and on the cluster: one seed, ASK during a slot migration, MOVED after it,
// and a master failover.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "idem/open.h"
#include "stores/race.h"
#include "stores/redis/redis_connection.h"
#include "stores/redis/redis_keys.h"
#include "stores/redis/redis_uri.h"
#include "testutil/backends.h"

namespace idem::testutil {
namespace {

using namespace std::chrono_literals;
using Kind = BeginOutcome::Kind;
using redis::Endpoint;
namespace asio = boost::asio;

// ---- helpers --------------------------------------------------------------------------

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

#define REQUIRE_SERVER(var)                                                            \
  const char* var##_value = env(#var);                                                 \
  if (!var##_value) GTEST_SKIP() << #var " is not set (scripts/services start redis)"; \
  const std::string var(var##_value)

// A plain synchronous connection for setting the scene (hiredis's blocking API).
class Raw {
 public:
  explicit Raw(const Endpoint& e) : c_(redisConnect(e.host.c_str(), e.port)) {
    if (!c_ || c_->err) throw std::runtime_error("cannot connect to " + redis::to_string(e));
  }
  ~Raw() { redisFree(c_); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;

  // The reply as text: a string, status or error as such, an integer in decimal, an array
  // as its elements joined by '\n', nil as "(nil)".
  std::string operator()(std::vector<std::string> argv) {
    std::vector<const char*> parts;
    std::vector<std::size_t> sizes;
    for (const auto& a : argv) {
      parts.push_back(a.data());
      sizes.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c_, static_cast<int>(argv.size()), parts.data(), sizes.data()));
    if (!r) throw std::runtime_error("connection lost");
    std::string out = render(r);
    freeReplyObject(r);
    return out;
  }

 private:
  static std::string render(const redisReply* r) {
    switch (r->type) {
      case REDIS_REPLY_INTEGER:
        return std::to_string(r->integer);
      case REDIS_REPLY_NIL:
        return "(nil)";
      case REDIS_REPLY_ARRAY: {
        std::string out;
        for (std::size_t i = 0; i < r->elements; ++i) out += (i ? "\n" : "") + render(r->element[i]);
        return out;
      }
      default:
        return std::string(r->str, r->len);
    }
  }
  redisContext* c_;

 public:
  struct SlotRange {
    int first, last;
    Endpoint master;
  };
  std::vector<SlotRange> slots() {
    auto* r = static_cast<redisReply*>(redisCommand(c_, "CLUSTER SLOTS"));
    if (!r || r->type != REDIS_REPLY_ARRAY) throw std::runtime_error("CLUSTER SLOTS failed");
    std::vector<SlotRange> out;
    for (std::size_t i = 0; i < r->elements; ++i) {
      const redisReply* e = r->element[i];
      const redisReply* m = e->element[2];
      out.push_back({static_cast<int>(e->element[0]->integer), static_cast<int>(e->element[1]->integer),
                     Endpoint{std::string(m->element[0]->str, m->element[0]->len),
                              static_cast<std::uint16_t>(m->element[1]->integer)}});
    }
    freeReplyObject(r);
    return out;
  }
};

Endpoint first_node(const std::string& uri) { return redis::parse_uri(uri).value().nodes.front(); }

std::unique_ptr<Store> open_or_fail(const std::string& uri, Duration op_timeout = 5s) {
  StoreOptions options;
  options.op_timeout = op_timeout;
  auto s = open_store(uri, options);
  if (!s) throw std::runtime_error("cannot open " + uri + ": " + s.status().to_string());
  return std::move(*s);
}

BeginArgs begin_args(std::string key, Duration lease = 60s) {
  return {"s", std::move(key), "fp", lease, 60s};
}

// Polls `done` every 50 ms until it holds or `limit` passes.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 30s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

// ---- one connection's pipelining --------------------------------------------------------------

// Records what a Connection hands its owner.
class RecordingEvents final : public redis::ConnectionEvents {
 public:
  void on_reply(redis::Connection&, redis::CallPtr, redis::Reply reply) override {
    replies.emplace_back(reply->str, reply->len);
  }
  void on_down(redis::Connection&, std::vector<redis::CallPtr>, std::vector<redis::CallPtr>, Status why,
               bool) override {
    down = why.to_string();
  }

  std::vector<std::string> replies;
  std::string down;  // why the connection failed, if it did
};

redis::CallPtr echo(std::string_view text) {
  auto call = std::make_shared<redis::Call>();
  call->wire = redis::format_command({"ECHO", text});
  return call;
}

// Runs `io` until `done` holds, the connection fails, or 10 s pass.
bool run_until(asio::io_context& io, const RecordingEvents& events, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!done() && events.down.empty() && std::chrono::steady_clock::now() < until) io.run_for(10ms);
  return done();
}

// ---- URIs and keys (no server) ------------------------------------------------------------

TEST(RedisUri, ParsesEveryPart) {
  auto c = redis::parse_uri("redis://alice:s%40cret@db.example:6380/3?prefix=app1:").value();
  EXPECT_FALSE(c.cluster);
  ASSERT_EQ(c.nodes.size(), 1u);
  EXPECT_EQ(c.nodes[0], (Endpoint{"db.example", 6380}));
  EXPECT_EQ(c.user, "alice");
  EXPECT_EQ(c.password, "s@cret");
  EXPECT_EQ(c.db, 3);
  EXPECT_EQ(c.prefix, "app1:");

  c = redis::parse_uri("redis://:pw@[::1]").value();
  EXPECT_EQ(c.nodes[0], (Endpoint{"::1", 6379}));
  EXPECT_EQ(c.user, "");
  EXPECT_EQ(c.password, "pw");
  EXPECT_EQ(c.prefix, "idem:");

  c = redis::parse_uri("redis-cluster://10.0.0.1:7001,10.0.0.2:7002,10.0.0.3").value();
  EXPECT_TRUE(c.cluster);
  EXPECT_EQ(c.nodes, (std::vector<Endpoint>{{"10.0.0.1", 7001}, {"10.0.0.2", 7002}, {"10.0.0.3", 6379}}));
}

TEST(RedisUri, MalformedUrisNameTheirFaultyPart) {
  const std::map<std::string, std::string> cases = {
      {"redis://", "missing host"},
      {"redis://h:0", "port '0'"},
      {"redis://h:99999", "port '99999'"},
      {"redis://h:x", "port 'x'"},
      {"redis://h:1/x", "database 'x'"},
      {"redis://h:1?db=2", "unknown parameter 'db=2'"},
      {"redis://h:1?prefix=a{b}", "contains '{' or '}'"},
      {"redis://a:1,b:2", "several hosts"},
      {"redis-cluster://a:1/2", "database number"},
      {"redis://user:@h", "empty password"},
  };
  for (const auto& [uri, part] : cases) {
    auto s = open_store(uri);
    ASSERT_FALSE(s.is_ok()) << uri;
    EXPECT_EQ(s.status().code(), StatusCode::invalid_argument) << uri;
    EXPECT_NE(s.status().message().find(part), std::string::npos) << uri << ": " << s.status().message();
    EXPECT_NE(s.status().message().find(uri), std::string::npos) << s.status().message();
  }
}

TEST(RedisUri, MalformedUrisNeverQuoteThePassword) {
  for (const std::string uri : {"redis://:s3cret@h:0", "redis://u:s3cret@h:1?db=2", "redis://s3cret@h:1/x",
                                "redis-cluster://u:s3cret@a:1/2", "redis://:s3cret%zz@h"}) {
    auto s = open_store(uri);
    ASSERT_FALSE(s.is_ok()) << uri;
    EXPECT_EQ(s.status().code(), StatusCode::invalid_argument) << uri;
    EXPECT_EQ(s.status().message().find("s3cret"), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find("***@"), std::string::npos) << s.status().message();
  }
  // A '?' or '/' in a password would be split off by the parser: such URIs are refused whole.
  auto s = open_store("redis://:s3c?ret@h");
  EXPECT_EQ(s.status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(s.status().message().find("s3c"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("percent-encoded"), std::string::npos) << s.status().message();
}

TEST(RedisKeys, SlotsAreRedisClusters) {
  // The examples of the Redis Cluster specification.
  EXPECT_EQ(redis::key_slot("123456789"), 0x31C3);
  EXPECT_EQ(redis::key_slot("{user1000}.following"), redis::key_slot("{user1000}.followers"));
  EXPECT_EQ(redis::key_slot("{user1000}.following"), redis::key_slot("user1000"));
  EXPECT_NE(redis::key_slot("foo{}{bar}"), redis::key_slot("bar"));  // an empty tag hashes the whole key
  EXPECT_EQ(redis::key_slot("foo{{bar}}zap"), redis::key_slot("{bar"));
  EXPECT_EQ(redis::key_slot("foo{bar}{zap}"), redis::key_slot("bar"));

  // A record's keys share a slot whatever bytes the scope and key hold.
  for (const auto& [scope, key] :
       {std::pair<std::string, std::string>{"s", "k"}, {"{", "}"}, {"a}b{", "{c}"}}) {
    const auto k = redis::record_keys("p:", scope, key);
    EXPECT_EQ(redis::key_slot(k.main), redis::key_slot(k.fence));
  }

  // A record keyed "<space>:<token>" or "<token>" shares the slot of the token in its
  // scope (a release restores it in one script), while names still spread.
  std::set<int> slots;
  for (int i = 0; i < 64; ++i) {
    const std::string token = "tok" + std::to_string(i);
    const int slot = redis::key_slot(redis::token_key("p:", "scope", token));
    EXPECT_EQ(redis::key_slot(redis::record_keys("p:", "scope", "orders:" + token).main), slot);
    EXPECT_EQ(redis::key_slot(redis::record_keys("p:", "scope", token).main), slot);
    EXPECT_TRUE(redis::same_slot("scope", "a:b:" + token, token));
    slots.insert(slot);
  }
  EXPECT_GT(slots.size(), 50u);
}

TEST(RedisKeys, SlotsAgreeWithTheServer) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_CLUSTER_URL);
  Raw raw(first_node(IDEM_TEST_REDIS_CLUSTER_URL));
  for (int i = 0; i < 50; ++i) {
    const auto k = redis::record_keys("idem:", "scope-" + std::to_string(i), "key\x01{" + std::to_string(i));
    EXPECT_EQ(raw({"CLUSTER", "KEYSLOT", k.main}), std::to_string(redis::key_slot(k.main)));
  }
}

// Listing's MATCH patterns take prefixes, scopes and key prefixes literally, whatever glob
// characters they hold; parse_record_key accepts record keys only.
TEST(RedisKeys, ListPatternsAreLiteralAndOnlyRecordKeysParse) {
  EXPECT_EQ(redis::glob_escape("a*?[]\\b"), "a\\*\\?\\[\\]\\\\b");
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  Raw raw(first_node(IDEM_TEST_REDIS_URL));
  const std::string prefix = "glob-" + std::to_string(::getpid()) + "*?[]\\:";
  const std::string scope = "sc*?[]\\", key = "sp*?[]\\:k";
  const auto real = redis::record_keys(prefix, scope, key);
  std::vector<std::string> same_prefix{real.main}, others{real.fence};
  for (std::size_t i = 2; i < scope.size(); ++i) {
    std::string s = scope, k = key;
    s[i] = 'x';
    k[i] = 'x';
    same_prefix.push_back(redis::record_keys(prefix, s, key).main);
    same_prefix.push_back(redis::record_keys(prefix, scope, k).main);
  }
  for (std::size_t i = 6; i + 1 < prefix.size(); ++i) {
    std::string p = prefix;
    p[i] = 'x';
    others.push_back(redis::record_keys(p, scope, key).main);
  }
  for (const auto& k : same_prefix) raw({"SET", k, "1", "PX", "60000"});
  for (const auto& k : others) raw({"SET", k, "1", "PX", "60000"});
  auto keys = [&](const std::string& pattern) {
    std::multiset<std::string> out;
    std::istringstream lines(raw({"KEYS", pattern}));
    for (std::string line; std::getline(lines, line);) out.insert(line);
    return out;
  };
  EXPECT_EQ(keys(redis::record_pattern(prefix, scope, "sp*?[]\\:")), std::multiset<std::string>{real.main});
  EXPECT_EQ(keys(redis::record_pattern(prefix, std::nullopt, "")),
            std::multiset<std::string>(same_prefix.begin(), same_prefix.end()));

  std::string s, k;
  ASSERT_TRUE(redis::parse_record_key(prefix, real.main, s, k));
  EXPECT_EQ(s, scope);
  EXPECT_EQ(k, key);
  for (const std::string& not_a_record :
       {real.fence, redis::token_key(prefix, scope, key), redis::lock_keys(prefix, key).main, real.main + "x",
        real.main.substr(0, real.main.size() - 1), std::string("other:") + real.main}) {
    EXPECT_FALSE(redis::parse_record_key(prefix, not_a_record, s, k)) << not_a_record;
  }
}

// ---- one Redis ----------------------------------------------------------------------------

// Two stores sharing a prefix are two gateways sharing a Redis: of 128 racing begins on
// one key, exactly one acquires.
TEST(Redis, TwoStoresRacingOnOneKeyAcquireOnce) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  const std::string uri = with_unique_prefix(IDEM_TEST_REDIS_URL);
  auto a = open_or_fail(uri), b = open_or_fail(uri);
  for (int round = 0; round < 3; ++round) {
    constexpr int kThreads = 128;
    const auto n = race_begin({a.get(), b.get()}, begin_args("race-" + std::to_string(round)), kThreads);
    EXPECT_EQ(n.acquired, 1);
    EXPECT_EQ(n.in_progress, kThreads - 1);
    EXPECT_EQ(n.other, 0);
  }
}

TEST(Redis, ScriptFlushFallsBackToEval) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  auto store = open_or_fail(with_unique_prefix(IDEM_TEST_REDIS_URL));
  Raw raw(first_node(IDEM_TEST_REDIS_URL));
  const Fence f = store->begin(begin_args("k")).value().fence;
  ASSERT_EQ(raw({"SCRIPT", "FLUSH"}), "OK");
  EXPECT_EQ(store->commit({"s", "k", f, "r", 60s}).value(), CommitOutcome::committed);
  ASSERT_EQ(raw({"SCRIPT", "FLUSH"}), "OK");
  EXPECT_EQ(store->begin(begin_args("k")).value().result, "r");
  // And the scripts are cached again: EVALSHA works from here on.
  EXPECT_EQ(store->get({"s", "k"}).value()->result, "r");
}

// Records carry native TTLs; the fence key outlives its record by a day.
TEST(Redis, KeysExpireNativelyAndFenceKeysOutliveRecords) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  const std::string uri = with_unique_prefix(IDEM_TEST_REDIS_URL);
  auto store = open_or_fail(uri);
  Raw raw(first_node(IDEM_TEST_REDIS_URL));
  const auto keys = redis::record_keys(redis::parse_uri(uri).value().prefix, "s", "k");
  const Fence f = store->begin(begin_args("k", 10s)).value().fence;
  const auto record_ttl = std::stoll(raw({"PTTL", keys.main}));
  EXPECT_GT(record_ttl, 69'000);  // lease 10 s + retention 60 s
  EXPECT_LE(record_ttl, 70'001);
  EXPECT_GT(std::stoll(raw({"PTTL", keys.fence})), 86'400'000);
  EXPECT_EQ(raw({"GET", keys.fence}), std::to_string(f));

  ASSERT_TRUE(store->remove({"s", "k"}).value());
  EXPECT_EQ(raw({"EXISTS", keys.main}), "0");
  EXPECT_EQ(raw({"GET", keys.fence}), std::to_string(f));
  // Even with the server's clock taken out of the picture, the fence key makes it grow.
  ASSERT_EQ(raw({"SET", keys.fence, "9000000000000000", "KEEPTTL"}), "OK");
  EXPECT_EQ(store->begin(begin_args("k")).value().fence, 9000000000000001u);
  // The last fence below 2^53 is handed out; beyond it the store reports an error.
  ASSERT_EQ(store->release({"s", "k", 9000000000000001u}).value(), ReleaseOutcome::released);
  ASSERT_EQ(raw({"SET", keys.fence, "9007199254740990", "KEEPTTL"}), "OK");
  EXPECT_EQ(store->begin(begin_args("k")).value().fence, kMaxFence);
  ASSERT_EQ(store->release({"s", "k", kMaxFence}).value(), ReleaseOutcome::released);
  EXPECT_EQ(store->begin(begin_args("k")).status().code(), StatusCode::internal);
}

TEST(Redis, AuthAndDatabaseComeFromTheUri) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  const Endpoint e = first_node(IDEM_TEST_REDIS_URL);
  Raw raw(e);
  const std::string user = "idem-test-" + std::to_string(getpid());
  ASSERT_EQ(raw({"ACL", "SETUSER", user, "on", ">s3cret", "~*", "&*", "+@all"}), "OK");
  const std::string base = "redis://" + user + ":s3cret@" + redis::to_string(e);

  auto store = open_or_fail(with_unique_prefix(base + "/5"));
  EXPECT_EQ(store->begin(begin_args("in-db-5")).value().kind, Kind::acquired);
  const std::string pattern = "*{*}r:*in-db-5";
  ASSERT_EQ(raw({"SELECT", "5"}), "OK");
  EXPECT_NE(raw({"KEYS", pattern}), "");
  ASSERT_EQ(raw({"SELECT", "0"}), "OK");
  EXPECT_EQ(raw({"KEYS", pattern}), "");

  auto wrong = open_store("redis://" + user + ":wrong@" + redis::to_string(e));
  EXPECT_EQ(wrong.status().code(), StatusCode::failed_precondition);
  EXPECT_NE(wrong.status().message().find("AUTH failed"), std::string::npos) << wrong.status().message();

  // A running store whose user is disabled reports it, and recovers when it is back.
  ASSERT_EQ(raw({"ACL", "SETUSER", user, "off"}), "OK");
  ASSERT_NE(raw({"CLIENT", "KILL", "USER", user}), "0");
  auto refused = store->begin(begin_args("after-off"));
  EXPECT_FALSE(refused.is_ok());
  ASSERT_EQ(raw({"ACL", "SETUSER", user, "on"}), "OK");
  EXPECT_TRUE(eventually([&] { return store->ping().is_ok(); }));
  EXPECT_EQ(raw({"ACL", "DELUSER", user}), "1");
}

// `:pass@` (or `pass@`) sends AUTH with the password alone, which authenticates the
// default user. The test server's default user has no password, and the tests never give
// it one (other runs may share the server): Redis then refuses the one-argument AUTH with
// its own message, which shows that exactly that was sent.
TEST(Redis, PasswordAloneIsAuthOfTheDefaultUser) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  const Endpoint e = first_node(IDEM_TEST_REDIS_URL);
  for (std::string userinfo : {":pw@", "pw@"}) {
    auto s = open_store("redis://" + userinfo + redis::to_string(e));
    EXPECT_EQ(s.status().code(), StatusCode::failed_precondition) << userinfo;
    EXPECT_NE(s.status().message().find("AUTH failed"), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find("without any password configured for the default user"),
              std::string::npos)
        << s.status().message();
  }
}

TEST(Redis, UnreachableServerIsUnavailableAndNamed) {
  // Nothing listens on port 1 of the loopback.
  const auto started = std::chrono::steady_clock::now();
  StoreOptions options;
  options.op_timeout = 300ms;
  auto s = open_store("redis://127.0.0.1:1", options);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::unavailable);
  EXPECT_NE(s.status().message().find("127.0.0.1:1"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("refused"), std::string::npos) << s.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
}

// A server that does not answer within op_timeout: deadline_exceeded (the outcome is
// unknown: here the begin did run once the server woke up), then service resumes.
TEST(Redis, PausedServerExceedsTheDeadlineThenServiceResumes) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  auto store = open_or_fail(with_unique_prefix(IDEM_TEST_REDIS_URL), 300ms);
  Raw raw(first_node(IDEM_TEST_REDIS_URL));
  ASSERT_TRUE(store->ping().is_ok());
  ASSERT_EQ(raw({"CLIENT", "PAUSE", "1500", "ALL"}), "OK");
  const auto started = std::chrono::steady_clock::now();
  auto r = store->begin(begin_args("paused"));
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(r.status().code(), StatusCode::deadline_exceeded) << r.status().to_string();
  EXPECT_NE(r.status().message().find("outcome is unknown"), std::string::npos);
  EXPECT_GE(waited, 290ms);
  EXPECT_LT(waited, 1200ms);
  EXPECT_TRUE(eventually([&] { return store->ping().is_ok(); }, 10s));
  // The timed-out begin ran when the pause ended: the key is held.
  EXPECT_EQ(store->begin(begin_args("paused")).value().kind, Kind::in_progress);
}

// Connections killed under load: calls in flight fail `deadline_exceeded` (outcome unknown),
// calls not yet sent `unavailable`; nothing hangs; the store reconnects by itself.
TEST(Redis, KilledConnectionsAreReconnected) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  auto store = open_or_fail(with_unique_prefix(IDEM_TEST_REDIS_URL), 5s);
  Raw raw(first_node(IDEM_TEST_REDIS_URL));
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, unavailable{0}, other{0};
  std::mutex mu;
  std::string unexpected;  // the first answer that is neither a value nor a store failure
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !stop; ++i) {
        auto r = store->begin(begin_args("t" + std::to_string(t) + "-" + std::to_string(i)));
        if (r) {
          ++ok;
        } else if (r.status().code() == StatusCode::unavailable ||
                   r.status().code() == StatusCode::deadline_exceeded) {
          ++unavailable;
        } else {
          ++other;
          std::lock_guard lock(mu);
          if (unexpected.empty()) unexpected = r.status().to_string();
        }
      }
    });
  }
  for (int kill = 0; kill < 5; ++kill) {
    std::this_thread::sleep_for(100ms);
    raw({"CLIENT", "KILL", "TYPE", "normal"});  // SKIPME yes: not this one
  }
  std::this_thread::sleep_for(100ms);
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_GT(ok, 0);
  EXPECT_EQ(other, 0) << unexpected;
  auto ping = store->ping();
  EXPECT_TRUE(ping.is_ok()) << ping.status().to_string();
  auto after = store->begin(begin_args("after"));
  ASSERT_TRUE(after.is_ok()) << after.status().to_string();
  EXPECT_EQ(after->kind, Kind::acquired);
}

// The connection breaks after the command went out (here: held by CLIENT PAUSE WRITE,
// then killed): the call fails `deadline_exceeded`, saying that its outcome is unknown
// (tests/stores/store_failure_test.cpp has the cases where the command did run).
TEST(Redis, ConnectionLostAfterSendingLeavesTheOutcomeUnknown) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  auto store = open_or_fail(with_unique_prefix(IDEM_TEST_REDIS_URL), 5s);
  Raw raw(first_node(IDEM_TEST_REDIS_URL));
  ASSERT_EQ(raw({"CLIENT", "PAUSE", "5000", "WRITE"}), "OK");
  std::promise<Result<BeginOutcome>> answer;
  store->begin(begin_args("lost"), [&](Result<BeginOutcome> r) { answer.set_value(std::move(r)); });
  // Until the server holds our EVALSHA.
  const bool held = eventually([&] {
    std::istringstream clients(raw({"CLIENT", "LIST"}));
    for (std::string line; std::getline(clients, line);) {
      if (line.find(" flags=b ") != std::string::npos && line.find(" cmd=evalsha ") != std::string::npos)
        return true;
    }
    return false;
  });
  raw({"CLIENT", "KILL", "TYPE", "normal"});
  raw({"CLIENT", "UNPAUSE"});
  ASSERT_TRUE(held);
  auto r = answer.get_future().get();
  EXPECT_EQ(r.status().code(), StatusCode::deadline_exceeded) << r.status().to_string();
  EXPECT_NE(r.status().message().find("outcome is unknown"), std::string::npos) << r.status().message();
  // (It never ran: the server dropped it with the connection.)
  EXPECT_EQ(store->begin(begin_args("lost")).value().kind, Kind::acquired);
}

// A commit within the lease leaves the native expiries where begin put them (the record's
// expires_at, which rules, is earlier); one that moves expires_at past them moves both.
TEST(Redis, ACommitMovesTheNativeExpiriesOnlyWhenExpiresAtGrows) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  const std::string uri = with_unique_prefix(IDEM_TEST_REDIS_URL);
  auto store = open_or_fail(uri);
  Raw raw(first_node(IDEM_TEST_REDIS_URL));
  const auto prefix = redis::parse_uri(uri).value().prefix;
  const auto pttl = [&](const std::string& key) { return std::stoll(raw({"PTTL", key})); };

  const auto within = redis::record_keys(prefix, "s", "within");
  const Fence f = store->begin(begin_args("within", 10s)).value().fence;  // retention 60 s
  ASSERT_EQ(store->commit({"s", "within", f, "r", 60s}).value(), CommitOutcome::committed);
  EXPECT_GT(pttl(within.main), 65'000);  // lease_until + retention of the begin, not now + 60 s
  EXPECT_GT(pttl(within.fence), 86'400'000 + 65'000);
  const auto got = store->get({"s", "within"}).value();
  ASSERT_TRUE(got.has_value());
  EXPECT_LE(got->expires_at - std::chrono::system_clock::now(), 60s);  // the commit's rules

  const auto longer = redis::record_keys(prefix, "s", "longer");
  const Fence g = store->begin(begin_args("longer", 10s)).value().fence;
  ASSERT_EQ(store->commit({"s", "longer", g, "r", 600s}).value(), CommitOutcome::committed);
  EXPECT_GT(pttl(longer.main), 590'000);
  EXPECT_LE(pttl(longer.main), 600'001);
  EXPECT_GT(pttl(longer.fence), 86'400'000 + 590'000);
}

TEST(Redis, DestroyingAStoreWaitsForItsCalls) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  std::atomic<int> answered{0};
  {
    auto store = open_or_fail(with_unique_prefix(IDEM_TEST_REDIS_URL));
    for (int i = 0; i < 1000; ++i) {
      store->begin(begin_args("k" + std::to_string(i)), [&](Result<BeginOutcome> r) {
        EXPECT_TRUE(r.is_ok());
        ++answered;
      });
    }
  }
  EXPECT_EQ(answered, 1000);
}

// The calls sent while one handler runs leave in one gather write, however many, and each
// reply goes back to its own call, in order.
TEST(RedisConnection, CallsSentInOneTurnLeaveInOneWrite) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_URL);
  const auto config = redis::parse_uri(IDEM_TEST_REDIS_URL).value();
  asio::io_context io;
  RecordingEvents events;
  redis::Connection c(io, config.nodes.front(), config, 5s, events, nullptr);
  c.send(echo("first"));  // connects
  ASSERT_TRUE(run_until(io, events, [&] { return events.replies.size() == 1; })) << events.down;
  const std::uint64_t before = c.writes();
  constexpr int kCalls = 300;
  asio::post(io, [&] {
    for (int i = 0; i < kCalls; ++i) c.send(echo("call " + std::to_string(i)));
  });
  ASSERT_TRUE(run_until(io, events, [&] { return events.replies.size() == 1 + kCalls; })) << events.down;
  EXPECT_EQ(c.writes(), before + 1);
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(events.replies[1 + i], "call " + std::to_string(i));
  c.close();
  io.run_for(100ms);
}

// ---- Redis Cluster ----------------------------------------------------------------------------

struct ClusterNode {
  std::string id;
  Endpoint endpoint;
  bool master = false;
  std::string master_id;  // replicas
};

// CLUSTER NODES as seen from `raw`.
std::vector<ClusterNode> cluster_nodes(Raw& raw) {
  std::vector<ClusterNode> out;
  std::istringstream lines(raw({"CLUSTER", "NODES"}));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string id, addr, flags, master;
    f >> id >> addr >> flags >> master;
    if (flags.find("fail") != std::string::npos && flags.find("fail?") == std::string::npos) continue;
    ClusterNode n{id, redis::parse_uri("redis://" + addr.substr(0, addr.find('@'))).value().nodes[0],
                  flags.find("master") != std::string::npos, master == "-" ? "" : master};
    out.push_back(n);
  }
  return out;
}

// A counter from INFO: stat(raw, "errorstats", "errorstat_MOVED", "count"); 0 when absent.
long long stat(Raw& raw, const std::string& section, const std::string& line, const std::string& field) {
  const std::string info = raw({"INFO", section});
  const auto at = info.find(line + ":");
  if (at == std::string::npos) return 0;
  const auto f = info.find(field + "=", at);
  return f == std::string::npos ? 0 : std::stoll(info.substr(f + field.size() + 1));
}

// The master serving `slot`, from CLUSTER SLOTS.
Endpoint owner_of(Raw& raw, int slot) {
  for (const auto& range : raw.slots()) {
    if (slot >= range.first && slot <= range.last) return range.master;
  }
  throw std::runtime_error("no owner for slot " + std::to_string(slot));
}

bool cluster_ok(const std::vector<Endpoint>& nodes) {
  for (const auto& e : nodes) {
    Raw raw(e);
    if (raw({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos) return false;
  }
  return true;
}

std::vector<Endpoint> all_cluster_nodes(const std::string& uri) {
  Raw raw(first_node(uri));
  std::vector<Endpoint> out;
  for (const auto& n : cluster_nodes(raw)) out.push_back(n.endpoint);
  return out;
}

// Opened with one seed only, the store learns the map and reaches every master.
TEST(RedisCluster, OneSeedReachesEveryMaster) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_CLUSTER_URL);
  const Endpoint seed = first_node(IDEM_TEST_REDIS_CLUSTER_URL);
  auto store = open_or_fail(with_unique_prefix("redis-cluster://" + redis::to_string(seed)));
  Raw raw(seed);
  std::set<std::string> owners;
  for (int i = 0; i < 64; ++i) {
    const std::string key = "k" + std::to_string(i);
    const auto k = redis::record_keys("", "s", key);
    owners.insert(redis::to_string(owner_of(raw, redis::key_slot(k.main))));
    const Fence f = store->begin(begin_args(key)).value().fence;
    EXPECT_EQ(store->commit({"s", key, f, "r" + key, 60s}).value(), CommitOutcome::committed);
  }
  EXPECT_EQ(owners.size(), 3u);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(store->begin(begin_args("k" + std::to_string(i))).value().result, "rk" + std::to_string(i));
  }
}

// A slot migrating from A to B: keys already moved are served by B after ASK (ASKING);
// once the slot belongs to B, A answers MOVED and the store follows for good.
TEST(RedisCluster, AskDuringAMigrationAndMovedAfterIt) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_CLUSTER_URL);
  const std::string uri = with_unique_prefix(IDEM_TEST_REDIS_CLUSTER_URL);
  auto store = open_or_fail(uri);
  const auto keys = redis::record_keys(redis::parse_uri(uri).value().prefix, "s", "migrating");
  const int slot = redis::key_slot(keys.main);
  Raw seed(first_node(uri));
  const Endpoint a = owner_of(seed, slot);
  Raw raw_a(a);
  const auto nodes = cluster_nodes(raw_a);
  const ClusterNode *node_a = nullptr, *node_b = nullptr;
  for (const auto& n : nodes) {
    if (n.master && n.endpoint == a) node_a = &n;
  }
  for (const auto& n : nodes) {
    if (n.master && !(n.endpoint == a) && !node_b) node_b = &n;
  }
  ASSERT_TRUE(node_a && node_b);
  Raw raw_b(node_b->endpoint);
  const Fence f = store->begin(begin_args("migrating")).value().fence;

  const std::string s = std::to_string(slot);
  ASSERT_EQ(raw_b({"CLUSTER", "SETSLOT", s, "IMPORTING", node_a->id}), "OK");
  ASSERT_EQ(raw_a({"CLUSTER", "SETSLOT", s, "MIGRATING", node_b->id}), "OK");
  // Move every key of the slot (ours and any other test's) to B.
  for (;;) {
    std::istringstream batch(raw_a({"CLUSTER", "GETKEYSINSLOT", s, "100"}));
    std::vector<std::string> argv{
        "MIGRATE", node_b->endpoint.host, std::to_string(node_b->endpoint.port), "", "0", "5000", "KEYS"};
    for (std::string k; std::getline(batch, k);) argv.push_back(k);
    if (argv.size() == 7) break;
    ASSERT_EQ(raw_a(argv), "OK");
  }
  // A no longer has the keys: ASK → B (whose script cache is empty: NOSCRIPT, then EVAL
  // still under ASKING).
  ASSERT_EQ(raw_b({"SCRIPT", "FLUSH"}), "OK");
  const long long asks = stat(raw_a, "errorstats", "errorstat_ASK", "count");
  const long long askings = stat(raw_b, "commandstats", "cmdstat_asking", "calls");
  EXPECT_EQ(store->extend({"s", "migrating", f, 60s}).value(), ExtendOutcome::extended);
  EXPECT_EQ(store->commit({"s", "migrating", f, "moved", 60s}).value(), CommitOutcome::committed);
  EXPECT_EQ(store->begin(begin_args("migrating")).value().result, "moved");
  EXPECT_GE(stat(raw_a, "errorstats", "errorstat_ASK", "count"), asks + 3);
  EXPECT_GE(stat(raw_b, "commandstats", "cmdstat_asking", "calls"), askings + 3);
  const long long moved = stat(raw_a, "errorstats", "errorstat_MOVED", "count");

  // The slot is B's: every master learns it; A answers MOVED from now on.
  for (const auto& n : nodes) {
    if (!n.master) continue;
    Raw r(n.endpoint);
    ASSERT_EQ(r({"CLUSTER", "SETSLOT", s, "NODE", node_b->id}), "OK") << redis::to_string(n.endpoint);
  }
  EXPECT_EQ(store->begin(begin_args("migrating")).value().result, "moved");
  EXPECT_EQ(store->get({"s", "migrating"}).value()->result, "moved");
  EXPECT_TRUE(store->remove({"s", "migrating"}).value());
  EXPECT_GT(store->begin(begin_args("migrating")).value().fence, f);
  // One MOVED taught the store the new owner (a few more may race the map refresh).
  EXPECT_GE(stat(raw_a, "errorstats", "errorstat_MOVED", "count"), moved + 1);
  EXPECT_LE(stat(raw_a, "errorstats", "errorstat_MOVED", "count"), moved + 2);
}

// A replica takes over its master (CLUSTER FAILOVER): the store follows the new master,
// and the records, fences and locks it wrote before keep their guarantees.
TEST(RedisCluster, SurvivesAMasterFailover) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_CLUSTER_URL);
  const std::string uri = with_unique_prefix(IDEM_TEST_REDIS_CLUSTER_URL);
  auto store = open_or_fail(uri, 10s);
  const auto keys = redis::record_keys(redis::parse_uri(uri).value().prefix, "s", "failover");
  const int slot = redis::key_slot(keys.main);
  Raw seed(first_node(uri));
  const Endpoint old_master = owner_of(seed, slot);
  const auto nodes = cluster_nodes(seed);
  std::string master_id;
  for (const auto& n : nodes) {
    if (n.endpoint == old_master) master_id = n.id;
  }
  const ClusterNode* replica = nullptr;
  for (const auto& n : nodes) {
    if (!n.master && n.master_id == master_id) replica = &n;
  }
  ASSERT_NE(replica, nullptr) << "no replica of " << redis::to_string(old_master);

  const Fence pending = store->begin(begin_args("failover")).value().fence;
  const Fence done = store->begin(begin_args("failover-done")).value().fence;
  ASSERT_EQ(store->commit({"s", "failover-done", done, "before", 60s}).value(), CommitOutcome::committed);
  const auto lock = store->lock({"failover-lock", "a", 60s}).value();
  ASSERT_EQ(lock.kind, LockOutcome::Kind::locked);

  Raw raw_replica(replica->endpoint);
  ASSERT_TRUE(eventually([&] {
    return raw_replica({"INFO", "replication"}).find("master_link_status:up") != std::string::npos;
  }));
  ASSERT_EQ(raw_replica({"CLUSTER", "FAILOVER"}), "OK");
  ASSERT_TRUE(eventually(
      [&] { return redis::to_string(owner_of(seed, slot)) == redis::to_string(replica->endpoint); }));
  ASSERT_TRUE(eventually([&] { return cluster_ok(all_cluster_nodes(uri)); }));

  // Through MOVED from the old master (now a replica) to the new one.
  Raw raw_old(old_master);
  const long long moved = stat(raw_old, "errorstats", "errorstat_MOVED", "count");
  EXPECT_EQ(store->begin(begin_args("failover")).value().kind, Kind::in_progress);
  EXPECT_EQ(store->begin(begin_args("failover-done")).value().result, "before");
  EXPECT_EQ(store->lock({"failover-lock", "b", 60s}).value().kind, LockOutcome::Kind::busy);
  EXPECT_EQ(store->commit({"s", "failover", pending, "after", 60s}).value(), CommitOutcome::committed);
  EXPECT_EQ(store->begin(begin_args("failover")).value().result, "after");
  ASSERT_EQ(store->unlock({"failover-lock", "a"}).value(), UnlockOutcome::released);
  EXPECT_GT(store->lock({"failover-lock", "b", 60s}).value().fence, lock.fence);
  EXPECT_GE(stat(raw_old, "errorstats", "errorstat_MOVED", "count"), moved + 1);
}

// The master of a slot is killed (kill -9): its calls in flight fail `deadline_exceeded`, the
// store refreshes the map with backoff until a replica is promoted, and then serves the
// records written before (replicated in time) with their guarantees. The killed server is
// started again afterwards (it rejoins as a replica), so the cluster ends healthy.
TEST(RedisCluster, SurvivesAKilledMaster) {
  REQUIRE_SERVER(IDEM_TEST_REDIS_CLUSTER_URL);
  const std::string uri = with_unique_prefix(IDEM_TEST_REDIS_CLUSTER_URL);
  const std::string prefix = redis::parse_uri(uri).value().prefix;
  auto store = open_or_fail(uri, 3s);
  Raw seed(first_node(uri));
  const Endpoint victim = owner_of(seed, redis::key_slot(redis::record_keys(prefix, "s", "killed").main));
  // A second key on the same master.
  std::string done_key;
  for (int i = 0; done_key.empty(); ++i) {
    const std::string k = "killed-done-" + std::to_string(i);
    if (owner_of(seed, redis::key_slot(redis::record_keys(prefix, "s", k).main)) == victim) done_key = k;
  }

  const Fence pending = store->begin(begin_args("killed")).value().fence;
  const Fence done = store->begin(begin_args(done_key)).value().fence;
  ASSERT_EQ(store->commit({"s", done_key, done, "before", 60s}).value(), CommitOutcome::committed);

  // Started again at the end (also when an assertion fails), so the cluster ends healthy.
  struct Restart {
    std::string command;
    ~Restart() {
      if (!command.empty() && std::system(command.c_str()) != 0) ADD_FAILURE() << command;
    }
  } restart;
  {
    Raw m(victim);
    // Every write so far has reached a replica (replication is asynchronous).
    const std::string offset_line = "master_repl_offset:";
    auto info = m({"INFO", "replication"});
    const auto at = info.find(offset_line) + offset_line.size();
    const long long offset = std::stoll(info.substr(at, info.find('\r', at) - at));
    ASSERT_TRUE(eventually([&] {
      auto now = m({"INFO", "replication"});
      // slaveN:ip=...,port=...,state=online,offset=N,lag=...
      const auto o = now.find(",offset=");
      return o != std::string::npos && std::stoll(now.substr(o + 8)) >= offset;
    }));
    std::string command =
        "redis-server --bind 127.0.0.1 --daemonize yes --appendonly yes --save '' "
        "--cluster-enabled yes";
    for (const char* option :
         {"port", "dir", "pidfile", "logfile", "cluster-config-file", "cluster-node-timeout"}) {
      std::istringstream kv(m({"CONFIG", "GET", option}));
      std::string name, value;
      std::getline(kv, name);
      std::getline(kv, value);
      command += std::string(" --") + option + " '" + value + "'";
    }
    info = m({"INFO", "server"});
    const auto pid_at = info.find("process_id:") + 11;
    ASSERT_EQ(::kill(std::stoi(info.substr(pid_at)), SIGKILL), 0);
    restart.command = command;
  }

  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually(
      [&] {
        auto r = store->begin(begin_args(done_key));
        return r && r->kind == Kind::replay && r->result == "before";
      },
      60s));
  std::cerr << "served again "
            << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                     killed_at)
                   .count()
            << " ms after the kill\n";
  EXPECT_EQ(store->begin(begin_args("killed")).value().kind, Kind::in_progress);
  EXPECT_EQ(store->commit({"s", "killed", pending, "after", 60s}).value(), CommitOutcome::committed);
  EXPECT_EQ(store->begin(begin_args("killed")).value().result, "after");
  EXPECT_TRUE(store->remove({"s", "killed"}).value());
  EXPECT_GT(store->begin(begin_args("killed")).value().fence, pending);

  ASSERT_EQ(std::system(restart.command.c_str()), 0) << restart.command;
  restart.command.clear();
  EXPECT_TRUE(eventually(
      [&] {
        try {
          return cluster_ok(all_cluster_nodes(uri)) && Raw(victim)({"ROLE"}).rfind("slave", 0) == 0;
        } catch (const std::exception&) {
          return false;
        }
      },
      60s));
}

}  // namespace
}  // namespace idem::testutil
