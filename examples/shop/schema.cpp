// The shop's tables (README.md "Tables"), one SQL text for SQLite and PostgreSQL and its
// translation for MySQL.
//
// Conventions every writer follows: ids are TEXT (random or derived, so no sequences);
// money is BIGINT cents; times (*_at) are BIGINT microseconds since the Unix epoch.
#include <array>
#include <string>
#include <string_view>

#include "db.h"

namespace shop {
namespace {

constexpr std::array<std::string_view, 11> kSchema = {
    R"(CREATE TABLE IF NOT EXISTS t_sku (
         sku_id        TEXT PRIMARY KEY,
         stock         BIGINT NOT NULL CHECK (stock >= 0),
         version       BIGINT NOT NULL,
         price         BIGINT NOT NULL,
         initial_stock BIGINT NOT NULL))",
    // order_id and biz_no: the two other names of an order that payment notifications use
    // (README.md, POST /pay/notify); NULL for rows written without them.
    R"(CREATE TABLE IF NOT EXISTS t_order (
         order_no   TEXT PRIMARY KEY,
         order_id   BIGINT UNIQUE,
         biz_no     TEXT UNIQUE,
         user_id    TEXT NOT NULL,
         sku_id     TEXT NOT NULL,
         event_id   TEXT NOT NULL,
         quantity   BIGINT NOT NULL,
         amount     BIGINT NOT NULL,
         status     TEXT NOT NULL,
         created_at BIGINT NOT NULL,
         paid_at    BIGINT,
         UNIQUE (user_id, sku_id, event_id)))",
    // One row per deduction actually made; idem_key (the gateway's key) is NULL for
    // deductions that came without one, and NULLs never collide in a UNIQUE column.
    R"(CREATE TABLE IF NOT EXISTS t_stock_log (
         id          TEXT PRIMARY KEY,
         idem_key    TEXT UNIQUE,
         fence       BIGINT,
         order_no    TEXT NOT NULL,
         sku_id      TEXT NOT NULL,
         quantity    BIGINT NOT NULL,
         stock_after BIGINT NOT NULL,
         created_at  BIGINT NOT NULL))",
    // Deliberately no unique key on order_no: the state machine alone must keep it to one.
    R"(CREATE TABLE IF NOT EXISTS t_charge (
         id         TEXT PRIMARY KEY,
         order_no   TEXT NOT NULL,
         trade_no   TEXT NOT NULL,
         amount     BIGINT NOT NULL,
         created_at BIGINT NOT NULL))",
    R"(CREATE INDEX IF NOT EXISTS t_charge_order ON t_charge (order_no))",
    R"(CREATE TABLE IF NOT EXISTS t_outbox (
         id         TEXT PRIMARY KEY,
         order_no   TEXT NOT NULL,
         payload    TEXT NOT NULL,
         created_at BIGINT NOT NULL,
         sent_at    BIGINT))",
    R"(CREATE INDEX IF NOT EXISTS t_outbox_unsent ON t_outbox (created_at, id) WHERE sent_at IS NULL)",
    R"(CREATE TABLE IF NOT EXISTS t_points (
         order_no   TEXT PRIMARY KEY,
         user_id    TEXT NOT NULL,
         points     BIGINT NOT NULL,
         created_at BIGINT NOT NULL))",
    R"(CREATE TABLE IF NOT EXISTS t_user_points (
         user_id TEXT PRIMARY KEY,
         balance BIGINT NOT NULL))",
    // Counters that hand out consecutive numbers (the orders' order_id): n is the last one.
    R"(CREATE TABLE IF NOT EXISTS t_sequence (
         name TEXT PRIMARY KEY,
         n    BIGINT NOT NULL))",
    R"(CREATE TABLE IF NOT EXISTS t_stats (
         name TEXT PRIMARY KEY,
         n    BIGINT NOT NULL))",
};

// The same tables for MySQL (README.md, "MySQL"). A key cannot be TEXT there, and a
// VARCHAR key compares by its collation (utf8mb4_bin still ignores trailing spaces: 'u1'
// and 'u1 ' would collide): ids are VARBINARY, compared byte for byte like TEXT on the
// others; 255 bytes hold every id the shop accepts (at most 128), 1024 the gateway's keys.
// No partial indexes: t_outbox's index leads with sent_at instead; no CREATE INDEX IF NOT
// EXISTS in MySQL 8: indexes are declared with their table. CHECK is enforced from MySQL
// 8.0.16 and MariaDB 10.2.
constexpr std::string_view kMysqlTable = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
constexpr std::array<std::string_view, 9> kMysqlSchema = {
    R"(CREATE TABLE IF NOT EXISTS t_sku (
         sku_id        VARBINARY(255) PRIMARY KEY,
         stock         BIGINT NOT NULL CHECK (stock >= 0),
         version       BIGINT NOT NULL,
         price         BIGINT NOT NULL,
         initial_stock BIGINT NOT NULL))",
    R"(CREATE TABLE IF NOT EXISTS t_order (
         order_no   VARBINARY(255) PRIMARY KEY,
         order_id   BIGINT UNIQUE,
         biz_no     VARBINARY(255) UNIQUE,
         user_id    VARBINARY(255) NOT NULL,
         sku_id     VARBINARY(255) NOT NULL,
         event_id   VARBINARY(255) NOT NULL,
         quantity   BIGINT NOT NULL,
         amount     BIGINT NOT NULL,
         status     VARCHAR(16) NOT NULL,
         created_at BIGINT NOT NULL,
         paid_at    BIGINT,
         UNIQUE (user_id, sku_id, event_id)))",
    R"(CREATE TABLE IF NOT EXISTS t_stock_log (
         id          VARBINARY(255) PRIMARY KEY,
         idem_key    VARBINARY(1024) UNIQUE,
         fence       BIGINT,
         order_no    VARBINARY(255) NOT NULL,
         sku_id      VARBINARY(255) NOT NULL,
         quantity    BIGINT NOT NULL,
         stock_after BIGINT NOT NULL,
         created_at  BIGINT NOT NULL))",
    R"(CREATE TABLE IF NOT EXISTS t_charge (
         id         VARBINARY(255) PRIMARY KEY,
         order_no   VARBINARY(255) NOT NULL,
         trade_no   TEXT NOT NULL,
         amount     BIGINT NOT NULL,
         created_at BIGINT NOT NULL,
         INDEX t_charge_order (order_no)))",
    R"(CREATE TABLE IF NOT EXISTS t_outbox (
         id         VARBINARY(255) PRIMARY KEY,
         order_no   VARBINARY(255) NOT NULL,
         payload    TEXT NOT NULL,
         created_at BIGINT NOT NULL,
         sent_at    BIGINT,
         INDEX t_outbox_unsent (sent_at, created_at, id)))",
    R"(CREATE TABLE IF NOT EXISTS t_points (
         order_no   VARBINARY(255) PRIMARY KEY,
         user_id    VARBINARY(255) NOT NULL,
         points     BIGINT NOT NULL,
         created_at BIGINT NOT NULL))",
    R"(CREATE TABLE IF NOT EXISTS t_user_points (
         user_id VARBINARY(255) PRIMARY KEY,
         balance BIGINT NOT NULL))",
    R"(CREATE TABLE IF NOT EXISTS t_sequence (
         name VARBINARY(255) PRIMARY KEY,
         n    BIGINT NOT NULL))",
    R"(CREATE TABLE IF NOT EXISTS t_stats (
         name VARBINARY(255) PRIMARY KEY,
         n    BIGINT NOT NULL))",
};

// MySQL commits before and after each CREATE TABLE, so a transaction would hold nothing:
// a named lock (per database, held by the session; MySQL takes names of up to 64
// characters) serializes the processes instead.
void ensure_mysql_schema(Db& db) {
  const std::string lock = "LEFT(CONCAT('shop.schema.', DATABASE()), 64)";
  const auto got = db.query("SELECT GET_LOCK(" + lock + ", 30)");
  if (got.empty() || got[0].is_null(0) || got[0].integer(0) != 1)
    throw DbError(DbError::Kind::unavailable, "mysql: the schema lock was not granted within 30 s");
  struct Release {
    Db& db;
    const std::string& lock;
    ~Release() {
      try {
        db.query("SELECT RELEASE_LOCK(" + lock + ")");
      } catch (const DbError&) {  // a broken session has released it
      }
    }
  } release{db, lock};
  for (std::string_view table : kMysqlSchema) db.exec(std::string(table) + std::string(kMysqlTable));
}

}  // namespace

void ensure_schema(Db& db) {
  if (db.dialect() == Db::Dialect::mysql) return ensure_mysql_schema(db);
  transaction(db, [](Db& tx) {
    // Two processes creating the same table at once collide in PostgreSQL's catalog
    // (a unique violation on pg_type) despite IF NOT EXISTS: serialize them. SQLite's
    // BEGIN IMMEDIATE already does.
    if (tx.dialect() == Db::Dialect::postgres) tx.query("SELECT pg_advisory_xact_lock(7305412698)");
    for (std::string_view sql : kSchema) tx.exec(sql);
  });
}

}  // namespace shop
