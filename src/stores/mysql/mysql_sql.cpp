#include "stores/mysql/mysql_sql.h"

#include <initializer_list>

#include "idem/limits.h"
#include "stores/batching/sql_template.h"
#include "stores/batching/table_prefix.h"
#include "util/hex.h"

namespace idem::mysql {
namespace {

constexpr std::string_view kNow = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";

// The statement templates (stores/batching/sql_template.h); $1..$9: the arguments, already literals.
std::string expand(std::string_view sql, const std::string& prefix, std::initializer_list<std::string> args) {
  return batching::expand_sql(sql, prefix, kNow, kTombstoneGraceMicros, args);
}

std::string num(std::int64_t v) { return std::to_string(v); }
std::int64_t us(Duration d) { return d.count(); }

// begin: takes the row when there is none, it is a tombstone, it expired, or its lease expired
// with a matching fingerprint. @idem_take says whether it did: the VALUES row, built for every
// call, sets it to 1 (its `recovered` is (@idem_take := 1) - 1, that is 0) and @idem_previous to
// 0, and on a conflict the first assignment sets @idem_take from the old row, the fence's keeps
// the old fence in @idem_previous. NOW is the statement's, the same in every part. The SELECT then
// reads the row the upsert left, locked by it: 'a' acquired, 'r' recovered (fence, and the fence
// taken over last), 'm' mismatch, 'd' replay (fence, result, expires_in µs), 'i' in_progress
// (retry_after µs); 'x' (the lease ran out between the two statements): run again.
constexpr std::string_view kBegin = R"sql(INSERT INTO {p}records
  (scope, `key`, state, fence, fingerprint, lease_until, expires_at, result, recovered, owner)
VALUES ($1, $2, 'pending', {now}, $3, {now} + $4, {now} + $4 + $5, X'', (@idem_take := 1) - 1 + (@idem_previous := 0),
        $6)
ON DUPLICATE KEY UPDATE
  recovered = IF(@idem_take := (state = 'free' OR expires_at <= {now}
                                OR (state = 'pending' AND lease_until <= {now}
                                    AND (fingerprint = X'' OR $3 = X'' OR fingerprint = $3))),
                 state <> 'free' AND expires_at > {now}, recovered),
  fence = IF(@idem_take, GREATEST((@idem_previous := fence) + 1, {now}), fence),
  fingerprint = IF(@idem_take AND NOT (state <> 'free' AND expires_at > {now} AND $3 = X''), $3, fingerprint),
  lease_until = IF(@idem_take, {now} + $4, lease_until),
  expires_at = IF(@idem_take, {now} + $4 + $5, expires_at),
  result = IF(@idem_take, X'', result),
  owner = IF(@idem_take, $6, owner),
  state = IF(@idem_take, 'pending', state);
SELECT CASE WHEN @idem_take THEN IF(recovered, 'r', 'a')
            WHEN fingerprint <> X'' AND $3 <> X'' AND fingerprint <> $3 THEN 'm'
            WHEN state = 'done' THEN 'd'
            WHEN lease_until > {now} THEN 'i'
            ELSE 'x' END,
       fence, IF(state = 'done', result, NULL), IF(state = 'done', expires_at, lease_until) - {now},
       IF(@idem_take AND recovered, @idem_previous, 0)
FROM {p}records WHERE scope = $1 AND `key` = $2;)sql";

// A live pending record with this fence, judged at NOW.
#define IDEM_HELD(NOW) "scope = $1 AND `key` = $2 AND fence = $3 AND state = 'pending' AND expires_at > " NOW

// commit: 'c' when the UPDATE found the row (ROW_COUNT(): rows found), or when the row is done
// with this fence and live (a retried commit changes nothing); else 'f' (no row: fenced too). The
// UPDATE takes a live pending row of this fence or, when $7 (the length of over_uncertain, $6) is
// not 0, a live done row of another fence whose result starts with $6, which takes this fence.
constexpr std::string_view kCommit = R"sql(UPDATE {p}records
SET state = 'done', lease_until = NULL, expires_at = {now} + $4, result = $5, recovered = 0, fence = $3
WHERE scope = $1 AND `key` = $2 AND expires_at > {now}
  AND ((state = 'pending' AND fence = $3)
       OR ($7 > 0 AND state = 'done' AND fence <> $3 AND LEFT(result, $7) = $6));
SELECT IF(ROW_COUNT() > 0, 'c',
          (SELECT IF(state = 'done' AND fence = $3 AND expires_at > {now}, 'c', 'f') FROM {p}records
           WHERE scope = $1 AND `key` = $2));)sql";

#define IDEM_FREE(NOW) \
  "state = 'free', lease_until = NULL, expires_at = " NOW ", fingerprint = X'', result = X'', owner = X''"
constexpr std::string_view kRelease =
    "UPDATE {p}records SET " IDEM_FREE("{now}") " WHERE " IDEM_HELD("{now}") ";";
// release with restore_token: the token ($4, for $5 µs) is re-armed only when the claim went.
// Locks the record's row, then the token's.
constexpr std::string_view kReleaseRestore =
    R"sql(UPDATE {p}records SET )sql" IDEM_FREE("{now}") " WHERE " IDEM_HELD("{now}") R"sql(;
SET @idem_released = ROW_COUNT();
UPDATE {p}tokens SET consumed = 0, expires_at = {now} + $5
WHERE scope = $1 AND token = $4 AND expires_at > {now} AND @idem_released > 0;)sql";
// abandon: as release, but the claim is named by its (non-empty) owner instead of its fence.
constexpr std::string_view kAbandon = "UPDATE {p}records SET " IDEM_FREE(
    "{now}") " WHERE scope = $1 AND `key` = $2 AND state = 'pending' AND owner = $3 AND $3 <> X'' "
             "AND expires_at > {now};";
// expires_at keeps its distance to lease_until (the retention), so it is assigned first.
constexpr std::string_view kExtend =
    "UPDATE {p}records SET expires_at = {now} + $4 + (expires_at - lease_until), lease_until = {now} + $4 "
    "WHERE " IDEM_HELD("{now}") ";";
#undef IDEM_HELD

#define IDEM_COLUMNS "scope, `key`, state, fence, fingerprint, lease_until, expires_at, result, owner"
constexpr std::string_view kGet = "SELECT " IDEM_COLUMNS
                                  " FROM {p}records WHERE scope = $1 AND `key` = $2 AND state <> 'free' "
                                  "AND expires_at > {now};";
// An expired record is already absent and keeps its fence as it is.
constexpr std::string_view kRemove = "UPDATE {p}records SET " IDEM_FREE(
    "{now}") " WHERE scope = $1 AND `key` = $2 AND state <> 'free' AND expires_at > {now};";
#undef IDEM_FREE

constexpr std::string_view kIssueToken =
    "INSERT INTO {p}tokens (scope, token, consumed, ttl_us, expires_at) VALUES ($1, $2, 0, $3, {now} + $3);";
// A consumed token stays restorable for another ttl.
constexpr std::string_view kConsumeToken =
    "UPDATE {p}tokens SET consumed = 1, expires_at = GREATEST(expires_at, {now} + ttl_us) "
    "WHERE scope = $1 AND token = $2 AND NOT consumed AND expires_at > {now};";
constexpr std::string_view kRestoreToken =
    "UPDATE {p}tokens SET consumed = 0, expires_at = {now} + $3 "
    "WHERE scope = $1 AND token = $2 AND expires_at > {now};";

// lock: takes the row when free, unlocked, expired or held by the same owner (then the fence
// stays), with @idem_take as in begin; the SELECT says 'l' (fence) or 'b' busy (retry_after µs),
// 'x': run again.
constexpr std::string_view kLock = R"sql(INSERT INTO {p}locks (name, owner, fence, expires_at, unlocked)
VALUES ($1, $2, {now}, {now} + $3, (@idem_take := 1) - 1)
ON DUPLICATE KEY UPDATE
  fence = IF(@idem_take := (unlocked OR expires_at <= {now} OR owner = $2),
             IF(NOT unlocked AND expires_at > {now}, fence, GREATEST(fence + 1, {now})), fence),
  owner = IF(@idem_take, $2, owner),
  expires_at = IF(@idem_take, {now} + $3, expires_at),
  unlocked = IF(@idem_take, 0, unlocked);
SELECT IF(@idem_take, 'l', IF(NOT unlocked AND expires_at > {now} AND owner <> $2, 'b', 'x')), fence, NULL,
       expires_at - {now}
FROM {p}locks WHERE name = $1;)sql";
// Unlocking marks the row unlocked (not held, whatever the clock says later) and keeps the
// fence; expires_at = NOW dates it for sweep.
constexpr std::string_view kUnlock =
    "UPDATE {p}locks SET expires_at = {now}, unlocked = 1 WHERE name = $1 AND owner = $2 AND NOT unlocked "
    "AND expires_at > {now};";
constexpr std::string_view kExtendLock =
    "UPDATE {p}locks SET expires_at = {now} + $3 WHERE name = $1 AND owner = $2 AND NOT unlocked "
    "AND expires_at > {now};";

// Sweep steps, by the expires_at indexes: records that went (expired, not tombstones), tombstones
// past the grace, expired tokens, locks past the grace.
constexpr std::string_view kSweepRecords =
    "DELETE FROM {p}records WHERE expires_at <= {now} AND state <> 'free' LIMIT 1000;";
constexpr std::string_view kSweepTombstones =
    "DELETE FROM {p}records WHERE expires_at <= {now} - {grace} AND state = 'free' LIMIT 1000;";
constexpr std::string_view kSweepTokens = "DELETE FROM {p}tokens WHERE expires_at <= {now} LIMIT 1000;";
constexpr std::string_view kSweepLocks =
    "DELETE FROM {p}locks WHERE expires_at <= {now} - {grace} LIMIT 1000;";
static_assert(kSweepBatch == 1000, "the sweep statements say LIMIT 1000");

// Bytes as VARBINARY (PRIMARY KEY parts) compare bytewise, with no padding and no case folding:
// "a", "a " and "A" are three keys. The widths are limits.h's ($1 scopes, $2 keys, $3 lock
// names): a longer one is refused by the server (strict mode): invalid_argument. InnoDB keys
// hold 3,072 bytes at most: scope and key together take 2,368.
constexpr std::string_view kSchema = R"sql(CREATE TABLE IF NOT EXISTS {p}records (
  scope       VARBINARY($1) NOT NULL,
  `key`       VARBINARY($2) NOT NULL,
  state       VARCHAR(7) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,  -- pending, done, free (a tombstone)
  fence       BIGINT NOT NULL,
  fingerprint BLOB NOT NULL,
  lease_until BIGINT NULL,          -- µs since the Unix epoch; pending records only
  expires_at  BIGINT NOT NULL,      -- µs since the Unix epoch
  result      LONGBLOB NOT NULL,    -- done records only
  recovered   BOOLEAN NOT NULL,     -- the holder took over an expired lease
  owner       BLOB NOT NULL,        -- who claimed it (BeginArgs::owner)
  PRIMARY KEY (scope, `key`),
  KEY {p}records_expires_at (expires_at)
) ENGINE = InnoDB;
CREATE TABLE IF NOT EXISTS {p}tokens (
  scope      VARBINARY($1) NOT NULL,
  token      VARBINARY(255) NOT NULL,
  consumed   BOOLEAN NOT NULL,
  ttl_us     BIGINT NOT NULL,       -- as issued
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (scope, token),
  KEY {p}tokens_expires_at (expires_at)
) ENGINE = InnoDB;
CREATE TABLE IF NOT EXISTS {p}locks (
  name       VARBINARY($3) NOT NULL PRIMARY KEY,
  owner      BLOB NOT NULL,
  fence      BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,       -- unlocked: the instant of the unlock
  unlocked   BOOLEAN NOT NULL,      -- released by its owner: never held again
  KEY {p}locks_expires_at (expires_at)
) ENGINE = InnoDB;)sql";

Sql one(std::string text) { return Sql{std::move(text), 1, 0}; }

}  // namespace

std::string hex(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2 + 3);
  out += "X'";
  util::append_hex(out, bytes);
  out += '\'';
  return out;
}

Sql Statements::begin(const BeginArgs& a) const {
  return {expand(kBegin, p_,
                 {hex(a.scope), hex(a.key), hex(a.fingerprint), num(us(a.lease)), num(us(a.retention)),
                  hex(a.owner)}),
          2, 1};
}
Sql Statements::commit(const CommitArgs& a, std::int64_t fence) const {
  return {expand(kCommit, p_,
                 {hex(a.scope), hex(a.key), num(fence), num(us(a.retention)), hex(a.result),
                  hex(a.over_uncertain), num(static_cast<std::int64_t>(a.over_uncertain.size()))}),
          2, 1};
}
Sql Statements::release(const ReleaseArgs& a, std::int64_t fence) const {
  if (!a.restore_token) return one(expand(kRelease, p_, {hex(a.scope), hex(a.key), num(fence)}));
  return {expand(kReleaseRestore, p_,
                 {hex(a.scope), hex(a.key), num(fence), hex(a.restore_token->token),
                  num(us(a.restore_token->ttl))}),
          3, 0};
}
Sql Statements::abandon(const AbandonArgs& a) const {
  return one(expand(kAbandon, p_, {hex(a.scope), hex(a.key), hex(a.owner)}));
}
Sql Statements::extend(const ExtendArgs& a, std::int64_t fence) const {
  return one(expand(kExtend, p_, {hex(a.scope), hex(a.key), num(fence), num(us(a.lease))}));
}
Sql Statements::get(const RecordId& a) const { return one(expand(kGet, p_, {hex(a.scope), hex(a.key)})); }
Sql Statements::remove(const RecordId& a) const {
  return one(expand(kRemove, p_, {hex(a.scope), hex(a.key)}));
}

// Live records newest first (core/listing.h); VARBINARY compares bytewise, so a key prefix is
// the range [prefix, key_end).
Sql Statements::list(const ListArgs& a, const std::optional<std::string>& key_end,
                     const core::ListPosition* after) const {
  std::string sql = "SELECT " IDEM_COLUMNS " FROM {p}records WHERE expires_at > {now} AND state <> 'free'";
  if (a.scope) sql += " AND scope = " + hex(*a.scope);
  if (a.state) sql += std::string(" AND state = '") + to_string(*a.state) + "'";
  sql += " AND `key` >= " + hex(a.key_prefix);
  if (key_end) sql += " AND `key` < " + hex(*key_end);
  if (after) {
    const std::string at = num(us(after->expires_at.time_since_epoch()));
    sql += " AND (expires_at < " + at + " OR (expires_at = " + at + " AND (scope, `key`) > (" +
           hex(after->scope) + ", " + hex(after->key) + ")))";
  }
  sql += " ORDER BY expires_at DESC, scope, `key` LIMIT " + std::to_string(a.limit + 1) + ";";
  return one(expand(sql, p_, {}));
}
#undef IDEM_COLUMNS

Sql Statements::issue_token(const IssueTokenArgs& a, const std::string& token) const {
  return one(expand(kIssueToken, p_, {hex(a.scope), hex(token), num(us(a.ttl))}));
}
Sql Statements::consume_token(const TokenArgs& a) const {
  return one(expand(kConsumeToken, p_, {hex(a.scope), hex(a.token)}));
}
Sql Statements::restore_token(const RestoreTokenArgs& a) const {
  return one(expand(kRestoreToken, p_, {hex(a.scope), hex(a.token), num(us(a.ttl))}));
}
Sql Statements::lock(const LockArgs& a) const {
  return {expand(kLock, p_, {hex(a.name), hex(a.owner), num(us(a.ttl))}), 2, 1};
}
Sql Statements::unlock(const UnlockArgs& a) const {
  return one(expand(kUnlock, p_, {hex(a.name), hex(a.owner)}));
}
Sql Statements::extend_lock(const LockArgs& a) const {
  return one(expand(kExtendLock, p_, {hex(a.name), hex(a.owner), num(us(a.ttl))}));
}
Sql Statements::ping() const { return one("SELECT 1;"); }

Sql Statements::sweep(SweepStep step) const {
  switch (step) {
    case SweepStep::records:
      return one(expand(kSweepRecords, p_, {}));
    case SweepStep::tombstones:
      return one(expand(kSweepTombstones, p_, {}));
    case SweepStep::tokens:
      return one(expand(kSweepTokens, p_, {}));
    case SweepStep::locks:
      break;
  }
  return one(expand(kSweepLocks, p_, {}));
}

std::string schema_sql(const std::string& prefix) {
  return expand(kSchema, prefix, {num(kMaxScopeBytes), num(kMaxStoredKeyBytes), num(kMaxLockNameBytes)});
}

std::vector<Widening> widenings(const std::string& prefix) {
  const auto width = [&](std::string_view table, std::string_view column) {
    return "SELECT CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
           "AND TABLE_NAME = '" +
           prefix + std::string(table) + "' AND COLUMN_NAME = '" + std::string(column) + "'";
  };
  return {
      {width("records", "key"), kMaxStoredKeyBytes,
       expand("ALTER TABLE {p}records MODIFY `key` VARBINARY($1) NOT NULL", prefix,
              {num(kMaxStoredKeyBytes)})},
      {width("locks", "name"), kMaxLockNameBytes,
       expand("ALTER TABLE {p}locks MODIFY name VARBINARY($1) NOT NULL", prefix, {num(kMaxLockNameBytes)})}};
}
std::string schema_lock(const std::string& prefix) { return "idem_schema_" + prefix; }

std::string session_sql(std::int64_t lock_wait_seconds) {
  return "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;"
         "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION';"
         "SET SESSION autocommit = 1;"
         "SET SESSION innodb_lock_wait_timeout = " +
         std::to_string(lock_wait_seconds) +
         ";"
         "SELECT @@max_allowed_packet";
}

bool valid_prefix(const std::string& prefix) { return batching::valid_table_prefix(prefix); }

}  // namespace idem::mysql
