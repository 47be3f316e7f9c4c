// One SQLite connection to an idem database: opening and checking the file and the schema
// (version 1) in sqlite_schema.cpp; the prepared statements and the rows of the engine as
// the state machine (core/state_machine.h) sees them in sqlite_db.cpp. No decisions are
// made here.
//
// Thread safety: none, but for checkpoint_from_other_thread(). After open() the store's
// writer thread is the only user.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/listing.h"
#include "core/state_machine.h"
#include "idem/clock.h"
#include "idem/record.h"
#include "idem/status.h"

namespace idem::sqlite {

// PRAGMA user_version of the files this build writes.
inline constexpr int kSchemaVersion = 1;

enum class Sync { normal, full };

// A prepared statement, finalized on destruction.
class Statement {
 public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* s) noexcept : s_(s) {}
  Statement(Statement&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Statement& operator=(Statement&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  ~Statement() { sqlite3_finalize(s_); }
  sqlite3_stmt* get() const noexcept { return s_; }

 private:
  sqlite3_stmt* s_ = nullptr;
};

// How many rows one sweep step deleted from each table.
struct SweepCounts {
  std::uint64_t records = 0;
  std::uint64_t tokens = 0;
  std::uint64_t locks = 0;
};

class Database {
 public:
  // Opens (creating if missing) the database at `path`, switches it to WAL, checks or
  // creates the schema and prepares every statement. Errors name the path and the reason:
  // failed_precondition for a file that is not a database, corrupt, read-only, written by
  // a newer idem, or in a directory that cannot be written; unavailable when it is locked.
  static Result<std::unique_ptr<Database>> open(const std::string& path, Sync sync, Duration busy_timeout);
  ~Database();

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const noexcept { return path_; }

  // The greatest fence this database has handed out: the persisted high-water mark (or,
  // when it is missing, max(fence) over the records) and max(fence) over the locks.
  Result<Fence> load_high_water();
  // The persisted high-water mark alone (cheap), or 0.
  Result<Fence> load_persisted_high_water();
  Status save_high_water(Fence f);
  // True when another connection committed since the last call (PRAGMA data_version).
  Result<bool> changed_by_others();
  // A stamp of the file's commits: it changes with every commit by any connection (the WAL
  // index header's commit counter and checksum, https://www.sqlite.org/walformat.html),
  // read from the shared memory that every connection to the file maps, with no lock and
  // no system call. nullopt when it cannot be read: no WAL index, or a commit is writing
  // the header just now. Safe from any thread, as SQLite's own readers of that memory are;
  // never 0.
  std::optional<std::uint64_t> wal_index_stamp() const noexcept;

  Status begin_transaction();  // BEGIN IMMEDIATE
  // deadline_exceeded for an I/O error: the WAL may hold the commit (the outcome is unknown).
  Status commit();
  // Rolls back the open transaction, if any; never fails.
  void rollback() noexcept;

  // Each load leaves nullopt when there is no row (expired rows are loaded: the state
  // machine judges expiry). Strings of a loaded entry reuse the slot's storage. A save
  // updates the loaded row, or inserts one when there was none.
  //
  // Records are addressed by rowid once loaded (0: no row), which spares an index search.
  Status load_record(std::string_view scope, std::string_view key, std::optional<Record>& slot,
                     std::int64_t& rowid);
  Status save_record(const Record& r, std::int64_t rowid);
  Status erase_record(std::int64_t rowid);
  // Up to `rows` records live at `now` that pass a's filters and follow `after`, newest
  // first (core/listing.h), appended to `out`.
  Status list_records(const ListArgs& a, const std::optional<core::ListPosition>& after, TimePoint now,
                      std::size_t rows, std::vector<Record>& out);

  Status load_token(std::string_view scope, std::string_view token, std::optional<core::TokenEntry>& slot);
  Status save_token(std::string_view scope, std::string_view token, const core::TokenEntry& t, bool exists);
  Status erase_token(std::string_view scope, std::string_view token);

  Status load_lock(std::string_view name, std::optional<core::LockEntry>& slot);
  Status save_lock(std::string_view name, const core::LockEntry& l, bool exists);
  Status erase_lock(std::string_view name);

  // Deletes up to `limit` rows expired at `now` from each table (one statement each).
  Status sweep_step(TimePoint now, int limit, SweepCounts& deleted);

  // ---- checkpoints: copying the WAL back into the database file ----
  // Automatic checkpoints are off: they would run (and fsync) on the writer thread. The
  // store runs them from its own thread on a second connection instead, and on the
  // writer only as a fallback when the WAL keeps growing.
  //
  // Frames in the WAL after this connection's last commit (it drops when the WAL restarts).
  int wal_frames() const noexcept { return wal_frames_; }
  // A PASSIVE checkpoint on this (the writer's) connection.
  void checkpoint() noexcept;
  // A PASSIVE checkpoint on the second connection: the one call that may be made from
  // another thread (one at a time) while the writer works.
  void checkpoint_from_other_thread() noexcept;

  // The largest value (bytes) one row may hold.
  std::size_t max_row_bytes() const noexcept { return max_row_bytes_; }

 private:
  Database(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

  Status configure(Sync sync, Duration busy_timeout);
  Status check_or_create_schema();
  Status add_missing_columns();
  Result<std::int64_t> create_schema_locked();  // inside BEGIN IMMEDIATE; returns the version
  Result<std::int64_t> scalar(const char* sql, std::string_view what);  // one integer
  Status prepare_all();
  Status open_checkpointer(Duration busy_timeout);
  void map_wal_index() noexcept;
  Status prepare(Statement& s, const char* sql);
  Status exec(const char* sql, std::string_view what);
  Status run(sqlite3_stmt* s, std::string_view what);  // steps a statement that returns no row
  Status error(int rc, std::string_view what) const;

  static int on_wal_commit(void* self, sqlite3*, const char*, int frames) noexcept;

  std::string path_;
  sqlite3* db_;
  sqlite3* checkpoint_db_ = nullptr;  // the second connection; null for :memory:
  std::size_t max_row_bytes_ = 0;
  int wal_frames_ = 0;

  Statement begin_, commit_, rollback_, data_version_;
  Statement meta_get_, meta_update_, meta_put_, high_water_;
  Statement record_get_, record_insert_, record_update_, record_delete_, record_list_;
  Statement token_get_, token_insert_, token_update_, token_delete_;
  Statement lock_get_, lock_insert_, lock_update_, lock_delete_;
  Statement sweep_records_, sweep_tokens_, sweep_locks_;
  std::int64_t data_version_seen_ = -1;
  // The WAL index's first region as this connection maps it (until it closes); null when
  // there is none (":memory:").
  const volatile std::uint32_t* wal_index_ = nullptr;
};

// The one translation of SQLite result codes into Statuses (STYLE: errors are values,
// translated once per backend):
//   BUSY, LOCKED, IOERR, FULL, NOMEM, PROTOCOL      → unavailable (nothing happened; retry),
//                                                     but IOERR from COMMIT → deadline_exceeded
//                                                     (Database::commit: the outcome is unknown)
//   CANTOPEN, READONLY, NOTADB, CORRUPT, PERM, AUTH → failed_precondition (fix the file)
//   TOOBIG                                          → invalid_argument
//   anything else                                   → internal
// The message reads "sqlite 'PATH': WHAT: REASON[ (ERRNO TEXT)]".
Status translate(int rc, std::string_view path, std::string_view what, std::string_view reason,
                 int sys_errno);

}  // namespace idem::sqlite
