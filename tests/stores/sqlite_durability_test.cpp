// docs/design.md I8: a `committed` acknowledged by sqlite: (sync=normal) survives a kill -9 of the
// process that acknowledged it (stores/durability_check.h).
#include <gtest/gtest.h>

#include "stores/durability_check.h"
#include "stores/sqlite/sqlite_store.h"
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

}  // namespace
}  // namespace idem
