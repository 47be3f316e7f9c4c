#include "testutil/backends.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "idem/open.h"
#include "testutil/temp_dir.h"

namespace idem::testutil {
namespace {

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

Backend redis_backend() { return redis_like("redis", "IDEM_TEST_REDIS_URL"); }
Backend redis_cluster_backend() { return redis_like("redis_cluster", "IDEM_TEST_REDIS_CLUSTER_URL"); }

namespace {

// Fresh tables in the SQL database at the URL in `env`: a table_prefix of their own, which
// starts with `tag`.
Backend sql_backend(const char* name, const char* env, const char* tag) {
  return {name,
          [env, tag](std::shared_ptr<const Clock>) -> std::unique_ptr<Store> {
            const char* url = std::getenv(env);
            if (url == nullptr || *url == '\0') return nullptr;
            static std::atomic<int> n{0};
            const std::string base = url;
            const std::string prefix =
                std::string(tag) + std::to_string(::getpid()) + "_" + std::to_string(n++) + "_";
            return must_open(
                base + (base.find('?') == std::string::npos ? "?" : "&") + "table_prefix=" + prefix, nullptr);
          },
          /*controllable_clock=*/false};
}

}  // namespace

Backend postgres_backend() { return sql_backend("postgres", "IDEM_TEST_POSTGRES_URL", "idem_t"); }
Backend mysql_backend() { return sql_backend("mysql", "IDEM_TEST_MYSQL_URL", "idem_m"); }

}  // namespace idem::testutil
