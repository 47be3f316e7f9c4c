// The load of the store-outage tests (store_outage_e2e_test, sentinel_e2e_test) and what
// must hold after it: clients that send protected POSTs to one `idem serve` while the test
// breaks its store, and the checks that no key ran twice, every answer was definitive or
// 503, and protection resumed.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/outage_rig.h"
#include "testutil/eventually.h"

namespace idem::e2e {

using testutil::eventually;
using namespace std::chrono_literals;

// Why an answer given during an outage is not acceptable, or "" when it is: the upstream's
// 201 (forwarded or replayed), 409 in-progress (a duplicate that waited out `wait`) or 503
// store-unavailable with Retry-After. Status 0 is no answer: a hang past the client's
// deadline, or a connection that ended without one (the body says which).
inline std::string unacceptable(const Response& r) {
  const unsigned s = r.result_int();
  if (s == 201) return "";
  if (s == 409 && problem_type(r) == "urn:idem:problem:in-progress") return "";
  if (s == 503 && problem_type(r) == "urn:idem:problem:store-unavailable" &&
      !header(r, "Retry-After").empty())
    return "";
  if (s == 0) return "no answer: " + r.body();
  return "status " + std::to_string(s) + ": " + r.body();
}

// A fresh key is forwarded once, and its repeat replayed with the same response.
inline void expect_protected(const Gateway& g, const std::string& key) {
  Response first = g.post(key);
  EXPECT_EQ(first.result_int(), 201u) << key << ": " << first.body();
  EXPECT_FALSE(replayed(first)) << key;
  EXPECT_EQ(execution_of(first), 1) << key;
  Response again = g.post(key);
  EXPECT_EQ(again.result_int(), 201u) << key << ": " << again.body();
  EXPECT_TRUE(replayed(again)) << key;
  EXPECT_EQ(again.body(), first.body()) << key;
}

// Polls until protected requests are answered again, then checks `n` fresh keys end to end.
inline void expect_resumed(const Gateway& g, int n, std::chrono::seconds limit) {
  const auto t0 = OutageClock::now();
  ASSERT_TRUE(eventually([&] { return g.post(unique_key("probe")).result_int() == 201; }, limit))
      << "protected requests were not answered again within " << limit.count() << " s";
  std::printf("service resumed %lld ms after the store came back\n", millis(OutageClock::now() - t0));
  for (int i = 0; i < n; ++i) expect_protected(g, unique_key("after"));
}

// ---- the load and what must hold after it -----------------------------------------------

// Clients that send protected POSTs until stopped: each key is sent three times, by
// whichever threads come next, so repeats meet the first in flight and after it.
class Load {
 public:
  struct Answer {
    std::string key;
    Response response;
    OutageClock::duration took;
  };

  Load(const Gateway& g, int threads) : run_(unique_key("load")) {
    for (int t = 0; t < threads; ++t) threads_.emplace_back([this, &g] { send(g); });
  }
  ~Load() { stop(); }

  // Waits until `more` answers have come since the call (false after `limit`).
  bool wait_answers(std::size_t more, std::chrono::seconds limit = 30s) {
    std::unique_lock lock(mu_);
    const std::size_t target = answers_.size() + more;
    return cv_.wait_for(lock, limit, [&] { return answers_.size() >= target; });
  }

  void stop() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

  std::vector<Answer> answers() {
    std::lock_guard lock(mu_);
    return answers_;
  }

 private:
  void send(const Gateway& g) {
    while (!stop_) {
      const std::string key = run_ + "-" + std::to_string(next_++ / 3);
      const auto t0 = OutageClock::now();
      Response r = g.post(key, {{"X-Test-Delay-Ms", "20"}});
      const auto took = OutageClock::now() - t0;
      const bool refused = r.result_int() == 503;
      {
        std::lock_guard lock(mu_);
        answers_.push_back({key, std::move(r), took});
      }
      cv_.notify_all();
      // A client backs off after a 503 (Retry-After asks for a second; a short pause keeps
      // the load up without thousands of instant refusals).
      if (refused) std::this_thread::sleep_for(50ms);
    }
  }

  const std::string run_;
  std::atomic<long> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Answer> answers_;  // guarded by mu_
  std::vector<std::thread> threads_;
};

// What must hold once the load has stopped and the store is back:
//   - every answer was acceptable (unacceptable() above), none a hang;
//   - no key ran more than once, a key ran iff one of its answers was a 201, and its 201s
//     are one response (the first, then replays);
//   - a key that never ran has no claim left: a lost begin was given back;
//   - the client's retry of every key is answered: replayed where the key ran, run now
//     where it did not; after which every key has run exactly once.
inline void expect_nothing_ran_twice(const Gateway& g, const std::vector<Load::Answer>& answers) {
  std::map<std::string, std::vector<const Response*>> by_key;
  std::map<std::string, int> statuses;
  OutageClock::duration slowest{};
  for (const auto& a : answers) {
    EXPECT_EQ(unacceptable(a.response), "") << a.key << " after " << millis(a.took) << " ms";
    by_key[a.key].push_back(&a.response);
    ++statuses[std::to_string(a.response.result_int()) + (replayed(a.response) ? " replayed" : "")];
    slowest = std::max(slowest, a.took);
  }
  std::printf("%zu answers for %zu keys, slowest %lld ms:", answers.size(), by_key.size(), millis(slowest));
  for (const auto& [s, n] : statuses) std::printf(" %s: %d,", s.c_str(), n);
  std::printf("\n");

  auto runs = g.executions();
  std::set<std::string> never_ran;
  std::map<std::string, std::string> first_body;
  for (const auto& [key, rs] : by_key) {
    const Response* ok = nullptr;
    int forwarded = 0;
    for (const Response* r : rs) {
      if (r->result_int() != 201) continue;
      if (!ok) ok = r;
      forwarded += !replayed(*r);
      EXPECT_EQ(r->body(), ok->body()) << key << ": two different responses";
    }
    EXPECT_LE(runs[key], 1) << key << " ran " << runs[key] << " times";
    EXPECT_EQ(runs[key], ok ? 1 : 0) << key << ": ran " << runs[key] << " times, answered 201 "
                                     << (ok ? "" : "never");
    EXPECT_EQ(forwarded, runs[key]) << key;
    if (ok)
      first_body[key] = ok->body();
    else
      never_ran.insert(key);
  }

  std::set<std::string> claimed = never_ran;
  EXPECT_TRUE(eventually(
      [&] {
        for (auto it = claimed.begin(); it != claimed.end();)
          it = g.record_state(*it) == "absent" ? claimed.erase(it) : std::next(it);
        return claimed.empty();
      },
      30s))
      << claimed.size() << " keys that never ran are still claimed, e.g. " << *claimed.begin() << " ("
      << g.record_state(*claimed.begin()) << ")";

  // A key that ran but whose commit the outage lost is committed once the store answers
  // (the gateway retries it in the background: LostCommit above), so every repeat of a key
  // that ran is replayed its first response, and every key that never ran runs now.
  for (const auto& [k, rs] : by_key) {
    const std::string& key = k;  // a binding: clang 14 lambdas cannot capture one
    if (claimed.count(key)) continue;
    if (never_ran.count(key)) {
      // A store that is without a replica again (a Sentinel's second failover while the killed
      // master comes back) refuses writes that must reach one, 503 and retryable, until one
      // has caught up: the retry is told so, and runs once the store takes writes.
      Response r;
      EXPECT_TRUE(eventually(
          [&] {
            r = g.post(key);
            return r.result_int() != 503;
          },
          30s))
          << key << ": " << r.body();
      EXPECT_EQ(r.result_int(), 201u) << key << ": " << r.body();
      EXPECT_FALSE(replayed(r)) << key;
      continue;
    }
    EXPECT_TRUE(eventually([&] { return g.record_state(key) == "done"; }, 30s))
        << key << " ran, but its record stayed " << g.record_state(key);
    Response r = g.post(key);
    EXPECT_EQ(r.result_int(), 201u) << key << ": " << r.body();
    EXPECT_TRUE(replayed(r)) << key;
    EXPECT_EQ(r.body(), first_body[key]) << key;
  }
  std::printf("%zu keys had not run when the load stopped and were retried\n",
              never_ran.size() - claimed.size());
  runs = g.executions();
  for (const auto& [key, rs] : by_key) EXPECT_EQ(runs[key], 1) << key;
}

// After a failover under `load`: more answers come, then the load stops; the gateway saw
// store errors beyond `errors_before` (else nothing was tested) and nothing ran twice
// (expect_nothing_ran_twice). On a failure, prints what idem said on `log_file` (its
// diagnostics, not the request log), such as a connection ended without an answer: the
// directory goes with the test.
inline void expect_failover_kept_the_promise(const Gateway& g, Load& load, std::uint64_t errors_before,
                                             const std::string& log_file) {
  ASSERT_TRUE(load.wait_answers(100));
  load.stop();
  EXPECT_GT(g.store_errors(), errors_before) << "the gateway did not see the failover: nothing was tested";
  expect_nothing_ran_twice(g, load.answers());
  if (::testing::Test::HasFailure()) {
    std::istringstream log(read_text(log_file));
    for (std::string line; std::getline(log, line);) {
      if (line.starts_with("idem:")) std::printf("idem.log: %s\n", line.c_str());
    }
  }
}

}  // namespace idem::e2e
