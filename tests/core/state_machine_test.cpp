// The pure decisions of core/state_machine.h, without any store around them.
#include "core/state_machine.h"

#include <gtest/gtest.h>

#include "gateway/model/units.h"  // kMaxDuration, the longest a config may give

namespace idem::core {
namespace {

using namespace std::chrono_literals;
using Kind = BeginOutcome::Kind;

const TimePoint t0 = from_micros(1'800'000'000'000'000);

TEST(FenceSource, IsTheClockWhenTheClockIsAhead) {
  FenceSource f;
  EXPECT_EQ(f.next(0, t0), static_cast<Fence>(to_micros(t0)));
}

TEST(FenceSource, GrowsWithinOneMicrosecondAndWhenTheClockStepsBack) {
  FenceSource f;
  const Fence a = f.next(0, t0);
  const Fence b = f.next(0, t0);
  const Fence c = f.next(0, t0 - 1h);  // the clock stepped backwards
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(f.high_water(), c);
}

TEST(FenceSource, ExceedsThePreviousFenceOfTheKey) {
  FenceSource f;
  const Fence prev = static_cast<Fence>(to_micros(t0)) + 1000;
  EXPECT_EQ(f.next(prev, t0), prev + 1);
}

TEST(FenceSource, RaiseOnlyRaises) {
  FenceSource f(100);
  f.raise(50);
  EXPECT_EQ(f.high_water(), 100u);
  f.raise(500);
  EXPECT_EQ(f.next(0, from_micros(1)), 501u);
}

BeginArgs args(std::string fp = "", Duration lease = 10s, Duration retention = 60s) {
  return {"s", "k", std::move(fp), lease, retention};
}

TEST(ApplyBegin, CreatesAPendingRecordWithLeaseAndExpiry) {
  std::optional<Record> slot;
  FenceSource f;
  auto d = apply_begin(slot, args("fp"), t0, f);
  EXPECT_EQ(d.outcome.kind, Kind::acquired);
  EXPECT_EQ(d.effect, Effect::write);
  ASSERT_TRUE(slot);
  EXPECT_EQ(slot->state, RecordState::pending);
  EXPECT_EQ(slot->lease_until, t0 + 10s);
  EXPECT_EQ(slot->expires_at, t0 + 70s);
  EXPECT_EQ(slot->fingerprint, "fp");
}

TEST(ApplyBegin, NonAcquiringOutcomesWriteNothing) {
  std::optional<Record> slot;
  FenceSource f;
  apply_begin(slot, args("fp"), t0, f);
  const Record before = *slot;
  EXPECT_EQ(apply_begin(slot, args("other"), t0, f).effect, Effect::none);
  EXPECT_EQ(apply_begin(slot, args("fp"), t0 + 1s, f).outcome, BeginOutcome::in_progress(9s));
  EXPECT_EQ(*slot, before);
}

TEST(ApplyBegin, TakeoverKeepsTheFingerprintWhenTheNewOneIsEmpty) {
  std::optional<Record> slot;
  FenceSource f;
  apply_begin(slot, args("fp"), t0, f);
  auto d = apply_begin(slot, args(""), t0 + 11s, f);
  EXPECT_EQ(d.outcome.kind, Kind::acquired);
  EXPECT_TRUE(d.outcome.recovered);
  EXPECT_EQ(slot->fingerprint, "fp");
  EXPECT_EQ(slot->lease_until, t0 + 21s);
}

TEST(ApplyBegin, OnlyATakeoverNamesThePreviousFence) {
  std::optional<Record> slot;
  FenceSource f;
  auto first = apply_begin(slot, args("fp"), t0, f).outcome;
  EXPECT_EQ(first.previous_fence, 0u);
  EXPECT_EQ(apply_begin(slot, args("fp"), t0 + 1s, f).outcome.previous_fence, 0u);  // in_progress
  auto taken = apply_begin(slot, args("fp"), t0 + 11s, f).outcome;
  EXPECT_TRUE(taken.recovered);
  EXPECT_EQ(taken.previous_fence, first.fence);
  EXPECT_EQ(slot->fence, taken.fence);
  // Expired: a fresh acquisition, although the old fence is lent to it.
  auto fresh = apply_begin(slot, args("fp"), t0 + 200s, f).outcome;
  EXPECT_FALSE(fresh.recovered);
  EXPECT_EQ(fresh.previous_fence, 0u);
}

TEST(ApplyBegin, AnExpiredRecordLendsItsFenceToTheNextAcquisition) {
  std::optional<Record> slot = Record{"s", "k", RecordState::done, kMaxFence - 10, "", std::nullopt, t0, "r"};
  FenceSource f;
  auto d = apply_begin(slot, args(), t0, f);  // now == expires_at: expired
  EXPECT_EQ(d.outcome.kind, Kind::acquired);
  EXPECT_FALSE(d.outcome.recovered);
  EXPECT_EQ(d.outcome.fence, kMaxFence - 9);
}

TEST(ApplyCommit, MovesTheResultIn) {
  std::optional<Record> slot;
  FenceSource f;
  const Fence fence = apply_begin(slot, args(), t0, f).outcome.fence;
  CommitOutcome out{};
  EXPECT_EQ(apply_commit(slot, {"s", "k", fence, "result", 5s}, t0 + 1s, out), Effect::write);
  EXPECT_EQ(out, CommitOutcome::committed);
  EXPECT_EQ(slot->state, RecordState::done);
  EXPECT_FALSE(slot->lease_until);
  EXPECT_EQ(slot->expires_at, t0 + 6s);
  EXPECT_EQ(slot->result, "result");
}

TEST(ApplyCommit, AfterTheLeaseButBeforeATakeoverStillCommits) {
  // The fence is still the current one: nobody else can have run.
  std::optional<Record> slot;
  FenceSource f;
  const Fence fence = apply_begin(slot, args("", 1s, 60s), t0, f).outcome.fence;
  CommitOutcome out{};
  apply_commit(slot, {"s", "k", fence, "late", 60s}, t0 + 30s, out);
  EXPECT_EQ(out, CommitOutcome::committed);
}

// The longest lease and retention a config may give (3650d each) keep every time ahead of
// now and inside the nanoseconds a timer counts in. 106751991d once overflowed
// expires_at, so a committed result was expired at once and never replayed.
TEST(ApplyCommit, TheLongestLeaseAndRetentionDoNotOverflow) {
  std::optional<Record> slot;
  FenceSource f;
  const Fence fence = apply_begin(slot, args("", kMaxDuration, kMaxDuration), t0, f).outcome.fence;
  EXPECT_EQ(slot->expires_at, t0 + 2 * kMaxDuration);
  EXPECT_LT(slot->expires_at.time_since_epoch(),
            std::chrono::duration_cast<Duration>(std::chrono::nanoseconds::max()));
  CommitOutcome out{};
  apply_commit(slot, {"s", "k", fence, "result", kMaxDuration}, t0 + 1s, out);
  ASSERT_EQ(out, CommitOutcome::committed);
  EXPECT_EQ(slot->expires_at, t0 + 1s + kMaxDuration);
  EXPECT_FALSE(expired(*slot, t0 + kMaxDuration));
  EXPECT_EQ(apply_begin(slot, args(), t0 + kMaxDuration, f).outcome.kind, Kind::replay);
  EXPECT_TRUE(expired(*slot, t0 + 1s + kMaxDuration));
}

// over_uncertain, row by row: which stored records a late commit replaces.
TEST(ApplyCommit, OverUncertainReplacesOnlyALiveDoneRecordStartingWithIt) {
  const std::string marker("u\0\x01 details", 11);
  const Record done{"s", "k", RecordState::done, 7, "fp", std::nullopt, t0 + 10s, marker};
  const Record pending{"s", "k", RecordState::pending, 7, "fp", t0 + 5s, t0 + 10s, ""};
  const Record mine{"s", "k", RecordState::done, 3, "fp", std::nullopt, t0 + 10s, marker};
  struct Row {
    const char* what;
    std::optional<Record> stored;
    std::string over_uncertain;
    TimePoint now;
    CommitOutcome out;
  };
  const Row rows[] = {
      {"a prefix with a NUL", done, std::string("u\0\x01", 3), t0, CommitOutcome::committed},
      {"the whole result", done, marker, t0, CommitOutcome::committed},
      {"longer than the result", done, marker + "x", t0, CommitOutcome::fenced},
      {"different after the NUL", done, std::string("u\0\x02", 3), t0, CommitOutcome::fenced},
      {"empty: as without", done, "", t0, CommitOutcome::fenced},
      {"expired", done, "u", t0 + 10s, CommitOutcome::fenced},
      {"pending of another fence", pending, "", t0, CommitOutcome::fenced},
      {"pending of another fence, a prefix", pending, "u", t0, CommitOutcome::fenced},
      {"absent", std::nullopt, "u", t0, CommitOutcome::fenced},
      {"done with this fence: a retry", mine, "u", t0, CommitOutcome::committed},
  };
  for (const Row& row : rows) {
    std::optional<Record> slot = row.stored;
    CommitOutcome out{};
    const Effect e = apply_commit(slot, {"s", "k", 3, "late", 60s, row.over_uncertain}, row.now, out);
    EXPECT_EQ(out, row.out) << row.what;
    const bool replaced = row.out == CommitOutcome::committed && row.stored != mine;
    EXPECT_EQ(e, replaced ? Effect::write : Effect::none) << row.what;
    if (!replaced) {
      EXPECT_EQ(slot, row.stored) << row.what;
      continue;
    }
    const Record want{"s", "k", RecordState::done, 3, "fp", std::nullopt, row.now + 60s, "late"};
    EXPECT_EQ(slot, want) << row.what;
  }
}

TEST(ApplyRemove, ErasesExpiredLeftoversButReportsOnlyLiveOnes) {
  std::optional<Record> slot = Record{"s", "k", RecordState::done, 1, "", std::nullopt, t0, "r"};
  bool removed = true;
  EXPECT_EQ(apply_remove(slot, t0, removed), Effect::erase);
  EXPECT_FALSE(removed);
  EXPECT_FALSE(slot);
}

TEST(Tokens, AConsumedTokenStaysRestorableForItsTtl) {
  std::optional<TokenEntry> slot = issue_token_entry({"s", 10s}, t0);
  ConsumeOutcome c{};
  apply_consume(slot, t0 + 9s, c);
  EXPECT_EQ(c, ConsumeOutcome::consumed);
  EXPECT_EQ(slot->expires_at, t0 + 19s);
  RestoreOutcome r{};
  apply_restore(slot, {"s", "t", 5s}, t0 + 18s, r);
  EXPECT_EQ(r, RestoreOutcome::restored);
  EXPECT_FALSE(slot->consumed);
  EXPECT_EQ(slot->expires_at, t0 + 23s);
}

TEST(Locks, TheSameOwnerKeepsItsFence) {
  std::optional<LockEntry> slot;
  FenceSource f;
  LockOutcome a{}, b{};
  apply_lock(slot, {"n", "o", 10s}, t0, f, a);
  apply_lock(slot, {"n", "o", 10s}, t0 + 5s, f, b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(slot->expires_at, t0 + 15s);
}

TEST(RandomToken, Is192BitsOfBase64Url) {
  auto a = random_token(), b = random_token();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            std::string::npos);
}

}  // namespace
}  // namespace idem::core
