#include "stores/postgres/postgres_sql.h"

#include <string_view>

#include "stores/batching/sql_template.h"
#include "stores/batching/table_prefix.h"
#include "stores/protocol/protocol_files.h"

namespace idem::postgres {
namespace {

// Type OIDs of the parameters (pg_type.h).
constexpr Oid kBytea = 17, kInt8 = 20, kText = 25;

// The statements are the files of protocol/postgres/ (protocol/README.md, "PostgreSQL"), which say
// what each takes and answers; {now} is protocol/postgres/now.sql.
std::string expand(std::string_view sql, const std::string& prefix) {
  return batching::expand_sql(sql, prefix, protocol::body("postgres/now.sql"), kTombstoneGraceMicros);
}

}  // namespace

std::array<Statement, kStatementCount> statements(const std::string& prefix) {
  const std::vector<Oid> key2{kBytea, kBytea}, fenced{kBytea, kBytea, kInt8};
  auto make = [&](const char* name, std::vector<Oid> types) {
    return Statement{std::string("idem_") + name,
                     expand(protocol::body(std::string("postgres/") + name + ".sql"), prefix),
                     std::move(types)};
  };
  return {
      make("begin", {kBytea, kBytea, kBytea, kInt8, kInt8, kBytea}),
      make("commit", {kBytea, kBytea, kInt8, kInt8, kBytea, kBytea}),
      make("release", fenced),
      make("release_restore", {kBytea, kBytea, kInt8, kBytea, kInt8}),
      make("abandon", {kBytea, kBytea, kBytea}),
      make("extend", {kBytea, kBytea, kInt8, kInt8}),
      make("get", key2),
      make("remove", key2),
      make("issue_token", {kBytea, kBytea, kInt8}),
      make("consume_token", key2),
      make("restore_token", {kBytea, kBytea, kInt8}),
      make("lock", {kBytea, kBytea, kInt8}),
      make("unlock", key2),
      make("extend_lock", {kBytea, kBytea, kInt8}),
      make("ping", {}),
      make("sweep_records", {}),
      make("sweep_tokens", {}),
      make("sweep_locks", {}),
      make("list", {kInt8, kBytea, kText, kBytea, kBytea, kInt8, kBytea, kBytea, kInt8}),
  };
}

std::string schema_sql(const std::string& prefix) {
  return expand(protocol::body("postgres/schema.sql"), prefix);
}

std::string check_schema_sql(const std::string& prefix) {
  return expand(protocol::body("postgres/check_schema.sql"), prefix);
}

bool valid_prefix(const std::string& prefix) { return batching::valid_table_prefix(prefix); }

}  // namespace idem::postgres
