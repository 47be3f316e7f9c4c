// Fills a SQLite store with retained records for the scale benchmark (bench/stores/scale):
//   fill_store FILE COUNT [RESULT_BYTES=200]
// opens FILE as a store (creating or migrating its schema), then appends COUNT done records
// (scope "bench", keys "fill-<n>" continuing after the records already there, results of
// RESULT_BYTES, retained for 30 days) in the store's own schema: one prepared INSERT, one
// transaction per 100,000 rows. Prints the records and bytes of the file afterwards.
//   fill_store postgres://...?table_prefix=P 0
// only opens that store, which creates its tables; bench/stores/scale fills them with SQL.
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "idem/open.h"

namespace {

constexpr std::int64_t kRowsPerTransaction = 100'000;

[[noreturn]] void fail(sqlite3* db, const char* what) {
  std::fprintf(stderr, "fill_store: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
  std::exit(1);
}

void exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(db, sql);
}

std::int64_t scalar(sqlite3* db, const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
    fail(db, sql);
  }
  const std::int64_t v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fill_store FILE COUNT [RESULT_BYTES=200]\n");
    return 2;
  }
  const std::string path = argv[1];
  if (path.rfind("postgres", 0) == 0) {
    auto store = idem::open_store(path);
    if (!store) std::fprintf(stderr, "fill_store: %s\n", store.status().to_string().c_str());
    return store ? 0 : 1;
  }
  const std::int64_t count = std::atoll(argv[2]);
  const std::string result(argc > 3 ? std::atoi(argv[3]) : 200, 'x');
  {
    auto store = idem::open_store("sqlite:" + path);  // the schema, as this build writes it
    if (!store) {
      std::fprintf(stderr, "fill_store: %s\n", store.status().to_string().c_str());
      return 1;
    }
  }
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) fail(db, "open");
  exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144");
  const std::int64_t first = scalar(db, "SELECT count(*) FROM idem_records");
  const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const std::int64_t expires = now + std::int64_t{30} * 24 * 3600 * 1'000'000;

  sqlite3_stmt* insert = nullptr;
  if (sqlite3_prepare_v2(
          db,
          "INSERT INTO idem_records (scope, key, state, fence, fingerprint, lease_until, "
          "expires_at, result, owner) VALUES ('bench', ?1, 'done', ?2, x'6670', NULL, ?3, ?4, x'')",
          -1, &insert, nullptr) != SQLITE_OK) {
    fail(db, "prepare");
  }
  const auto started = std::chrono::steady_clock::now();
  char key[32];
  for (std::int64_t i = 0; i < count; ++i) {
    if (i % kRowsPerTransaction == 0) exec(db, "BEGIN");
    const std::int64_t n = first + i;
    const int len = std::snprintf(key, sizeof key, "fill-%012lld", static_cast<long long>(n));
    sqlite3_bind_text(insert, 1, key, len, SQLITE_STATIC);
    sqlite3_bind_int64(insert, 2, n + 1);
    sqlite3_bind_int64(insert, 3, expires + n);
    sqlite3_bind_blob(insert, 4, result.data(), static_cast<int>(result.size()), SQLITE_STATIC);
    if (sqlite3_step(insert) != SQLITE_DONE) fail(db, "insert");
    sqlite3_reset(insert);
    if (i % kRowsPerTransaction == kRowsPerTransaction - 1 || i == count - 1) exec(db, "COMMIT");
  }
  sqlite3_finalize(insert);
  // Fences above the filled ones stay unique: raise the persisted high-water mark.
  const std::string raise = "UPDATE idem_meta SET value = max(value, " + std::to_string(first + count) +
                            ") WHERE name = 'fence_high_water'";
  exec(db, raise.c_str());
  exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::int64_t total = scalar(db, "SELECT count(*) FROM idem_records");
  sqlite3_close(db);
  std::printf("records %lld bytes %llu seconds %.1f\n", static_cast<long long>(total),
              static_cast<unsigned long long>(std::filesystem::file_size(path)), seconds);
  return 0;
}
