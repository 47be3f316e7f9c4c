// docs/design.md I8: a `committed` acknowledged by sqlite: (sync=normal) survives a kill -9 of the
// process that acknowledged it (stores/durability_check.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "stores/durability_check.h"
#include "stores/sqlite/sqlite_store.h"
#include "testutil/child.h"
#include "testutil/temp_dir.h"

#ifndef IDEM_DURABILITY_CHILD
#error "IDEM_DURABILITY_CHILD must name the durability_child binary"
#endif

namespace idem {
namespace {

TEST(SqliteDurability, AcknowledgedCommitsSurviveKill9) {
  testutil::TempDir dir;
  const std::string path = dir.file("durable.db");
  testutil::expect_acknowledged_commits_survive_kill9(
      IDEM_DURABILITY_CHILD, "sqlite:" + path, 50, [&]() -> std::unique_ptr<Store> {
        auto store = sqlite::open(path, StoreOptions{});
        EXPECT_TRUE(store.is_ok()) << store.status().to_string();
        return store ? std::move(*store) : nullptr;
      });
}

// Processes that share a store file start together (a gateway and the service behind it,
// the workers of one consumer) and open the same fresh file at the same moment. Switching a
// new file to WAL takes it whole, and SQLite answers "database is locked" at once, without
// waiting, to one of two processes that ask together: every opener must still get the store
// (the shop's demo lost its consumer to this once).
TEST(SqliteOpen, ProcessesOpeningOneFreshFileTogetherAllGetTheStore) {
  testutil::TempDir dir;
  constexpr int kRounds = 15, kOpeners = 6;
  for (int round = 0; round < kRounds; ++round) {
    const std::string uri = "sqlite:" + dir.file("fresh-" + std::to_string(round) + ".db");
    std::vector<std::unique_ptr<testutil::Child>> children;
    for (int i = 0; i < kOpeners; ++i) {
      children.push_back(std::make_unique<testutil::Child>(
          std::vector<std::string>{IDEM_DURABILITY_CHILD, uri, "opener-" + std::to_string(i)}));
      ASSERT_TRUE(children.back()->started());
    }
    // Each acknowledges its first commit only after it opened the store; one that could
    // not open exits with "open: ..." and no acknowledgement.
    for (int i = 0; i < kOpeners; ++i)
      EXPECT_EQ(children[static_cast<std::size_t>(i)]->next_ack(std::chrono::seconds(60)), 0)
          << "round " << round << ": opener " << i << " did not get the store";
  }
}

}  // namespace
}  // namespace idem
