// Redis Sentinel under load, as a client of `idem serve` sees it (issue 32): the gateway's
// store is redis+sentinel:// over three sentinels (quorum 2) watching a master with two
// replicas, all started by the test on ports of its own (testutil/redis_sentinel.h). The
// master is killed (kill -9) while clients send protected requests under the default
// on_uncertain: hold; the sentinels promote a replica and the store follows them.
//
// With ?wait=1 every claim and commit was on a replica before it was acknowledged, so the
// promotion loses none (docs/stores.md, "Redis: what a failover can lose"): no key runs
// twice, every answer is definitive or 503 store-unavailable, lost claims are given back,
// and protection resumes once the other replica follows the new master.
#include <cstdio>

#include "e2e/outage_load.h"
#include "e2e/outage_rig.h"
#include "testutil/redis_sentinel.h"
#include "testutil/temp_dir.h"

namespace idem::e2e {
namespace {

TEST(SentinelFailover, MasterKilledUnderLoadNothingRunsTwiceEveryAnswerIsDefinitiveOr503AndServiceResumes) {
  testutil::SentinelGroup group(2);
  if (!group.started()) GTEST_SKIP() << group.why_not();
  const testutil::TempDir dir;
  Gateway g(dir.path().string(),
            "redis+sentinel://" + group.sentinels() + "/" + testutil::SentinelGroup::kMaster + "?wait=1");
  ASSERT_TRUE(g.started()) << "idem did not start; see " << dir.file("idem.log");
  expect_protected(g, unique_key("before"));

  Load load(g, 12);
  ASSERT_TRUE(load.wait_answers(100));
  const std::uint64_t errors_before = g.store_errors();
  const std::string victim = group.announced(0);
  const auto t0 = OutageClock::now();
  group.server(0).kill();
  ASSERT_TRUE(eventually(
      [&] {
        const auto named = group.named_master(0);
        return named && *named != victim;
      },
      30s))
      << "the sentinels did not promote a replica of " << victim;
  std::printf("replica %s promoted %lld ms after kill -9 of its master\n", group.named_master(0)->c_str(),
              millis(OutageClock::now() - t0));
  // The other replica follows the new master (the sentinels reconfigure it), after which
  // claims meet wait=1 again.
  expect_resumed(g, 20, 60s);
  expect_failover_kept_the_promise(g, load, errors_before, dir.file("idem.log"));
}

}  // namespace
}  // namespace idem::e2e
