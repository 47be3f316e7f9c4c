// Checks the SQL stores' own tests share (tests/stores/postgres_test.cpp, mysql_test.cpp): what
// each asserts holds for both servers; the tests give them their stores and their way of talking
// to the server.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "idem/open.h"
#include "idem/store.h"
#include "stores/race.h"

namespace idem::testutil {

// Runs SQL on the test's own connection; the first column of the first row, "" when none.
using RunSql = std::function<std::string(const std::string& sql)>;

// 48 threads on two stores race for one key, five times: exactly one acquires each time.
inline void expect_racing_stores_acquire_once(Store& a, Store& b) {
  using namespace std::chrono_literals;
  for (int round = 0; round < 5; ++round) {
    const std::string key = "race-" + std::to_string(round);
    constexpr int kThreads = 48;
    const auto n = race_begin({&a, &b}, {"s", key, "fp", 60s, 60s}, kThreads);
    EXPECT_EQ(n.acquired, 1) << key;
    EXPECT_EQ(n.in_progress, kThreads - 1) << key;
    EXPECT_EQ(n.other, 0) << key;
  }
}

// Eight threads open stores on `uri` at once, each creating the tables if missing; `tables`
// counts the test's tables: none before, three after, and the stores share them.
inline void expect_concurrent_opens_create_the_tables_once(const std::string& uri,
                                                           const std::function<std::string()>& tables) {
  using namespace std::chrono_literals;
  EXPECT_EQ(tables(), "0");
  constexpr int kOpeners = 8;
  std::vector<std::unique_ptr<Store>> stores(kOpeners);
  std::vector<std::string> errors(kOpeners);
  std::latch start(kOpeners);
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      auto s = open_store(uri);
      if (s) stores[i] = std::move(*s);
      if (!s) errors[i] = s.status().to_string();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kOpeners; ++i) ASSERT_TRUE(stores[i]) << errors[i];
  EXPECT_EQ(tables(), "3");
  // Statuses, not value(): a store call that fails says why.
  const auto begun = stores[0]->begin({"s", "k", "", 60s, 60s});
  ASSERT_TRUE(begun.is_ok()) << begun.status().to_string();
  const auto committed = stores[kOpeners - 1]->commit({"s", "k", begun->fence, "r", 60s});
  ASSERT_TRUE(committed.is_ok()) << committed.status().to_string();
  EXPECT_EQ(*committed, CommitOutcome::committed);
  const auto replayed = stores[3]->begin({"s", "k", "", 60s, 60s});
  ASSERT_TRUE(replayed.is_ok()) << replayed.status().to_string();
  EXPECT_EQ(replayed->result, "r");
}

// Calls made together share a transaction; a statement that fails (here: a lease so long that
// now + lease overflows the 64-bit column) fails only its own call, and the others still run.
inline void expect_a_failing_statement_fails_only_its_call(Store& s) {
  using namespace std::chrono_literals;
  constexpr int kCalls = 60;
  std::atomic<int> acquired{0}, answered{0};
  std::vector<Result<BeginOutcome>> bad;
  std::mutex mu;
  for (int i = 0; i < kCalls; ++i) {
    const bool overflow = i == kCalls / 2;
    BeginArgs a{"s", "k" + std::to_string(i), "", overflow ? Duration::max() : Duration(60s), 60s};
    s.begin(std::move(a), [&, overflow](Result<BeginOutcome> r) {
      if (overflow) {
        std::lock_guard lock(mu);
        bad.push_back(std::move(r));
      } else if (r && r->kind == BeginOutcome::Kind::acquired) {
        ++acquired;
      }
      ++answered;
      answered.notify_all();
    });
  }
  for (int n = answered.load(); n < kCalls; n = answered.load()) answered.wait(n);
  EXPECT_EQ(acquired, kCalls - 1);
  ASSERT_EQ(bad.size(), 1u);
  ASSERT_FALSE(bad[0].is_ok());
  EXPECT_EQ(bad[0].status().code(), StatusCode::invalid_argument) << bad[0].status().to_string();
}

// The server's clock steps back by an hour: simulated by moving the stored instants of released
// records and unlocked locks (tables PREFIXrecords, PREFIXlocks) an hour into the future. They
// stay gone.
inline void expect_removals_outlive_a_clock_step_back(Store& s, const RunSql& sql,
                                                      const std::string& prefix) {
  using namespace std::chrono_literals;
  using Kind = BeginOutcome::Kind;
  const Fence released = s.begin({"s", "released", "fp", 60s, 60s}).value().fence;
  ASSERT_EQ(s.release({"s", "released", released}).value(), ReleaseOutcome::released);
  ASSERT_EQ(s.begin({"s", "abandoned", "", 60s, 60s, "gw"}).value().kind, Kind::acquired);
  ASSERT_EQ(s.abandon({"s", "abandoned", "gw"}).value(), ReleaseOutcome::released);
  const Fence removed = s.begin({"s", "removed", "", 60s, 60s}).value().fence;
  ASSERT_TRUE(s.remove({"s", "removed"}).value());
  const Fence locked = s.lock({"lock", "owner-1", 60s}).value().fence;
  ASSERT_EQ(s.unlock({"lock", "owner-1"}).value(), UnlockOutcome::released);
  ASSERT_EQ(sql("UPDATE " + prefix + "records SET expires_at = expires_at + 3600000000"), "");
  ASSERT_EQ(sql("UPDATE " + prefix + "locks SET expires_at = expires_at + 3600000000"), "");

  for (const char* key : {"released", "abandoned", "removed"}) {
    EXPECT_FALSE(s.get({"s", key}).value().has_value()) << key;
    EXPECT_FALSE(s.remove({"s", key}).value()) << key;
    EXPECT_EQ(s.commit({"s", key, released, "r", 60s}).value(), CommitOutcome::fenced) << key;
  }
  auto again = s.begin({"s", "released", "other-fp", 60s, 60s});
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(again->kind, Kind::acquired);  // not mismatch: the old fingerprint went too
  EXPECT_FALSE(again->recovered);
  EXPECT_GT(again->fence, released);
  EXPECT_GT(s.begin({"s", "removed", "", 60s, 60s}).value().fence, removed);

  EXPECT_EQ(s.extend_lock({"lock", "owner-1", 60s}).value(), LockExtendOutcome::not_owner);
  EXPECT_EQ(s.unlock({"lock", "owner-1"}).value(), UnlockOutcome::not_owner);
  auto relock = s.lock({"lock", "owner-2", 60s});
  ASSERT_TRUE(relock.is_ok()) << relock.status().to_string();
  ASSERT_EQ(relock->kind, LockOutcome::Kind::locked);
  EXPECT_GT(relock->fence, locked);
  EXPECT_EQ(s.lock({"lock", "owner-1", 60s}).value().kind, LockOutcome::Kind::busy);
}

// A store opened with sweep_interval = 100ms deletes an expired record (table PREFIXrecords) by
// itself.
inline void expect_the_periodic_sweep_runs(Store& s, const RunSql& sql, const std::string& prefix) {
  using namespace std::chrono_literals;
  const Fence f = s.begin({"s", "k", "", 60s, 60s}).value().fence;
  ASSERT_EQ(s.commit({"s", "k", f, "r", 50ms}).value(), CommitOutcome::committed);
  std::string left = "1";
  for (int i = 0; i < 50 && left != "0"; ++i) {
    std::this_thread::sleep_for(50ms);
    left = sql("SELECT count(*) FROM " + prefix + "records");
  }
  EXPECT_EQ(left, "0");
}

// A store opened with op_timeout = 500ms, whose begin of ("s", "k") `hold` blocks on the server
// until `release`: deadline_exceeded after op_timeout, then service resumes.
inline void expect_a_blocked_call_misses_its_deadline(Store& s, const std::function<void()>& hold,
                                                      const std::function<void()>& release) {
  using namespace std::chrono_literals;
  // Connected and answering first (under TSan on a busy machine a first call can take longer
  // than this short op_timeout).
  bool up = false;
  for (int i = 0; i < 40 && !up; ++i) up = s.ping().is_ok();
  ASSERT_TRUE(up);
  hold();
  const auto started = std::chrono::steady_clock::now();
  auto r = s.begin({"s", "k", "", 60s, 60s});
  const auto waited = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::deadline_exceeded) << r.status().to_string();
  EXPECT_GE(waited, 450ms);
  EXPECT_LT(waited, 3s);

  release();
  Result<BeginOutcome> again = unavailable("not tried");
  for (int i = 0; i < 100 && !again.is_ok(); ++i) {
    again = s.begin({"s", "k2", "", 60s, 60s});
    if (!again) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(again->kind, BeginOutcome::Kind::acquired);
}

// Reads a committed record until the store answers again (within `patience`) after its server
// went away.
inline Result<std::optional<Record>> get_once_back(Store& s, const RecordId& id,
                                                   std::chrono::seconds patience) {
  const auto started = std::chrono::steady_clock::now();
  Result<std::optional<Record>> got = unavailable("not tried");
  while (!got && std::chrono::steady_clock::now() - started < patience) {
    got = s.get(id);
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return got;
}

// A real restart of the server (the shell command `restart`) under load from four threads: calls
// fail unavailable or deadline_exceeded, never otherwise, and service resumes within seconds.
inline void expect_a_restart_is_survived(Store& s, const char* restart) {
  using namespace std::chrono_literals;
  const Fence f = s.begin({"s", "before", "", 60s, 60s}).value().fence;
  ASSERT_EQ(s.commit({"s", "before", f, "kept", 60s}).value(), CommitOutcome::committed);

  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0}, wrong{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      for (int i = 0; !stop; ++i) {
        auto r = s.begin({"s", "load-" + std::to_string(t) + "-" + std::to_string(i), "", 60s, 60s});
        if (r) {
          ++ok;
        } else if (r.status().code() == StatusCode::unavailable ||
                   r.status().code() == StatusCode::deadline_exceeded) {
          ++failed;
        } else {
          ++wrong;
        }
      }
    });
  }
  std::this_thread::sleep_for(200ms);
  ASSERT_EQ(std::system(restart), 0) << restart;
  const auto restarted = std::chrono::steady_clock::now();
  auto got = get_once_back(s, {"s", "before"}, 10s);
  const auto resumed = std::chrono::steady_clock::now() - restarted;
  stop = true;
  for (auto& t : load) t.join();
  std::printf("restart: service resumed %lld ms after the restart returned; %d calls ok, %d failed\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(resumed).count()),
              ok.load(), failed.load());
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->result, "kept");
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(ok, 0);
}

}  // namespace idem::testutil
