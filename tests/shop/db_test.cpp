// The shop's database layer (examples/shop/db.h), one suite for every dialect: SQLite (a
// file per test), PostgreSQL (IDEM_TEST_POSTGRES_URL) and MySQL (IDEM_TEST_MYSQL_URL;
// scripts/services start postgres mariadb), each test on a fresh database with the shop's
// schema. The servers' cases are skipped without their URL.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "db.h"

namespace {

using shop::Db;
using shop::DbError;
using shop::Row;
using Kind = DbError::Kind;

struct Backend {
  const char* name;
  const char* url_env;  // nullptr: SQLite
};

// Test names and failure messages name the dialect.
void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

std::string random_name(const std::string& prefix) {
  static std::mt19937_64 rng(std::random_device{}());
  return prefix + std::to_string(::getpid()) + "_" + std::to_string(rng() % 1'000'000'000);
}

// `url` (scheme://userinfo@host:port/db[?query]) naming `database` instead.
std::string with_database(const std::string& url, const std::string& database) {
  const auto slash = url.find('/', url.find("://") + 3);
  const auto query = url.find('?', slash);
  return url.substr(0, slash) + "/" + database + (query == std::string::npos ? "" : url.substr(query));
}

Kind kind_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const DbError& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no DbError";
  return Kind::other;
}

class DbTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    const Backend& b = GetParam();
    if (!b.url_env) {
      path_ = std::filesystem::temp_directory_path() / (random_name("shop_db_test_") + ".db");
      uri_ = "sqlite:" + path_.string();
    } else {
      const char* server = std::getenv(b.url_env);
      if (!server || !*server) GTEST_SKIP() << b.url_env << " is not set (scripts/services)";
      admin_ = Db::open(server);
      database_ = random_name("shop_db_test_");
      admin_->exec("CREATE DATABASE " + database_);
      uri_ = with_database(server, database_);
    }
    db_ = Db::open(uri_);
    shop::ensure_schema(*db_);
  }

  void TearDown() override {
    db_.reset();
    other_.reset();
    if (admin_) {
      const bool postgres = admin_->dialect() == Db::Dialect::postgres;
      admin_->exec("DROP DATABASE IF EXISTS " + database_ + (postgres ? " WITH (FORCE)" : ""));
    }
    if (!path_.empty()) {
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_.string() + suffix);
    }
  }

  bool server() const { return admin_ != nullptr; }
  Db& other() {  // a second connection to the same database
    if (!other_) other_ = Db::open(uri_);
    return *other_;
  }

  std::string uri_;
  std::unique_ptr<Db> db_;

 private:
  std::unique_ptr<Db> admin_, other_;
  std::string database_;
  std::filesystem::path path_;
};

TEST_P(DbTest, ValuesRoundTrip) {
  // Integers beyond a double's 53 bits, text with UTF-8 and a trailing space, the empty
  // string and NULL come back as they went in.
  const std::int64_t id = 1790000000000000001;
  ASSERT_EQ(
      db_->exec(
          "INSERT INTO t_order (order_no, order_id, biz_no, user_id, sku_id, event_id, quantity, amount, "
          "status, created_at, paid_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
          {"o1", id, "订单202401010000000001", "u1 ", "", "e1", -3, 0, "CREATED", 1, shop::Value()}),
      1);
  const auto rows = db_->query(
      "SELECT order_id, biz_no, user_id, sku_id, quantity, paid_at FROM t_order WHERE order_no = $1", {"o1"});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].integer(0), id);
  EXPECT_EQ(rows[0].text(1), "订单202401010000000001");
  EXPECT_EQ(rows[0].text(2), "u1 ");
  EXPECT_EQ(rows[0].text(3), "");
  EXPECT_EQ(rows[0].integer(4), -3);
  EXPECT_TRUE(rows[0].is_null(5));
  EXPECT_EQ(db_->query("SELECT COUNT(*) FROM t_order").at(0).integer(0), 1);
}

TEST_P(DbTest, KeysCompareByteForByte) {
  // MySQL's VARCHAR keys would take 'u1 ' and 'U1' for 'u1' (PAD SPACE, case-insensitive
  // collations); the shop's keys are exact on every dialect.
  for (const char* user : {"u1", "u1 ", "U1"})
    db_->exec("INSERT INTO t_user_points (user_id, balance) VALUES ($1, 1)", {user});
  EXPECT_EQ(db_->query("SELECT COUNT(*) FROM t_user_points").at(0).integer(0), 3);
  EXPECT_EQ(db_->query("SELECT balance FROM t_user_points WHERE user_id = $1", {"u1 "}).size(), 1u);
  EXPECT_EQ(
      kind_of([&] { db_->exec("INSERT INTO t_user_points (user_id, balance) VALUES ($1, 1)", {"u1 "}); }),
      Kind::unique_violation);
}

TEST_P(DbTest, ParametersMayRepeatAndLiteralsKeepTheirDollars) {
  db_->exec("INSERT INTO t_stats (name, n) VALUES ($2, $1)", {7, "a"});
  const auto rows = db_->query(
      "SELECT n, name FROM t_stats WHERE name = $1 AND n = $2 AND name <> '$1' AND n = $2", {"a", 7});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].integer(0), 7);
  EXPECT_EQ(db_->query("SELECT '$2' FROM t_stats").at(0).text(0), "$2");
}

TEST_P(DbTest, CountAddsUp) {
  shop::count(*db_, "x");
  shop::count(*db_, "x", 5);
  shop::count(*db_, "y");
  const auto rows = db_->query("SELECT name, n FROM t_stats ORDER BY name");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].integer(1), 6);
  EXPECT_EQ(rows[1].integer(1), 1);
}

TEST_P(DbTest, ExecCountsTheRowsChanged) {
  db_->exec("INSERT INTO t_sku (sku_id, stock, version, price, initial_stock) VALUES ('a', 5, 0, 100, 5)");
  db_->exec("INSERT INTO t_sku (sku_id, stock, version, price, initial_stock) VALUES ('b', 5, 0, 100, 5)");
  EXPECT_EQ(db_->exec("UPDATE t_sku SET version = version + 1"), 2);
  EXPECT_EQ(
      db_->exec(
          "UPDATE t_sku SET stock = stock - 1, version = version + 1 WHERE sku_id = $1 AND version = $2",
          {"a", 1}),
      1);
  EXPECT_EQ(
      db_->exec(
          "UPDATE t_sku SET stock = stock - 1, version = version + 1 WHERE sku_id = $1 AND version = $2",
          {"a", 1}),
      0);
  EXPECT_EQ(db_->exec("DELETE FROM t_sku WHERE sku_id = 'b'"), 1);
}

TEST_P(DbTest, ErrorsHaveTheirKinds) {
  db_->exec("INSERT INTO t_points (order_no, user_id, points, created_at) VALUES ('o1', 'u1', 1, 1)");
  EXPECT_EQ(
      kind_of([&] {
        db_->exec("INSERT INTO t_points (order_no, user_id, points, created_at) VALUES ('o1', 'u2', 1, 1)");
      }),
      Kind::unique_violation);
  db_->exec("INSERT INTO t_sku (sku_id, stock, version, price, initial_stock) VALUES ('a', 1, 0, 100, 1)");
  EXPECT_EQ(kind_of([&] { db_->exec("UPDATE t_sku SET stock = stock - 2 WHERE sku_id = 'a'"); }),
            Kind::other);
  EXPECT_EQ(kind_of([&] { db_->query("SELECT nothing FROM t_nothing"); }), Kind::other);
  // None of these broke the connection.
  EXPECT_EQ(db_->query("SELECT stock FROM t_sku").at(0).integer(0), 1);
}

TEST_P(DbTest, TransactionRollsBackOnAnError) {
  EXPECT_THROW(shop::transaction(*db_,
                                 [](Db& tx) {
                                   shop::count(tx, "x");
                                   throw std::runtime_error("no");
                                 }),
               std::runtime_error);
  EXPECT_TRUE(db_->query("SELECT n FROM t_stats").empty());
  shop::transaction(*db_, [](Db& tx) { shop::count(tx, "x"); });
  EXPECT_EQ(other().query("SELECT n FROM t_stats").at(0).integer(0), 1);
}

TEST_P(DbTest, CannotConnectIsUnavailable) {
  const std::string bad = GetParam().url_env == nullptr ? "sqlite:/nonexistent-dir/x/shop.db"
                          : std::string(GetParam().name) == "postgres"
                              ? "postgres://idem:idem@127.0.0.1:1/idem"
                              : "mysql://idem:idem@127.0.0.1:1/idem";
  EXPECT_EQ(kind_of([&] { Db::open(bad); }), Kind::unavailable);
}

TEST_P(DbTest, SeveralProcessesMayCreateTheSchemaAtOnce) {
  // The shop, its consumer and the storm each ensure the schema when they start.
  for (const char* table : {"t_sku", "t_order", "t_stock_log", "t_charge", "t_outbox", "t_points",
                            "t_user_points", "t_sequence", "t_stats"})
    db_->exec(std::string("DROP TABLE ") + table);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(4);
  for (std::size_t i = 0; i < errors.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        auto db = Db::open(uri_);
        shop::ensure_schema(*db);
      } catch (const DbError& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  shop::count(*db_, "x");
  EXPECT_EQ(db_->query("SELECT COUNT(*) FROM t_outbox WHERE sent_at IS NULL").at(0).integer(0), 0);
}

// ---- servers only -----------------------------------------------------------------------

TEST_P(DbTest, EachStatementSeesWhatCommittedBeforeIt) {
  // READ COMMITTED on both servers: the order path reads, inside its transaction, the
  // order another device committed after the transaction's first read.
  if (!server()) GTEST_SKIP() << "SQLite's BEGIN IMMEDIATE excludes the other writer";
  db_->begin();
  EXPECT_TRUE(db_->query("SELECT n FROM t_stats").empty());
  shop::transaction(other(), [](Db& tx) { shop::count(tx, "x"); });
  EXPECT_EQ(db_->query("SELECT n FROM t_stats").size(), 1u);
  db_->commit();
}

TEST_P(DbTest, DeadlockIsRetry) {
  if (!server()) GTEST_SKIP() << "SQLite's BEGIN IMMEDIATE cannot deadlock";
  shop::count(*db_, "a");
  shop::count(*db_, "b");
  db_->begin();
  other().begin();
  db_->exec("UPDATE t_stats SET n = 2 WHERE name = 'a'");
  other().exec("UPDATE t_stats SET n = 2 WHERE name = 'b'");
  // Each now waits for the other's row: the server picks one of them to fail.
  std::optional<Kind> first, second;
  std::thread t([&] {
    try {
      db_->exec("UPDATE t_stats SET n = 3 WHERE name = 'b'");
    } catch (const DbError& e) {
      first = e.kind();
      db_->rollback();
    }
  });
  try {
    other().exec("UPDATE t_stats SET n = 3 WHERE name = 'a'");
  } catch (const DbError& e) {
    second = e.kind();
    other().rollback();
  }
  t.join();
  ASSERT_NE(first.has_value(), second.has_value()) << "exactly one of the two is the deadlock's victim";
  EXPECT_EQ(first.value_or(*second), Kind::retry);
  (first ? other() : *db_).commit();
}

TEST_P(DbTest, ALockWaitEndsAsRetry) {
  // PostgreSQL waits for a lock as long as it takes (no lock_timeout); MySQL's connections
  // give up after 5 s, in time for the transaction to run again within a client's patience.
  if (!server() || db_->dialect() != Db::Dialect::mysql) GTEST_SKIP() << "MySQL only";
  shop::count(*db_, "a");
  db_->begin();
  db_->exec("UPDATE t_stats SET n = 2 WHERE name = 'a'");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(kind_of([&] { other().exec("UPDATE t_stats SET n = 3 WHERE name = 'a'"); }), Kind::retry);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  db_->rollback();
  EXPECT_EQ(other().exec("UPDATE t_stats SET n = 3 WHERE name = 'a'"), 1);
}

TEST_P(DbTest, AKilledConnectionIsUnavailableAndThePoolReplacesIt) {
  if (!server()) GTEST_SKIP() << "no server session to end";
  shop::DbPool pool(uri_, 1);
  std::string id;
  {
    auto lease = pool.acquire();
    const bool postgres = lease->dialect() == Db::Dialect::postgres;
    id = std::to_string(
        lease->query(postgres ? "SELECT pg_backend_pid()" : "SELECT CONNECTION_ID()").at(0).integer(0));
    other().query(postgres ? "SELECT pg_terminate_backend(" + id + ")" : "KILL " + id);
    EXPECT_EQ(kind_of([&] { lease->query("SELECT COUNT(*) FROM t_stats"); }), Kind::unavailable);
  }
  auto lease = pool.acquire();  // a new connection, not the dead one
  EXPECT_EQ(lease->query("SELECT COUNT(*) FROM t_stats").at(0).integer(0), 0);
}

INSTANTIATE_TEST_SUITE_P(Dialects, DbTest,
                         ::testing::Values(Backend{"sqlite", nullptr},
                                           Backend{"postgres", "IDEM_TEST_POSTGRES_URL"},
                                           Backend{"mysql", "IDEM_TEST_MYSQL_URL"}),
                         [](const ::testing::TestParamInfo<Backend>& p) {
                           return std::string(p.param.name);
                         });

}  // namespace
