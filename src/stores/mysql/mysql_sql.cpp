#include "stores/mysql/mysql_sql.h"

#include <initializer_list>

#include "idem/limits.h"
#include "stores/batching/sql_template.h"
#include "stores/batching/table_prefix.h"
#include "stores/protocol/protocol_files.h"
#include "util/hex.h"

namespace idem::mysql {
namespace {

// The statements are the files of protocol/mysql/ (protocol/README.md, "MySQL"), which say what
// each takes and answers; {now} is protocol/mysql/now.sql, and $1..$9 the arguments, already
// literals (stores/batching/sql_template.h).
std::string expand(std::string_view file, const std::string& prefix,
                   std::initializer_list<std::string> args) {
  return batching::expand_sql(protocol::body("mysql/" + std::string(file) + ".sql"), prefix,
                              protocol::body("mysql/now.sql"), kTombstoneGraceMicros, args);
}

std::string num(std::int64_t v) { return std::to_string(v); }
std::int64_t us(Duration d) { return d.count(); }

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
  return {expand("begin", p_,
                 {hex(a.scope), hex(a.key), hex(a.fingerprint), num(us(a.lease)), num(us(a.retention)),
                  hex(a.owner)}),
          4, 3};
}
Sql Statements::commit(const CommitArgs& a, std::int64_t fence) const {
  return {expand("commit", p_,
                 {hex(a.scope), hex(a.key), num(fence), num(us(a.retention)), hex(a.result),
                  hex(a.over_uncertain), num(static_cast<std::int64_t>(a.over_uncertain.size()))}),
          2, 1};
}
Sql Statements::release(const ReleaseArgs& a, std::int64_t fence) const {
  if (!a.restore_token) return one(expand("release", p_, {hex(a.scope), hex(a.key), num(fence)}));
  return {expand("release_restore", p_,
                 {hex(a.scope), hex(a.key), num(fence), hex(a.restore_token->token),
                  num(us(a.restore_token->ttl))}),
          3, 0};
}
Sql Statements::abandon(const AbandonArgs& a) const {
  return one(expand("abandon", p_, {hex(a.scope), hex(a.key), hex(a.owner)}));
}
Sql Statements::extend(const ExtendArgs& a, std::int64_t fence) const {
  return one(expand("extend", p_, {hex(a.scope), hex(a.key), num(fence), num(us(a.lease))}));
}
Sql Statements::get(const RecordId& a) const { return one(expand("get", p_, {hex(a.scope), hex(a.key)})); }
Sql Statements::remove(const RecordId& a) const {
  return one(expand("remove", p_, {hex(a.scope), hex(a.key)}));
}

// list.sql's $1 says which conditions apply; the arguments of the others are placeholders.
Sql Statements::list(const ListArgs& a, const std::optional<std::string>& key_end,
                     const core::ListPosition* after) const {
  const std::int64_t flags = (a.scope ? 1 : 0) | (a.state ? 2 : 0) | (key_end ? 4 : 0) | (after ? 8 : 0);
  return one(
      expand("list", p_,
             {num(flags), hex(a.scope.value_or("")),
              a.state ? std::string("'") + to_string(*a.state) + "'" : "''", hex(a.key_prefix),
              hex(key_end.value_or("")), num(after ? us(after->expires_at.time_since_epoch()) : 0),
              hex(after ? after->scope : ""), hex(after ? after->key : ""), std::to_string(a.limit + 1)}));
}

Sql Statements::issue_token(const IssueTokenArgs& a, const std::string& token) const {
  return one(expand("issue_token", p_, {hex(a.scope), hex(token), num(us(a.ttl))}));
}
Sql Statements::consume_token(const TokenArgs& a) const {
  return one(expand("consume_token", p_, {hex(a.scope), hex(a.token)}));
}
Sql Statements::restore_token(const RestoreTokenArgs& a) const {
  return one(expand("restore_token", p_, {hex(a.scope), hex(a.token), num(us(a.ttl))}));
}
Sql Statements::lock(const LockArgs& a) const {
  return {expand("lock", p_, {hex(a.name), hex(a.owner), num(us(a.ttl))}), 3, 2};
}
Sql Statements::unlock(const UnlockArgs& a) const {
  return one(expand("unlock", p_, {hex(a.name), hex(a.owner)}));
}
Sql Statements::extend_lock(const LockArgs& a) const {
  return one(expand("extend_lock", p_, {hex(a.name), hex(a.owner), num(us(a.ttl))}));
}
Sql Statements::ping() const { return one(expand("ping", p_, {})); }

Sql Statements::sweep(SweepStep step) const {
  switch (step) {
    case SweepStep::records:
      return one(expand("sweep_records", p_, {}));
    case SweepStep::tombstones:
      return one(expand("sweep_tombstones", p_, {}));
    case SweepStep::tokens:
      return one(expand("sweep_tokens", p_, {}));
    case SweepStep::locks:
      break;
  }
  return one(expand("sweep_locks", p_, {}));
}

std::string schema_sql(const std::string& prefix) { return expand("schema", prefix, {}); }

std::string check_schema_sql(const std::string& prefix) { return expand("check_schema", prefix, {}); }

std::vector<Widening> widenings(const std::string& prefix) {
  return {{prefix + "records.key", expand("records_key_width", prefix, {}), kMaxStoredKeyBytes,
           expand("widen_records_key", prefix, {})},
          {prefix + "locks.name", expand("locks_name_width", prefix, {}), kMaxLockNameBytes,
           expand("widen_locks_name", prefix, {})}};
}
std::string schema_lock(const std::string& prefix) { return "idem_schema_" + prefix; }
std::string schema_lock_sql(const std::string& prefix, std::int64_t wait_seconds) {
  return expand("schema_lock", prefix, {num(wait_seconds)});
}
std::string schema_unlock_sql(const std::string& prefix) { return expand("schema_unlock", prefix, {}); }

std::string session_sql(std::int64_t lock_wait_seconds) {
  return expand("session", "", {num(lock_wait_seconds)});
}

bool valid_prefix(const std::string& prefix) { return batching::valid_table_prefix(prefix); }

}  // namespace idem::mysql
