// The tokens endpoint's bounds (token_limits.h), on a clock the test moves: a bucket per
// client refilled over a minute, and the tokens issued within the last ttl.
#include "gateway/model/token_limits.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

using namespace std::chrono_literals;
using Steady = TokenLimiter::Steady;

const Steady::time_point t0 = Steady::time_point(1000h);

TEST(TokenLimiter, AClientGetsItsBucketThenOneTokenEveryMinuteOverPerClient) {
  TokenLimiter limiter;
  const TokenLimits limits{1'000, 60, 10min};
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(limiter.take("192.0.2.1", limits, t0)) << i;
  TokenLimiter::Verdict v = limiter.take("192.0.2.1", limits, t0);
  EXPECT_EQ(v.refusal, TokenLimiter::Refusal::client);
  EXPECT_EQ(v.retry_after, 1s) << "60 a minute: one more each second";
  EXPECT_TRUE(limiter.take("192.0.2.2", limits, t0)) << "another client has a bucket of its own";
  EXPECT_FALSE(limiter.take("192.0.2.1", limits, t0 + 500ms));
  EXPECT_EQ(limiter.take("192.0.2.1", limits, t0 + 500ms).retry_after, 500ms);
  EXPECT_TRUE(limiter.take("192.0.2.1", limits, t0 + 1s));
  EXPECT_FALSE(limiter.take("192.0.2.1", limits, t0 + 1s));
  // A minute later the bucket is full again, and no fuller.
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(limiter.take("192.0.2.1", limits, t0 + 10min)) << i;
  EXPECT_FALSE(limiter.take("192.0.2.1", limits, t0 + 10min));
}

TEST(TokenLimiter, AnIpv6ClientIsCountedByItsSlash64) {
  TokenLimiter limiter;
  const TokenLimits limits{1'000, 2, 10min};
  EXPECT_TRUE(limiter.take("2001:db8:1:2::1", limits, t0));
  EXPECT_TRUE(limiter.take("2001:db8:1:2:ffff::9", limits, t0));
  EXPECT_FALSE(limiter.take("2001:db8:1:2:abcd::7", limits, t0)) << "one /64, one client";
  EXPECT_TRUE(limiter.take("2001:db8:1:3::1", limits, t0));
  EXPECT_EQ(token_client_key("2001:db8:1:2:abcd::7"), "2001:db8:1:2::/64");
  EXPECT_EQ(token_client_key("192.0.2.7"), "192.0.2.7");
  EXPECT_EQ(token_client_key("::ffff:192.0.2.7"), "192.0.2.7");
  EXPECT_EQ(token_client_key("unknown"), "unknown");
}

TEST(TokenLimiter, PerClientZeroLeavesOnlyTheLiveBound) {
  TokenLimiter limiter;
  const TokenLimits limits{100, 0, 10min};
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(limiter.take("192.0.2.1", limits, t0)) << i;
  EXPECT_EQ(limiter.take("192.0.2.1", limits, t0).refusal, TokenLimiter::Refusal::live);
  EXPECT_EQ(limiter.clients(), 0u);
}

// At most max_live tokens issued within any ttl: so at most that many unexpired ones.
TEST(TokenLimiter, NoMoreThanMaxLiveWithinAnyTtl) {
  TokenLimiter limiter;
  const TokenLimits limits{100, 0, 64s};  // slots of one second
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(limiter.take("a", limits, t0));
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(limiter.take("b", limits, t0 + 30s));
  TokenLimiter::Verdict v = limiter.take("c", limits, t0 + 30s);
  EXPECT_EQ(v.refusal, TokenLimiter::Refusal::live);
  // The first 60 expire by t0 + 64 s; their slot leaves the count at t0 + 65 s at the
  // latest, never before they expire.
  EXPECT_GT(v.retry_after, 34s);
  EXPECT_LE(v.retry_after, 35s);
  EXPECT_FALSE(limiter.take("c", limits, t0 + 64s));
  EXPECT_TRUE(limiter.take("c", limits, t0 + 30s + v.retry_after));
  for (int i = 1; i < 60; ++i) ASSERT_TRUE(limiter.take("c", limits, t0 + 66s)) << i;
  EXPECT_FALSE(limiter.take("c", limits, t0 + 66s)) << "the 40 of t0 + 30 s still live";
  EXPECT_TRUE(limiter.take("c", limits, t0 + 96s));
}

// A refusal counts nothing: neither the client's bucket nor the live tokens.
TEST(TokenLimiter, ARefusalTakesNothing) {
  TokenLimiter limiter;
  const TokenLimits limits{3, 2, 10min};
  EXPECT_TRUE(limiter.take("a", limits, t0));
  EXPECT_TRUE(limiter.take("a", limits, t0));
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(limiter.take("a", limits, t0).refusal, TokenLimiter::Refusal::client);
  EXPECT_TRUE(limiter.take("b", limits, t0)) << "the client's refusals took no live token";
  EXPECT_EQ(limiter.take("c", limits, t0).refusal, TokenLimiter::Refusal::live);
  for (int i = 0; i < 2; ++i)
    EXPECT_TRUE(limiter.take("c", limits, t0 + 10min + 1min))
        << "the live refusal took nothing of c's bucket";
}

// A reload that changes the ttl keeps the tokens counted so far, for the new ttl.
TEST(TokenLimiter, AChangedTtlKeepsWhatWasCounted) {
  TokenLimiter limiter;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(limiter.take("a", {10, 0, 10min}, t0));
  EXPECT_FALSE(limiter.take("a", {10, 0, 1min}, t0 + 1s));
  EXPECT_FALSE(limiter.take("a", {10, 0, 1min}, t0 + 1min));
  EXPECT_TRUE(limiter.take("a", {10, 0, 1min}, t0 + 1s + 1min + 2s));
}

// The table of buckets does not grow with every client ever seen: full buckets go.
TEST(TokenLimiter, FullBucketsAreDroppedAsTheTableGrows) {
  TokenLimiter limiter;
  const TokenLimits limits{1'000'000, 60, 10min};
  for (int i = 0; i < 5000; ++i)
    ASSERT_TRUE(limiter.take("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256), limits,
                             t0 + std::chrono::milliseconds(i * 60)));
  // Each client took one token of 60, back within a second: pruning keeps the few clients
  // of the last second, not every client seen.
  EXPECT_LE(limiter.clients(), 2048u);
}

}  // namespace
}  // namespace idem::gateway
