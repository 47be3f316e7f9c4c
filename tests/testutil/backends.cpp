#include "testutil/backends.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "idem/open.h"
#include "stores/redis/redis_uri.h"
#include "testutil/temp_dir.h"

namespace idem::testutil {
namespace {

// A table prefix no earlier run has used: `tag`, this process, a random run mark and the
// count of stores made. The process id alone repeats once pids wrap, and the tables of a
// run long ago (the tests leave them) would then hold another run's records.
std::string fresh_table_prefix(const char* tag) {
  static const std::string run = [] {
    char mark[9];
    std::snprintf(mark, sizeof mark, "%08x", static_cast<unsigned>(std::random_device{}()));
    return std::to_string(::getpid()) + "_" + mark;
  }();
  static std::atomic<int> n{0};
  return std::string(tag) + run + "_" + std::to_string(n++) + "_";
}

std::unique_ptr<Store> must_open(const std::string& uri, std::shared_ptr<const Clock> clock) {
  StoreOptions options;
  options.clock = std::move(clock);
  auto store = open_store(uri, options);
  if (!store) throw std::runtime_error("cannot open " + uri + ": " + store.status().to_string());
  return std::move(*store);
}

}  // namespace

Backend memory_backend() {
  return {"memory", [](std::shared_ptr<const Clock> clock) { return must_open("memory:", std::move(clock)); },
          /*controllable_clock=*/true};
}

Backend sqlite_backend() {
  // The store tests judge SQLite by real time (short real leases), as its users will.
  return {"sqlite",
          [](std::shared_ptr<const Clock>) {
            static TempDir dir;
            static std::atomic<int> n{0};
            return must_open("sqlite:" + dir.file("store-" + std::to_string(n++) + ".db"), nullptr);
          },
          /*controllable_clock=*/false};
}

std::string with_unique_prefix(const std::string& uri) {
  static std::atomic<int> n{0};
  const std::string prefix = "test-" + std::to_string(getpid()) + "-" + std::to_string(n++) + ":";
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + "prefix=" + prefix;
}

namespace {

using namespace std::chrono_literals;

BehindProxy skipped(std::string why) {
  BehindProxy r;
  r.skip = std::move(why);
  return r;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

BehindProxy redis_setup() {
  BehindProxy s;
  const char* url = env("IDEM_TEST_REDIS_URL");
  if (!url) return skipped("IDEM_TEST_REDIS_URL is not set (scripts/services start redis)");
  const auto node = redis::parse_uri(url).value().nodes.front();
  s.proxy = std::make_unique<FaultProxy>(node.host, node.port);
  s.uri = with_unique_prefix("redis://" + s.proxy->address());
  return s;
}

// A cluster of one master holding every slot, announcing the proxy's port.
BehindProxy redis_cluster_setup() {
  BehindProxy s;
  s.server = std::make_unique<RedisServer>(
      std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"});
  if (!s.server->started()) return skipped("redis-server is not installed or did not start");
  s.proxy = std::make_unique<FaultProxy>("127.0.0.1", s.server->port());
  s.server->command({"CONFIG", "SET", "cluster-announce-port", std::to_string(s.proxy->port())});
  s.server->command({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (s.server->command({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos) {
    if (std::chrono::steady_clock::now() > until) return skipped("the one-node cluster did not come up");
    std::this_thread::sleep_for(50ms);
  }
  s.uri = "redis-cluster://" + s.proxy->address();
  return s;
}

// SCHEME://user:pass@HOST:PORT/db... (the URL in `env`) with HOST:PORT the proxy's, and fresh
// tables.
BehindProxy sql_setup(const char* env_name, const char* service) {
  BehindProxy s;
  const char* url = env(env_name);
  if (!url) return skipped(std::string(env_name) + " is not set (scripts/services start " + service + ")");
  const std::string base = url;
  const auto at = base.find('@'), slash = base.find('/', at);
  const std::string hostport = base.substr(at + 1, slash - at - 1);
  const auto colon = hostport.rfind(':');
  s.proxy = std::make_unique<FaultProxy>(hostport.substr(0, colon),
                                         static_cast<std::uint16_t>(std::stoi(hostport.substr(colon + 1))));
  const std::string rest = base.substr(slash);
  s.uri = base.substr(0, at + 1) + s.proxy->address() + rest +
          (rest.find('?') == std::string::npos ? "?" : "&") + "table_prefix=" + fresh_table_prefix("idem_f");
  return s;
}

BehindProxy postgres_setup() { return sql_setup("IDEM_TEST_POSTGRES_URL", "postgres"); }
BehindProxy mysql_setup() {
  BehindProxy r = sql_setup("IDEM_TEST_MYSQL_URL", "mariadb");
  r.replies_before_commit = true;
  return r;
}

// Redis judges time by its own clock: the tests wait out real (short) leases.
Backend redis_like(const char* name, const char* env) {
  return {name,
          [env](std::shared_ptr<const Clock>) -> std::unique_ptr<Store> {
            const char* url = std::getenv(env);
            if (!url || !*url) return nullptr;
            return must_open(with_unique_prefix(url), nullptr);
          },
          /*controllable_clock=*/false};
}

}  // namespace

Backend redis_backend() {
  Backend b = redis_like("redis", "IDEM_TEST_REDIS_URL");
  b.behind_proxy = redis_setup;
  return b;
}
Backend redis_cluster_backend() {
  Backend b = redis_like("redis_cluster", "IDEM_TEST_REDIS_CLUSTER_URL");
  b.behind_proxy = redis_cluster_setup;
  return b;
}

namespace {

// Fresh tables in the SQL database at the URL in `env`: a table_prefix of their own, which
// starts with `tag`.
Backend sql_backend(const char* name, const char* env, const char* tag) {
  return {name,
          [env, tag](std::shared_ptr<const Clock>) -> std::unique_ptr<Store> {
            const char* url = std::getenv(env);
            if (url == nullptr || *url == '\0') return nullptr;
            const std::string base = url;
            const std::string prefix = fresh_table_prefix(tag);
            return must_open(
                base + (base.find('?') == std::string::npos ? "?" : "&") + "table_prefix=" + prefix, nullptr);
          },
          /*controllable_clock=*/false};
}

}  // namespace

Backend postgres_backend() {
  Backend b = sql_backend("postgres", "IDEM_TEST_POSTGRES_URL", "idem_t");
  b.behind_proxy = postgres_setup;
  return b;
}
Backend mysql_backend() {
  Backend b = sql_backend("mysql", "IDEM_TEST_MYSQL_URL", "idem_m");
  b.behind_proxy = mysql_setup;
  return b;
}

}  // namespace idem::testutil
