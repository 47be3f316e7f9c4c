#include "stores/postgres/postgres_sql.h"

#include <string_view>

#include "stores/batching/sql_template.h"
#include "stores/batching/table_prefix.h"

namespace idem::postgres {
namespace {

// Type OIDs of the parameters (pg_type.h).
constexpr Oid kBytea = 17, kInt8 = 20, kText = 25;

constexpr std::string_view kNow = "(extract(epoch FROM statement_timestamp()) * 1000000)::int8";

std::string expand(std::string_view sql, const std::string& prefix) {
  return batching::expand_sql(sql, prefix, kNow, kTombstoneGraceMicros);
}

// begin: one upsert that acquires (fresh, or taking over an expired lease) and returns
// kind 'a' or 'r' (recovered) with the fence and, for 'r', the fence it took over (the SET
// reads the old row: previous_fence); otherwise it changes nothing but locks the
// row, and the second branch reports what the statement's snapshot shows: 'm' mismatch,
// 'd' replay (fence, result, expires_in µs), 'i' in_progress (retry_after µs). 'x' or no row at all: the
// row the upsert met was written after the snapshot was taken; the caller runs the
// statement again. EXCLUDED.fence is NOW (a fresh row's fence).
constexpr std::string_view kBegin = R"sql(
WITH up AS (
  INSERT INTO {p}records AS r (scope, key, state, fence, fingerprint, lease_until, expires_at, result, recovered,
                               owner, previous_fence)
  VALUES ($1, $2, 'pending', {now}, $3, {now} + $4, {now} + $4 + $5, '', false, $6, 0)
  ON CONFLICT (scope, key) DO UPDATE SET
    fence = greatest(r.fence + 1, EXCLUDED.fence),
    recovered = r.state <> 'free' AND r.expires_at > EXCLUDED.fence,
    previous_fence = CASE WHEN r.state <> 'free' AND r.expires_at > EXCLUDED.fence THEN r.fence ELSE 0 END,
    fingerprint = CASE WHEN r.state <> 'free' AND r.expires_at > EXCLUDED.fence AND $3 = '' THEN r.fingerprint
                       ELSE $3 END,
    state = 'pending', lease_until = EXCLUDED.lease_until, expires_at = EXCLUDED.expires_at, result = '',
    owner = $6
  WHERE r.state = 'free' OR r.expires_at <= EXCLUDED.fence
     OR (r.state = 'pending' AND r.lease_until <= EXCLUDED.fence
         AND (r.fingerprint = '' OR $3 = '' OR r.fingerprint = $3))
  RETURNING fence, recovered, previous_fence)
SELECT CASE WHEN recovered THEN 'r' ELSE 'a' END, fence, NULL::bytea, NULL::int8, previous_fence FROM up
UNION ALL
SELECT CASE WHEN s.state = 'free' OR s.expires_at <= n.us THEN 'x'
            WHEN s.fingerprint <> '' AND $3 <> '' AND s.fingerprint <> $3 THEN 'm'
            WHEN s.state = 'done' THEN 'd'
            WHEN s.lease_until > n.us THEN 'i'
            ELSE 'x' END,
       s.fence, CASE WHEN s.state = 'done' THEN s.result END,
       CASE WHEN s.state = 'done' THEN s.expires_at ELSE s.lease_until END - n.us, NULL::int8
FROM {p}records s, (SELECT {now} AS us) n
WHERE s.scope = $1 AND s.key = $2 AND NOT EXISTS (SELECT FROM up))sql";

// A live pending record with this fence.
#define IDEM_HELD "scope = $1 AND key = $2 AND fence = $3 AND state = 'pending' AND expires_at > {now}"
// A live done record of another fence whose result starts with $6, when $6 is not empty: the
// uncertain marker a takeover left for the claim of fence $3 (CommitArgs::over_uncertain).
#define IDEM_UNCERTAIN(R) \
  "$6 <> '' AND " R "state = 'done' AND " R "fence <> $3 AND substr(" R "result, 1, length($6)) = $6"

// commit: 'c' committed (now, or before with this fence: a retried commit changes nothing),
// 'f' or no row fenced, 'x' the update met a row newer than the snapshot: run again.
constexpr std::string_view kCommit = R"sql(
WITH up AS (
  UPDATE {p}records SET state = 'done', lease_until = NULL, expires_at = {now} + $4, result = $5,
         recovered = false, fence = $3
  WHERE scope = $1 AND key = $2 AND expires_at > {now}
    AND ((fence = $3 AND state = 'pending') OR ()sql" IDEM_UNCERTAIN("") R"sql()) RETURNING 1)
SELECT 'c' FROM up
UNION ALL
SELECT CASE WHEN s.state = 'free' OR s.expires_at <= {now} THEN 'f'
            WHEN s.fence = $3 AND s.state = 'done' THEN 'c'
            WHEN s.fence = $3 THEN 'x'
            WHEN )sql" IDEM_UNCERTAIN("s.") R"sql( THEN 'x'
            ELSE 'f' END
FROM {p}records s WHERE s.scope = $1 AND s.key = $2 AND NOT EXISTS (SELECT FROM up))sql";
#undef IDEM_UNCERTAIN
constexpr std::string_view kRelease =
    "UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = '', "
    "result = '', owner = '' WHERE " IDEM_HELD " RETURNING 1";
// release with restore_token: the token ($4, for $5 µs) is re-armed in the same statement,
// only when the claim went. Locks the record's row, then the token's.
constexpr std::string_view kReleaseRestore = R"sql(
WITH rel AS (
  UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = '',
         result = '', owner = ''
  WHERE )sql" IDEM_HELD R"sql( RETURNING 1),
tok AS (
  UPDATE {p}tokens SET consumed = false, expires_at = {now} + $5
  WHERE scope = $1 AND token = $4 AND expires_at > {now} AND EXISTS (SELECT FROM rel) RETURNING 1)
SELECT 1 FROM rel)sql";
// abandon: as release, but the claim is named by its (non-empty) owner instead of its fence.
constexpr std::string_view kAbandon =
    "UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = '', "
    "result = '', owner = '' WHERE scope = $1 AND key = $2 AND state = 'pending' AND owner = $3 "
    "AND $3 <> '' AND expires_at > {now} RETURNING 1";
// expires_at keeps its distance to lease_until (the retention).
constexpr std::string_view kExtend =
    "UPDATE {p}records SET lease_until = {now} + $4, expires_at = {now} + $4 + (expires_at - lease_until) "
    "WHERE " IDEM_HELD " RETURNING 1";
#undef IDEM_HELD

constexpr std::string_view kGet =
    "SELECT scope, key, state, fence, fingerprint, lease_until, expires_at, result, owner FROM {p}records "
    "WHERE scope = $1 AND key = $2 AND state <> 'free' AND expires_at > {now}";
// An expired record is already absent and keeps its fence as it is.
constexpr std::string_view kRemove =
    "UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = '', "
    "result = '', owner = '' WHERE scope = $1 AND key = $2 AND state <> 'free' AND expires_at > {now} "
    "RETURNING 1";

constexpr std::string_view kIssueToken =
    "INSERT INTO {p}tokens (scope, token, consumed, ttl_us, expires_at) VALUES ($1, $2, false, $3, {now} + "
    "$3) "
    "RETURNING token";
// A consumed token stays restorable for another ttl.
constexpr std::string_view kConsumeToken =
    "UPDATE {p}tokens SET consumed = true, expires_at = greatest(expires_at, {now} + ttl_us) "
    "WHERE scope = $1 AND token = $2 AND NOT consumed AND expires_at > {now} RETURNING 1";
constexpr std::string_view kRestoreToken =
    "UPDATE {p}tokens SET consumed = false, expires_at = {now} + $3 "
    "WHERE scope = $1 AND token = $2 AND expires_at > {now} RETURNING 1";

// lock: 'l' with the fence (free, unlocked or expired: a new fence; the owner again: the
// same one), 'b' busy with retry_after µs, 'x' or no row: run again (as for begin).
constexpr std::string_view kLock = R"sql(
WITH up AS (
  INSERT INTO {p}locks AS l (name, owner, fence, expires_at, unlocked) VALUES ($1, $2, {now}, {now} + $3, false)
  ON CONFLICT (name) DO UPDATE SET
    fence = CASE WHEN NOT l.unlocked AND l.expires_at > EXCLUDED.fence THEN l.fence
                 ELSE greatest(l.fence + 1, EXCLUDED.fence) END,
    owner = $2, expires_at = EXCLUDED.expires_at, unlocked = false
  WHERE l.unlocked OR l.expires_at <= EXCLUDED.fence OR l.owner = $2
  RETURNING fence)
SELECT 'l', fence, NULL::int8 FROM up
UNION ALL
SELECT CASE WHEN NOT s.unlocked AND s.expires_at > n.us AND s.owner <> $2 THEN 'b' ELSE 'x' END, NULL::int8,
       s.expires_at - n.us
FROM {p}locks s, (SELECT {now} AS us) n
WHERE s.name = $1 AND NOT EXISTS (SELECT FROM up))sql";
// Unlocking marks the row unlocked (not held, whatever the clock says later) and keeps the
// fence; expires_at = NOW dates it for sweep.
constexpr std::string_view kUnlock =
    "UPDATE {p}locks SET expires_at = {now}, unlocked = true WHERE name = $1 AND owner = $2 AND NOT unlocked "
    "AND expires_at > {now} RETURNING 1";
constexpr std::string_view kExtendLock =
    "UPDATE {p}locks SET expires_at = {now} + $3 WHERE name = $1 AND owner = $2 AND NOT unlocked "
    "AND expires_at > {now} RETURNING 1";

constexpr std::string_view kPing = "SELECT 1";

// Sweep steps: up to kSweepBatch rows, skipping rows that operations hold, so a sweep
// never waits for (or deadlocks with) them. Each returns (records that went, rows deleted).
constexpr std::string_view kSweepRecords = R"sql(
WITH d AS (
  DELETE FROM {p}records WHERE (scope, key) IN (
    SELECT scope, key FROM {p}records
    WHERE expires_at <= {now} AND (state <> 'free' OR expires_at <= {now} - {grace})
    LIMIT 1000 FOR UPDATE SKIP LOCKED)
  RETURNING state)
SELECT count(*) FILTER (WHERE state <> 'free'), count(*) FROM d)sql";
constexpr std::string_view kSweepTokens = R"sql(
WITH d AS (
  DELETE FROM {p}tokens WHERE (scope, token) IN (
    SELECT scope, token FROM {p}tokens WHERE expires_at <= {now} LIMIT 1000 FOR UPDATE SKIP LOCKED)
  RETURNING 1)
SELECT 0::int8, count(*) FROM d)sql";
constexpr std::string_view kSweepLocks = R"sql(
WITH d AS (
  DELETE FROM {p}locks WHERE name IN (
    SELECT name FROM {p}locks WHERE expires_at <= {now} - {grace} LIMIT 1000 FOR UPDATE SKIP LOCKED)
  RETURNING 1)
SELECT 0::int8, count(*) FROM d)sql";
static_assert(kSweepBatch == 1000, "the sweep statements say LIMIT 1000");

// list: live records newest first (core/listing.h); bytea compares bytewise, so a key
// prefix is the range [$4, $5). $1 holds ListFlags.
constexpr std::string_view kList = R"sql(
SELECT scope, key, state, fence, fingerprint, lease_until, expires_at, result, owner FROM {p}records
WHERE expires_at > {now} AND state <> 'free'
  AND (($1 & 1) = 0 OR scope = $2)
  AND (($1 & 2) = 0 OR state = $3)
  AND key >= $4 AND (($1 & 4) = 0 OR key < $5)
  AND (($1 & 8) = 0 OR expires_at < $6 OR (expires_at = $6 AND (scope, key) > ($7, $8)))
ORDER BY expires_at DESC, scope, key LIMIT $9)sql";

constexpr std::string_view kSchema = R"sql(
BEGIN;
SET LOCAL client_min_messages = warning;  -- no "already exists, skipping" notices
SELECT pg_advisory_xact_lock(hashtext('idem schema {p}'));
CREATE TABLE IF NOT EXISTS {p}records (
  scope       bytea NOT NULL,
  key         bytea NOT NULL,
  state       text NOT NULL CHECK (state IN ('pending', 'done', 'free')),  -- free: a tombstone
  fence       int8 NOT NULL,
  fingerprint bytea NOT NULL,
  lease_until int8,              -- µs since the Unix epoch; pending records only
  expires_at  int8 NOT NULL,     -- µs since the Unix epoch
  result      bytea NOT NULL,    -- done records only
  recovered   boolean NOT NULL,  -- the holder took over an expired lease
  owner       bytea NOT NULL DEFAULT '',  -- who claimed it (BeginArgs::owner)
  previous_fence int8 NOT NULL DEFAULT 0,  -- recovered: the fence of the claim taken over
  PRIMARY KEY (scope, key)
);
-- Tables created before records had an owner or a previous fence get the columns in place.
ALTER TABLE {p}records ADD COLUMN IF NOT EXISTS owner bytea NOT NULL DEFAULT '',
                       ADD COLUMN IF NOT EXISTS previous_fence int8 NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS {p}records_expires_at ON {p}records (expires_at);
CREATE TABLE IF NOT EXISTS {p}tokens (
  scope      bytea NOT NULL,
  token      bytea NOT NULL,
  consumed   boolean NOT NULL,
  ttl_us     int8 NOT NULL,      -- as issued
  expires_at int8 NOT NULL,
  PRIMARY KEY (scope, token)
);
CREATE INDEX IF NOT EXISTS {p}tokens_expires_at ON {p}tokens (expires_at);
CREATE TABLE IF NOT EXISTS {p}locks (
  name       bytea NOT NULL PRIMARY KEY,
  owner      bytea NOT NULL,
  fence      int8 NOT NULL,
  expires_at int8 NOT NULL,      -- unlocked: the instant of the unlock
  unlocked   boolean NOT NULL DEFAULT false  -- released by its owner: never held again
);
ALTER TABLE {p}locks ADD COLUMN IF NOT EXISTS unlocked boolean NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS {p}locks_expires_at ON {p}locks (expires_at);
COMMIT;
)sql";

}  // namespace

std::array<Statement, kStatementCount> statements(const std::string& prefix) {
  const std::vector<Oid> key2{kBytea, kBytea}, fenced{kBytea, kBytea, kInt8};
  auto make = [&](const char* name, std::string_view sql, std::vector<Oid> types) {
    return Statement{std::string("idem_") + name, expand(sql, prefix), std::move(types)};
  };
  return {
      make("begin", kBegin, {kBytea, kBytea, kBytea, kInt8, kInt8, kBytea}),
      make("commit", kCommit, {kBytea, kBytea, kInt8, kInt8, kBytea, kBytea}),
      make("release", kRelease, fenced),
      make("release_restore", kReleaseRestore, {kBytea, kBytea, kInt8, kBytea, kInt8}),
      make("abandon", kAbandon, {kBytea, kBytea, kBytea}),
      make("extend", kExtend, {kBytea, kBytea, kInt8, kInt8}),
      make("get", kGet, key2),
      make("remove", kRemove, key2),
      make("issue_token", kIssueToken, {kBytea, kBytea, kInt8}),
      make("consume_token", kConsumeToken, key2),
      make("restore_token", kRestoreToken, {kBytea, kBytea, kInt8}),
      make("lock", kLock, {kBytea, kBytea, kInt8}),
      make("unlock", kUnlock, key2),
      make("extend_lock", kExtendLock, {kBytea, kBytea, kInt8}),
      make("ping", kPing, {}),
      make("sweep_records", kSweepRecords, {}),
      make("sweep_tokens", kSweepTokens, {}),
      make("sweep_locks", kSweepLocks, {}),
      make("list", kList, {kInt8, kBytea, kText, kBytea, kBytea, kInt8, kBytea, kBytea, kInt8}),
  };
}

std::string schema_sql(const std::string& prefix) { return expand(kSchema, prefix); }

bool valid_prefix(const std::string& prefix) { return batching::valid_table_prefix(prefix); }

}  // namespace idem::postgres
