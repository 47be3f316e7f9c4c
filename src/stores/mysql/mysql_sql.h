// The MySQL store's schema and statements (docs/design.md, "MySQL in detail"). An operation is a few
// statements that the store sends, with many other callers' operations, in one multi-statement
// transaction (one round trip, one commit). Values are written into the text as literals: bytes as
// X'hex' (never quoted, so nothing in them is read as SQL and no character set applies), integers in
// decimal.
//
// Time is the server's (I7): NOW is UTC_TIMESTAMP(6) in µs since the Unix epoch, stable within a
// statement and independent of the session's time zone. Every decision is made by one statement at
// its own NOW; a second statement only reports, and where the instant between them matters it
// says "run again" ('x') or reads the first statement's ROW_COUNT().
//
// Fences never repeat for a key: a new fence is GREATEST(previous + 1, NOW), and the previous fence
// outlives the record. release, abandon and remove leave a tombstone (state 'free': absent for every
// operation) and an unlocked or expired lock keeps its row (`unlocked`: never held again), as in the
// PostgreSQL store; sweep deletes tombstones and expired locks only kTombstoneGrace after they stopped
// mattering.
//
// The statements are the files of protocol/mysql/, which say what each takes and answers and how
// begin and lock decide (an upsert that only makes sure the row exists and locks it, then one UPDATE
// that takes it or not, then a SELECT that reads ROW_COUNT()); nothing in them is deprecated by MySQL
// 8.0 or 8.4 (tests/protocol/mysql_deprecations_test.py).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/listing.h"
#include "idem/listing.h"
#include "idem/operations.h"

namespace idem::mysql {

// Rows one sweep statement deletes at most: each step is a short transaction of its own.
inline constexpr int kSweepBatch = 1000;
// How long tombstones and expired locks keep their fence before sweep deletes them.
inline constexpr std::int64_t kTombstoneGraceMicros = 3'600'000'000;  // 1 h

// An operation's statements: `text` holds `count` statements, each ending in ';'. The result
// (rows, or the number of rows matched) of statement `answer` (0-based) is the operation's outcome.
struct Sql {
  std::string text;
  int count = 1;
  int answer = 0;
};

// The steps of sweep(), in order; each deletes up to kSweepBatch rows.
enum class SweepStep { records, tombstones, tokens, locks };

// The statements for tables named PREFIX + "records", "tokens", "locks". Durations and fences are in
// µs; a fence beyond BIGINT is given as -1 (it matches no row).
class Statements {
 public:
  explicit Statements(std::string prefix) : p_(std::move(prefix)) {}

  // begin's and lock's answer: one row (kind, fence, result, retry_after µs), kinds as in
  // mysql_ops.h.
  Sql begin(const BeginArgs& a) const;
  Sql commit(const CommitArgs& a, std::int64_t fence) const;
  Sql release(const ReleaseArgs& a, std::int64_t fence) const;
  Sql abandon(const AbandonArgs& a) const;
  Sql extend(const ExtendArgs& a, std::int64_t fence) const;
  Sql get(const RecordId& a) const;
  Sql remove(const RecordId& a) const;
  // Rows: at most limit + 1 records, newest first; `after` is the cursor's position.
  Sql list(const ListArgs& a, const std::optional<std::string>& key_end,
           const core::ListPosition* after) const;
  Sql issue_token(const IssueTokenArgs& a, const std::string& token) const;
  Sql consume_token(const TokenArgs& a) const;
  Sql restore_token(const RestoreTokenArgs& a) const;
  Sql lock(const LockArgs& a) const;
  Sql unlock(const UnlockArgs& a) const;
  Sql extend_lock(const LockArgs& a) const;
  Sql ping() const;
  Sql sweep(SweepStep step) const;

 private:
  const std::string p_;
};

// Creates the tables if missing (statements to run one after the other; each DDL statement commits
// by itself). Run while holding the named lock schema_lock(prefix), so that several processes
// opening the store at once do not collide.
std::string schema_sql(const std::string& prefix);
// Fails (1146, 1054) unless the tables and every column this version uses are there: what a store
// opened with create_tables=false runs instead of schema_sql (and the widenings' width_sql).
std::string check_schema_sql(const std::string& prefix);
// A column that tables created by an earlier version hold narrower (the keys were 255 bytes,
// lock names 2,048): `width_sql` answers its width in bytes; when that is less than `width`,
// `alter_sql` widens it (rebuilding the table). Run under the schema lock, after schema_sql.
struct Widening {
  std::string column;  // "<prefix>records.key", for messages
  std::string width_sql;
  std::size_t width = 0;
  std::string alter_sql;
};
std::vector<Widening> widenings(const std::string& prefix);
// The GET_LOCK name: idem_schema_PREFIX (at most 64 characters, as MySQL requires); the statements
// that take it, waiting up to `wait_seconds` (answering 1 when taken), and give it back.
std::string schema_lock(const std::string& prefix);
std::string schema_lock_sql(const std::string& prefix, std::int64_t wait_seconds);
std::string schema_unlock_sql(const std::string& prefix);

// The settings every connection starts with; the last statement's row is @@max_allowed_packet.
std::string session_sql(std::int64_t lock_wait_seconds);

// X'...': the bytes as a literal.
std::string hex(std::string_view bytes);

// A table prefix is safe to paste into SQL: [a-z_][a-z0-9_]*, at most 40 characters.
bool valid_prefix(const std::string& prefix);

}  // namespace idem::mysql
