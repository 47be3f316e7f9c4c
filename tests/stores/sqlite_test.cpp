// What only the SQLite store does: opening real files (and refusing bad ones), its URI
// parameters, a schema an operator can read with the sqlite3 shell, the fence high-water
// mark across restarts, group commit, its own expiry, and op_timeout. The semantics it
// shares with every backend are in the contract suite (contract_test.cpp).
#include <fcntl.h>
#include <linux/fs.h>
#include <sqlite3.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "idem/open.h"
#include "stores/sqlite/sqlite_store.h"
#include "testutil/temp_dir.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testutil::TempDir;
using Kind = BeginOutcome::Kind;

// ---- helpers --------------------------------------------------------------------------

struct Opts {
  std::shared_ptr<const Clock> clock;
  Duration op_timeout = 10s;
  Duration sweep_interval = 0s;
};

Result<std::unique_ptr<Store>> open_sqlite(const std::string& uri_rest, const Opts& o = {}) {
  StoreOptions options;
  options.clock = o.clock;
  options.op_timeout = o.op_timeout;
  options.sweep_interval = o.sweep_interval;
  return open_store("sqlite:" + uri_rest, options);
}

std::unique_ptr<Store> must_open(const std::string& path, const Opts& o = {}) {
  auto store = open_sqlite(path, o);
  if (!store) ADD_FAILURE() << store.status().to_string();
  return store ? std::move(*store) : nullptr;
}

BeginArgs begin_args(std::string key, Duration lease = 30s, Duration retention = 1h, std::string scope = "s",
                     std::string fingerprint = "") {
  return {std::move(scope), std::move(key), std::move(fingerprint), lease, retention};
}

// A second, raw connection: what an operator sees with the sqlite3 shell.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK) << path;
    sqlite3_busy_timeout(db_, 10'000);
  }
  ~RawDb() { sqlite3_close_v2(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  void exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }

  // Column 0 of the first row as bytes; nullopt for NULL or no row.
  std::optional<std::string> value(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
    std::optional<std::string> out;
    if (s != nullptr && sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
      const void* p = sqlite3_column_blob(s, 0);
      out.emplace(p ? static_cast<const char*>(p) : "", static_cast<std::size_t>(sqlite3_column_bytes(s, 0)));
    }
    sqlite3_finalize(s);
    return out;
  }

  std::int64_t integer(const std::string& sql) {
    const auto v = value(sql);
    return v ? std::stoll(*v) : -1;
  }

 private:
  sqlite3* db_ = nullptr;
};

void write_file(const std::string& path, const std::string& bytes, std::streamoff at = -1) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary |
                           (at < 0 ? std::ios::trunc : std::ios::openmode{}));
  if (at >= 0) f.seekp(at);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

void create_store_file(const std::string& path) {
  auto store = must_open(path);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->begin(begin_args("k")).is_ok());
}

// chattr +i: refuses writes even to root. Undone when the object goes (before the TempDir
// that holds the path). Returns false where the file system or capabilities forbid it.
class Immutable {
 public:
  explicit Immutable(std::string path) : path_(std::move(path)) { on_ = set(true); }
  ~Immutable() {
    if (on_) set(false);
  }
  bool on() const { return on_; }

 private:
  bool set(bool on) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    int flags = 0;
    bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (ok) {
      flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
      ok = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    ::close(fd);
    return ok;
  }
  std::string path_;
  bool on_ = false;
};

void expect_open_fails(const std::string& path, StatusCode code, const std::string& reason) {
  auto store = open_sqlite(path);
  ASSERT_FALSE(store.is_ok()) << path << " opened";
  EXPECT_EQ(store.status().code(), code) << store.status().to_string();
  EXPECT_THAT(store.status().message(), HasSubstr(path));
  EXPECT_THAT(store.status().message(), HasSubstr(reason));
}

// Commit records in the WAL since its last reset: frames whose salts match the header
// and that carry a database size (SQLite's WAL format).
int wal_commits(const std::string& db_path) {
  std::ifstream f(db_path + "-wal", std::ios::binary);
  std::string wal((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto be32 = [&](std::size_t at) {
    return (std::uint32_t(std::uint8_t(wal[at])) << 24) | (std::uint32_t(std::uint8_t(wal[at + 1])) << 16) |
           (std::uint32_t(std::uint8_t(wal[at + 2])) << 8) | std::uint32_t(std::uint8_t(wal[at + 3]));
  };
  if (wal.size() < 32) return 0;
  const std::size_t page = be32(8);
  const std::uint32_t salt1 = be32(16), salt2 = be32(20);
  int commits = 0;
  for (std::size_t at = 32; at + 24 + page <= wal.size(); at += 24 + page) {
    if (be32(at + 8) != salt1 || be32(at + 12) != salt2) break;
    if (be32(at + 4) != 0) ++commits;
  }
  return commits;
}

// Polls `done` until it holds or `deadline` passes.
bool eventually(const std::function<bool()>& done, Duration deadline = 20s) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// ---- opening: refuse what is not a usable idem database, and say why --------------------

TEST(SqliteOpen, CreatesAFreshDatabaseWithTheSchema) {
  TempDir dir;
  const auto path = dir.file("fresh.db");
  auto store = must_open(path);
  ASSERT_NE(store, nullptr);
  EXPECT_STREQ(store->traits().name, "sqlite");
  EXPECT_FALSE(store->traits().native_expiry);
  EXPECT_TRUE(store->traits().durable);
  EXPECT_TRUE(store->traits().controllable_clock);
  EXPECT_TRUE(store->ping().is_ok());

  RawDb raw(path);
  EXPECT_EQ(raw.integer("PRAGMA user_version"), 1);
  EXPECT_EQ(raw.value("PRAGMA journal_mode"), "wal");
  for (const char* name : {"idem_records", "idem_tokens", "idem_locks", "idem_meta", "idem_records_readable",
                           "idem_records_expires_at"}) {
    EXPECT_EQ(raw.integer(std::string("SELECT count(*) FROM sqlite_master WHERE name = '") + name + "'"), 1)
        << name;
  }
}

// The file holds unspent tokens and stored responses: a new one, its WAL and its
// shared-memory file are the owner's alone (0600), whatever the umask; one that exists keeps
// the mode its owner gave it.
TEST(SqliteOpen, ANewFileAndItsWalAndShmAreTheOwnersAloneWhateverTheUmask) {
  for (const mode_t mask : {mode_t{022}, mode_t{0}, mode_t{077}}) {
    TempDir dir;
    const auto path = dir.file("modes.db");
    const mode_t old = ::umask(mask);
    {
      auto store = must_open(path);
      ASSERT_NE(store, nullptr);
      ASSERT_TRUE(store->issue_token({"", 60s}));
      for (const char* suffix : {"", "-wal", "-shm"}) {
        struct stat st {};
        ASSERT_EQ(::stat((path + suffix).c_str(), &st), 0) << suffix;
        EXPECT_EQ(st.st_mode & 07777, 0600u) << "umask " << std::oct << mask << ": " << suffix;
      }
    }
    ::umask(old);
  }
  TempDir dir;
  const auto path = dir.file("kept.db");
  ASSERT_NE(must_open(path), nullptr);
  ::chmod(path.c_str(), 0640);
  ASSERT_NE(must_open(path), nullptr);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

// A new file that another connection is writing when the store opens it (another process
// sharing the store, starting at the same moment, creating the schema): switching to WAL
// upgrades the switch's read lock, and SQLite answers "database is locked" at once, without
// its busy handler. Opening waits, within op_timeout, until the writer is done. (The shop's
// demo once lost its consumer to this.)
TEST(SqliteOpen, ANewFileBeingWrittenIsSwitchedToWalOnceTheWriterIsDone) {
  TempDir dir;
  const auto path = dir.file("shared.db");
  {
    sqlite3* created = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &created), SQLITE_OK);
    // A database with a header and nothing in it, in SQLite's default (rollback) journal mode.
    ASSERT_EQ(sqlite3_exec(created, "VACUUM", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(created);
  }
  RawDb writer(path);
  writer.exec("BEGIN IMMEDIATE");  // as another opener creating the schema: the file's write lock
  std::promise<void> release;
  auto done = std::async(std::launch::async, [&writer, f = release.get_future()]() mutable {
    f.wait_for(std::chrono::milliseconds(300));
    writer.exec("COMMIT");
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto store = open_sqlite(path);
  release.set_value();
  done.get();
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  EXPECT_TRUE((*store)->ping().is_ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(RawDb(path).value("PRAGMA journal_mode"), "wal");
}

TEST(SqliteOpen, TextFileIsNotADatabase) {
  TempDir dir;
  const auto path = dir.file("notes.txt");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "these are my notes, not a database\n";
  write_file(path, text);
  expect_open_fails(path, StatusCode::failed_precondition, "not a database");
  // And the file is left as it was.
  std::ifstream f(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()), text);
}

TEST(SqliteOpen, CorruptHeaderIsNotADatabase) {
  TempDir dir;
  const auto path = dir.file("corrupt.db");
  create_store_file(path);
  write_file(path, "garbage garbage!", 0);  // the 16-byte magic string
  expect_open_fails(path, StatusCode::failed_precondition, "not a database");
}

TEST(SqliteOpen, CorruptSchemaPageIsReported) {
  TempDir dir;
  const auto path = dir.file("corrupt.db");
  create_store_file(path);
  write_file(path, std::string(3000, '\x5a'), 100);  // the schema's b-tree page, after the header
  auto store = open_sqlite(path);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::failed_precondition) << store.status().to_string();
  EXPECT_THAT(store.status().message(), HasSubstr(path));
}

TEST(SqliteOpen, MissingDirectoryIsNamed) {
  TempDir dir;
  const auto path = dir.file("no/such/dir/idem.db");
  expect_open_fails(path, StatusCode::failed_precondition, "does not exist");
}

TEST(SqliteOpen, UnwritableLocationFailsEvenForRoot) {
  // procfs refuses to create files for everyone, root included.
  const std::string path = "/proc/idem-test-" + std::to_string(::getpid()) + ".db";
  auto store = open_sqlite(path);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::failed_precondition) << store.status().to_string();
  EXPECT_THAT(store.status().message(), HasSubstr(path));
  EXPECT_THAT(store.status().message(), HasSubstr("cannot open"));
}

TEST(SqliteOpen, DirectoryIsNotAFile) {
  TempDir dir;
  expect_open_fails(dir.path().string(), StatusCode::failed_precondition, "is a directory");
}

TEST(SqliteOpen, ReadOnlyFileIsRefused) {
  TempDir dir;
  const auto path = dir.file("ro.db");
  create_store_file(path);
  Immutable ro(path);
  if (!ro.on()) GTEST_SKIP() << "cannot make a file immutable here (chattr +i)";
  expect_open_fails(path, StatusCode::failed_precondition, "read-only");
}

TEST(SqliteOpen, ReadOnlyDirectoryIsRefused) {
  TempDir dir;
  const auto sub = dir.file("ro");
  std::filesystem::create_directory(sub);
  const auto path = sub + "/idem.db";
  create_store_file(path);  // closed: the -wal and -shm files are gone
  Immutable ro(sub);
  if (!ro.on()) GTEST_SKIP() << "cannot make a directory immutable here (chattr +i)";
  auto store = open_sqlite(path);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::failed_precondition) << store.status().to_string();
  EXPECT_THAT(store.status().message(), HasSubstr(path));
}

TEST(SqliteOpen, NewDatabaseInReadOnlyDirectoryIsRefused) {
  TempDir dir;
  const auto sub = dir.file("ro");
  std::filesystem::create_directory(sub);
  Immutable ro(sub);
  if (!ro.on()) GTEST_SKIP() << "cannot make a directory immutable here (chattr +i)";
  const auto path = sub + "/idem.db";
  expect_open_fails(path, StatusCode::failed_precondition, "read-only");
}

TEST(SqliteOpen, NewerSchemaVersionIsRefused) {
  TempDir dir;
  const auto path = dir.file("newer.db");
  create_store_file(path);
  RawDb(path).exec("PRAGMA user_version = 2");
  expect_open_fails(path, StatusCode::failed_precondition, "written by a newer idem");
}

TEST(SqliteOpen, AnotherApplicationsDatabaseIsLeftAlone) {
  TempDir dir;
  const auto path = dir.file("other.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE customers (id INTEGER PRIMARY KEY)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  expect_open_fails(path, StatusCode::failed_precondition, "not an idem database");
  EXPECT_EQ(RawDb(path).integer("SELECT count(*) FROM sqlite_master WHERE name LIKE 'idem%'"), 0);
}

TEST(SqliteOpen, ReopensItsOwnDatabase) {
  TempDir dir;
  const auto path = dir.file("again.db");
  create_store_file(path);
  auto store = must_open(path);
  ASSERT_NE(store, nullptr);
  auto o = store->begin(begin_args("k"));
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->kind, Kind::in_progress);
}

// A file of the previous version has idem_records without the owner column: opening adds
// it, the old rows keep working, and new claims store their owner.
TEST(SqliteOpen, AddsTheOwnerColumnToAFileOfThePreviousVersion) {
  TempDir dir;
  const auto path = dir.file("previous.db");
  create_store_file(path);
  {
    RawDb raw(path);
    raw.exec(
        "DROP TABLE idem_records;"
        "CREATE TABLE idem_records (scope TEXT NOT NULL, key TEXT NOT NULL,"
        "  state TEXT NOT NULL CHECK (state IN ('pending', 'done')), fence INTEGER NOT NULL,"
        "  fingerprint BLOB NOT NULL, lease_until INTEGER, expires_at INTEGER NOT NULL,"
        "  result BLOB NOT NULL, PRIMARY KEY (scope, key));"
        "CREATE INDEX idem_records_expires_at ON idem_records (expires_at);"
        "INSERT INTO idem_records VALUES ('s', 'old', 'done', 7, x'', NULL, 9000000000000000, x'6f6c64');");
    ASSERT_EQ(raw.integer("SELECT count(*) FROM pragma_table_info('idem_records') WHERE name = 'owner'"), 0);
  }
  auto store = must_open(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(
      RawDb(path).integer("SELECT count(*) FROM pragma_table_info('idem_records') WHERE name = 'owner'"), 1);
  auto old = store->begin(begin_args("old"));
  ASSERT_TRUE(old.is_ok()) << old.status().to_string();
  EXPECT_EQ(old->kind, Kind::replay);
  EXPECT_EQ(old->result, "old");
  EXPECT_EQ(store->get({"s", "old"}).value()->owner, "");

  auto a = begin_args("new");
  a.owner = "gw-1";
  ASSERT_EQ(store->begin(a).value().kind, Kind::acquired);
  EXPECT_EQ(store->get({"s", "new"}).value()->owner, "gw-1");
  EXPECT_EQ(store->abandon({"s", "new", "gw-1"}).value(), ReleaseOutcome::released);
  // A second open finds the column and leaves the file as it is.
  store.reset();
  EXPECT_NE(must_open(path), nullptr);
}

// ---- URI parameters --------------------------------------------------------------------

TEST(SqliteUri, SyncNormalAndFullAreAccepted) {
  TempDir dir;
  for (const char* q : {"", "?sync=normal", "?sync=full"}) {
    const auto path = dir.file(std::string("s") + std::to_string(std::strlen(q)) + ".db");
    auto store = open_sqlite(path + q);
    ASSERT_TRUE(store.is_ok()) << q << ": " << store.status().to_string();
    auto o = (*store)->begin(begin_args("k"));
    ASSERT_TRUE(o.is_ok()) << o.status().to_string();
    EXPECT_TRUE(std::filesystem::exists(path)) << "the query must not become part of the file name";
  }
}

TEST(SqliteUri, BadParametersAreInvalidArguments) {
  TempDir dir;
  const auto path = dir.file("x.db");
  for (const std::string q : {"?sync=bogus", "?sync=", "?sync=FULL", "?mode=ro", "?sync=full&cache=shared",
                              "?sync=full&sync=normal", "?sync"}) {
    auto store = open_sqlite(path + q);
    ASSERT_FALSE(store.is_ok()) << q;
    EXPECT_EQ(store.status().code(), StatusCode::invalid_argument) << q << ": " << store.status().to_string();
  }
  EXPECT_FALSE(std::filesystem::exists(path)) << "a rejected URI must not create the file";
  for (const std::string uri : {"", "?sync=full"}) {
    auto store = open_sqlite(uri);
    ASSERT_FALSE(store.is_ok()) << uri;
    EXPECT_EQ(store.status().code(), StatusCode::invalid_argument) << store.status().to_string();
  }
}

// ---- the schema, as an operator reads it ------------------------------------------------

TEST(SqliteSchema, RowsReadableFromAnotherConnection) {
  TempDir dir;
  const auto path = dir.file("readable.db");
  auto clock = std::make_shared<ManualClock>();  // 2027-01-15T08:00:00Z
  auto store = must_open(path, {.clock = clock});
  ASSERT_NE(store, nullptr);
  const std::int64_t t0 = to_micros(clock->now());
  RawDb raw(path);
  const std::string where = " FROM idem_records WHERE scope = 'tenant' AND key = 'order-1'";

  auto b = store->begin(begin_args("order-1", 30s, 1h, "tenant", std::string("\x01\xab", 2)));
  ASSERT_TRUE(b.is_ok() && b->kind == Kind::acquired);
  EXPECT_EQ(raw.value("SELECT state" + where), "pending");
  EXPECT_EQ(raw.integer("SELECT fence" + where), static_cast<std::int64_t>(b->fence));
  EXPECT_EQ(raw.value("SELECT fingerprint" + where), std::string("\x01\xab", 2));
  EXPECT_EQ(raw.value("SELECT typeof(fingerprint)" + where), "blob");
  EXPECT_EQ(raw.integer("SELECT lease_until" + where), t0 + 30'000'000);
  EXPECT_EQ(raw.integer("SELECT expires_at" + where), t0 + 30'000'000 + 3'600'000'000);
  EXPECT_EQ(raw.value("SELECT fingerprint FROM idem_records_readable WHERE key = 'order-1'"), "01AB");
  EXPECT_EQ(raw.value("SELECT lease_until FROM idem_records_readable WHERE key = 'order-1'"),
            "2027-01-15T08:00:30.000000Z");
  EXPECT_EQ(raw.value("SELECT expires_at FROM idem_records_readable WHERE key = 'order-1'"),
            "2027-01-15T09:00:30.000000Z");

  clock->advance(1500ms);
  auto c = store->commit({"tenant", "order-1", b->fence, std::string("{\"id\":7}"), 2h});
  ASSERT_TRUE(c.is_ok() && *c == CommitOutcome::committed);
  EXPECT_EQ(raw.value("SELECT state" + where), "done");
  EXPECT_EQ(raw.value("SELECT lease_until" + where), std::nullopt);
  EXPECT_EQ(raw.integer("SELECT expires_at" + where), t0 + 1'500'000 + 7'200'000'000);
  EXPECT_EQ(raw.value("SELECT result" + where), "{\"id\":7}");
  EXPECT_EQ(raw.value("SELECT typeof(result)" + where), "blob");
  EXPECT_EQ(raw.value("SELECT expires_at FROM idem_records_readable WHERE key = 'order-1'"),
            "2027-01-15T10:00:01.500000Z");
  EXPECT_EQ(raw.value("SELECT lease_until FROM idem_records_readable WHERE key = 'order-1'"), std::nullopt);
  EXPECT_EQ(raw.integer("SELECT result_bytes FROM idem_records_readable WHERE key = 'order-1'"), 8);

  auto l = store->lock({"nightly-report", "worker-1", 10s});
  ASSERT_TRUE(l.is_ok() && l->kind == LockOutcome::Kind::locked);
  EXPECT_EQ(raw.value("SELECT owner FROM idem_locks WHERE name = 'nightly-report'"), "worker-1");
  EXPECT_EQ(raw.integer("SELECT fence FROM idem_locks WHERE name = 'nightly-report'"),
            static_cast<std::int64_t>(l->fence));
  EXPECT_EQ(raw.integer("SELECT expires_at FROM idem_locks WHERE name = 'nightly-report'"),
            to_micros(clock->now()) + 10'000'000);

  auto t = store->issue_token({"user-9", 10min});
  ASSERT_TRUE(t.is_ok());
  const std::string tw = " FROM idem_tokens WHERE scope = 'user-9' AND token = '" + *t + "'";
  EXPECT_EQ(raw.integer("SELECT consumed" + tw), 0);
  EXPECT_EQ(raw.integer("SELECT ttl_us" + tw), 600'000'000);
  EXPECT_EQ(raw.integer("SELECT expires_at" + tw), to_micros(clock->now()) + 600'000'000);
  ASSERT_TRUE(store->consume_token({"user-9", *t}).is_ok());
  EXPECT_EQ(raw.integer("SELECT consumed" + tw), 1);

  // The high-water mark is at or above the greatest fence handed out (SqliteFences below).
  EXPECT_GE(raw.integer("SELECT value FROM idem_meta WHERE name = 'fence_high_water'"),
            static_cast<std::int64_t>(std::max(b->fence, l->fence)));
}

// ---- fences: never repeated, across restarts, removals and clocks stepping back ----------

TEST(SqliteFences, HighWaterMarkSurvivesReopenWithClockBackwards) {
  TempDir dir;
  const auto path = dir.file("fences.db");
  auto clock = std::make_shared<ManualClock>();
  Fence highest = 0;
  {
    auto store = must_open(path, {.clock = clock});
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 3; ++i) {  // three acquisitions within one microsecond
      auto b = store->begin(begin_args("k" + std::to_string(i)));
      ASSERT_TRUE(b.is_ok() && b->kind == Kind::acquired);
      EXPECT_GT(b->fence, highest);
      highest = b->fence;
      ASSERT_TRUE(store->release({"s", "k" + std::to_string(i), b->fence}).is_ok());
    }
    auto l = store->lock({"L", "me", 1s});
    ASSERT_TRUE(l.is_ok() && l->kind == LockOutcome::Kind::locked);
    EXPECT_GT(l->fence, highest);
    highest = l->fence;
    ASSERT_TRUE(store->unlock({"L", "me"}).is_ok());
  }
  {
    RawDb raw(path);  // nothing left in the tables to derive fences from
    EXPECT_EQ(
        raw.integer("SELECT count(*) FROM idem_records") + raw.integer("SELECT count(*) FROM idem_locks"), 0);
  }

  clock->set(clock->now() - 1h);
  auto store = must_open(path, {.clock = clock});
  ASSERT_NE(store, nullptr);
  for (const char* key : {"k0", "k1", "fresh"}) {
    auto b = store->begin(begin_args(key));
    ASSERT_TRUE(b.is_ok() && b->kind == Kind::acquired);
    EXPECT_GT(b->fence, highest) << key;
    highest = b->fence;
  }
  auto l = store->lock({"L", "other", 1s});
  ASSERT_TRUE(l.is_ok() && l->kind == LockOutcome::Kind::locked);
  EXPECT_GT(l->fence, highest);
}

// Opening trusts the persisted mark (no scan of millions of records); the records are
// read only when the mark is gone. A record or a lock may hold the greatest fence.
TEST(SqliteFences, RecordsAndLocksRaiseTheMarkWhenMetaIsLost) {
  for (const bool lock_last : {true, false}) {
    SCOPED_TRACE(lock_last ? "a lock holds the greatest fence" : "a record holds the greatest fence");
    TempDir dir;
    const auto path = dir.file("fences.db");
    auto clock = std::make_shared<ManualClock>();
    Fence highest = 0;
    {
      auto store = must_open(path, {.clock = clock});
      ASSERT_NE(store, nullptr);
      clock->advance(10s);
      highest = store->begin(begin_args("kept"))->fence;
      if (lock_last) {
        clock->advance(10s);
        highest = store->lock({"L", "me", 1h})->fence;
      }
    }
    RawDb(path).exec("DELETE FROM idem_meta");
    clock->set(clock->now() - 1h);
    auto store = must_open(path, {.clock = clock});
    ASSERT_NE(store, nullptr);
    auto b = store->begin(begin_args("other"));
    ASSERT_TRUE(b.is_ok() && b->kind == Kind::acquired);
    EXPECT_GT(b->fence, highest);
  }
}

TEST(SqliteFences, TwoStoresOnOneFileNeverRepeatAFence) {
  TempDir dir;
  const auto path = dir.file("shared.db");
  auto clock = std::make_shared<ManualClock>();  // frozen: the clock alone cannot separate them
  auto a = must_open(path, {.clock = clock});
  auto b = must_open(path, {.clock = clock});
  ASSERT_TRUE(a && b);
  std::set<Fence> seen;
  for (int i = 0; i < 20; ++i) {
    Store& s = i % 2 == 0 ? *a : *b;
    auto o = s.begin(begin_args("k"));
    ASSERT_TRUE(o.is_ok() && o->kind == Kind::acquired) << i;
    EXPECT_TRUE(seen.insert(o->fence).second) << "fence " << o->fence << " repeated at " << i;
    EXPECT_EQ(o->fence, *seen.rbegin());
    ASSERT_TRUE(s.release({"s", "k", o->fence}).is_ok());
  }
}

// A store alone on its file persists its mark ahead of the fences it hands out, so most
// transactions do not write it; once another connection has committed to the file, the mark
// it writes is exact (adopting each other's reserves would push the fences ahead each turn).
TEST(SqliteFences, TheMarkIsReservedAheadAloneAndExactWhenShared) {
  TempDir dir;
  const auto path = dir.file("reserve.db");
  auto clock = std::make_shared<ManualClock>();  // frozen: each fence is the previous + 1
  auto a = must_open(path, {.clock = clock});
  ASSERT_NE(a, nullptr);
  RawDb raw(path);
  const auto mark = [&] {
    return raw.integer("SELECT value FROM idem_meta WHERE name = 'fence_high_water'");
  };
  auto first = a->begin(begin_args("k"));
  ASSERT_TRUE(first.is_ok() && first->kind == Kind::acquired);
  const auto reserved = mark();
  EXPECT_GT(reserved, static_cast<std::int64_t>(first->fence));
  Fence last = first->fence;
  ASSERT_TRUE(a->release({"s", "k", last}).is_ok());
  for (int i = 0; i < 50; ++i) {
    auto o = a->begin(begin_args("k"));
    ASSERT_TRUE(o.is_ok() && o->kind == Kind::acquired) << i;
    EXPECT_GT(o->fence, last);
    last = o->fence;
    EXPECT_LE(static_cast<std::int64_t>(last), reserved) << i;
    EXPECT_EQ(mark(), reserved) << "the mark was written again at " << i;
    ASSERT_TRUE(a->release({"s", "k", last}).is_ok());
  }

  // Another store on the file continues above a's reserve, and from then on both write
  // exact marks.
  auto b = must_open(path, {.clock = clock});
  ASSERT_NE(b, nullptr);
  auto ob = b->begin(begin_args("k"));
  ASSERT_TRUE(ob.is_ok() && ob->kind == Kind::acquired);
  EXPECT_GT(static_cast<std::int64_t>(ob->fence), reserved);
  ASSERT_TRUE(b->release({"s", "k", ob->fence}).is_ok());
  EXPECT_GE(mark(), static_cast<std::int64_t>(ob->fence));
  auto oa = a->begin(begin_args("k"));
  ASSERT_TRUE(oa.is_ok() && oa->kind == Kind::acquired);
  EXPECT_GT(oa->fence, ob->fence);
  EXPECT_EQ(mark(), static_cast<std::int64_t>(oa->fence));
  ASSERT_TRUE(a->release({"s", "k", oa->fence}).is_ok());
  auto ob2 = b->begin(begin_args("k"));
  ASSERT_TRUE(ob2.is_ok() && ob2->kind == Kind::acquired);
  EXPECT_GT(ob2->fence, oa->fence);
  EXPECT_EQ(mark(), static_cast<std::int64_t>(ob2->fence));
}

// ---- foreign writes ------------------------------------------------------------------

TEST(SqliteForeignWrites, OwnWritesNeverChangeIt) {
  TempDir dir;
  const auto path = dir.file("own.db");
  auto store = must_open(path);
  ASSERT_NE(store, nullptr);
  const auto before = store->foreign_writes();
  ASSERT_TRUE(before.has_value());
  for (int i = 0; i < 50; ++i) {
    const std::string key = "k" + std::to_string(i);
    auto b = store->begin(begin_args(key));
    ASSERT_TRUE(b.is_ok() && b->kind == Kind::acquired) << i;
    EXPECT_EQ(store->foreign_writes(), before) << "after begin " << i;
    ASSERT_TRUE(store->commit({"s", key, b->fence, "result", 1h}).is_ok());
    EXPECT_EQ(store->foreign_writes(), before) << "after commit " << i;
  }
  ASSERT_TRUE(store->remove({"s", "k0"}).is_ok());
  ASSERT_TRUE(store->lock({"L", "me", 10s}).is_ok());
  ASSERT_TRUE(store->sweep().is_ok());
  EXPECT_EQ(store->foreign_writes(), before);
  // Thousands of WAL frames: the checkpointer's connection copies them back meanwhile.
  const auto initial = std::filesystem::file_size(path);
  constexpr int kOps = 3000;
  std::atomic<int> answered{0};
  std::promise<void> all;
  for (int i = 0; i < kOps; ++i) {
    store->begin(begin_args("big" + std::to_string(i), 30s, 1h, "s", std::string(2000, 'f')),
                 [&](Result<BeginOutcome> r) {
                   EXPECT_TRUE(r.is_ok()) << r.status().to_string();
                   EXPECT_EQ(store->foreign_writes(), before);
                   if (answered.fetch_add(1) + 1 == kOps) all.set_value();
                 });
  }
  ASSERT_EQ(all.get_future().wait_for(60s), std::future_status::ready);
  EXPECT_TRUE(eventually([&] { return std::filesystem::file_size(path) > initial + 2'000'000; }));
  ASSERT_TRUE(store->ping().is_ok());
  EXPECT_EQ(store->foreign_writes(), before);
}

TEST(SqliteForeignWrites, AnotherStoreOnTheFileChangesItAndItsFencesAreAdopted) {
  TempDir dir;
  const auto path = dir.file("two.db");
  auto clock = std::make_shared<ManualClock>();  // frozen: only the high-water mark separates fences
  auto a = must_open(path, {.clock = clock});
  auto b = must_open(path, {.clock = clock});
  ASSERT_TRUE(a && b);
  auto mine = a->begin(begin_args("k"));
  ASSERT_TRUE(mine.is_ok() && a->commit({"s", "k", mine->fence, "r", 1h}).is_ok());
  const auto before = a->foreign_writes();
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(a->foreign_writes(), before) << "nobody wrote in between";

  auto removed = b->remove({"s", "k"});
  ASSERT_TRUE(removed.is_ok() && *removed);
  const auto after = a->foreign_writes();
  EXPECT_NE(after, before) << "`idem record delete` from another process";
  EXPECT_EQ(a->foreign_writes(), after);
  EXPECT_EQ(b->foreign_writes(), b->foreign_writes()) << "b's own write";

  // b hands out a fence; a's foreign_writes() notices first, and a's writer must still
  // continue above b's high-water mark.
  auto theirs = b->begin(begin_args("x"));
  ASSERT_TRUE(theirs.is_ok() && theirs->kind == Kind::acquired);
  EXPECT_NE(a->foreign_writes(), after);
  auto ours = a->begin(begin_args("y"));
  ASSERT_TRUE(ours.is_ok() && ours->kind == Kind::acquired);
  EXPECT_GT(ours->fence, theirs->fence);
}

// Between commits the answer comes from the WAL index's stamp in shared memory, with no
// look at the connection: every commit of another connection must still show in the very
// next answer, on every thread that asks, and nothing else may change it.
TEST(SqliteForeignWrites, EveryCommitOfAnotherConnectionShowsOnEveryThread) {
  TempDir dir;
  const auto path = dir.file("stamp.db");
  auto store = must_open(path);
  ASSERT_NE(store, nullptr);
  RawDb raw(path);
  raw.exec("CREATE TABLE other (x)");
  auto last = store->foreign_writes();
  ASSERT_TRUE(last.has_value());
  for (int round = 0; round < 200; ++round) {
    if (round % 3 == 0) {
      ASSERT_TRUE(store->begin(begin_args("own" + std::to_string(round))).is_ok());
      ASSERT_EQ(store->foreign_writes(), last) << "own write, round " << round;
    }
    raw.exec("INSERT INTO other VALUES (" + std::to_string(round) + ")");
    std::vector<std::future<std::optional<std::uint64_t>>> answers;
    for (int t = 0; t < 4; ++t) {
      answers.push_back(std::async(std::launch::async, [&] { return store->foreign_writes(); }));
    }
    std::set<std::optional<std::uint64_t>> seen;
    for (auto& a : answers) seen.insert(a.get());
    ASSERT_EQ(seen.size(), 1u) << "threads disagree, round " << round;
    ASSERT_NE(*seen.begin(), last) << "a foreign commit went unseen, round " << round;
    last = *seen.begin();
    ASSERT_EQ(store->foreign_writes(), last) << "nothing was written since, round " << round;
  }
}

TEST(SqliteForeignWrites, ARawDeleteShowsWhileTheWriterIsBusy) {
  TempDir dir;
  const auto path = dir.file("busy.db");
  auto store = must_open(path);
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(store->begin(begin_args("doomed" + std::to_string(i))).is_ok());
  std::atomic<bool> stop{false};
  std::thread load([&] {  // keeps the writer inside transactions most of the time
    for (int i = 0; !stop; ++i) {
      auto b = store->begin(begin_args("load" + std::to_string(i)));
      if (b.is_ok()) (void)store->commit({"s", "load" + std::to_string(i), b->fence, "r", 1h});
    }
  });
  RawDb raw(path);
  for (int i = 0; i < 100; ++i) {
    const auto before = store->foreign_writes();
    ASSERT_TRUE(before.has_value());
    raw.exec("DELETE FROM idem_records WHERE rowid = (SELECT min(rowid) FROM idem_records)");
    EXPECT_NE(store->foreign_writes(), before) << "round " << i;
  }
  stop = true;
  load.join();
}

// ---- group commit --------------------------------------------------------------------

TEST(SqliteGroupCommit, QueuedOperationsShareTransactions) {
  TempDir dir;
  const auto path = dir.file("group.db");
  auto store = must_open(path, {.clock = nullptr, .op_timeout = 60s});
  ASSERT_NE(store, nullptr);
  const int before = wal_commits(path);

  // Hold the write lock so that every operation queues up behind the writer.
  RawDb raw(path);
  raw.exec("BEGIN IMMEDIATE");
  constexpr int kOps = 1000;
  std::atomic<int> answered{0}, acquired{0};
  std::promise<void> all;
  std::vector<Fence> fences(kOps);
  for (int i = 0; i < kOps; ++i) {
    store->begin(begin_args("k" + std::to_string(i)), [&, i](Result<BeginOutcome> r) {
      if (r.is_ok() && r->kind == Kind::acquired) {
        fences[i] = r->fence;
        acquired.fetch_add(1);
      }
      if (answered.fetch_add(1) + 1 == kOps) all.set_value();
    });
  }
  std::this_thread::sleep_for(50ms);
  raw.exec("COMMIT");
  ASSERT_EQ(all.get_future().wait_for(60s), std::future_status::ready);
  EXPECT_EQ(acquired.load(), kOps);
  EXPECT_EQ(std::set<Fence>(fences.begin(), fences.end()).size(), static_cast<std::size_t>(kOps));
  EXPECT_EQ(raw.integer("SELECT count(*) FROM idem_records"), kOps);
  // 1000 operations at most 256 per transaction, plus the one the writer had started.
  const int commits = wal_commits(path) - before;
  EXPECT_GE(commits, 4);
  EXPECT_LE(commits, 8);
}

TEST(SqliteGroupCommit, ConcurrentAsyncCallersChainOnTheWritersCallbacks) {
  TempDir dir;
  const auto path = dir.file("chains.db");
  auto store = must_open(path);
  ASSERT_NE(store, nullptr);
  constexpr int kCallers = 64, kPairs = 100;
  std::atomic<int> failures{0}, finished{0};
  std::promise<void> all;

  // Each caller: begin → (callback) commit → (callback) next begin, never blocking.
  struct Caller {
    Store* store;
    int id;
    int n = 0;
    std::atomic<int>* failures;
    std::function<void()> on_done;
    void next() {
      if (n == kPairs) return on_done();
      auto key = "c" + std::to_string(id) + "-" + std::to_string(n);
      store->begin(begin_args(key), [this, key](Result<BeginOutcome> b) {
        if (!b.is_ok() || b->kind != Kind::acquired) {
          failures->fetch_add(1);
          return on_done();
        }
        store->commit({"s", key, b->fence, "r-" + key, 1h}, [this](Result<CommitOutcome> c) {
          if (!c.is_ok() || *c != CommitOutcome::committed) failures->fetch_add(1);
          ++n;
          next();
        });
      });
    }
  };
  std::vector<std::unique_ptr<Caller>> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.push_back(std::make_unique<Caller>(Caller{store.get(), i, 0, &failures, [&] {
                                                        if (finished.fetch_add(1) + 1 == kCallers)
                                                          all.set_value();
                                                      }}));
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& c : callers) c->next();
  ASSERT_EQ(all.get_future().wait_for(120s), std::future_status::ready);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(RawDb(path).integer("SELECT count(*) FROM idem_records WHERE state = 'done'"), kCallers * kPairs);
  RecordProperty("pairs_per_second", static_cast<int>(kCallers * kPairs / secs));
}

TEST(SqliteGroupCommit, DestructionFinishesQueuedOperations) {
  TempDir dir;
  const auto path = dir.file("close.db");
  constexpr int kOps = 2000;
  std::atomic<int> answered{0}, acquired{0};
  {
    auto store = must_open(path);
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < kOps; ++i) {
      store->begin(begin_args("k" + std::to_string(i)), [&](Result<BeginOutcome> r) {
        if (r.is_ok() && r->kind == Kind::acquired) acquired.fetch_add(1);
        answered.fetch_add(1);
      });
    }
  }
  EXPECT_EQ(answered.load(), kOps);
  EXPECT_EQ(acquired.load(), kOps);
  EXPECT_EQ(RawDb(path).integer("SELECT count(*) FROM idem_records"), kOps);
}

TEST(SqliteGroupCommit, AFailingTransactionFailsItsWholeBatchAndChangesNothing) {
  TempDir dir;
  const auto path = dir.file("poison.db");
  auto store = must_open(path, {.clock = nullptr, .op_timeout = 60s});
  ASSERT_NE(store, nullptr);
  RawDb raw(path);
  raw.exec(
      "CREATE TRIGGER poison BEFORE INSERT ON idem_records WHEN NEW.key = 'poison' "
      "BEGIN SELECT RAISE(ABORT, 'poisoned row'); END");

  // The writer waits for the lock with the ping; the three begins queue up behind it and
  // go into one transaction together.
  raw.exec("BEGIN IMMEDIATE");
  std::promise<Result<Done>> ping;
  store->ping([&](Result<Done> r) { ping.set_value(std::move(r)); });
  std::this_thread::sleep_for(50ms);
  std::vector<std::promise<Result<BeginOutcome>>> answers(3);
  const std::vector<std::string> keys = {"good-1", "poison", "good-2"};
  for (int i = 0; i < 3; ++i) {
    store->begin(begin_args(keys[i]), [&, i](Result<BeginOutcome> r) { answers[i].set_value(std::move(r)); });
  }
  std::this_thread::sleep_for(50ms);
  raw.exec("COMMIT");

  EXPECT_TRUE(ping.get_future().get().is_ok());
  for (int i = 0; i < 3; ++i) {
    auto r = answers[i].get_future().get();
    ASSERT_FALSE(r.is_ok()) << keys[i];
    EXPECT_EQ(r.status().code(), StatusCode::internal) << r.status().to_string();
    EXPECT_THAT(r.status().message(), HasSubstr("poisoned row"));
  }
  EXPECT_EQ(raw.integer("SELECT count(*) FROM idem_records"), 0) << "rolled back";

  // The store goes on: the next transaction works.
  auto again = store->begin(begin_args("good-1"));
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(again->kind, Kind::acquired);
  EXPECT_FALSE(again->recovered);
}

TEST(SqliteGroupCommit, WalIsCopiedBackWhileTheStoreRuns) {
  TempDir dir;
  const auto path = dir.file("checkpoint.db");
  auto store = must_open(path);
  ASSERT_NE(store, nullptr);
  const auto initial = std::filesystem::file_size(path);
  // About 8 MB of rows: thousands of WAL frames, well past a checkpoint's worth.
  constexpr int kOps = 4000;
  std::atomic<int> answered{0};
  std::promise<void> all;
  for (int i = 0; i < kOps; ++i) {
    store->begin(begin_args("k" + std::to_string(i), 30s, 1h, "s", std::string(2000, static_cast<char>(i))),
                 [&](Result<BeginOutcome> r) {
                   EXPECT_TRUE(r.is_ok()) << r.status().to_string();
                   if (answered.fetch_add(1) + 1 == kOps) all.set_value();
                 });
  }
  ASSERT_EQ(all.get_future().wait_for(60s), std::future_status::ready);
  // The checkpointer thread moves pages into the database file without a close.
  EXPECT_TRUE(eventually([&] { return std::filesystem::file_size(path) > initial + 4'000'000; }))
      << std::filesystem::file_size(path) << " bytes";
}

// ---- expiry ----------------------------------------------------------------------------

TEST(SqliteSweep, SweepDeletesExpiredRowsInStepsAndCountsRecords) {
  TempDir dir;
  const auto path = dir.file("sweep.db");
  auto clock = std::make_shared<ManualClock>();
  auto store = must_open(path, {.clock = clock});
  ASSERT_NE(store, nullptr);
  constexpr int kExpired = 600;  // more than one step's worth
  for (int i = 0; i < kExpired; ++i)
    ASSERT_TRUE(store->begin(begin_args("old" + std::to_string(i), 1s, 1s)).is_ok());
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(store->issue_token({"u", 1s}).is_ok());
  ASSERT_TRUE(store->lock({"L", "me", 1s}).is_ok());
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(store->begin(begin_args("live" + std::to_string(i), 1h, 1h)).is_ok());
  clock->advance(1min);

  auto n = store->sweep();
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(*n, static_cast<std::uint64_t>(kExpired));
  RawDb raw(path);
  EXPECT_EQ(raw.integer("SELECT count(*) FROM idem_records"), 10);
  EXPECT_EQ(raw.integer("SELECT count(*) FROM idem_tokens"), 0);
  EXPECT_EQ(raw.integer("SELECT count(*) FROM idem_locks"), 0);
  auto again = store->sweep();
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, 0u);
}

TEST(SqliteSweep, PeriodicSweepRemovesExpiredRows) {
  TempDir dir;
  const auto path = dir.file("periodic.db");
  auto clock = std::make_shared<ManualClock>();
  auto store = must_open(path, {.clock = clock, .sweep_interval = 20ms});
  ASSERT_NE(store, nullptr);
  auto b = store->begin(begin_args("done", 1s, 1s));
  ASSERT_TRUE(b.is_ok());
  ASSERT_TRUE(store->commit({"s", "done", b->fence, "r", 1s}).is_ok());
  ASSERT_TRUE(store->begin(begin_args("pending", 1s, 1s)).is_ok());
  ASSERT_TRUE(store->begin(begin_args("live", 1h, 1h)).is_ok());
  ASSERT_TRUE(store->issue_token({"u", 1s}).is_ok());
  ASSERT_TRUE(store->lock({"L", "me", 1s}).is_ok());

  RawDb raw(path);
  std::this_thread::sleep_for(100ms);  // several sweeps pass: nothing is expired yet
  EXPECT_EQ(raw.integer("SELECT count(*) FROM idem_records"), 3);

  clock->advance(1h);
  EXPECT_TRUE(eventually([&] {
    return raw.integer("SELECT count(*) FROM idem_records") == 1 &&
           raw.integer("SELECT count(*) FROM idem_tokens") == 0 &&
           raw.integer("SELECT count(*) FROM idem_locks") == 0;
  }));
  EXPECT_EQ(raw.value("SELECT key FROM idem_records"), "live");
}

TEST(SqliteSweep, GetTreatsAnExpiredRowAsAbsent) {
  TempDir dir;
  const auto path = dir.file("get.db");
  auto clock = std::make_shared<ManualClock>();
  auto store = must_open(path, {.clock = clock});
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->begin(begin_args("k", 1s, 1s)).is_ok());
  auto r = store->get({"s", "k"});
  ASSERT_TRUE(r.is_ok() && r->has_value());
  EXPECT_EQ((*r)->state, RecordState::pending);
  clock->advance(2s);
  r = store->get({"s", "k"});
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(r->has_value());
  EXPECT_EQ(RawDb(path).integer("SELECT count(*) FROM idem_records"), 1) << "still there until a sweep";
}

// ---- deadlines -------------------------------------------------------------------------

TEST(SqliteDeadline, OperationsQueuedLongerThanOpTimeoutFailUnrun) {
  TempDir dir;
  const auto path = dir.file("timeout.db");
  auto store = must_open(path, {.clock = nullptr, .op_timeout = 100ms});
  ASSERT_NE(store, nullptr);

  // A callback that blocks (which callers must not do) stalls the writer for 400 ms.
  std::atomic<bool> stalled{false};
  std::promise<void> slow_done;
  store->begin(begin_args("slow"), [&](Result<BeginOutcome>) {
    stalled.store(true);
    stalled.notify_all();
    std::this_thread::sleep_for(400ms);
    slow_done.set_value();
  });
  stalled.wait(false);

  constexpr int kOps = 10;
  std::vector<std::promise<Result<BeginOutcome>>> answers(kOps);
  for (int i = 0; i < kOps; ++i) {
    store->begin(begin_args("queued" + std::to_string(i)),
                 [&, i](Result<BeginOutcome> r) { answers[i].set_value(std::move(r)); });
  }
  for (int i = 0; i < kOps; ++i) {
    auto f = answers[i].get_future();
    ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
    auto r = f.get();
    ASSERT_FALSE(r.is_ok()) << i;
    EXPECT_EQ(r.status().code(), StatusCode::unavailable);
    EXPECT_THAT(r.status().message(), HasSubstr("op_timeout"));
  }
  slow_done.get_future().wait();
  // They did not run: the keys are free.
  for (int i = 0; i < kOps; ++i) {
    auto g = store->get({"s", "queued" + std::to_string(i)});
    ASSERT_TRUE(g.is_ok());
    EXPECT_FALSE(g->has_value()) << i;
  }
}

TEST(SqliteDeadline, LockedDatabaseIsUnavailableThenRecovers) {
  TempDir dir;
  const auto path = dir.file("locked.db");
  auto store = must_open(path, {.clock = nullptr, .op_timeout = 200ms});
  ASSERT_NE(store, nullptr);
  RawDb raw(path);
  raw.exec("BEGIN IMMEDIATE");  // another process writing, for longer than op_timeout
  const auto t0 = std::chrono::steady_clock::now();
  auto r = store->begin(begin_args("k"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::unavailable) << r.status().to_string();
  EXPECT_THAT(r.status().message(), HasSubstr(path));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  auto p = store->ping();
  EXPECT_FALSE(p.is_ok());
  raw.exec("COMMIT");

  auto again = store->begin(begin_args("k"));
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(again->kind, Kind::acquired) << "the failed attempt left nothing behind";
  EXPECT_TRUE(store->ping().is_ok());
}

TEST(SqliteDeadline, ValidationFailsAtOnceWithoutTheWriter) {
  TempDir dir;
  auto store = must_open(dir.file("v.db"));
  ASSERT_NE(store, nullptr);
  auto r = store->begin(begin_args(""));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::invalid_argument);
  auto l = store->lock({"L", "me", 0s});
  ASSERT_FALSE(l.is_ok());
  EXPECT_EQ(l.status().code(), StatusCode::invalid_argument);
}

}  // namespace
}  // namespace idem
