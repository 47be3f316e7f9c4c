// Engine throughput: begin+commit pairs per second and replay hits per second, per
// backend, with 1 and 64 concurrent callers. Two kinds of callers:
//   coro    Asio coroutines on one io_context thread (how the gateway calls the store)
//   thread  OS threads making blocking calls (how a plain consumer calls it)
// Run: build/release/bench/store_bench --benchmark_counters_tabular=true
// With IDEM_BENCH_REDIS_URL, IDEM_BENCH_REDIS_CLUSTER_URL, IDEM_BENCH_POSTGRES_URL or
// IDEM_BENCH_MYSQL_URL set, those stores run too, each under a key prefix (Redis) or tables
// (PostgreSQL, MySQL) of its own.
// items_per_second is pairs/s (Pairs) or hits/s (Replay).
//
// raw_sqlite/normal runs the SQLite store's own claim and complete statements on a bare
// connection (one thread, BEGIN IMMEDIATE ... COMMIT around 64 claims and 64 completions,
// synchronous=NORMAL): the ceiling of the store, printed as a ratio after the table.
//
// foreign_writes_idle|busy/sqlite_normal: the time of one foreign_writes() call (a replay
// cache asks it per hit) on an idle store and on one whose writer is busy with pairs.
//
// The scale run (bench/stores/scale): with IDEM_BENCH_SCALE_URI naming a store filled by
// bench/fill_store, scale_pairs/64 runs begin+commit pairs with 64 coroutine callers, random
// 32-character keys and 200-byte results on it (scope "scale"); rss_mb is the process's
// resident set, cpu_us_per_pair the CPU time of all its threads per pair.
#include <benchmark/benchmark.h>

#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "idem/async.h"
#include "idem/open.h"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using idem::Store;

constexpr std::uint64_t kOpsPerIteration = 20'000;

std::string fresh_file() {
  static int n = 0;
  const auto dir = std::filesystem::temp_directory_path() / "idem-bench";
  std::filesystem::create_directories(dir);
  const auto file = dir / ("bench-" + std::to_string(getpid()) + "-" + std::to_string(n++) + ".db");
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(file.string() + ext);
  return file.string();
}

std::unique_ptr<Store> open_fresh(const std::string& uri_base) {
  static int n = 0;
  std::string uri = uri_base;
  if (uri.rfind("sqlite:", 0) == 0) {
    const auto file = fresh_file();
    const auto q = uri.find('?');
    uri = "sqlite:" + file + (q == std::string::npos ? "" : uri.substr(q));
  } else if (uri.rfind("postgres", 0) == 0 || uri.rfind("mysql:", 0) == 0) {
    uri += (uri.find('?') == std::string::npos ? "?" : "&") + std::string("table_prefix=idem_bench_") +
           std::to_string(getpid()) + "_" + std::to_string(n++) + "_";
  }
  if (uri.rfind("redis", 0) == 0) {
    uri += (uri.find('?') == std::string::npos ? "?" : "&") + std::string("prefix=bench-") +
           std::to_string(getpid()) + "-" + std::to_string(n++) + ":";
  }
  auto s = idem::open_store(uri);
  if (!s) throw std::runtime_error(s.status().to_string());
  return std::move(*s);
}

idem::BeginArgs begin_args(std::string key) { return {"bench", std::move(key), "fp", 60s, 1h}; }

// One begin+commit on a fresh key, or one begin that replays.
struct Pair {
  static asio::awaitable<void> coro(Store& s, std::uint64_t i) {
    // Arguments are named locals: g++ 12 mis-destroys temporaries inside co_await.
    idem::BeginArgs args = begin_args("k" + std::to_string(i));
    auto b = co_await idem::async_begin(s, std::move(args), asio::use_awaitable);
    if (!b || b->kind != idem::BeginOutcome::Kind::acquired) throw std::runtime_error("begin failed");
    idem::CommitArgs c{"bench", "k" + std::to_string(i), b->fence, "{\"order\":42}", 1h};
    auto r = co_await idem::async_commit(s, std::move(c), asio::use_awaitable);
    if (!r || *r != idem::CommitOutcome::committed) throw std::runtime_error("commit failed");
  }
  static void blocking(Store& s, std::uint64_t i) {
    auto b = s.begin(begin_args("k" + std::to_string(i)));
    if (!b || b->kind != idem::BeginOutcome::Kind::acquired) throw std::runtime_error("begin failed");
    auto r = s.commit({"bench", "k" + std::to_string(i), b->fence, "{\"order\":42}", 1h});
    if (!r || *r != idem::CommitOutcome::committed) throw std::runtime_error("commit failed");
  }
};

constexpr std::uint64_t kReplayKeys = 1000;

struct Replay {
  static asio::awaitable<void> coro(Store& s, std::uint64_t i) {
    idem::BeginArgs args = begin_args("r" + std::to_string(i % kReplayKeys));
    auto b = co_await idem::async_begin(s, std::move(args), asio::use_awaitable);
    if (!b || b->kind != idem::BeginOutcome::Kind::replay) throw std::runtime_error("not a replay");
  }
  static void blocking(Store& s, std::uint64_t i) {
    auto b = s.begin(begin_args("r" + std::to_string(i % kReplayKeys)));
    if (!b || b->kind != idem::BeginOutcome::Kind::replay) throw std::runtime_error("not a replay");
  }
  static void prepare(Store& s) {
    for (std::uint64_t i = 0; i < kReplayKeys; ++i) {
      auto b = s.begin(begin_args("r" + std::to_string(i)));
      if (!s.commit({"bench", "r" + std::to_string(i), b.value().fence, std::string(200, 'x'), 1h})) {
        throw std::runtime_error("prepare failed");
      }
    }
  }
};

template <class Op>
void run_coro(Store& s, int callers, std::uint64_t first, std::uint64_t count) {
  asio::io_context io(1);
  std::uint64_t next = first;  // one thread runs every coroutine: no atomics needed
  const std::uint64_t end = first + count;
  for (int c = 0; c < callers; ++c) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          while (next < end) co_await Op::coro(s, next++);
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
  }
  io.run();
}

template <class Op>
void run_threads(Store& s, int callers, std::uint64_t first, std::uint64_t count) {
  std::atomic<std::uint64_t> next{first};
  const std::uint64_t end = first + count;
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c) {
    threads.emplace_back([&] {
      for (auto i = next++; i < end; i = next++) Op::blocking(s, i);
    });
  }
  for (auto& t : threads) t.join();
}

template <class Op, bool kCoro>
void bench(benchmark::State& state, const char* uri) {
  auto store = open_fresh(uri);
  if constexpr (requires { Op::prepare(*store); }) Op::prepare(*store);
  const int callers = static_cast<int>(state.range(0));
  std::uint64_t first = 0;
  for (auto _ : state) {
    if constexpr (kCoro) {
      run_coro<Op>(*store, callers, first, kOpsPerIteration);
    } else {
      run_threads<Op>(*store, callers, first, kOpsPerIteration);
    }
    first += kOpsPerIteration;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(first));
}

// BENCHMARK_CAPTURE pastes the function's name into an identifier: give each one a name.
void pairs_coro(benchmark::State& s, const char* uri) { bench<Pair, true>(s, uri); }
void pairs_thread(benchmark::State& s, const char* uri) { bench<Pair, false>(s, uri); }
void replay_coro(benchmark::State& s, const char* uri) { bench<Replay, true>(s, uri); }
void replay_thread(benchmark::State& s, const char* uri) { bench<Replay, false>(s, uri); }

#define IDEM_BENCH(fn, name, uri) \
  BENCHMARK_CAPTURE(fn, name, uri)->Arg(1)->Arg(64)->UseRealTime()->MinTime(1.0)

IDEM_BENCH(pairs_coro, memory, "memory:");
IDEM_BENCH(pairs_thread, memory, "memory:");
IDEM_BENCH(pairs_coro, sqlite_normal, "sqlite:?sync=normal");
IDEM_BENCH(pairs_thread, sqlite_normal, "sqlite:?sync=normal");
IDEM_BENCH(pairs_coro, sqlite_full, "sqlite:?sync=full");
IDEM_BENCH(pairs_thread, sqlite_full, "sqlite:?sync=full");
IDEM_BENCH(replay_coro, memory, "memory:");
IDEM_BENCH(replay_thread, memory, "memory:");
IDEM_BENCH(replay_coro, sqlite_normal, "sqlite:?sync=normal");
IDEM_BENCH(replay_thread, sqlite_normal, "sqlite:?sync=normal");

// ---- foreign_writes(): what a replay cache pays per hit ---------------------------------

// Calls to foreign_writes() on an idle store, and while 64 coroutine callers keep its writer
// busy with pairs on another thread (the time per call includes waiting for a COMMIT).
void foreign_writes(benchmark::State& state, const char* uri, bool busy) {
  auto store = open_fresh(uri);
  std::atomic<bool> stop{false};
  std::thread load;
  if (busy) {
    load = std::thread([&] {
      for (std::uint64_t first = 0; !stop; first += 2000) run_coro<Pair>(*store, 64, first, 2000);
    });
  }
  for (auto _ : state) benchmark::DoNotOptimize(store->foreign_writes());
  stop = true;
  if (load.joinable()) load.join();
}
void foreign_writes_idle(benchmark::State& s, const char* uri) { foreign_writes(s, uri, false); }
void foreign_writes_busy(benchmark::State& s, const char* uri) { foreign_writes(s, uri, true); }
BENCHMARK_CAPTURE(foreign_writes_idle, sqlite_normal, "sqlite:?sync=normal")->UseRealTime();
BENCHMARK_CAPTURE(foreign_writes_busy, sqlite_normal, "sqlite:?sync=normal")->UseRealTime();

// ---- the raw SQLite ceiling ------------------------------------------------------------

struct RawStatement {
  sqlite3_stmt* s = nullptr;
  RawStatement(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(sqlite3_errmsg(db));
  }
  ~RawStatement() { sqlite3_finalize(s); }
  // Binds texts and integers in order, steps once and returns the first column of a row (0 if none).
  template <class... A>
  std::int64_t run(const A&... args) {
    int i = 0;
    (bind(++i, args), ...);
    const int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) throw std::runtime_error(sqlite3_errstr(rc));
    const std::int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    return v;
  }
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(s, i, v); }
};

// The store's statements for one claim (read the row, insert a pending one) and one
// completion (read it, update it to done by rowid), 64 of each per transaction; the WAL is
// copied back by a second connection on another thread, as the store does.
void raw_sqlite(benchmark::State& state) {
  const std::string file = fresh_file();
  if (!idem::open_store("sqlite:" + file)) throw std::runtime_error("raw_sqlite: cannot create the schema");
  sqlite3* db = nullptr;
  sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  sqlite3_exec(db, "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = -8192",
               nullptr, nullptr, nullptr);
  std::atomic<bool> stop{false};
  std::thread checkpointer([&] {
    sqlite3* c = nullptr;
    sqlite3_open_v2(file.c_str(), &c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
    while (!stop) {
      sqlite3_wal_checkpoint_v2(c, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      std::this_thread::sleep_for(10ms);
    }
    sqlite3_close(c);
  });
  {
    RawStatement begin(db, "BEGIN IMMEDIATE"), commit(db, "COMMIT");
    RawStatement get(db,
                     "SELECT rowid, state, fence, fingerprint, lease_until, expires_at, result, owner FROM "
                     "idem_records WHERE scope = ?1 AND key = ?2");
    RawStatement insert(db,
                        "INSERT INTO idem_records (scope, key, state, fence, fingerprint, lease_until, "
                        "expires_at, result, owner) VALUES (?1, ?2, 'pending', ?3, 'fp', ?4, ?4, x'', x'')");
    RawStatement update(db,
                        "UPDATE idem_records SET state = 'done', fence = ?2, lease_until = NULL, "
                        "expires_at = ?3, result = ?4 WHERE rowid = ?1");
    const std::string scope = "bench", result = "{\"order\":42}";
    constexpr int kPerTransaction = 64;
    std::int64_t next = 0, pairs = 0;
    std::vector<std::int64_t> claimed;
    std::vector<std::int64_t> rowids;
    for (auto _ : state) {
      for (std::uint64_t done = 0; done < kOpsPerIteration; done += kPerTransaction) {
        begin.run();
        for (std::size_t j = 0; j < claimed.size(); ++j) {
          const std::string key = "k" + std::to_string(claimed[j]);
          const std::int64_t rowid = get.run(scope, key);
          update.run(rowid, claimed[j] + 1, std::int64_t{4'000'000'000'000'000}, result);
        }
        pairs += static_cast<std::int64_t>(claimed.size());
        claimed.clear();
        for (int j = 0; j < kPerTransaction; ++j, ++next) {
          const std::string key = "k" + std::to_string(next);
          if (get.run(scope, key) != 0) throw std::runtime_error("raw: key exists");
          insert.run(scope, key, next + 1, std::int64_t{4'000'000'000'000'000});
          claimed.push_back(next);
        }
        commit.run();
      }
    }
    state.SetItemsProcessed(pairs);
  }
  stop = true;
  checkpointer.join();
  sqlite3_close(db);
}
BENCHMARK(raw_sqlite)->Name("raw_sqlite/normal")->UseRealTime()->MinTime(1.0);

// ---- the scale run ---------------------------------------------------------------------

double rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return 0;
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

// Keys as clients send them (random, 32 characters), so claims land all over the index.
std::string random_key(std::uint64_t i) {
  static const std::uint64_t salt = std::random_device{}();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx",
                static_cast<unsigned long long>(std::hash<std::uint64_t>{}(i ^ salt) * 0x9E3779B97F4A7C15ull),
                static_cast<unsigned long long>(i));
  return buf;
}

struct ScalePair {
  static asio::awaitable<void> coro(Store& s, std::uint64_t i) {
    // A scope of their own: bench/stores/scale deletes them after each run.
    idem::BeginArgs args{"scale", random_key(i), "fp", 60s, 1h};
    auto b = co_await idem::async_begin(s, std::move(args), asio::use_awaitable);
    if (!b || b->kind != idem::BeginOutcome::Kind::acquired) throw std::runtime_error("begin failed");
    idem::CommitArgs c{"scale", random_key(i), b->fence, std::string(200, 'x'), 1h};
    auto r = co_await idem::async_commit(s, std::move(c), asio::use_awaitable);
    if (!r || *r != idem::CommitOutcome::committed) throw std::runtime_error("commit failed");
  }
};

void scale_pairs(benchmark::State& state, const char* uri) {
  auto opened = idem::open_store(uri);
  if (!opened) throw std::runtime_error(opened.status().to_string());
  static std::uint64_t next = 0;  // the store persists: every run of this benchmark takes new keys
  const std::uint64_t first = next;
  const double cpu_before = process_cpu_seconds();
  for (auto _ : state) {
    run_coro<ScalePair>(**opened, static_cast<int>(state.range(0)), next, kOpsPerIteration);
    next += kOpsPerIteration;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(next - first));
  state.counters["rss_mb"] = rss_mb();
  // CPU of every thread (writer, checkpointer, callers) per pair: what a shared, noisy
  // machine changes least.
  state.counters["cpu_us_per_pair"] = (process_cpu_seconds() - cpu_before) * 1e6 /
                                      static_cast<double>(std::max<std::uint64_t>(next - first, 1));
}

// Prints the table as usual, then each store's rate over the raw SQLite ceiling.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const auto it = r.counters.find("items_per_second");
      if (it != r.counters.end()) rates_[r.benchmark_name()] = it->second;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    double raw = 0;
    for (const auto& [name, rate] : rates_) {
      if (name.rfind("raw_sqlite/", 0) == 0) raw = rate;
    }
    if (raw <= 0) return;
    std::printf("\nraw_sqlite/normal: %.0f pairs/s\n", raw);
    for (const auto& [name, rate] : rates_) {
      if (name.rfind("pairs_", 0) == 0 && name.find("sqlite") != std::string::npos) {
        std::printf("%-50s %8.0f pairs/s = %.2fx raw\n", name.c_str(), rate, rate / raw);
      }
    }
  }

 private:
  std::map<std::string, double> rates_;
};

// Servers named by the environment: registered at run time.
void register_from_env(const char* variable, const char* name) {
  const char* url = std::getenv(variable);
  if (!url || !*url) return;
  static std::vector<std::string> urls;  // the benchmarks keep pointers to these
  urls.reserve(4);
  const char* uri = urls.emplace_back(url).c_str();
  const std::string n(name);
  for (auto [label, fn] :
       {std::pair{"pairs_coro/", &pairs_coro}, std::pair{"pairs_thread/", &pairs_thread},
        std::pair{"replay_coro/", &replay_coro}, std::pair{"replay_thread/", &replay_thread}}) {
    benchmark::RegisterBenchmark((label + n).c_str(), fn, uri)->Arg(1)->Arg(64)->UseRealTime()->MinTime(1.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_from_env("IDEM_BENCH_REDIS_URL", "redis");
  register_from_env("IDEM_BENCH_REDIS_CLUSTER_URL", "redis_cluster");
  register_from_env("IDEM_BENCH_POSTGRES_URL", "postgres");
  register_from_env("IDEM_BENCH_MYSQL_URL", "mysql");
  if (const char* uri = std::getenv("IDEM_BENCH_SCALE_URI"); uri && *uri) {
    benchmark::RegisterBenchmark("scale_pairs", scale_pairs, uri)->Arg(64)->UseRealTime()->MinTime(1.0);
  }
  // The ratios go with the console table; --benchmark_format=csv|json keeps its reporter.
  bool console = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    console = console && (a.rfind("--benchmark_format", 0) != 0 || a == "--benchmark_format=console");
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (console) {
    RatioReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return 0;
}
