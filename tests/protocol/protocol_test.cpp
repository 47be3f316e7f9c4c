// The protocol folder as the library embeds it (protocol/README.md, "Files"): every file has its
// header and a body, the build embeds every file of the folder, every file a store asks for is
// there, and the numbers the files spell out agree with the C++ constants they mirror.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "idem/limits.h"
#include "stores/mysql/mysql_sql.h"
#include "stores/postgres/postgres_sql.h"
#include "stores/protocol/protocol_files.h"
#include "stores/redis/redis_keys.h"
#include "stores/redis/redis_scripts.h"

namespace idem::protocol {
namespace {

namespace fs = std::filesystem;

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

TEST(ProtocolFiles, EveryFileHasAHeaderOfCommentsThenABody) {
  ASSERT_GT(file_count(), 0u);
  for (std::size_t i = 0; i < file_count(); ++i) {
    const std::string_view path = path_at(i);
    const std::string_view text = file(path);
    const auto blank = text.find("\n\n");
    ASSERT_NE(blank, std::string_view::npos) << path << ": no empty line ends the header";
    std::string_view header = text.substr(0, blank + 1);
    while (!header.empty()) {
      const auto eol = header.find('\n');
      EXPECT_TRUE(header.starts_with("--"))
          << path << ": a header line is not a comment: " << header.substr(0, eol);
      header.remove_prefix(eol + 1);
    }
    EXPECT_FALSE(body(path).empty()) << path;
    EXPECT_TRUE(text.ends_with("\n")) << path;
  }
}

TEST(ProtocolFiles, TheBodyIsWhatFollowsTheHeaderTrimmed) {
  EXPECT_TRUE(body("postgres/ping.sql") == "SELECT 1") << body("postgres/ping.sql");
  EXPECT_TRUE(body("mysql/keepalive.sql") == "DO 0");
  EXPECT_TRUE(body("redis/prelude.lua").starts_with("local t = redis.call('TIME')"));
  // A comment inside a body stays: only the leading lines, up to the empty one, are the header.
  EXPECT_TRUE(contains(body("postgres/schema.sql"), "-- free: a tombstone"));
}

// The build embeds the folder as it is (CMake's glob); a file left out would be a file the
// implementations disagree on.
TEST(ProtocolFiles, EveryFileOfTheFolderIsEmbeddedAndNothingElse) {
  std::set<std::string> on_disk;
  for (const char* dir : {"redis", "postgres", "mysql"}) {
    for (const auto& e : fs::directory_iterator(fs::path(IDEM_PROTOCOL_DIR) / dir)) {
      on_disk.insert(std::string(dir) + "/" + e.path().filename().string());
    }
  }
  std::set<std::string> embedded;
  for (std::size_t i = 0; i < file_count(); ++i) embedded.insert(std::string(path_at(i)));
  EXPECT_EQ(embedded, on_disk);
  EXPECT_TRUE(std::is_sorted(embedded.begin(), embedded.end()));
}

// The stores ask for their files by name; a missing one aborts, so asking for all of them here
// proves every name.
TEST(ProtocolFiles, EveryFileTheStoresUseIsThere) {
  EXPECT_EQ(redis::scripts().extend_lock.name, std::string("extend_lock"));
  EXPECT_EQ(postgres::statements("idem_").size(), postgres::kStatementCount);
  EXPECT_FALSE(postgres::schema_sql("idem_").empty());
  const mysql::Statements m("idem_");
  EXPECT_FALSE(m.begin({"s", "k", "", Duration(1), Duration(1), ""}).text.empty());
  for (auto step : {mysql::SweepStep::records, mysql::SweepStep::tombstones, mysql::SweepStep::tokens,
                    mysql::SweepStep::locks}) {
    EXPECT_FALSE(m.sweep(step).text.empty());
  }
  EXPECT_EQ(mysql::widenings("idem_").size(), 2u);
  EXPECT_FALSE(mysql::session_sql(3).empty());
  EXPECT_FALSE(mysql::schema_lock_sql("idem_", 3).empty());
}

// A Redis script is the prelude's body, a newline and the operation's body; EVALSHA names it by
// the SHA-1 of exactly that.
TEST(ProtocolFiles, ARedisScriptIsThePreludeANewlineAndTheOperation) {
  const auto& begin = redis::scripts().begin;
  EXPECT_EQ(begin.text, std::string(body("redis/prelude.lua")) + "\n" + std::string(body("redis/begin.lua")));
  EXPECT_EQ(begin.sha1.size(), 40u);
}

// The files spell out numbers the C++ also holds: the column widths of limits.h and the
// sweep's batch.
TEST(ProtocolFiles, TheNumbersInTheFilesAreTheLibrarys) {
  const std::string_view schema = body("mysql/schema.sql");
  EXPECT_TRUE(contains(schema, "scope       VARBINARY(" + std::to_string(kMaxScopeBytes) + ")"));
  EXPECT_TRUE(contains(schema, "`key`       VARBINARY(" + std::to_string(kMaxStoredKeyBytes) + ")"));
  EXPECT_TRUE(contains(schema, "name       VARBINARY(" + std::to_string(kMaxLockNameBytes) + ")"));
  EXPECT_TRUE(
      contains(body("mysql/widen_records_key.sql"), "VARBINARY(" + std::to_string(kMaxStoredKeyBytes)));
  EXPECT_TRUE(contains(body("mysql/widen_locks_name.sql"), "VARBINARY(" + std::to_string(kMaxLockNameBytes)));
  const std::string limit = "LIMIT " + std::to_string(mysql::kSweepBatch);
  for (const char* f : {"mysql/sweep_records.sql", "mysql/sweep_tombstones.sql", "mysql/sweep_tokens.sql",
                        "mysql/sweep_locks.sql"}) {
    EXPECT_TRUE(contains(body(f), limit)) << f;
  }
  static_assert(mysql::kSweepBatch == postgres::kSweepBatch);
  for (const char* f :
       {"postgres/sweep_records.sql", "postgres/sweep_tokens.sql", "postgres/sweep_locks.sql"}) {
    EXPECT_TRUE(contains(body(f), limit)) << f;
  }
}

// {p}, {now}, {grace} and (MySQL) $n are all replaced; nothing else in braces is left.
TEST(ProtocolFiles, EveryPlaceholderIsReplaced) {
  for (const auto& st : postgres::statements("t_")) {
    EXPECT_FALSE(contains(st.sql, "{")) << st.name;
  }
  const mysql::Statements m("t_");
  const std::string text = m.begin({"s", "k", "f", Duration(1), Duration(2), "o"}).text +
                           m.commit({"s", "k", 1, "r", Duration(1), "u"}, 1).text +
                           m.lock({"n", "o", Duration(1)}).text + mysql::schema_sql("t_");
  EXPECT_FALSE(contains(text, "{")) << text;
  EXPECT_FALSE(contains(text, "$")) << text;
}

// protocol/README.md, "Redis", shows these keys for another implementation to check its own
// against.
TEST(ProtocolFiles, TheReadmesRedisKeysAreTheStoresKeys) {
  const auto record = redis::record_keys("idem:", "s", "orders:42");
  EXPECT_EQ(record.main, "idem:{fe1c7d9bfbdae184}r:1:sorders:42");
  EXPECT_EQ(record.fence, "idem:{fe1c7d9bfbdae184}rf:1:sorders:42");
  EXPECT_EQ(redis::token_key("idem:", "s", "42"), "idem:{fe1c7d9bfbdae184}t:1:s42");
  EXPECT_EQ(redis::key_slot(record.main), 4419);
  const auto lock = redis::lock_keys("idem:", "inventory");
  EXPECT_EQ(lock.main, "idem:{f494ba3f48ea5db6}l:inventory");
  EXPECT_EQ(lock.fence, "idem:{f494ba3f48ea5db6}lf:inventory");
}

}  // namespace
}  // namespace idem::protocol
