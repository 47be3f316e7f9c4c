// Store outages as a client of `idem serve` sees them (issue 11): the idem binary in front of
// the test upstream, its store a real Redis or PostgreSQL that the test starts on ports of
// its own and then breaks for real.
//
//   - GhostClaim: a fault proxy (tests/testutil/fault_proxy.h) forwards one request's begin
//     and loses its reply, so the claim exists although the gateway never learnt it. The
//     gateway answers 503 and gives the claim back by its owner once the store answers
//     again (docs/gateway.md, "When the store fails"): the client's retry runs once, and is
//     never held as in progress for the ghost's lease nor found outcome-uncertain.
//
// The route's lease is 60 s, longer than the test, so a claim left behind shows as a key
// that stays pending; every wait for the gateway's background work polls the record.
#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "gateway/e2e_fixture.h"
#include "idem/open.h"
#include "testutil/eventually.h"
#include "testutil/fault_proxy.h"
#include "testutil/redis_server.h"

namespace idem::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using testutil::eventually;
using testutil::FaultProxy;

const char* const kPgBin = "/usr/lib/postgresql/15/bin";

std::string unique_key(const char* what) {
  static std::atomic<int> n{0};
  return std::string(what) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
}

long long millis(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// ---- the gateway and the upstream ---------------------------------------------------------

// The upstream and one `idem serve` with one protected route, `orders`: a 60 s lease (a claim
// left behind outlives the test), duplicates wait up to 2 s for the first.
class Gateway {
 public:
  Gateway(const std::string& dir, const std::string& store)
      : upstream_({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true) {
    write_file(dir + "/idem.yaml", config_head(port_, upstream_.port(), admin_, store) + R"(defaults:
  lease: 60s
  wait: 2s
  upstream_timeout: 5s
routes:
  - name: orders
    match: { method: POST, path: /orders }
)");
    idem_ = std::make_unique<Process>(
        std::vector<std::string>{IDEM_BIN, "serve", "--config", dir + "/idem.yaml"}, dir + "/idem.log");
    started_ = wait_healthy(admin_, 10000);
  }

  bool started() const { return started_; }

  Response post(const std::string& key, Headers extra = {}) const {
    extra.emplace_back("Idempotency-Key", key);
    extra.emplace_back("Content-Type", "application/json");
    return request(port_, verb::post, "/orders", extra, R"({"key":")" + key + "\"}");
  }

  // "absent", "pending", "done", or "error <status>" when the admin API could not tell.
  std::string record_state(const std::string& key) const {
    Response r = request(admin_, verb::get, "/v1/records/_/" + key + "?key_space=orders");
    if (r.result_int() == 404) return "absent";
    const auto record = body_json(r);
    if (r.result_int() != 200 || !record.contains("state")) return "error " + std::to_string(r.result_int());
    return std::string(record.at("state").as_string());
  }

  std::uint64_t store_errors() const {
    const std::string metrics = request(admin_, verb::get, "/metrics").body();
    const std::string name = "\nidem_store_errors_total ";
    const auto at = metrics.find(name);
    return at == std::string::npos ? 0 : std::stoull(metrics.substr(at + name.size()));
  }

  // How many times the upstream ran each key, from its log of requests.
  std::map<std::string, int> executions() const {
    std::map<std::string, int> runs;
    const auto seen = json::parse(request(upstream_.port(), verb::get, "/_seen?from=0").body()).as_array();
    for (const auto& r : seen)
      for (const auto& f : r.as_object().at("fields").as_array())
        if (f.as_array()[0].as_string() == "Idempotency-Key")
          ++runs[std::string(f.as_array()[1].as_string())];
    return runs;
  }

 private:
  Process upstream_;
  unsigned short port_ = free_port();
  unsigned short admin_ = free_port();
  std::unique_ptr<Process> idem_;
  bool started_ = false;
};

bool replayed(const Response& r) { return header(r, "Idempotent-Replayed") == "true"; }

int execution_of(const Response& r) {
  const auto o = body_json(r);
  return o.contains("execution") ? static_cast<int>(o.at("execution").as_int64()) : 0;
}

// ---- servers of the test's own -------------------------------------------------------------

// Runs a command as the `postgres` user when the test is root (initdb refuses root).
int as_postgres(std::vector<std::string> argv, std::string* out = nullptr) {
  if (::geteuid() == 0) argv.insert(argv.begin(), {"runuser", "-u", "postgres", "--"});
  return run(argv, out);
}

// A throwaway PostgreSQL 15 cluster in a temporary directory, on a free loopback port, with
// trust authentication (only this test can reach it). Stopped with the object.
class PostgresServer {
 public:
  PostgresServer() {
    if (::access((std::string(kPgBin) + "/initdb").c_str(), X_OK) != 0) {
      why_ = "PostgreSQL 15 is not installed";
      return;
    }
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("postgres");
      if (!pw || ::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        why_ = "no postgres user to run the server as";
        return;
      }
    }
    std::string out;
    if (as_postgres({std::string(kPgBin) + "/initdb", "-D", data(), "-U", "postgres", "--auth=trust", "-E",
                     "UTF8", "--locale=C", "-N"},
                    &out) != 0) {
      why_ = "initdb failed: " + out;
      return;
    }
    // fsync off: every stop here is clean (fast or immediate at the end), and the machine
    // is shared; what is tested is the connections going away.
    std::FILE* conf = std::fopen((data() + "/postgresql.conf").c_str(), "a");
    std::fprintf(conf,
                 "listen_addresses = '127.0.0.1'\nport = %u\nunix_socket_directories = '%s'\n"
                 "fsync = off\nmax_connections = 50\n",
                 port_, dir_.c_str());
    std::fclose(conf);
    if (pg_ctl({"start"}) != 0) {
      why_ = "pg_ctl start failed; see " + dir_ + "/server.log";
      return;
    }
    started_ = true;
  }
  ~PostgresServer() {
    if (started_) pg_ctl({"-m", "immediate", "stop"});
    remove_dir(dir_);
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  bool started() const { return started_; }
  const std::string& why_not() const { return why_; }
  unsigned short port() const { return port_; }
  std::string uri() const { return "postgres://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres"; }

  // Stops the server (terminating every session) and starts it again; returns when it
  // accepts connections.
  bool restart() { return pg_ctl({"-m", "fast", "restart"}) == 0; }

 private:
  std::string data() const { return dir_ + "/data"; }
  int pg_ctl(std::vector<std::string> args) {
    std::vector<std::string> argv{
        std::string(kPgBin) + "/pg_ctl", "-D", data(), "-l", dir_ + "/server.log", "-w", "-t", "60"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    return as_postgres(argv, &out);
  }

  std::string dir_ = temp_dir();
  unsigned short port_ = free_port();
  std::string why_;
  bool started_ = false;
};

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

}  // namespace
}  // namespace idem::e2e
