// The MySQL store's own behaviour against a real server at IDEM_TEST_MYSQL_URL (scripts/services
// start mariadb): races between stores, keys that MySQL's default collations would merge, tables
// created by concurrent opens and kept apart by table_prefix, fences after deletes and expiry,
// sweeping in batches, deadlines, lost connections, a server restart, kill -9 (I8), and errors that
// name the server but never the password. Skipped when the variable is not set.
#include <mysql.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "idem/open.h"
#include "stores/durability_check.h"
#include "stores/race.h"
#include "stores/schema_ddl.h"
#include "stores/sql_store_checks.h"
#include "testutil/child.h"

#ifndef IDEM_DURABILITY_CHILD
#error "IDEM_DURABILITY_CHILD must name the durability_child binary"
#endif

namespace idem {
namespace {

using namespace std::chrono_literals;
using Kind = BeginOutcome::Kind;

struct Server {
  std::string host, user, password, db;
  unsigned port = 3306;
};

// The parts of a mysql://user:pass@host:port/db URL (the test servers' need no decoding).
Server server_of(const std::string& url) {
  Server s;
  const auto scheme_end = url.find("://") + 3, at = url.rfind('@');
  const std::string userinfo = url.substr(scheme_end, at - scheme_end);
  s.user = userinfo.substr(0, userinfo.find(':'));
  s.password = userinfo.find(':') == std::string::npos ? "" : userinfo.substr(userinfo.find(':') + 1);
  const auto slash = url.find('/', at);
  const std::string hostport = url.substr(at + 1, slash - at - 1);
  s.host = hostport.substr(0, hostport.rfind(':'));
  s.port = static_cast<unsigned>(std::stoul(hostport.substr(hostport.rfind(':') + 1)));
  s.db = url.substr(slash + 1,
                    url.find('?') == std::string::npos ? std::string::npos : url.find('?') - slash - 1);
  return s;
}

// A plain blocking connection of the test's own, to look at and interfere with the tables.
class Sql {
 public:
  explicit Sql(const std::string& url) : conn_(mysql_init(nullptr)) {
    const Server s = server_of(url);
    ok_ = mysql_real_connect(conn_, s.host.c_str(), s.user.c_str(), s.password.c_str(), s.db.c_str(), s.port,
                             nullptr, CLIENT_MULTI_STATEMENTS) != nullptr;
  }
  ~Sql() { mysql_close(conn_); }
  Sql(const Sql&) = delete;
  Sql& operator=(const Sql&) = delete;

  bool ok() const { return ok_; }
  // Runs `sql` (one statement or several); returns the first column of the first row ("" when
  // none), or "ERROR: ...".
  std::string run(const std::string& sql) {
    if (mysql_real_query(conn_, sql.data(), sql.size()) != 0)
      return std::string("ERROR: ") + mysql_error(conn_);
    std::string out;
    for (bool first = true;; first = false) {
      MYSQL_RES* res = mysql_store_result(conn_);
      if (res) {
        MYSQL_ROW row = mysql_fetch_row(res);
        if (first && row && row[0]) out = row[0];
        mysql_free_result(res);
      }
      const int next = mysql_next_result(conn_);
      if (next > 0) return std::string("ERROR: ") + mysql_error(conn_);
      if (next < 0) return out;
    }
  }

 private:
  MYSQL* conn_;
  bool ok_ = false;
};

class MysqlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* url = std::getenv("IDEM_TEST_MYSQL_URL");
    if (url == nullptr || *url == '\0')
      GTEST_SKIP() << "IDEM_TEST_MYSQL_URL not set (scripts/services start mariadb)";
    url_ = url;
    static std::atomic<int> n{0};
    prefix_ = "idem_mt" + std::to_string(::getpid()) + "_" + std::to_string(n++) + "_";
  }

  // Each test's stores are gone by now: drop its tables.
  void TearDown() override {
    if (url_.empty()) return;
    Sql sql(url_);
    sql.run("DROP TABLE IF EXISTS " + prefix_ + "records, " + prefix_ + "tokens, " + prefix_ + "locks");
  }

  // The store's URI: this test's tables, and any extra parameters.
  std::string uri(const std::string& extra = "", const std::string& prefix = "") const {
    return url_ + (url_.find('?') == std::string::npos ? "?" : "&") +
           "table_prefix=" + (prefix.empty() ? prefix_ : prefix) + extra;
  }

  std::unique_ptr<Store> open(StoreOptions options = {}, const std::string& extra = "") {
    auto s = open_store(uri(extra), options);
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    return s ? std::move(*s) : nullptr;
  }

  // How many of this test's tables exist.
  std::string tables(Sql& sql) {
    return sql.run(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name "
        "LIKE '" +
        prefix_ + "%'");
  }

  std::string url_, prefix_;
};

// create_tables=false (docs/stores.md, "The protocol folder and the DDL"): the store creates
// nothing and refuses missing, old or narrow tables, naming `idem schema`; once a DBA ran the DDL
// that command prints, it opens and works.
TEST_F(MysqlTest, WithoutCreateTablesTheStoreOpensOnlyOnTheTablesTheDdlMade) {
  Sql sql(url_);
  ASSERT_TRUE(sql.ok());
  auto refused = open_store(uri("&create_tables=false"));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::failed_precondition);
  EXPECT_NE(refused.status().message().find("schema --store"), std::string::npos)
      << refused.status().to_string();
  EXPECT_EQ(tables(sql), "0");

  const Result<std::string> ddl = store_ddl(uri());
  ASSERT_TRUE(ddl.is_ok()) << ddl.status().to_string();
  ASSERT_EQ(sql.run(*ddl), "");
  EXPECT_EQ(tables(sql), "3");
  ASSERT_EQ(sql.run(*ddl), "") << "the DDL runs again";
  auto s = open(StoreOptions{}, "&create_tables=false");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->begin({"s", "k", "", 60s, 60s}).value().kind, Kind::acquired);
  s.reset();

  // Keys as narrow as an earlier version made them: refused, not altered (the DDL shows the ALTER).
  ASSERT_EQ(sql.run("ALTER TABLE " + prefix_ + "records MODIFY `key` VARBINARY(255) NOT NULL"), "");
  refused = open_store(uri("&create_tables=false"));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::failed_precondition);
  EXPECT_NE(refused.status().message().find("_records.key holds 255 bytes, not 320"), std::string::npos)
      << refused.status().to_string();
  EXPECT_TRUE(open()) << "without create_tables=false, opening widens the column";
  EXPECT_TRUE(open(StoreOptions{}, "&create_tables=false"));

  // A column missing: refused.
  ASSERT_EQ(sql.run("ALTER TABLE " + prefix_ + "locks DROP COLUMN unlocked"), "");
  refused = open_store(uri("&create_tables=false"));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("unlocked"), std::string::npos) << refused.status().to_string();

  auto bad = open_store(uri("&create_tables=maybe"));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::invalid_argument);
}

TEST_F(MysqlTest, RacingThreadsOnTwoStoresAcquireExactlyOnce) {
  auto a = open(), b = open();
  ASSERT_TRUE(a && b);
  testutil::expect_racing_stores_acquire_once(*a, *b);
}

// Many callers of one store at once (asynchronous calls, batched together): one claim per key.
TEST_F(MysqlTest, ConcurrentCallsInOneBatchClaimEachKeyOnce) {
  auto s = open();
  ASSERT_TRUE(s);
  constexpr int kKeys = 20, kDups = 10;
  std::atomic<int> acquired{0}, in_progress{0}, other{0}, answered{0};
  for (int d = 0; d < kDups; ++d) {
    for (int k = 0; k < kKeys; ++k) {
      s->begin({"s", "k" + std::to_string(k), "fp", 60s, 60s}, [&](Result<BeginOutcome> r) {
        if (r && r->kind == Kind::acquired) {
          ++acquired;
        } else if (r && r->kind == Kind::in_progress) {
          ++in_progress;
        } else {
          ++other;
        }
        ++answered;
        answered.notify_all();
      });
    }
  }
  for (int n = answered.load(); n < kKeys * kDups; n = answered.load()) answered.wait(n);
  EXPECT_EQ(acquired, kKeys);
  EXPECT_EQ(in_progress, kKeys * (kDups - 1));
  EXPECT_EQ(other, 0);
}

TEST_F(MysqlTest, ConcurrentOpensCreateTheTablesOnce) {
  Sql sql(url_);
  ASSERT_TRUE(sql.ok());
  testutil::expect_concurrent_opens_create_the_tables_once(uri(), [&] { return tables(sql); });
}

// Several processes at once: each durability_child opens the store (and creates the tables)
// before its first acknowledgement.
TEST_F(MysqlTest, ConcurrentProcessesCreateTheTablesOnce) {
  constexpr int kChildren = 6;
  std::vector<std::unique_ptr<testutil::Child>> children;
  for (int i = 0; i < kChildren; ++i) {
    children.push_back(std::make_unique<testutil::Child>(
        std::vector<std::string>{IDEM_DURABILITY_CHILD, uri(), "p" + std::to_string(i)}));
  }
  for (auto& c : children) {
    ASSERT_TRUE(c->started());
    EXPECT_EQ(c->next_ack(60s), 0) << "a child could not open the store and commit";
  }
  children.clear();
  Sql sql(url_);
  EXPECT_EQ(tables(sql), "3");
}

// MySQL's default collations fold case and ignore trailing spaces; keys and scopes here are bytes.
TEST_F(MysqlTest, KeysAndScopesAreBinaryExact) {
  auto s = open();
  ASSERT_TRUE(s);
  const std::vector<std::string> keys = {"a",
                                         "a ",
                                         "A",
                                         "/ORDERS",
                                         "/orders",
                                         "订单-20260101-0001",
                                         "订单-20260101-0002",
                                         "1790000000000000001",
                                         "1790000000000000002",
                                         std::string("\0k", 2),
                                         std::string("k\0", 2),
                                         "\xff\xfe",
                                         "e\xcc\x81",  // e + combining acute
                                         "\xc3\xa9"};  // é precomposed
  std::set<Fence> fences;
  for (const auto& key : keys) {
    auto r = s->begin({"s", key, "", 60s, 60s});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->kind, Kind::acquired) << "key '" << key << "' met another key's record";
    ASSERT_EQ(s->commit({"s", key, r->fence, "result of " + key, 60s}).value(), CommitOutcome::committed);
  }
  for (const auto& key : keys) {
    auto rec = s->get({"s", key}).value();
    ASSERT_TRUE(rec) << key;
    EXPECT_EQ(rec->key, key);
    EXPECT_EQ(rec->result, "result of " + key);
  }
  ListArgs all;
  all.scope = "s";
  all.limit = 100;
  EXPECT_EQ(s->list(all).value().records.size(), keys.size());
  // Scopes too, and a key of the scope "s " is not one of "s".
  EXPECT_EQ(s->begin({"s ", "a", "", 60s, 60s}).value().kind, Kind::acquired);
  EXPECT_EQ(s->begin({"S", "a", "", 60s, 60s}).value().kind, Kind::acquired);
  const std::string scope("sc\0\xff", 4), key("\x80\x00k\xfe", 4);
  const Fence f = s->begin({scope, key, std::string("\0", 1), 60s, 60s}).value().fence;
  ASSERT_EQ(s->commit({scope, key, f, std::string("r\0\xff", 3), 60s}).value(), CommitOutcome::committed);
  auto rec = s->get({scope, key}).value();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->scope, scope);
  EXPECT_EQ(rec->fingerprint, std::string("\0", 1));
  EXPECT_EQ(rec->result, std::string("r\0\xff", 3));
  EXPECT_FALSE(s->get({scope.substr(0, 3), key}).value());
  // Fingerprints are bytes too: "fp" and "FP" differ.
  ASSERT_EQ(s->begin({"s", "fp", "fp", 60s, 60s}).value().kind, Kind::acquired);
  EXPECT_EQ(s->begin({"s", "fp", "FP", 60s, 60s}).value().kind, Kind::mismatch);
  EXPECT_EQ(s->begin({"s", "fp", "fp ", 60s, 60s}).value().kind, Kind::mismatch);
  // Lock names and owners.
  EXPECT_EQ(s->lock({"lock", "owner", 60s}).value().kind, LockOutcome::Kind::locked);
  EXPECT_EQ(s->lock({"LOCK", "owner", 60s}).value().kind, LockOutcome::Kind::locked);
  EXPECT_EQ(s->lock({"lock ", "owner", 60s}).value().kind, LockOutcome::Kind::locked);
  EXPECT_EQ(s->lock({"lock", "OWNER", 60s}).value().kind, LockOutcome::Kind::busy);
}

TEST_F(MysqlTest, TablePrefixesKeepStoresApart) {
  const std::string other_prefix = prefix_ + "b_";
  auto a = open();
  auto b_result = open_store(uri("", other_prefix));
  ASSERT_TRUE(a && b_result.is_ok()) << b_result.status().to_string();
  auto b = std::move(*b_result);
  const Fence f = a->begin({"s", "k", "", 60s, 60s}).value().fence;
  ASSERT_EQ(a->commit({"s", "k", f, "a's", 60s}).value(), CommitOutcome::committed);
  EXPECT_FALSE(b->get({"s", "k"}).value());
  auto in_b = b->begin({"s", "k", "", 60s, 60s});
  ASSERT_TRUE(in_b.is_ok());
  EXPECT_EQ(in_b->kind, Kind::acquired);
  EXPECT_EQ(a->begin({"s", "k", "", 60s, 60s}).value().result, "a's");
  Sql sql(url_);
  for (const char* table : {"records", "tokens", "locks"}) {
    EXPECT_EQ(sql.run("SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND "
                      "table_name = '" +
                      other_prefix + table + "'"),
              "1")
        << table;
  }
  b.reset();
  sql.run("DROP TABLE " + other_prefix + "records, " + other_prefix + "tokens, " + other_prefix + "locks");
}

TEST_F(MysqlTest, AFailingStatementFailsOnlyItsOwnCall) {
  auto s = open();
  ASSERT_TRUE(s);
  testutil::expect_a_failing_statement_fails_only_its_call(*s);
}

// A call whose values the server could not take in one packet fails alone, before it is sent.
TEST_F(MysqlTest, AResultBeyondMaxAllowedPacketIsRefusedAlone) {
  auto s = open();
  ASSERT_TRUE(s);
  Sql sql(url_);
  const auto max_packet = std::stoull(sql.run("SELECT @@max_allowed_packet"));
  const Fence f = s->begin({"s", "big", "", 60s, 60s}).value().fence;
  auto r = s->commit({"s", "big", f, std::string(max_packet / 2 + 1, 'x'), 60s});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::invalid_argument) << r.status().to_string();
  // A large result that fits is stored byte for byte.
  const std::string large(max_packet / 4, 'y');
  ASSERT_EQ(s->commit({"s", "big", f, large, 60s}).value(), CommitOutcome::committed);
  EXPECT_EQ(s->get({"s", "big"}).value()->result, large);
}

// The store holds a result up to what max_allowed_packet takes hex-encoded, with room for the
// statement's other values (the longest key and scope of limits.h among them).
TEST_F(MysqlTest, TheLargestResultFollowsMaxAllowedPacket) {
  auto s = open();
  ASSERT_TRUE(s);
  Sql sql(url_);
  const std::uint64_t max_packet = std::stoull(sql.run("SELECT @@max_allowed_packet"));
  const std::uint64_t limit = s->max_result_bytes();
  EXPECT_EQ(limit, (max_packet - (16 << 10)) / 2);
  const std::string scope(kMaxScopeBytes, 'S'), key(kMaxStoredKeyBytes, 'K');
  const Fence f = s->begin({scope, key, "", 60s, 60s}).value().fence;
  auto over = s->commit({scope, key, f, std::string(limit + 1, 'x'), 60s});
  EXPECT_EQ(over.status().code(), StatusCode::invalid_argument) << over.status().to_string();
  std::string largest(limit, '\0');
  for (std::size_t i = 0; i < largest.size(); ++i) largest[i] = static_cast<char>(i * 31 % 256);
  auto at = s->commit({scope, key, f, largest, 60s});
  ASSERT_TRUE(at.is_ok()) << at.status().to_string();
  EXPECT_EQ(*at, CommitOutcome::committed);
  auto replay = s->begin({scope, key, "", 60s, 60s});
  ASSERT_TRUE(replay.is_ok()) << replay.status().to_string();
  EXPECT_EQ(replay->kind, BeginOutcome::Kind::replay);
  EXPECT_TRUE(replay->result == largest);
}

// Tables created before keys grew to limits.h's lengths (keys were VARBINARY(255), lock names
// VARBINARY(2048)) are widened in place when a store opens, their rows kept; opening again
// changes nothing.
TEST_F(MysqlTest, TablesOfTheOldSchemaAreWidenedWhenTheStoreOpens) {
  Sql sql(url_);
  ASSERT_TRUE(sql.ok());
  const std::string p = prefix_;
  ASSERT_EQ(sql.run("CREATE TABLE " + p + R"sql(records (
  scope VARBINARY(2048) NOT NULL, `key` VARBINARY(255) NOT NULL,
  state VARCHAR(7) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, fence BIGINT NOT NULL,
  fingerprint BLOB NOT NULL, lease_until BIGINT NULL, expires_at BIGINT NOT NULL, result LONGBLOB NOT NULL,
  recovered BOOLEAN NOT NULL, owner BLOB NOT NULL, PRIMARY KEY (scope, `key`), KEY )sql" +
                    p + "records_expires_at (expires_at)) ENGINE = InnoDB"),
            "");
  ASSERT_EQ(
      sql.run("CREATE TABLE " + p +
              "tokens (scope VARBINARY(2048) NOT NULL, token VARBINARY(255) NOT NULL, " +
              "consumed BOOLEAN NOT NULL, ttl_us BIGINT NOT NULL, expires_at BIGINT NOT NULL, " +
              "PRIMARY KEY (scope, token), KEY " + p + "tokens_expires_at (expires_at)) ENGINE = InnoDB"),
      "");
  ASSERT_EQ(sql.run("CREATE TABLE " + p +
                    "locks (name VARBINARY(2048) NOT NULL PRIMARY KEY, owner BLOB NOT NULL, " +
                    "fence BIGINT NOT NULL, expires_at BIGINT NOT NULL, unlocked BOOLEAN NOT NULL, KEY " + p +
                    "locks_expires_at (expires_at)) ENGINE = InnoDB"),
            "");
  ASSERT_EQ(sql.run("INSERT INTO " + p +
                    "records VALUES ('s', 'old', 'done', 7, '', NULL, 9000000000000000, 'kept', 0, '')"),
            "");
  const auto width = [&](const std::string& table, const std::string& column) {
    return sql.run(
        "SELECT CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
        "DATABASE() AND TABLE_NAME = '" +
        p + table + "' AND COLUMN_NAME = '" + column + "'");
  };
  ASSERT_EQ(width("records", "key"), "255");

  for (int round = 0; round < 2; ++round) {
    auto s = open();
    ASSERT_TRUE(s);
    EXPECT_EQ(width("records", "key"), std::to_string(kMaxStoredKeyBytes));
    EXPECT_EQ(width("locks", "name"), std::to_string(kMaxLockNameBytes));
    auto old = s->get({"s", "old"});
    ASSERT_TRUE(old.is_ok() && old->has_value()) << old.status().to_string();
    EXPECT_EQ((*old)->result, "kept");
    EXPECT_EQ((*old)->fence, 7u);

    const std::string key = "k" + std::to_string(round) + std::string(kMaxStoredKeyBytes - 2, 'x');
    auto b = s->begin({"s", key, "", 60s, 60s});
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    ASSERT_EQ(s->commit({"s", key, b->fence, "longest", 60s}).value(), CommitOutcome::committed);
    EXPECT_EQ(s->begin({"s", key, "", 60s, 60s}).value().result, "longest");
    const std::string name(kMaxLockNameBytes - 1, 'n');
    auto l = s->lock({name + std::to_string(round), "o", 60s});
    ASSERT_TRUE(l.is_ok()) << l.status().to_string();
    EXPECT_EQ(l->kind, LockOutcome::Kind::locked);
  }
}

// A 2,500-row table of rows `expr(n)` for n in 0..2499, portable to MySQL and MariaDB.
std::string numbers(const std::string& select) {
  return select +
         " FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d AS n FROM "
         "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL "
         "SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) a, "
         "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL "
         "SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) b, "
         "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL "
         "SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) c, "
         "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2) e) ns WHERE n < 2500";
}

TEST_F(MysqlTest, SweepDeletesInBatchesAndKeepsFreshTombstones) {
  auto s = open();
  ASSERT_TRUE(s);
  Sql sql(url_);
  ASSERT_TRUE(sql.ok());
  // 2,500 expired records (more than two sweep statements' worth), 1,200 expired tokens.
  ASSERT_EQ(sql.run("INSERT INTO " + prefix_ +
                    "records (scope, `key`, state, fence, fingerprint, lease_until, expires_at, result, "
                    "recovered, owner) " +
                    numbers("SELECT 's', CONCAT('k', n), 'done', n + 1, '', NULL, 1000, 'r', 0, ''")),
            "");
  ASSERT_EQ(sql.run("INSERT INTO " + prefix_ + "tokens (scope, token, consumed, ttl_us, expires_at) " +
                    numbers("SELECT 's', CONCAT('t', n), 0, 1, 1000") + " AND n < 1200"),
            "");
  // A released record: a tombstone that keeps its fence through the sweep.
  const Fence f = s->begin({"s", "released", "", 60s, 60s}).value().fence;
  ASSERT_EQ(s->release({"s", "released", f}).value(), ReleaseOutcome::released);
  auto swept = s->sweep();
  ASSERT_TRUE(swept.is_ok()) << swept.status().to_string();
  EXPECT_EQ(*swept, 2500u);
  EXPECT_EQ(sql.run("SELECT count(*) FROM " + prefix_ + "records"), "1");
  EXPECT_EQ(sql.run("SELECT count(*) FROM " + prefix_ + "tokens"), "0");
  EXPECT_EQ(s->sweep().value(), 0u);
  EXPECT_GT(s->begin({"s", "released", "", 60s, 60s}).value().fence, f);
}

// Fences never repeat for a key: after a release, an abandon, an operator's remove, a lease or a
// retention that ran out, and a sweep that deleted the expired record.
TEST_F(MysqlTest, FencesNeverRepeatAfterDeletesAndExpiry) {
  auto s = open();
  ASSERT_TRUE(s);
  std::set<Fence> seen;
  Fence last = 0;
  auto acquire = [&](const std::string& why, Duration lease = 60s, Duration retention = 60s) {
    auto r = s->begin({"s", "k", "", lease, retention, "gw"});
    EXPECT_TRUE(r.is_ok()) << why << ": " << r.status().to_string();
    if (!r) return Fence{0};
    EXPECT_EQ(r->kind, Kind::acquired) << why;
    EXPECT_GT(r->fence, last) << why;
    EXPECT_TRUE(seen.insert(r->fence).second) << why;
    last = r->fence;
    return r->fence;
  };
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(s->release({"s", "k", acquire("first")}).value(), ReleaseOutcome::released);
    acquire("after release");
    ASSERT_EQ(s->abandon({"s", "k", "gw"}).value(), ReleaseOutcome::released);
    acquire("after abandon");
    ASSERT_TRUE(s->remove({"s", "k"}).value());
    const Fence f = acquire("after remove", 50ms, 50ms);
    std::this_thread::sleep_for(120ms);  // the record's lease and retention run out
    const Fence g = acquire("after expiry");
    EXPECT_EQ(s->commit({"s", "k", f, "late", 60s}).value(), CommitOutcome::fenced);
    ASSERT_EQ(s->commit({"s", "k", g, "r", 10ms}).value(), CommitOutcome::committed);
    std::this_thread::sleep_for(30ms);
    ASSERT_TRUE(s->sweep().is_ok());
    acquire("after sweep");
    ASSERT_TRUE(s->remove({"s", "k"}).value());
  }
}

TEST_F(MysqlTest, ReleasedRecordsAndUnlockedLocksStayGoneWhenTheClockStepsBack) {
  auto s = open();
  ASSERT_TRUE(s);
  Sql sql(url_);
  ASSERT_TRUE(sql.ok());
  testutil::expect_removals_outlive_a_clock_step_back(
      *s, [&](const std::string& q) { return sql.run(q); }, prefix_);
}

// extend and extend_lock answer by the rows their statement found, not by those it changed (a
// value written twice within one microsecond changes nothing): every extend of a held claim or
// lock is extended.
TEST_F(MysqlTest, EveryExtendOfAHeldClaimOrLockExtends) {
  auto s = open();
  ASSERT_TRUE(s);
  const Fence f = s->begin({"s", "k", "", 60s, 60s}).value().fence;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s->extend({"s", "k", f, 60s}).value(), ExtendOutcome::extended);
  EXPECT_EQ(s->extend({"s", "k", f + 1, 60s}).value(), ExtendOutcome::fenced);
  EXPECT_EQ(s->extend_lock({"nolock", "o", 60s}).value(), LockExtendOutcome::not_owner);
  ASSERT_EQ(s->lock({"l", "o", 60s}).value().kind, LockOutcome::Kind::locked);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(s->extend_lock({"l", "o", 60s}).value(), LockExtendOutcome::extended);
}

TEST_F(MysqlTest, PeriodicSweepRunsByItself) {
  StoreOptions options;
  options.sweep_interval = 100ms;
  auto s = open(options);
  ASSERT_TRUE(s);
  Sql sql(url_);
  testutil::expect_the_periodic_sweep_runs(
      *s, [&](const std::string& q) { return sql.run(q); }, prefix_);
}

TEST_F(MysqlTest, ABlockedStatementMissesItsDeadlineThenServiceResumes) {
  StoreOptions options;
  options.op_timeout = 500ms;
  auto s = open(options);
  ASSERT_TRUE(s);
  Sql holder(url_);
  testutil::expect_a_blocked_call_misses_its_deadline(
      *s,
      [&] {
        // The row the store's begin must lock, held by the test's open transaction.
        ASSERT_EQ(holder.run("START TRANSACTION"), "");
        ASSERT_EQ(
            holder.run("INSERT INTO " + prefix_ +
                       "records (scope, `key`, state, fence, fingerprint, lease_until, expires_at, result, "
                       "recovered, owner) VALUES ('s', 'k', 'free', 1, '', NULL, 0, '', 0, '')"),
            "");
      },
      [&] { ASSERT_EQ(holder.run("COMMIT"), ""); });
}

// The server ends the store's idle sessions (KILL, as its wait_timeout would): the next calls
// run on new connections. The store works in a database of its own, so that the test kills no
// other test's connections.
TEST_F(MysqlTest, ConnectionsClosedWhileIdleAreReplacedUnseen) {
  Sql admin(url_);
  ASSERT_TRUE(admin.ok());
  const std::string db = "idem_lost_" + std::to_string(::getpid());
  ASSERT_EQ(admin.run("CREATE DATABASE IF NOT EXISTS " + db), "");
  const std::string base = url_.substr(0, url_.find('/', url_.rfind('@')) + 1) + db;
  {
    auto opened = open_store(base + "?table_prefix=" + prefix_);
    ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
    auto s = std::move(*opened);
    ASSERT_TRUE(s->begin({"s", "before", "", 60s, 60s}).is_ok());
    const std::string mine = "FROM information_schema.processlist WHERE db = '" + db + "'";
    ASSERT_NE(admin.run("SELECT count(*) " + mine), "0");
    for (int i = 0; i < 100 && admin.run("SELECT count(*) " + mine) != "0"; ++i) {
      const std::string ids = admin.run("SELECT GROUP_CONCAT(id) " + mine);
      std::size_t at = 0;
      while (at < ids.size()) {
        const auto comma = ids.find(',', at);
        admin.run("KILL CONNECTION " +
                  ids.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        at = comma == std::string::npos ? ids.size() : comma + 1;
      }
      std::this_thread::sleep_for(10ms);
    }

    // Each connection is found dead before anything is written to it (the server closed it
    // while it was idle, as wait_timeout would): the calls run on fresh connections instead,
    // and the callers see nothing.
    for (int i = 0; i < 8; ++i) {
      auto next = s->begin({"s", "after-" + std::to_string(i), "", 60s, 60s});
      ASSERT_TRUE(next.is_ok()) << next.status().to_string();
      EXPECT_EQ(next->kind, Kind::acquired);
    }
    auto got = testutil::get_once_back(*s, {"s", "before"}, 5s);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_TRUE(got->has_value());
  }
  admin.run("DROP DATABASE " + db);
}

// A real restart of the server under load: calls fail unavailable or deadline_exceeded, never
// otherwise, and service resumes within seconds. Opt-in, since it disturbs every other client of
// the server: IDEM_TEST_MYSQL_RESTART holds the command (scripts/test sets it).
TEST_F(MysqlTest, ServerRestartIsSurvived) {
  const char* restart = std::getenv("IDEM_TEST_MYSQL_RESTART");
  if (restart == nullptr || *restart == '\0') GTEST_SKIP() << "IDEM_TEST_MYSQL_RESTART not set";
  auto s = open();
  ASSERT_TRUE(s);
  testutil::expect_a_restart_is_survived(*s, restart);
}

// I8 (stores/durability_check.h): the child's commits are acknowledged only after the server
// committed them (innodb_flush_log_at_trx_commit=1).
TEST_F(MysqlTest, AcknowledgedCommitsSurviveKill9) {
  testutil::expect_acknowledged_commits_survive_kill9(IDEM_DURABILITY_CHILD, uri(), 10,
                                                      [&] { return open(); });
}

// Malformed URIs fail before any connection: no server needed.
TEST(MysqlUri, MalformedUrisNeverQuoteThePassword) {
  for (const std::string uri :
       {"mysql://u:s3cret@h/db?no_such_parameter=1", "mysql://u:s3cret@h/db?ssl_mode=sometimes",
        "mysql://u:s3cret@[::1/db", "mysql://u:s3cret%zz@h/db", "mysql://u:s3cret@h:99999/db",
        "mysql://u:s3cret@/db", "mysql://u:s3cret@h/db?table_prefix=Bad-Prefix"}) {
    auto s = open_store(uri);
    ASSERT_FALSE(s.is_ok()) << uri;
    EXPECT_EQ(s.status().code(), StatusCode::invalid_argument) << uri;
    EXPECT_EQ(s.status().message().find("s3cret"), std::string::npos) << s.status().message();
  }
}

TEST_F(MysqlTest, ErrorsNameTheServerButNeverThePassword) {
  // Nothing listens on port 1.
  auto unreachable = open_store("mysql://idem:s3cret-pw@127.0.0.1:1/idem");
  ASSERT_FALSE(unreachable.is_ok());
  EXPECT_EQ(unreachable.status().code(), StatusCode::unavailable) << unreachable.status().to_string();
  EXPECT_NE(unreachable.status().message().find("127.0.0.1:1"), std::string::npos)
      << unreachable.status().message();
  EXPECT_EQ(unreachable.status().message().find("s3cret-pw"), std::string::npos);

  const Server server = server_of(url_);
  const std::string at_server = "@" + server.host + ":" + std::to_string(server.port) + "/";
  auto wrong_password = open_store("mysql://" + server.user + ":s3cret-pw" + at_server + server.db);
  ASSERT_FALSE(wrong_password.is_ok());
  EXPECT_EQ(wrong_password.status().code(), StatusCode::failed_precondition)
      << wrong_password.status().to_string();
  EXPECT_NE(wrong_password.status().message().find("Access denied"), std::string::npos)
      << wrong_password.status().message();
  EXPECT_EQ(wrong_password.status().message().find("s3cret-pw"), std::string::npos);

  auto no_database = open_store("mysql://" + server.user + ":" + server.password + at_server + "no_such_db");
  ASSERT_FALSE(no_database.is_ok());
  EXPECT_EQ(no_database.status().code(), StatusCode::failed_precondition) << no_database.status().to_string();
  EXPECT_NE(no_database.status().message().find("no_such_db"), std::string::npos);
}

// ssl_mode=REQUIRED (or stricter) refuses a server that offers no TLS, as the test server does,
// rather than talk to it in the clear; DISABLED and PREFERRED talk to it.
TEST_F(MysqlTest, SslModeRequiredRefusesAServerWithoutTls) {
  Sql sql(url_);
  if (sql.run("SELECT @@have_ssl") == "YES") GTEST_SKIP() << "the server offers TLS";
  for (const char* mode : {"REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"}) {
    auto s = open_store(uri(std::string("&ssl_mode=") + mode));
    ASSERT_FALSE(s.is_ok()) << mode;
    EXPECT_EQ(s.status().code(), StatusCode::failed_precondition) << s.status().to_string();
  }
  for (const char* mode : {"DISABLED", "PREFERRED"}) {
    auto plain = open_store(uri(std::string("&ssl_mode=") + mode));
    EXPECT_TRUE(plain.is_ok()) << mode << ": " << plain.status().to_string();
  }
}

// A password with the characters a URI must percent-encode ('@', ':', '/', '%', '?') is decoded.
TEST_F(MysqlTest, APercentEncodedPasswordIsDecoded) {
  Sql admin(url_);
  const Server server = server_of(url_);
  const std::string user = "idem_pw" + std::to_string(::getpid());
  ASSERT_EQ(admin.run("CREATE USER '" + user + "'@'" + server.host + "' IDENTIFIED BY 'p@ss:w/o%rd?'"), "");
  const std::string at_server = "@" + server.host + ":" + std::to_string(server.port) + "/";
  // The user holds no grant: a store that authenticated is refused the database.
  auto right = open_store("mysql://" + user + ":p%40ss%3Aw%2Fo%25rd%3F" + at_server + server.db);
  auto wrong = open_store("mysql://" + user + ":p%40ss" + at_server + server.db);
  admin.run("DROP USER '" + user + "'@'" + server.host + "'");
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("Access denied for user"), std::string::npos)
      << wrong.status().message();
  // The right password passes the authentication; the database is then refused (no grant).
  ASSERT_FALSE(right.is_ok());
  EXPECT_EQ(right.status().message().find("using password"), std::string::npos) << right.status().message();
  EXPECT_NE(right.status().message().find("to database"), std::string::npos) << right.status().message();
  EXPECT_EQ(right.status().message().find("p@ss"), std::string::npos) << right.status().message();
}

}  // namespace
}  // namespace idem
