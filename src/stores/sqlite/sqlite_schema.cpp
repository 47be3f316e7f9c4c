// Opening an idem database: checking that the file is one (and writable, and not from a
// newer idem), switching it to WAL, creating schema version 1, and the translation of
// SQLite's result codes into Statuses.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include "stores/sqlite/sqlite_db.h"  // Database's opening half; the rows are in sqlite_db.cpp

namespace idem::sqlite {
namespace {

// Times are microseconds since the Unix epoch; the views show them as RFC 3339 text.
#define IDEM_ISO_TIME(col) \
  "strftime('%Y-%m-%dT%H:%M:%S', " col " / 1000000, 'unixepoch') || printf('.%06dZ', " col " % 1000000)"

// Schema version 1. Created in one transaction together with PRAGMA user_version, so a
// file either has all of it or none of it.
constexpr const char* kSchema = R"sql(
CREATE TABLE idem_records (
  scope       TEXT NOT NULL,
  key         TEXT NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('pending', 'done')),
  fence       INTEGER NOT NULL,
  fingerprint BLOB NOT NULL,
  lease_until INTEGER,           -- µs since the Unix epoch; pending records only
  expires_at  INTEGER NOT NULL,  -- µs since the Unix epoch
  result      BLOB NOT NULL,     -- done records only
  owner       BLOB NOT NULL DEFAULT x'',  -- who claimed it (BeginArgs::owner); added in place
  PRIMARY KEY (scope, key)
);
CREATE INDEX idem_records_expires_at ON idem_records (expires_at);

CREATE TABLE idem_tokens (
  scope      TEXT NOT NULL,
  token      TEXT NOT NULL,
  consumed   INTEGER NOT NULL CHECK (consumed IN (0, 1)),
  ttl_us     INTEGER NOT NULL,   -- as issued
  expires_at INTEGER NOT NULL,   -- µs since the Unix epoch
  PRIMARY KEY (scope, token)
) WITHOUT ROWID;
CREATE INDEX idem_tokens_expires_at ON idem_tokens (expires_at);

CREATE TABLE idem_locks (
  name       TEXT NOT NULL PRIMARY KEY,
  owner      TEXT NOT NULL,
  fence      INTEGER NOT NULL,
  expires_at INTEGER NOT NULL    -- µs since the Unix epoch
) WITHOUT ROWID;
CREATE INDEX idem_locks_expires_at ON idem_locks (expires_at);

-- fence_high_water: the greatest fence ever handed out (fences never repeat).
CREATE TABLE idem_meta (
  name  TEXT NOT NULL PRIMARY KEY,
  value
) WITHOUT ROWID;

CREATE VIEW idem_records_readable AS
SELECT scope, key, state, fence,
       hex(fingerprint) AS fingerprint,
       )sql" IDEM_ISO_TIME("lease_until") R"sql( AS lease_until,
       )sql" IDEM_ISO_TIME("expires_at") R"sql( AS expires_at,
       length(result) AS result_bytes
FROM idem_records;

CREATE VIEW idem_tokens_readable AS
SELECT scope, token, consumed, ttl_us / 1000000.0 AS ttl_seconds,
       )sql" IDEM_ISO_TIME("expires_at") R"sql( AS expires_at
FROM idem_tokens;

CREATE VIEW idem_locks_readable AS
SELECT name, owner, fence,
       )sql" IDEM_ISO_TIME("expires_at") R"sql( AS expires_at
FROM idem_locks;

INSERT INTO idem_meta (name, value) VALUES ('fence_high_water', 0);

PRAGMA user_version = 1;
)sql";
#undef IDEM_ISO_TIME

// Why a file could not be opened, in words an operator can act on. SQLite's errno is
// often that of its last fallback attempt (ENOENT from a read-only retry), so look.
std::string cantopen_reason(const std::string& path, int sys_errno) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "directory '" + dir + "' does not exist";
  if (!S_ISDIR(st.st_mode)) return "'" + dir + "' is not a directory";
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return "it is a directory";
  if (exists && ::access(path.c_str(), R_OK | W_OK) != 0) {
    return std::string("the file is not readable and writable (") + std::strerror(errno) + ")";
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return "directory '" + dir + "' is read-only: cannot create the database or its -wal and -shm files (" +
           std::strerror(errno) + ")";
  }
  std::string reason = "unable to open or create the database file";
  if (sys_errno != 0) reason.append(" (").append(std::strerror(sys_errno)).append(")");
  return reason;
}

int busy_timeout_ms(Duration d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return static_cast<int>(std::clamp<std::int64_t>(ms, 1, INT_MAX));
}

}  // namespace

Status translate(int rc, std::string_view path, std::string_view what, std::string_view reason,
                 int sys_errno) {
  std::string m = "sqlite '";
  m.append(path).append("': ").append(what).append(": ").append(reason);
  if (sys_errno != 0) m.append(" (").append(std::strerror(sys_errno)).append(")");
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
      return unavailable(std::move(m));
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return failed_precondition(std::move(m));
    case SQLITE_TOOBIG:
      return invalid_argument(std::move(m));
    default:
      return internal_error(std::move(m));
  }
}

Status Database::error(int rc, std::string_view what) const {
  if ((rc & 0xff) == SQLITE_CANTOPEN) {
    return translate(rc, path_, what, cantopen_reason(path_, sqlite3_system_errno(db_)), 0);
  }
  const int sys = (rc & 0xff) == SQLITE_IOERR ? sqlite3_system_errno(db_) : 0;
  return translate(rc, path_, what, sqlite3_errmsg(db_), sys);
}

Result<std::unique_ptr<Database>> Database::open(const std::string& path, Sync sync, Duration busy_timeout) {
  // SQLite's memory statistics take a global mutex on every allocation; nothing here reads
  // them. Only possible before SQLite initializes (a no-op if someone else was first).
  static const bool quiet_allocator = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
  (void)quiet_allocator;
  // The file holds unspent tokens and stored responses: a new one is made 0600, whatever
  // the umask (SQLite would make it 0644 less the umask), and SQLite gives its WAL and
  // shared-memory files the database file's mode. A file that exists keeps its own.
  if (path != ":memory:" && !path.empty()) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      (void)::fchmod(fd, 0600);  // the umask may have taken bits 0600 asked for
      ::close(fd);
    }  // else it exists, or cannot be made: sqlite3_open_v2 says why
  }
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<Database> db(new Database(path, raw));
  if (rc != SQLITE_OK) {
    if (raw == nullptr) return translate(rc, path, "cannot open", sqlite3_errstr(rc), 0);
    return db->error(rc, "cannot open");
  }
  if (auto s = db->configure(sync, busy_timeout); !s) return s;
  if (auto s = db->check_or_create_schema(); !s) return s;
  if (auto s = db->prepare_all(); !s) return s;
  if (auto s = db->open_checkpointer(busy_timeout); !s) return s;
  db->map_wal_index();
  return db;
}

Status Database::open_checkpointer(Duration busy_timeout) {
  sqlite3_wal_hook(db_, &Database::on_wal_commit, this);  // replaces the automatic checkpoints
  if (path_ == ":memory:" || path_.empty()) return Status::ok();
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  const int rc = sqlite3_open_v2(path_.c_str(), &checkpoint_db_, flags, nullptr);
  if (rc != SQLITE_OK) return translate(rc, path_, "cannot open a second connection", sqlite3_errstr(rc), 0);
  sqlite3_busy_timeout(checkpoint_db_, busy_timeout_ms(busy_timeout));
  // A connection learns that the file is in WAL mode on its first read.
  const int read =
      sqlite3_exec(checkpoint_db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  if (read != SQLITE_OK) {
    return translate(read, path_, "cannot open a second connection", sqlite3_errmsg(checkpoint_db_), 0);
  }
  return Status::ok();
}

Status Database::exec(const char* sql, std::string_view what) {
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? Status::ok() : error(rc, what);
}

Status Database::configure(Sync sync, Duration busy_timeout) {
  sqlite3_busy_timeout(db_, busy_timeout_ms(busy_timeout));
  max_row_bytes_ = static_cast<std::size_t>(sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1));

  // SQLite reads the file only now: "file is not a database" and corruption of the
  // header or the schema surface here, not at sqlite3_open_v2.
  if (auto s = exec("SELECT count(*) FROM sqlite_master", "cannot read"); !s) return s;
  if (sqlite3_db_readonly(db_, "main") == 1) {
    return translate(SQLITE_READONLY, path_, "cannot open for writing",
                     "the file is read-only (or on a read-only file system)", 0);
  }

  const bool in_memory = path_ == ":memory:" || path_.empty();
  // Switching a file to WAL upgrades the statement's read lock to the write lock, and SQLite
  // answers SQLITE_BUSY at once, without its busy handler, when another connection holds
  // or waits for that lock: another process opening the same new file at the same moment
  // (docs/stores.md). So the switch is retried here, for as long as the busy timeout.
  const auto give_up = std::chrono::steady_clock::now() + busy_timeout;
  auto pause = std::chrono::milliseconds(1);
  sqlite3_stmt* raw = nullptr;
  int rc = SQLITE_OK;
  Statement wal;
  for (;;) {
    raw = nullptr;
    rc = sqlite3_prepare_v2(db_, "PRAGMA journal_mode = WAL", -1, &raw, nullptr);
    wal = Statement(raw);
    if (rc == SQLITE_OK) rc = sqlite3_step(wal.get());
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= give_up) break;
    wal = Statement();
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  if (rc != SQLITE_ROW) return error(rc, "cannot switch to WAL mode");
  const auto* mode = reinterpret_cast<const char*>(sqlite3_column_text(wal.get(), 0));
  if (!in_memory && (mode == nullptr || std::strcmp(mode, "wal") != 0)) {
    return translate(SQLITE_CANTOPEN, path_, "cannot switch to WAL mode",
                     std::string("journal mode stays '") + (mode ? mode : "?") + "'", 0);
  }
  wal = Statement();

  const char* sync_sql = sync == Sync::full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL";
  if (auto s = exec(sync_sql, "cannot set synchronous"); !s) return s;
  // Bound the WAL file after checkpoints; keep the hot pages in memory; zero deleted
  // content (results may be sensitive) only where that costs no extra writes, so that
  // sweeping megabyte results does not rewrite them.
  return exec("PRAGMA journal_size_limit = 67108864; PRAGMA cache_size = -8192; PRAGMA secure_delete = FAST",
              "cannot configure");
}

Result<std::int64_t> Database::scalar(const char* sql, std::string_view what) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql, -1, &raw, nullptr);
  Statement q(raw);
  if (rc == SQLITE_OK) rc = sqlite3_step(q.get());
  if (rc != SQLITE_ROW) return error(rc, what);
  return sqlite3_column_int64(q.get(), 0);
}

Status Database::check_or_create_schema() {
  auto version = scalar("PRAGMA user_version", "cannot read the schema version");
  if (!version) return version.status();
  if (*version == 0) {
    // Another process may be creating the schema right now: decide under the write lock.
    if (auto s = exec("BEGIN IMMEDIATE", "cannot create the schema"); !s) return s;
    auto created = create_schema_locked();
    if (created) {
      if (auto s = exec("COMMIT", "cannot create the schema"); !s) created = s;
    }
    if (!created) {
      rollback();
      return created.status();
    }
    version = *created;
  }
  if (*version > kSchemaVersion) {
    return failed_precondition("sqlite '" + path_ + "': written by a newer idem (schema version " +
                               std::to_string(*version) + "; this build reads up to " +
                               std::to_string(kSchemaVersion) + ")");
  }
  if (*version != kSchemaVersion) {
    return failed_precondition("sqlite '" + path_ + "': unknown schema version " + std::to_string(*version));
  }
  return add_missing_columns();
}

// Files created before records had an owner lack the column; it is added in place (an
// older idem still reads and writes such a file: its statements name their columns).
Status Database::add_missing_columns() {
  static constexpr const char* kHasOwner =
      "SELECT count(*) FROM pragma_table_info('idem_records') WHERE name = 'owner'";
  auto has = scalar(kHasOwner, "cannot read the schema");
  if (!has) return has.status();
  if (*has != 0) return Status::ok();
  // Another process may be adding it right now: decide under the write lock.
  if (auto s = exec("BEGIN IMMEDIATE", "cannot add the owner column"); !s) return s;
  has = scalar(kHasOwner, "cannot read the schema");
  Status s = has.status();
  if (s && *has == 0) {
    s = exec("ALTER TABLE idem_records ADD COLUMN owner BLOB NOT NULL DEFAULT x''",
             "cannot add the owner column");
  }
  if (s) s = exec("COMMIT", "cannot add the owner column");
  if (!s) rollback();
  return s;
}

Result<std::int64_t> Database::create_schema_locked() {
  auto version = scalar("PRAGMA user_version", "cannot read the schema version");
  if (!version || *version != 0) return version;
  auto objects =
      scalar("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'", "cannot read the schema");
  if (!objects) return objects.status();
  if (*objects != 0) {
    return failed_precondition("sqlite '" + path_ +
                               "': not an idem database (it holds other tables, no idem schema)");
  }
  if (auto s = exec(kSchema, "cannot create the schema"); !s) return s;
  return std::int64_t{kSchemaVersion};
}

Database::~Database() {
  // The statements are finalized after this body; sqlite3_close_v2 completes each close
  // then. The writer's connection is the last: closing it checkpoints and removes the WAL.
  sqlite3_close_v2(checkpoint_db_);
  sqlite3_close_v2(db_);
}

}  // namespace idem::sqlite
