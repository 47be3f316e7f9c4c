// Engine throughput: begin+commit pairs per second and replay hits per second, per
// backend, with 1 and 64 concurrent callers. Two kinds of callers:
//   coro    Asio coroutines on one io_context thread (how the gateway calls the store)
//   thread  OS threads making blocking calls (how a plain consumer calls it)
// Run: build/release/bench/store_bench --benchmark_counters_tabular=true
// With IDEM_BENCH_REDIS_URL, IDEM_BENCH_REDIS_CLUSTER_URL or IDEM_BENCH_POSTGRES_URL set,
// those stores run too, each under a key prefix (Redis) or tables (PostgreSQL) of its own.
// items_per_second is pairs/s (Pairs) or hits/s (Replay).
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
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

std::unique_ptr<Store> open_fresh(const std::string& uri_base) {
  static int n = 0;
  std::string uri = uri_base;
  if (uri.rfind("sqlite:", 0) == 0) {
    const auto dir = std::filesystem::temp_directory_path() / "idem-bench";
    std::filesystem::create_directories(dir);
    const auto file = dir / ("bench-" + std::to_string(getpid()) + "-" + std::to_string(n++) + ".db");
    for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(file.string() + ext);
    const auto q = uri.find('?');
    uri = "sqlite:" + file.string() + (q == std::string::npos ? "" : uri.substr(q));
  } else if (uri.rfind("postgres", 0) == 0) {
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
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
