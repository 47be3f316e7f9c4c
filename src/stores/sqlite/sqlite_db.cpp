// The rows of the engine in SQLite: prepared statements, transactions, the fence
// high-water mark, records, tokens, locks, expiry and checkpoints.
#include "stores/sqlite/sqlite_db.h"

#include <atomic>
#include <climits>
#include <cstring>

namespace idem::sqlite {
namespace {

// Resets a statement when the use ends, so that no statement keeps a read open or points
// into a caller's string.
class Use {
 public:
  explicit Use(const Statement& s) noexcept : s_(s.get()) {}
  ~Use() { sqlite3_reset(s_); }
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;
  sqlite3_stmt* get() const noexcept { return s_; }

 private:
  sqlite3_stmt* s_;
};

// Binders return SQLite codes; a chain stops at the first failure.
int bind_text(sqlite3_stmt* s, int i, std::string_view v) {
  // A null pointer would bind NULL, not an empty string.
  if (v.size() > INT_MAX) return SQLITE_TOOBIG;
  return sqlite3_bind_text(s, i, v.data() ? v.data() : "", static_cast<int>(v.size()), SQLITE_STATIC);
}
int bind_blob(sqlite3_stmt* s, int i, std::string_view v) {
  if (v.size() > INT_MAX) return SQLITE_TOOBIG;
  return sqlite3_bind_blob(s, i, v.data() ? v.data() : "", static_cast<int>(v.size()), SQLITE_STATIC);
}
int bind_int(sqlite3_stmt* s, int i, std::int64_t v) { return sqlite3_bind_int64(s, i, v); }
int bind_time(sqlite3_stmt* s, int i, TimePoint t) { return sqlite3_bind_int64(s, i, to_micros(t)); }

template <class... Rc>
int first_error(Rc... rcs) {
  int out = SQLITE_OK;
  ((out = out == SQLITE_OK ? rcs : out), ...);
  return out;
}

void column_into(sqlite3_stmt* s, int i, std::string& out) {
  const void* p = sqlite3_column_blob(s, i);  // the bytes, also for TEXT
  const int n = sqlite3_column_bytes(s, i);
  out.assign(p ? static_cast<const char*>(p) : "", p ? static_cast<std::size_t>(n) : 0);
}

TimePoint column_time(sqlite3_stmt* s, int i) { return from_micros(sqlite3_column_int64(s, i)); }

}  // namespace

Status Database::prepare(Statement& s, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  s = Statement(raw);
  return rc == SQLITE_OK ? Status::ok() : error(rc, "cannot prepare statements (damaged schema?)");
}

Status Database::prepare_all() {
  const std::pair<Statement*, const char*> all[] = {
      {&begin_, "BEGIN IMMEDIATE"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&data_version_, "PRAGMA data_version"},
      {&meta_get_, "SELECT value FROM idem_meta WHERE name = 'fence_high_water'"},
      {&meta_update_, "UPDATE idem_meta SET value = ?1 WHERE name = 'fence_high_water'"},
      {&meta_put_,
       "INSERT INTO idem_meta (name, value) VALUES ('fence_high_water', ?1) "
       "ON CONFLICT (name) DO UPDATE SET value = excluded.value"},
      // Every transaction that hands out fences raises the persisted mark with them, so the
      // records (millions of rows, no index on fence) are scanned only when it is missing.
      {&high_water_,
       "SELECT max(coalesce((SELECT value FROM idem_meta WHERE name = 'fence_high_water'),"
       "                    (SELECT max(fence) FROM idem_records), 0),"
       "           coalesce((SELECT max(fence) FROM idem_locks), 0))"},
      // Keys and scopes compare bytewise (BINARY): a key prefix is the range [?4, ?5).
      {&record_list_,
       "SELECT scope, key, state, fence, fingerprint, lease_until, expires_at, result, owner FROM "
       "idem_records "
       "WHERE expires_at > ?1 AND (?2 IS NULL OR scope = ?2) AND (?3 IS NULL OR state = ?3) "
       "AND key >= ?4 AND (?5 IS NULL OR key < ?5) "
       "AND (?6 IS NULL OR expires_at < ?6 OR (expires_at = ?6 AND (scope, key) > (?7, ?8))) "
       "ORDER BY expires_at DESC, scope, key LIMIT ?9"},
      {&record_get_,
       "SELECT rowid, state, fence, fingerprint, lease_until, expires_at, result, owner FROM idem_records "
       "WHERE scope = ?1 AND key = ?2"},
      {&record_insert_,
       "INSERT INTO idem_records (scope, key, state, fence, fingerprint, lease_until, expires_at, result, "
       "owner) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?10)"},
      {&record_update_,
       "UPDATE idem_records SET state = ?3, fence = ?4, fingerprint = ?5, lease_until = ?6, expires_at = ?7, "
       "result = ?8, owner = ?10 WHERE rowid = ?9"},
      {&record_delete_, "DELETE FROM idem_records WHERE rowid = ?1"},
      {&token_get_, "SELECT consumed, ttl_us, expires_at FROM idem_tokens WHERE scope = ?1 AND token = ?2"},
      {&token_insert_,
       "INSERT INTO idem_tokens (scope, token, consumed, ttl_us, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&token_update_,
       "UPDATE idem_tokens SET consumed = ?3, ttl_us = ?4, expires_at = ?5 WHERE scope = ?1 AND token = ?2"},
      {&token_delete_, "DELETE FROM idem_tokens WHERE scope = ?1 AND token = ?2"},
      {&lock_get_, "SELECT owner, fence, expires_at FROM idem_locks WHERE name = ?1"},
      {&lock_insert_, "INSERT INTO idem_locks (name, owner, fence, expires_at) VALUES (?1, ?2, ?3, ?4)"},
      {&lock_update_, "UPDATE idem_locks SET owner = ?2, fence = ?3, expires_at = ?4 WHERE name = ?1"},
      {&lock_delete_, "DELETE FROM idem_locks WHERE name = ?1"},
      {&sweep_records_,
       "DELETE FROM idem_records WHERE rowid IN "
       "(SELECT rowid FROM idem_records WHERE expires_at <= ?1 LIMIT ?2)"},
      {&sweep_tokens_,
       "DELETE FROM idem_tokens WHERE (scope, token) IN "
       "(SELECT scope, token FROM idem_tokens WHERE expires_at <= ?1 LIMIT ?2)"},
      {&sweep_locks_,
       "DELETE FROM idem_locks WHERE name IN (SELECT name FROM idem_locks WHERE expires_at <= ?1 LIMIT ?2)"},
  };
  for (const auto& [stmt, sql] : all) {
    if (auto s = prepare(*stmt, sql); !s) return s;
  }
  return Status::ok();
}

Status Database::run(sqlite3_stmt* s, std::string_view what) {
  const int rc = sqlite3_step(s);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? Status::ok() : error(rc, what);
}

// ---- transactions and the fence high-water mark ----------------------------------------

Status Database::begin_transaction() {
  Use q(begin_);
  return run(q.get(), "begin");
}

Status Database::commit() {
  Use q(commit_);
  const int rc = sqlite3_step(q.get());
  if (rc == SQLITE_DONE) return Status::ok();
  Status s = error(rc, "commit");
  // An I/O error while COMMIT writes or syncs the WAL: the commit frame may be on disk, and
  // the next opening of the file may recover the transaction. Unlike every other failure,
  // this one leaves the outcome unknown (docs/stores.md).
  if ((rc & 0xff) == SQLITE_IOERR) return deadline_exceeded(s.message() + "; the outcome is unknown");
  return s;
}

void Database::rollback() noexcept {
  if (sqlite3_get_autocommit(db_)) return;  // SQLite already rolled back (or nothing open)
  if (rollback_.get() != nullptr) {
    Use q(rollback_);
    sqlite3_step(q.get());
  } else {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Result<Fence> Database::load_high_water() {
  Use q(high_water_);
  const int rc = sqlite3_step(q.get());
  if (rc != SQLITE_ROW) return error(rc, "cannot read the fence high-water mark");
  return static_cast<Fence>(std::max<std::int64_t>(sqlite3_column_int64(q.get(), 0), 0));
}

Result<Fence> Database::load_persisted_high_water() {
  Use q(meta_get_);
  const int rc = sqlite3_step(q.get());
  if (rc == SQLITE_DONE) return Fence{0};
  if (rc != SQLITE_ROW) return error(rc, "cannot read the fence high-water mark");
  return static_cast<Fence>(std::max<std::int64_t>(sqlite3_column_int64(q.get(), 0), 0));
}

Status Database::save_high_water(Fence f) {
  for (const Statement* stmt : {&meta_update_, &meta_put_}) {  // the row exists but for damage
    Use q(*stmt);
    if (const int rc = bind_int(q.get(), 1, static_cast<std::int64_t>(f)); rc != SQLITE_OK) {
      return error(rc, "save fence high-water mark");
    }
    if (auto s = run(q.get(), "save fence high-water mark"); !s) return s;
    if (sqlite3_changes(db_) > 0) break;
  }
  return Status::ok();
}

Result<bool> Database::changed_by_others() {
  Use q(data_version_);
  const int rc = sqlite3_step(q.get());
  if (rc != SQLITE_ROW) return error(rc, "read data_version");
  const std::int64_t v = sqlite3_column_int64(q.get(), 0);
  const bool changed = data_version_seen_ != -1 && v != data_version_seen_;
  data_version_seen_ = v;
  return changed;
}

// The WAL index (https://www.sqlite.org/walformat.html) begins with two copies of a 48-byte
// header, in machine byte order. A commit writes the second copy, then the first; a reader
// reads the first, then the second, and trusts them only when they are equal (as SQLite's
// walIndexTryHdr does). Word 2 counts commits; words 10 and 11 are a checksum of the rest.
namespace {
constexpr int kHeaderWords = 12;
constexpr int kChangeWord = 2;
constexpr int kInitWord = 3;  // isInit is its first byte
constexpr int kChecksumWord = 10;
}  // namespace

void Database::map_wal_index() noexcept {
  sqlite3_file* file = nullptr;
  if (sqlite3_file_control(db_, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == nullptr)
    return;
  const sqlite3_io_methods* methods = file->pMethods;
  if (methods == nullptr || methods->iVersion < 2 || methods->xShmMap == nullptr) return;
  // The region exists once a transaction has read the file (opening did); bExtend = 0
  // maps nothing new.
  volatile void* region = nullptr;
  if (methods->xShmMap(file, 0, 32 * 1024, 0, &region) != SQLITE_OK || region == nullptr) return;
  wal_index_ = static_cast<const volatile std::uint32_t*>(region);
}

std::optional<std::uint64_t> Database::wal_index_stamp() const noexcept {
  if (wal_index_ == nullptr) return std::nullopt;
  std::uint32_t first[kHeaderWords];
  std::uint32_t second[kHeaderWords];
  for (int i = 0; i < kHeaderWords; ++i) first[i] = wal_index_[i];
  std::atomic_thread_fence(std::memory_order_acquire);
  for (int i = 0; i < kHeaderWords; ++i) second[i] = wal_index_[kHeaderWords + i];
  if (std::memcmp(first, second, sizeof first) != 0) return std::nullopt;
  std::uint8_t is_init = 0;
  std::memcpy(&is_init, &first[kInitWord], 1);
  if (is_init == 0) return std::nullopt;
  // Never 0: the lowest bit is set (the commit counter alone would do; the checksum adds
  // the frame count and salts).
  return (std::uint64_t{first[kChangeWord]} << 32) | first[kChecksumWord] | 1;
}

// ---- records ---------------------------------------------------------------------------

Status Database::load_record(std::string_view scope, std::string_view key, std::optional<Record>& slot,
                             std::int64_t& rowid) {
  Use q(record_get_);
  sqlite3_stmt* s = q.get();
  if (int rc = first_error(bind_text(s, 1, scope), bind_text(s, 2, key)); rc != SQLITE_OK) {
    return error(rc, "read record");
  }
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    slot.reset();
    rowid = 0;
    return Status::ok();
  }
  if (rc != SQLITE_ROW) return error(rc, "read record");
  rowid = sqlite3_column_int64(s, 0);
  Record& r = slot ? *slot : slot.emplace();
  r.scope.assign(scope);
  r.key.assign(key);
  const auto* state = sqlite3_column_text(s, 1);
  r.state = state != nullptr && state[0] == 'd' ? RecordState::done : RecordState::pending;
  r.fence = static_cast<Fence>(sqlite3_column_int64(s, 2));
  column_into(s, 3, r.fingerprint);
  if (sqlite3_column_type(s, 4) == SQLITE_NULL) {
    r.lease_until.reset();
  } else {
    r.lease_until = column_time(s, 4);
  }
  r.expires_at = column_time(s, 5);
  column_into(s, 6, r.result);
  column_into(s, 7, r.owner);
  return Status::ok();
}

Status Database::list_records(const ListArgs& a, const std::optional<core::ListPosition>& after,
                              TimePoint now, std::size_t rows, std::vector<Record>& out) {
  Use q(record_list_);
  sqlite3_stmt* s = q.get();
  sqlite3_clear_bindings(s);  // a reset keeps them: an unused filter must be NULL
  const std::optional<std::string> end = core::prefix_end(a.key_prefix);
  int rc =
      first_error(bind_time(s, 1, now), a.scope ? bind_text(s, 2, *a.scope) : SQLITE_OK,
                  a.state ? bind_text(s, 3, to_string(*a.state)) : SQLITE_OK, bind_text(s, 4, a.key_prefix),
                  end ? bind_text(s, 5, *end) : SQLITE_OK, bind_int(s, 9, static_cast<std::int64_t>(rows)));
  if (after) {
    rc = first_error(rc, bind_time(s, 6, after->expires_at), bind_text(s, 7, after->scope),
                     bind_text(s, 8, after->key));
  }
  if (rc != SQLITE_OK) return error(rc, "list records");
  for (;;) {
    rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return error(rc, "list records");
    Record& r = out.emplace_back();
    column_into(s, 0, r.scope);
    column_into(s, 1, r.key);
    const auto* state = sqlite3_column_text(s, 2);
    r.state = state != nullptr && state[0] == 'd' ? RecordState::done : RecordState::pending;
    r.fence = static_cast<Fence>(sqlite3_column_int64(s, 3));
    column_into(s, 4, r.fingerprint);
    if (sqlite3_column_type(s, 5) != SQLITE_NULL) r.lease_until = column_time(s, 5);
    r.expires_at = column_time(s, 6);
    column_into(s, 7, r.result);
    column_into(s, 8, r.owner);
  }
  return Status::ok();
}

Status Database::save_record(const Record& r, std::int64_t rowid) {
  Use q(rowid != 0 ? record_update_ : record_insert_);
  sqlite3_stmt* s = q.get();
  int rc = rowid != 0 ? bind_int(s, 9, rowid) : first_error(bind_text(s, 1, r.scope), bind_text(s, 2, r.key));
  rc = first_error(rc, bind_text(s, 3, to_string(r.state)),
                   bind_int(s, 4, static_cast<std::int64_t>(r.fence)), bind_blob(s, 5, r.fingerprint),
                   r.lease_until ? bind_time(s, 6, *r.lease_until) : sqlite3_bind_null(s, 6),
                   bind_time(s, 7, r.expires_at), bind_blob(s, 8, r.result), bind_blob(s, 10, r.owner));
  if (rc != SQLITE_OK) return error(rc, "write record");
  return run(s, "write record");
}

Status Database::erase_record(std::int64_t rowid) {
  if (rowid == 0) return Status::ok();
  Use q(record_delete_);
  if (int rc = bind_int(q.get(), 1, rowid); rc != SQLITE_OK) return error(rc, "delete record");
  return run(q.get(), "delete record");
}

// ---- tokens ----------------------------------------------------------------------------

Status Database::load_token(std::string_view scope, std::string_view token,
                            std::optional<core::TokenEntry>& slot) {
  Use q(token_get_);
  sqlite3_stmt* s = q.get();
  if (int rc = first_error(bind_text(s, 1, scope), bind_text(s, 2, token)); rc != SQLITE_OK) {
    return error(rc, "read token");
  }
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    slot.reset();
    return Status::ok();
  }
  if (rc != SQLITE_ROW) return error(rc, "read token");
  slot = core::TokenEntry{sqlite3_column_int64(s, 0) != 0, Duration(sqlite3_column_int64(s, 1)),
                          column_time(s, 2)};
  return Status::ok();
}

Status Database::save_token(std::string_view scope, std::string_view token, const core::TokenEntry& t,
                            bool exists) {
  Use q(exists ? token_update_ : token_insert_);
  sqlite3_stmt* s = q.get();
  const int rc =
      first_error(bind_text(s, 1, scope), bind_text(s, 2, token), bind_int(s, 3, t.consumed ? 1 : 0),
                  bind_int(s, 4, t.ttl.count()), bind_time(s, 5, t.expires_at));
  if (rc != SQLITE_OK) return error(rc, "write token");
  return run(s, "write token");
}

Status Database::erase_token(std::string_view scope, std::string_view token) {
  Use q(token_delete_);
  sqlite3_stmt* s = q.get();
  if (int rc = first_error(bind_text(s, 1, scope), bind_text(s, 2, token)); rc != SQLITE_OK) {
    return error(rc, "delete token");
  }
  return run(s, "delete token");
}

// ---- locks -----------------------------------------------------------------------------

Status Database::load_lock(std::string_view name, std::optional<core::LockEntry>& slot) {
  Use q(lock_get_);
  sqlite3_stmt* s = q.get();
  if (int rc = bind_text(s, 1, name); rc != SQLITE_OK) return error(rc, "read lock");
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    slot.reset();
    return Status::ok();
  }
  if (rc != SQLITE_ROW) return error(rc, "read lock");
  core::LockEntry& l = slot ? *slot : slot.emplace();
  column_into(s, 0, l.owner);
  l.fence = static_cast<Fence>(sqlite3_column_int64(s, 1));
  l.expires_at = column_time(s, 2);
  return Status::ok();
}

Status Database::save_lock(std::string_view name, const core::LockEntry& l, bool exists) {
  Use q(exists ? lock_update_ : lock_insert_);
  sqlite3_stmt* s = q.get();
  const int rc =
      first_error(bind_text(s, 1, name), bind_text(s, 2, l.owner),
                  bind_int(s, 3, static_cast<std::int64_t>(l.fence)), bind_time(s, 4, l.expires_at));
  if (rc != SQLITE_OK) return error(rc, "write lock");
  return run(s, "write lock");
}

Status Database::erase_lock(std::string_view name) {
  Use q(lock_delete_);
  sqlite3_stmt* s = q.get();
  if (int rc = bind_text(s, 1, name); rc != SQLITE_OK) return error(rc, "delete lock");
  return run(s, "delete lock");
}

// ---- expiry ----------------------------------------------------------------------------

Status Database::sweep_step(TimePoint now, int limit, SweepCounts& deleted) {
  const std::pair<const Statement*, std::uint64_t*> tables[] = {{&sweep_records_, &deleted.records},
                                                                {&sweep_tokens_, &deleted.tokens},
                                                                {&sweep_locks_, &deleted.locks}};
  for (const auto& [stmt, count] : tables) {
    Use q(*stmt);
    sqlite3_stmt* s = q.get();
    if (int rc = first_error(bind_time(s, 1, now), bind_int(s, 2, limit)); rc != SQLITE_OK) {
      return error(rc, "sweep");
    }
    if (auto st = run(s, "sweep"); !st) return st;
    *count = static_cast<std::uint64_t>(sqlite3_changes64(db_));
  }
  return Status::ok();
}

// ---- checkpoints -----------------------------------------------------------------------

int Database::on_wal_commit(void* self, sqlite3*, const char*, int frames) noexcept {
  static_cast<Database*>(self)->wal_frames_ = frames;
  return SQLITE_OK;
}

void Database::checkpoint() noexcept {
  sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
}

void Database::checkpoint_from_other_thread() noexcept {
  if (checkpoint_db_ != nullptr) {
    sqlite3_wal_checkpoint_v2(checkpoint_db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  }
}

}  // namespace idem::sqlite
