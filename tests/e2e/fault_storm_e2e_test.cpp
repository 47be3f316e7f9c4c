// A fault storm ("The promise under faults"): two `idem serve` on one store of the test's own
// (Redis, PostgreSQL or MariaDB), a bounded load of clients that retry as real clients do,
// and faults injected at moments drawn from a seed the test prints:
//   - store outages longer than the 1 s lease: Redis made read-only (REPLICAOF a port where
//     nothing listens, then REPLICAOF NO ONE), PostgreSQL and MariaDB stopped and started;
//   - gateway A's own store connection cut by a fault proxy (refused and closed), while
//     gateway B still reaches the store;
//   - a gateway frozen (SIGSTOP) past the lease, then continued;
//   - gateway B's wall clock stepped back or forward by minutes (libfaketime);
//   - results near the store's limit: bodies just under and just over the routes'
//     max_result, which MariaDB's default max_allowed_packet barely holds.
// Each client has keys of its own, half on a route with on_uncertain: hold and half on one
// with retry; it sends each request to either gateway and repeats it, with the same key and
// body, after no answer, 502, 503, 504 or 409 in-progress, until a definitive answer or 8
// tries. Once every fault is healed, each key is sent once more, and the upstreams' own
// records (GET /_seen of both test upstreams) are held against every answer and every
// uncertain record (expect_promise_kept below says exactly what is checked).
//
// IDEM_FAULT_STORM_SECONDS (default 30) sets how long faults are injected;
// IDEM_FAULT_STORM_SEED replays a schedule. The faults' timing is real time, so a seed
// reproduces the schedule and the clients' choices, not every interleaving.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "e2e/outage_rig.h"
#include "testutil/fault_proxy.h"
#include "testutil/redis_server.h"

namespace idem::e2e {
namespace {

using Clock = OutageClock;
using namespace std::chrono_literals;
using testutil::eventually;
using testutil::FaultProxy;

// Within MariaDB's default max_allowed_packet: 8,380,416 bytes less the 64 KiB that idem
// keeps for a response's status and headers.
constexpr long kMaxResult = 7900 * 1024;
constexpr const char* kRoutes = R"(defaults:
  lease: 1s
  wait: 200ms
  upstream_timeout: 5s
  max_result: 7900KiB
routes:
  - name: hold
    match: { method: POST, path: /hold }
    on_uncertain: hold
  - name: retry
    match: { method: POST, path: /retry }
    on_uncertain: retry
)";
constexpr int kClients = 8;
constexpr int kTries = 8;
constexpr auto kClientTimeout = 2s;  // a client's patience: less than most freezes last

std::chrono::seconds storm_length() {
  const char* s = std::getenv("IDEM_FAULT_STORM_SECONDS");
  return std::chrono::seconds(s && *s ? std::atol(s) : 30);
}

std::uint64_t storm_seed() {
  const char* s = std::getenv("IDEM_FAULT_STORM_SEED");
  return s && *s ? std::strtoull(s, nullptr, 10) : std::random_device{}();
}

// ---- the store and its outages ------------------------------------------------------------

enum class Backend { redis, postgres, mariadb };

// One store server of the test's own, and the outage it suffers: Redis read-only, the
// others stopped and started again on the same port and files.
class StormStore {
 public:
  explicit StormStore(Backend backend) {
    if (backend == Backend::redis) redis_ = std::make_unique<testutil::RedisServer>();
    if (backend == Backend::postgres) pg_ = std::make_unique<PostgresServer>();
    if (backend == Backend::mariadb) maria_ = std::make_unique<MariadbServer>();
  }
  std::string why_not() const {
    if (redis_) return redis_->started() ? "" : "redis-server is not installed or did not start";
    return pg_ ? pg_->why_not() : maria_->why_not();
  }
  unsigned short port() const { return redis_ ? redis_->port() : pg_ ? pg_->port() : maria_->port(); }
  // The store's URI at `address` ("127.0.0.1:PORT": the server's, or a proxy's).
  std::string uri(const std::string& address) const {
    if (redis_) return "redis://" + address;
    if (pg_) return "postgres://postgres@" + address + "/postgres";
    return "mysql://idem:idem@" + address + "/idem";
  }
  bool begin_outage() {
    if (redis_) return contains(redis_->command({"REPLICAOF", "127.0.0.1", "1"}), "OK");
    return pg_ ? pg_->stop() : maria_->stop();
  }
  bool end_outage() {
    if (redis_) return contains(redis_->command({"REPLICAOF", "NO", "ONE"}), "OK");
    return pg_ ? pg_->start() : maria_->start();
  }
  const char* outage() const { return redis_ ? "read-only" : "stopped"; }

 private:
  std::unique_ptr<testutil::RedisServer> redis_;
  std::unique_ptr<PostgresServer> pg_;
  std::unique_ptr<MariadbServer> maria_;
};

// ---- the faults ------------------------------------------------------------------------------

struct Injected {
  int outages = 0, cuts = 0, freezes = 0, steps = 0;
};

// Gateway A (index 0) reaches the store through `proxy`; gateway B (index 1) runs under
// libfaketime reading `clock_file`. Faults come one at a time until `until`, each healed
// before the next; every fault and heal is written to `timeline`.
class Injector {
 public:
  Injector(StormStore& store, FaultProxy& proxy, std::vector<Gateway*> gateways, std::string clock_file,
           std::uint64_t seed)
      : store_(store),
        proxy_(proxy),
        gateways_(std::move(gateways)),
        clock_file_(std::move(clock_file)),
        rng_(seed) {}

  void run(Clock::time_point until) {
    start_ = Clock::now();
    while (Clock::now() < until) {
      std::this_thread::sleep_for(ms(200, 1500));  // the gap before the next fault
      if (Clock::now() >= until) break;
      // 1.5 to 7 leases: some outlast a client's patience (2 s), some the store calls'
      // deadline (op_timeout, 5 s), within which a store client waits for its server.
      const auto lasting = ms(1500, 7000);
      // Freezes and cuts leave a client without an answer most often (the takeovers the
      // storm is after): they come more often than the other two.
      switch (std::discrete_distribution<int>({25, 30, 30, 15})(rng_)) {
        case 0: {
          note(std::string("store ") + store_.outage() + " for " + std::to_string(lasting.count()) + " ms");
          if (!store_.begin_outage()) note("  (the outage did not begin)");
          std::this_thread::sleep_for(lasting);
          if (!store_.end_outage()) note("  FAILED to end the outage");
          ++injected.outages;
          break;
        }
        case 1:
          note("gateway A's store connection cut for " + std::to_string(lasting.count()) + " ms");
          proxy_.refuse();
          proxy_.cut_all();
          std::this_thread::sleep_for(lasting);
          proxy_.forward();
          ++injected.cuts;
          break;
        case 2: {
          const int g = std::uniform_int_distribution<int>(0, 1)(rng_);
          note(std::string("gateway ") + "AB"[g] + " frozen for " + std::to_string(lasting.count()) + " ms");
          gateways_[g]->process().signal(SIGSTOP);
          std::this_thread::sleep_for(lasting);
          gateways_[g]->process().signal(SIGCONT);
          ++injected.freezes;
          break;
        }
        default: {
          int minutes = 0;
          while (minutes == 0 || minutes == offset_minutes_)
            minutes = std::uniform_int_distribution<int>(-10, 10)(rng_);
          note("gateway B's clock stepped from " + std::to_string(offset_minutes_) + " to " +
               std::to_string(minutes) + " min");
          offset_minutes_ = minutes;
          write_file(clock_file_, (minutes > 0 ? "+" : "") + std::to_string(minutes * 60) + "\n");
          ++injected.steps;
          continue;  // a step stays until the next one
        }
      }
      note("  healed");
    }
  }

  // Back to a healthy world whatever happened: the store writable, the proxy forwarding,
  // both gateways running, gateway B's clock right.
  void heal_all() {
    store_.end_outage();
    proxy_.forward();
    for (Gateway* g : gateways_) g->process().signal(SIGCONT);
    write_file(clock_file_, "+0\n");
  }

  std::string timeline() const {
    std::lock_guard lock(mu_);
    return timeline_;
  }

  Injected injected;

 private:
  std::chrono::milliseconds ms(int lo, int hi) {
    return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng_));
  }
  void note(const std::string& what) {
    std::lock_guard lock(mu_);
    timeline_ += "  +" + std::to_string(millis(Clock::now() - start_)) + " ms: " + what + "\n";
  }

  StormStore& store_;
  FaultProxy& proxy_;
  std::vector<Gateway*> gateways_;
  std::string clock_file_;
  std::mt19937_64 rng_;
  int offset_minutes_ = 0;
  Clock::time_point start_;
  mutable std::mutex mu_;
  std::string timeline_;  // guarded by mu_
};

// ---- the clients ------------------------------------------------------------------------------

// One request a client makes, repeated with the same key and body until it is answered.
struct Plan {
  std::string key;
  std::string route;    // "hold" or "retry"
  long body_size = -1;  // X-Test-Body-Size, for a result near the limit; -1: the JSON echo
  int delay_ms = 0;     // X-Test-Delay-Ms
};

// What a client got, small enough to keep thousands: a large body is kept as "x*N" when it
// is N 'x' bytes (what the test upstream sends), "?*N" otherwise.
struct Answer {
  std::string key;
  int gateway = 0;
  bool after_storm = false;
  unsigned status = 0;
  std::string problem{};  // the problem type's name, "" for the upstream's own answers
  bool replayed = false;
  bool retry_after = false;
  std::string body;
};

Answer answer_of(const Plan& p, int gateway, bool after_storm, const Response& r) {
  Answer a;
  a.key = p.key;
  a.gateway = gateway;
  a.after_storm = after_storm;
  a.status = r.result_int();
  a.replayed = replayed(r);
  a.retry_after = !header(r, "Retry-After").empty();
  if (header(r, "Content-Type") == "application/problem+json") {
    a.problem = problem_type(r);
    if (a.problem.starts_with("urn:idem:problem:")) a.problem = a.problem.substr(17);
  }
  const std::string& b = r.body();
  if (b.size() <= 4096) {
    a.body = b;
  } else {
    const bool xs = std::all_of(b.begin(), b.end(), [](char c) { return c == 'x'; });
    a.body = std::string(xs ? "x*" : "?*") + std::to_string(b.size());
  }
  return a;
}

// No answer, the service unreachable or silent, the store down, or the first still running:
// a client sends the same request again.
bool worth_repeating(const Answer& a) {
  return a.status == 0 || a.status == 502 || a.status == 503 || a.status == 504 ||
         (a.status == 409 && a.problem == "in-progress");
}

class Clients {
 public:
  Clients(std::vector<Gateway*> gateways, std::uint64_t seed) : gateways_(std::move(gateways)), seed_(seed) {}

  // kClients threads, each sending keys of its own until `until`.
  void run(Clock::time_point until) {
    std::vector<std::thread> threads;
    for (int c = 0; c < kClients; ++c)
      threads.emplace_back([this, c, until] {
        std::mt19937_64 rng(seed_ * 1000003 + c);
        for (int n = 0; Clock::now() < until; ++n) {
          Plan p;
          p.route = rng() % 2 ? "hold" : "retry";
          p.key =
              p.route + "-" + std::to_string(::getpid()) + "-" + std::to_string(c) + "-" + std::to_string(n);
          if (rng() % 25 == 0) {
            p.body_size = kMaxResult + (rng() % 2 ? 4096 : -4096);
            ++(p.body_size > kMaxResult ? big_over : big_under);
          } else {
            p.delay_ms = static_cast<int>(rng() % 1000);  // so that faults begin mid-request
          }
          {
            std::lock_guard lock(mu_);
            plans_.push_back(p);
          }
          send(p, rng, false);
        }
      });
    for (auto& t : threads) t.join();
  }

  // Every key once more, after the storm; the keys that got no definitive answer.
  std::vector<std::string> repeat_all() {
    const std::vector<Plan> plans = this->plans();
    std::atomic<std::size_t> next{0};
    std::mutex mu;
    std::vector<std::string> unanswered;
    std::vector<std::thread> threads;
    for (int c = 0; c < kClients; ++c)
      threads.emplace_back([&, c] {
        std::mt19937_64 rng(seed_ * 7919 + c);
        for (std::size_t i; (i = next.fetch_add(1)) < plans.size();) {
          if (send(plans[i], rng, true)) continue;
          std::lock_guard lock(mu);
          unanswered.push_back(plans[i].key);
        }
      });
    for (auto& t : threads) t.join();
    return unanswered;
  }

  std::vector<Plan> plans() const {
    std::lock_guard lock(mu_);
    return plans_;
  }
  std::vector<Answer> answers() const {
    std::lock_guard lock(mu_);
    return answers_;
  }

  std::atomic<int> big_under{0}, big_over{0};

 private:
  // Sends `p` to a gateway drawn at random, again while the answer is worth repeating, at
  // most kTries times; true once an answer is definitive.
  bool send(const Plan& p, std::mt19937_64& rng, bool after_storm) {
    Headers headers{{"Idempotency-Key", p.key}, {"X-Test-Delay-Ms", std::to_string(p.delay_ms)}};
    if (p.body_size >= 0) headers.emplace_back("X-Test-Body-Size", std::to_string(p.body_size));
    for (int t = 0; t < kTries; ++t) {
      const int g = static_cast<int>(rng() % gateways_.size());
      const Answer a =
          answer_of(p, g, after_storm, gateways_[g]->post_to("/" + p.route, p.key, headers, kClientTimeout));
      {
        std::lock_guard lock(mu_);
        answers_.push_back(a);
      }
      if (!worth_repeating(a)) return true;
      // A client's backoff (Retry-After is a whole second at least; a shorter, jittered
      // pause keeps the repeats coming while faults last).
      if (a.status != 0) std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 600));
    }
    return false;
  }

  std::vector<Gateway*> gateways_;
  std::uint64_t seed_;
  mutable std::mutex mu_;
  std::vector<Plan> plans_;      // guarded by mu_
  std::vector<Answer> answers_;  // guarded by mu_
};

// ---- what the upstreams executed, and what the store holds ------------------------------

// One execution, from a test upstream's own log (GET /_seen).
struct Execution {
  int upstream = 0;
  std::uint64_t fence = 0;
  std::int64_t at_us = 0;  // when it arrived, system clock (comparable across upstreams)
  std::string answer;      // its response body, as Answer::body keeps it
};

// Every execution of every key, by key, from both upstreams. Each upstream numbers the
// executions of a key itself (the echo's "execution"), so each answer can be rebuilt.
std::map<std::string, std::vector<Execution>> executions_of(const std::vector<Gateway*>& gateways) {
  std::map<std::string, std::vector<Execution>> out;
  for (int u = 0; u < static_cast<int>(gateways.size()); ++u) {
    std::map<std::string, int> nth;
    for (const auto& v : gateways[u]->seen()) {
      const auto& r = v.as_object();
      std::string key, fence, size;
      for (const auto& f : r.at("fields").as_array()) {
        const auto name = f.as_array()[0].as_string();
        const std::string value(f.as_array()[1].as_string());
        if (name == "Idempotency-Key") key = value;
        if (name == "Idempotency-Fence") fence = value;
        if (name == "X-Test-Body-Size") size = value;
      }
      if (key.empty()) continue;
      Execution e{u, fence.empty() ? 0 : std::stoull(fence), r.at("at_us").to_number<std::int64_t>(), ""};
      const int n = ++nth[key];
      e.answer =
          !size.empty()
              ? "x*" + size
              : json::serialize(json::object{
                    {"key", key}, {"execution", n}, {"fence", fence}, {"body", Gateway::body_of(key)}});
      out[key].push_back(std::move(e));
    }
  }
  for (auto& [key, runs] : out)
    std::sort(runs.begin(), runs.end(),
              [](const Execution& a, const Execution& b) { return a.at_us < b.at_us; });
  return out;
}

// The records of `key_space` that the admin API lists with `filter` ("uncertain=true",
// "state=pending"), by key (without the "key_space:" prefix).
std::map<std::string, json::object> records(const Gateway& g, const std::string& key_space,
                                            const std::string& filter) {
  std::map<std::string, json::object> out;
  std::string cursor;
  for (int page = 0; page < 1000; ++page) {
    Response r =
        request(g.admin_port(), verb::get,
                "/v1/records?key_space=" + key_space + "&" + filter + "&limit=1000&cursor=" + cursor);
    if (r.result_int() != 200) {
      ADD_FAILURE() << "listing the records failed: " << r.result_int() << " " << r.body();
      break;
    }
    const auto listing = body_json(r);
    for (const auto& rec : listing.at("records").as_array()) {
      const std::string key(rec.at("key").as_string());
      out[key.substr(key_space.size() + 1)] = rec.as_object();
    }
    cursor = std::string(listing.at("next_cursor").as_string());
    if (cursor.empty()) break;
  }
  return out;
}

// ---- the checks -------------------------------------------------------------------------------

// What must hold once every fault is healed, the keys repeated and the claims settled:
//
//   E1 under hold, no key ran more than once (both upstreams' records together);
//   E2 every 201 a client got for a key is byte-equal to the answer of an execution of that
//      key (under hold, the only one): rebuilt from the upstream's record of it, so an
//      answer from nothing or from another key fails too; at most one client got a key's
//      answer not replayed per execution (Idempotent-Replayed says which was the first);
//   E3 every other answer is a documented problem (docs/http.md, "Every problem"):
//      409 in-progress and 503 store-unavailable or overloaded, each with Retry-After;
//      409 outcome-uncertain, on the hold route only; 409 result-not-stored, only for a
//      body over max_result; 502 upstream-unavailable and 504 upstream-timeout; and no
//      answer within the client's patience (status 0) only while faults were injected;
//   U  every record left uncertain names, in `uncertain`, the attempt whose outcome is
//      unknown, and the upstream's records agree with it: the operator's runbook
//      (docs/operations.md) asks the service whether it acted on that fence, and removes the
//      record when it did not; so
//        U1 the mark names a fence (not 0), an instance and a time, and a fence no greater
//           than the record's own (its own claim, or the one it took over);
//        U2 if the upstream executed the key, the mark names the fence of that execution:
//           naming another would lead the operator to remove the record of a request that
//           ran, and the retry would run it twice;
//        U3 if the upstream never executed the key (the claim was taken over before its
//           holder forwarded, and the holder never did), no client got a 201 for it: the
//           runbook's answer ("it did not run") is then true, and every gateway is healed
//           and idle, so no attempt under that fence is still on its way;
//        U4 no key whose answer a client got forwarded (a 201 not replayed) ends uncertain:
//           the gateway that forwarded it held the answer, and its late commit replaces the
//           mark (docs/gateway.md, "When the store fails": a known answer is never lost);
//   R  under retry, a key may run twice (docs/gateway.md): such keys are counted and
//      listed, and their executions must carry growing fences in the order they arrived.
struct Figures {
  std::map<int, int> runs_histogram;  // executions per key -> keys
  std::map<std::string, int> statuses;
  std::size_t answers = 0, uncertain = 0, uncertain_seen = 0, uncertain_unseen = 0, no_answer = 0;
  std::vector<std::string> retry_twice;
};

Figures expect_promise_kept(const std::vector<Plan>& plans, const std::vector<Answer>& answers,
                            const std::map<std::string, std::vector<Execution>>& runs,
                            const std::map<std::string, json::object>& uncertain) {
  Figures f;
  int reported = 0;
  auto fail = [&](const std::string& what) {
    if (++reported <= 30) ADD_FAILURE() << what;
  };
  std::map<std::string, const Plan*> plan_of;
  for (const Plan& p : plans) plan_of[p.key] = &p;
  const std::vector<Execution> none;
  auto runs_of = [&](const std::string& key) -> const std::vector<Execution>& {
    auto it = runs.find(key);
    return it == runs.end() ? none : it->second;
  };

  for (const Plan& p : plans) {
    const auto& rs = runs_of(p.key);
    ++f.runs_histogram[static_cast<int>(rs.size())];
    if (p.route == "hold" && rs.size() > 1)  // E1
      fail(p.key + " ran " + std::to_string(rs.size()) + " times under hold");
    if (p.route == "retry" && rs.size() > 1) {  // R
      f.retry_twice.push_back(p.key);
      for (std::size_t i = 1; i < rs.size(); ++i)
        if (rs[i].fence <= rs[i - 1].fence)
          fail(p.key + ": fence " + std::to_string(rs[i].fence) + " reached the service after fence " +
               std::to_string(rs[i - 1].fence));
    }
  }

  std::map<std::pair<std::string, std::string>, long> forwarded;  // (key, answer) -> not replayed
  std::set<std::string> forwarded_keys;
  for (const Answer& a : answers) {
    ++f.answers;
    const Plan& p = *plan_of.at(a.key);
    const auto& rs = runs_of(a.key);
    std::string status =
        a.status == 0 ? "no answer" : std::to_string(a.status) + (a.problem.empty() ? "" : " " + a.problem);
    if (a.status == 201) status += a.replayed ? " replayed" : " forwarded";
    ++f.statuses[status];
    const std::string where = a.key + " (" + p.route + ", gateway " + "AB"[a.gateway] +
                              (a.after_storm ? ", after the storm" : "") + "): " + status + " " +
                              a.body.substr(0, 300);
    if (a.status == 201) {  // E2
      const bool of_an_execution =
          std::any_of(rs.begin(), rs.end(), [&](const Execution& e) { return e.answer == a.body; });
      if (!of_an_execution) fail(where + " is the answer of no execution of this key");
      const auto ran =
          std::count_if(rs.begin(), rs.end(), [&](const Execution& e) { return e.answer == a.body; });
      if (!a.replayed && ++forwarded[{a.key, a.body}] > ran)
        fail(where + " was forwarded more often than it ran");
      if (!a.replayed) forwarded_keys.insert(a.key);
      continue;
    }
    bool documented = false;  // E3
    if (a.status == 0) {
      ++f.no_answer;
      documented = !a.after_storm;
    } else if (a.status == 409) {
      documented = (a.problem == "in-progress" && a.retry_after) ||
                   (a.problem == "outcome-uncertain" && p.route == "hold") ||
                   (a.problem == "result-not-stored" && p.body_size > kMaxResult);
    } else if (a.status == 503) {
      documented = (a.problem == "store-unavailable" || a.problem == "overloaded") && a.retry_after;
    } else {
      documented = (a.status == 502 && a.problem == "upstream-unavailable") ||
                   (a.status == 504 && a.problem == "upstream-timeout");
    }
    if (!documented) fail(where + " is not a documented answer");
  }

  for (const auto& [k, rec] : uncertain) {  // U
    const std::string& key = k;             // a binding: clang 14 lambdas cannot capture one
    ++f.uncertain;
    const auto& rs = runs_of(key);
    const std::string where = key + ": uncertain record " + json::serialize(rec) + ", ";
    if (!rec.contains("uncertain")) {
      fail(where + "names no attempt");
      continue;
    }
    const auto& mark = rec.at("uncertain").as_object();
    const auto fence = mark.at("fence").to_number<std::uint64_t>();
    if (fence == 0 || mark.at("instance").as_string().empty() || mark.at("at").as_string().empty())  // U1
      fail(where + "an incomplete mark");
    if (fence > rec.at("fence").to_number<std::uint64_t>()) fail(where + "a mark above the record's fence");
    if (!rs.empty()) {  // U2
      ++f.uncertain_seen;
      if (std::none_of(rs.begin(), rs.end(), [&](const Execution& e) { return e.fence == fence; }))
        fail(where + "but the service ran it under fence " + std::to_string(rs.front().fence));
    } else {  // U3
      ++f.uncertain_unseen;
      if (std::any_of(answers.begin(), answers.end(),
                      [&](const Answer& a) { return a.key == key && a.status == 201; }))
        fail(where + "never ran, but a client got a 201");
    }
    if (forwarded_keys.count(key))  // U4
      fail(where + "although a client got its answer forwarded: the known answer was lost");
  }
  if (reported > 30) ADD_FAILURE() << reported - 30 << " more failures";
  return f;
}

// ---- the test ---------------------------------------------------------------------------------

struct StormCase {
  std::string name;
  Backend backend;
  friend std::ostream& operator<<(std::ostream& os, const StormCase& c) { return os << c.name; }
};

class FaultStorm : public ::testing::TestWithParam<StormCase> {};

TEST_P(FaultStorm, TwoGatewaysKeepThePromiseUnderOutagesFreezesClockStepsAndLargeResults) {
  StormStore store(GetParam().backend);
  if (!store.why_not().empty()) GTEST_SKIP() << store.why_not();
  const std::uint64_t seed = storm_seed();
  const auto length = storm_length();
  std::printf(
      "fault storm on %s: seed %llu, %lld s (IDEM_FAULT_STORM_SEED=%llu IDEM_FAULT_STORM_SECONDS=%lld)\n",
      GetParam().name.c_str(), static_cast<unsigned long long>(seed), static_cast<long long>(length.count()),
      static_cast<unsigned long long>(seed), static_cast<long long>(length.count()));
  std::fflush(stdout);

  FaultProxy proxy("127.0.0.1", store.port());
  const testutil::TempDir dir_a, dir_b;
  const std::string clock_file = dir_b.file("faketime");
  write_file(clock_file, "+0\n");
  Gateway a(dir_a.path().string(), store.uri(proxy.address()), kRoutes);
  Gateway b(dir_b.path().string(), store.uri("127.0.0.1:" + std::to_string(store.port())), kRoutes,
            clock_file);
  ASSERT_TRUE(a.started() && b.started()) << "see " << dir_a.path() << " and " << dir_b.path();
  const std::vector<Gateway*> gateways{&a, &b};
  for (Gateway* g : gateways)  // connected, tables and scripts in place, before the faults
    for (const char* route : {"/hold", "/retry"})
      ASSERT_EQ(g->post_to(route, unique_key("warm"), {{"Idempotency-Key", unique_key("warm")}}).result_int(),
                201u);

  Injector injector(store, proxy, gateways, clock_file, seed);
  Clients clients(gateways, seed);
  const auto until = Clock::now() + length;
  std::thread faults([&] { injector.run(until); });
  clients.run(until);
  faults.join();
  injector.heal_all();

  // Healed: both gateways answer, every key is sent once more, and the claims settle.
  for (Gateway* g : gateways)
    ASSERT_TRUE(
        eventually([&] { return request(g->admin_port(), verb::get, "/readyz").result_int() == 200; }, 60s))
        << "a gateway is not ready after the storm";
  const std::vector<std::string> unanswered = clients.repeat_all();
  EXPECT_TRUE(unanswered.empty()) << unanswered.size()
                                  << " keys got no definitive answer after the storm, e.g. "
                                  << unanswered.front();
  // Under hold nothing is left pending once the gateways have settled: no claim is left
  // behind (a lost begin is given back, a takeover marks the record).
  EXPECT_TRUE(eventually([&] { return records(b, "hold", "state=pending").empty(); }, 60s))
      << records(b, "hold", "state=pending").size() << " claims still pending under hold";

  const auto runs = executions_of(gateways);
  auto uncertain = records(b, "hold", "uncertain=true");
  for (auto& [key, rec] : records(b, "retry", "uncertain=true")) uncertain[key] = rec;
  const std::vector<Plan> plans = clients.plans();
  const Figures f = expect_promise_kept(plans, clients.answers(), runs, uncertain);

  std::string histogram, statuses;
  for (const auto& [n, keys] : f.runs_histogram)
    histogram += " " + std::to_string(n) + ":" + std::to_string(keys);
  for (const auto& [s, n] : f.statuses)
    statuses += (statuses.empty() ? "" : ", ") + s + " " + std::to_string(n);
  const auto hold_keys =
      std::count_if(plans.begin(), plans.end(), [](const Plan& p) { return p.route == "hold"; });
  const Injected& i = injector.injected;
  std::printf(
      "fault storm on %s, seed %llu, %lld s: injected %d store outages (%s), %d cuts of gateway A's store, "
      "%d freezes, %d clock steps, %d large results (%d stored, %d over max_result); %zu keys (%ld hold, %ld "
      "retry); executions per key:%s; %zu answers checked (%zu without an answer in %lld s); %zu uncertain "
      "records, %zu fences checked (%zu the service saw, %zu it never received); retry keys run twice: %zu\n",
      GetParam().name.c_str(), static_cast<unsigned long long>(seed), static_cast<long long>(length.count()),
      i.outages, store.outage(), i.cuts, i.freezes, i.steps, clients.big_under + clients.big_over,
      clients.big_under.load(), clients.big_over.load(), plans.size(), static_cast<long>(hold_keys),
      static_cast<long>(plans.size() - hold_keys), histogram.c_str(), f.answers, f.no_answer,
      static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(kClientTimeout).count()),
      f.uncertain, f.uncertain_seen + f.uncertain_unseen, f.uncertain_seen, f.uncertain_unseen,
      f.retry_twice.size());
  std::printf("answers: %s\n", statuses.c_str());
  for (const std::string& key : f.retry_twice) std::printf("run twice under retry: %s\n", key.c_str());
  std::printf("the faults, in order:\n%s", injector.timeline().c_str());
}

INSTANTIATE_TEST_SUITE_P(Stores, FaultStorm,
                         ::testing::Values(StormCase{"redis", Backend::redis},
                                           StormCase{"postgres", Backend::postgres},
                                           StormCase{"mariadb", Backend::mariadb}),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace idem::e2e
