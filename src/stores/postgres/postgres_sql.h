// The PostgreSQL store's schema and statements (docs/design.md, "PostgreSQL in detail"). Each operation is
// one statement, prepared once per connection, whose every parameter and result column is in binary format
// (bytea as raw bytes, int8 as 8 big-endian bytes).
//
// Time is the server's (I7): NOW is statement_timestamp() in µs since the Unix epoch,
// stable within a statement. Times are int8 µs, as in the SQLite store.
//
// Fences never repeat for a key: a new fence is greatest(previous + 1, NOW), and the
// previous fence outlives the record. release, abandon and remove leave a tombstone
// (state 'free': absent for every operation) and an unlocked or expired lock keeps its
// row (unlock sets `unlocked`: never held again), so the next acquisition sees the last
// fence even within one microsecond or one transaction. Tombstones and unlocked locks are
// marked by state, not judged by time, so the server's clock stepping back cannot bring
// them back to life; their expires_at (the instant they went) only dates them for sweep. sweep deletes
// tombstones and expired locks only kTombstoneGrace after they stopped mattering; from then on the server's
// clock, which has moved past the old fence by at least the grace, keeps new fences above it (the one
// exception docs/design.md, "Why fences", allows: the clock stepping back by more than the grace).
#pragma once

#include <libpq-fe.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace idem::postgres {

enum class Stmt {
  begin,
  commit,
  release,
  release_restore,
  abandon,
  extend,
  get,
  remove,
  issue_token,
  consume_token,
  restore_token,
  lock,
  unlock,
  extend_lock,
  ping,
  sweep_records,
  sweep_tokens,
  sweep_locks,
  list,
};
inline constexpr std::size_t kStatementCount = static_cast<std::size_t>(Stmt::list) + 1;

// The list statement's $1: which of the optional conditions apply.
enum ListFlags : std::int64_t { kListScope = 1, kListState = 2, kListKeyEnd = 4, kListAfter = 8 };

// Rows one sweep statement deletes at most: each step is a short transaction of its own.
inline constexpr int kSweepBatch = 1000;
// How long tombstones and expired locks keep their fence before sweep deletes them.
inline constexpr std::int64_t kTombstoneGraceMicros = 3'600'000'000;  // 1 h

struct Statement {
  std::string name;  // of the prepared statement, per connection
  std::string sql;
  std::vector<Oid> types;  // of $1, $2, ...
};

// The statements for tables named PREFIX + "records", "tokens", "locks", indexed by Stmt.
std::array<Statement, kStatementCount> statements(const std::string& prefix);

// Creates the tables if missing, in one transaction serialized by an advisory lock, so
// that several processes opening the store at once do not collide.
std::string schema_sql(const std::string& prefix);
// Fails (42P01, 42703) unless the tables and every column this version uses are there: what a
// store opened with create_tables=false runs instead of schema_sql.
std::string check_schema_sql(const std::string& prefix);

// A table prefix is safe to paste into SQL: [a-z_][a-z0-9_]*, at most 40 characters.
bool valid_prefix(const std::string& prefix);

}  // namespace idem::postgres
