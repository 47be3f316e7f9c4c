#include "stores/schema_ddl.h"

#include "idem/store_uri.h"
#include "stores/mysql/mysql_sql.h"
#include "stores/mysql/mysql_target.h"
#include "stores/postgres/postgres_sql.h"
#include "stores/postgres/postgres_target.h"

namespace idem {
namespace {

std::string heading(std::string_view server, std::string_view file, const std::string& prefix) {
  return "-- The tables of an idem store on " + std::string(server) + " (protocol/" + std::string(file) +
         "), table prefix " + prefix +
         ".\n-- Safe to run again. A store whose URI says create_tables=false then opens without creating "
         "them.\n";
}

std::string postgres_ddl(const postgres::Target& t) {
  return heading("PostgreSQL", "postgres/schema.sql", t.prefix) + postgres::schema_sql(t.prefix) + "\n";
}

// The widenings are for tables an earlier version created: shown, not run (a rebuild of the table).
std::string mysql_ddl(const mysql::Target& t) {
  std::string out =
      heading("MySQL or MariaDB", "mysql/schema.sql", t.prefix) + mysql::schema_sql(t.prefix) + "\n";
  for (const mysql::Widening& w : mysql::widenings(t.prefix)) {
    out += "-- Tables created by an earlier idem hold " + w.column + " narrower. When\n--   " + w.width_sql +
           "\n-- answers less than " + std::to_string(w.width) +
           ", widen it (an ALTER TABLE that rebuilds the table):\n--   " + w.alter_sql + ";\n";
  }
  return out;
}

}  // namespace

Result<std::string> store_ddl(std::string_view uri) {
  if (Status s = check_uri_userinfo(uri); !s) return s;
  const auto colon = uri.find(':');
  const std::string_view scheme = colon == std::string_view::npos ? uri : uri.substr(0, colon);
  if (scheme == "postgres" || scheme == "postgresql") {
    auto t = postgres::parse_target(uri);
    if (!t) return t.status();
    return postgres_ddl(*t);
  }
  if (scheme == "mysql") {
    auto t = mysql::parse_target(uri);
    if (!t) return t.status();
    return mysql_ddl(*t);
  }
  const std::string shown = redact_uri(uri);
  if (scheme == "redis" || scheme == "redis-cluster" || scheme == "redis+sentinel" || scheme == "rediss" ||
      scheme == "rediss-cluster" || scheme == "rediss+sentinel") {
    // A malformed one is named as such (as idem check and opening the store name it).
    if (Status s = check_redis_uri(uri); !s) return s;
    return failed_precondition("a Redis store (" + shown +
                               ") has no tables: its keys need no DDL (protocol/README.md, "
                               "\"Redis\", names them); idem schema is for postgres:// and mysql://");
  }
  if (scheme == "sqlite") {
    return failed_precondition(
        "a SQLite store (" + shown +
        ") creates its tables in its file when it opens; idem schema is for postgres:// "
        "and mysql://");
  }
  if (scheme == "memory") {
    return failed_precondition(
        "the memory store (" + shown +
        ") keeps its records in the process, in no tables; idem schema is for postgres:// "
        "and mysql://");
  }
  return invalid_argument(
      "store URI '" + shown +
      "' names no store idem knows (expected postgres:// or mysql://, or memory:, sqlite:PATH, "
      "redis://, redis-cluster://, redis+sentinel://, rediss://..., which need no DDL)");
}

}  // namespace idem
