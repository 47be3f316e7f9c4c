// The shop's tables (README.md "Tables"), one SQL text for SQLite and PostgreSQL.
//
// Conventions every writer follows: ids are TEXT (random or derived, so no sequences);
// money is BIGINT cents; times (*_at) are BIGINT microseconds since the Unix epoch.
#include <array>
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

}  // namespace

void ensure_schema(Db& db) {
  transaction(db, [](Db& tx) {
    // Two processes creating the same table at once collide in PostgreSQL's catalog
    // (a unique violation on pg_type) despite IF NOT EXISTS: serialize them. SQLite's
    // BEGIN IMMEDIATE already does.
    if (tx.dialect() == Db::Dialect::postgres) tx.query("SELECT pg_advisory_xact_lock(7305412698)");
    for (std::string_view sql : kSchema) tx.exec(sql);
  });
}

}  // namespace shop
