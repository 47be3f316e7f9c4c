// The engine (docs/design.md) as one suite for every backend; see contract.h.
#include "stores/contract.h"
#include "stores/race.h"

#include <algorithm>
#include <atomic>
#include <latch>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "idem/async.h"

namespace idem::testutil {
namespace {

using Kind = BeginOutcome::Kind;

// ---- begin --------------------------------------------------------------------------------

TEST_P(StoreContract, BeginOnAbsentKeyAcquiresWithJsonSafeFence) {
  auto o = must_begin(begin_args("k"));
  EXPECT_EQ(o.kind, Kind::acquired);
  EXPECT_FALSE(o.recovered);
  EXPECT_GT(o.fence, 0u);
  EXPECT_LE(o.fence, kMaxFence);
}

TEST_P(StoreContract, BeginWhileLeaseIsLiveIsInProgress) {
  must_acquire(begin_args("k", "fp"));
  auto o = must_begin(begin_args("k", "fp"));
  EXPECT_EQ(o.kind, Kind::in_progress);
  EXPECT_GT(o.retry_after, Duration::zero());
  EXPECT_LE(o.retry_after, kLong);
}

TEST_P(StoreContract, CommitThenBeginReplaysTheResult) {
  const Fence f = must_acquire(begin_args("k", "fp"));
  EXPECT_EQ(must_commit("k", f, "first result"), CommitOutcome::committed);
  for (int i = 0; i < 3; ++i) {
    auto o = must_begin(begin_args("k", "fp"));
    EXPECT_EQ(o.kind, Kind::replay);
    EXPECT_EQ(o.result, "first result");
    EXPECT_EQ(o.fence, f);
  }
}

// A caller may keep a replayed result for expires_in from before it asked (the gateway's
// replay cache does): more than the record lives would serve it past its expiry.
TEST_P(StoreContract, ReplayTellsHowLongTheRecordStillLives) {
  const Fence f = must_acquire(begin_args("k", "fp"));
  ASSERT_EQ(must_commit("k", f, "r", kLong), CommitOutcome::committed);
  auto o = must_begin(begin_args("k", "fp"));
  ASSERT_EQ(o.kind, Kind::replay);
  EXPECT_GT(o.expires_in, kLong - 10s);  // real clocks: the commit and begin took a moment
  EXPECT_LE(o.expires_in, kLong);
  advance(kShort);
  o = must_begin(begin_args("k", "fp"));
  ASSERT_EQ(o.kind, Kind::replay);
  EXPECT_LE(o.expires_in, kLong - kShort);
  EXPECT_GT(o.expires_in, kLong - kShort - 10s);
}

TEST_P(StoreContract, ReplayIsByteExactWithNulBytesAndOneMebibyte) {
  std::string big(1 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131 + 7) % 256);
  big[0] = '\0';
  big[big.size() - 1] = '\0';
  const std::string small("a\0b\0\0c", 6);
  for (const auto& [key, result] :
       {std::pair{"big", big}, std::pair{"small", small}, std::pair{"empty", std::string()}}) {
    const Fence f = must_acquire(begin_args(key));
    ASSERT_EQ(must_commit(key, f, result), CommitOutcome::committed);
    auto o = must_begin(begin_args(key));
    ASSERT_EQ(o.kind, Kind::replay);
    EXPECT_EQ(o.result.size(), result.size());
    EXPECT_TRUE(o.result == result) << key;
    auto rec = store().get({"s", key});
    ASSERT_TRUE(rec.is_ok() && rec->has_value());
    EXPECT_TRUE((*rec)->result == result) << key;
  }
}

TEST_P(StoreContract, MismatchIsCheckedFirstAndChangesNothing) {
  // Pending, lease live: mismatch wins over in_progress.
  must_acquire(begin_args("p", "fp-1"));
  auto before = store().get({"s", "p"});
  EXPECT_EQ(must_begin(begin_args("p", "fp-2")).kind, Kind::mismatch);
  EXPECT_EQ(*store().get({"s", "p"}), *before);

  // Pending with an expired lease: mismatch wins over takeover.
  must_acquire(begin_args("x", "fp-1", kShort));
  advance(2 * kShort);
  before = store().get({"s", "x"});
  EXPECT_EQ(must_begin(begin_args("x", "fp-2")).kind, Kind::mismatch);
  EXPECT_EQ(*store().get({"s", "x"}), *before);

  // Done: mismatch wins over replay.
  const Fence f = must_acquire(begin_args("d", "fp-1"));
  must_commit("d", f, "r");
  before = store().get({"s", "d"});
  EXPECT_EQ(must_begin(begin_args("d", "fp-2")).kind, Kind::mismatch);
  EXPECT_EQ(*store().get({"s", "d"}), *before);
}

TEST_P(StoreContract, EmptyFingerprintMatchesAnyFingerprint) {
  Fence f = must_acquire(begin_args("a", "fp"));
  must_commit("a", f, "ra");
  EXPECT_EQ(must_begin(begin_args("a", "")).kind, Kind::replay);

  f = must_acquire(begin_args("b", ""));
  must_commit("b", f, "rb");
  EXPECT_EQ(must_begin(begin_args("b", "anything")).kind, Kind::replay);
  EXPECT_EQ(must_begin(begin_args("b", "other")).kind, Kind::replay);
}

TEST_P(StoreContract, ScopesIsolateKeys) {
  const Fence f = must_acquire(begin_args("k", "", kLong, kLong, "alice"));
  must_commit("k", f, "alice's", kLong, "alice");
  auto o = must_begin(begin_args("k", "", kLong, kLong, "bob"));
  EXPECT_EQ(o.kind, Kind::acquired);
  EXPECT_EQ(must_begin(begin_args("k", "", kLong, kLong, "alice")).result, "alice's");
  // Bob's fence commits nothing in alice's scope. (Fences are per scope and key: on a store
  // with one shard per scope it may equal alice's, which makes this a retried commit.)
  const auto c = store().commit({"alice", "k", o.fence, "x", kLong}).value();
  if (o.fence != f) {
    EXPECT_EQ(c, CommitOutcome::fenced);
  }
  EXPECT_EQ(must_begin(begin_args("k", "", kLong, kLong, "alice")).result, "alice's");
}

TEST_P(StoreContract, ExpiredLeaseIsTakenOverWithAGreaterFence) {
  const Fence old = must_acquire(begin_args("k", "fp", kShort));
  auto o = take_over(begin_args("k", "fp", kLong));
  EXPECT_GT(o.fence, old);

  // I2: the previous holder's fence changes nothing any more.
  EXPECT_EQ(store().extend({"s", "k", old, kLong}).value(), ExtendOutcome::fenced);
  EXPECT_EQ(store().release({"s", "k", old}).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(must_commit("k", old, "late"), CommitOutcome::fenced);
  EXPECT_EQ(must_commit("k", o.fence, "new"), CommitOutcome::committed);
  EXPECT_EQ(must_begin(begin_args("k", "fp")).result, "new");
}

TEST_P(StoreContract, CommitIsFencedUnlessPendingWithThatFence) {
  EXPECT_EQ(must_commit("absent", 12345, "r"), CommitOutcome::fenced);
  EXPECT_FALSE(store().get({"s", "absent"})->has_value());

  const Fence f = must_acquire(begin_args("k"));
  EXPECT_EQ(must_commit("k", f + 1, "wrong"), CommitOutcome::fenced);
  EXPECT_EQ(must_commit("k", f - 1, "wrong"), CommitOutcome::fenced);
  EXPECT_EQ(must_commit("k", f, "right"), CommitOutcome::committed);
  EXPECT_EQ(must_begin(begin_args("k")).result, "right");
}

TEST_P(StoreContract, ARetriedCommitIsCommittedAndChangesNothing) {
  const Fence f = must_acquire(begin_args("k", "fp"));
  ASSERT_EQ(must_commit("k", f, "first"), CommitOutcome::committed);
  auto before = store().get({"s", "k"});
  ASSERT_TRUE(before.is_ok() && before->has_value());
  // The first answer was lost; the caller commits again with the same fence.
  EXPECT_EQ(must_commit("k", f, "second", 2 * kLong), CommitOutcome::committed);
  EXPECT_EQ(*store().get({"s", "k"}), *before);
  EXPECT_EQ(must_begin(begin_args("k", "fp")).result, "first");
  // Another fence on the done record stays fenced.
  EXPECT_EQ(must_commit("k", f + 1, "other"), CommitOutcome::fenced);
  EXPECT_EQ(must_commit("k", f - 1, "other"), CommitOutcome::fenced);
  EXPECT_EQ(*store().get({"s", "k"}), *before);
}

TEST_P(StoreContract, ReleaseLetsARetryAcquireWithAGreaterFence) {
  const Fence f1 = must_acquire(begin_args("k"));
  EXPECT_EQ(store().release({"s", "k", f1 + 1}).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(must_begin(begin_args("k")).kind, Kind::in_progress);
  EXPECT_EQ(store().release({"s", "k", f1}).value(), ReleaseOutcome::released);
  EXPECT_FALSE(store().get({"s", "k"})->has_value());
  EXPECT_EQ(store().release({"s", "k", f1}).value(), ReleaseOutcome::fenced);

  auto o = must_begin(begin_args("k"));
  ASSERT_EQ(o.kind, Kind::acquired);
  EXPECT_FALSE(o.recovered);
  EXPECT_GT(o.fence, f1);
  EXPECT_EQ(must_commit("k", f1, "stale"), CommitOutcome::fenced);
}

TEST_P(StoreContract, ReleaseAndExtendOfADoneRecordAreFenced) {
  const Fence f = must_acquire(begin_args("k"));
  must_commit("k", f, "r");
  EXPECT_EQ(store().release({"s", "k", f}).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(store().extend({"s", "k", f, kLong}).value(), ExtendOutcome::fenced);
  EXPECT_EQ(must_begin(begin_args("k")).result, "r");
}

// ---- owners and abandon ---------------------------------------------------------------------

BeginArgs owned(BeginArgs a, std::string owner) {
  a.owner = std::move(owner);
  return a;
}

TEST_P(StoreContract, TheOwnerIsStoredAndATakeoverReplacesIt) {
  const Fence f = must_acquire(owned(begin_args("k", "", kShort), "gw-1"));
  EXPECT_EQ(store().get({"s", "k"}).value()->owner, "gw-1");
  advance(2 * kShort);
  auto o = must_begin(owned(begin_args("k"), "gw-2"));
  ASSERT_EQ(o.kind, Kind::acquired);
  EXPECT_TRUE(o.recovered);
  EXPECT_GT(o.fence, f);
  EXPECT_EQ(store().get({"s", "k"}).value()->owner, "gw-2");
  // Commit keeps it.
  must_commit("k", o.fence, "r");
  EXPECT_EQ(store().get({"s", "k"}).value()->owner, "gw-2");
  // No owner given: none stored.
  must_acquire(begin_args("other"));
  EXPECT_EQ(store().get({"s", "other"}).value()->owner, "");
}

TEST_P(StoreContract, AbandonRemovesTheOwnersPendingClaim) {
  const Fence f = must_acquire(owned(begin_args("k", "fp"), "gw-1"));
  EXPECT_EQ(store().abandon({"s", "k", "gw-1"}).value(), ReleaseOutcome::released);
  EXPECT_FALSE(store().get({"s", "k"}).value().has_value());
  EXPECT_EQ(store().abandon({"s", "k", "gw-1"}).value(), ReleaseOutcome::fenced);
  // As after a release: the next acquisition is fresh, with a greater fence.
  auto o = must_begin(begin_args("k", "fp"));
  ASSERT_EQ(o.kind, Kind::acquired);
  EXPECT_FALSE(o.recovered);
  EXPECT_GT(o.fence, f);
  EXPECT_EQ(must_commit("k", f, "stale"), CommitOutcome::fenced);
}

TEST_P(StoreContract, AbandonOfAClaimWhoseLeaseRanOutStillRemovesIt) {
  must_acquire(owned(begin_args("k", "", kShort), "gw-1"));
  advance(2 * kShort);
  EXPECT_EQ(store().abandon({"s", "k", "gw-1"}).value(), ReleaseOutcome::released);
  auto o = must_begin(begin_args("k"));
  ASSERT_EQ(o.kind, Kind::acquired);
  EXPECT_FALSE(o.recovered);  // nothing to be uncertain about
}

TEST_P(StoreContract, AbandonOfAnotherOwnersClaimIsFenced) {
  must_acquire(owned(begin_args("k"), "gw-1"));
  auto before = store().get({"s", "k"}).value();
  EXPECT_EQ(store().abandon({"s", "k", "gw-2"}).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(store().abandon({"s", "k", "gw-1x"}).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(store().abandon({"other-scope", "k", "gw-1"}).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(store().get({"s", "k"}).value(), before);
  // A claim without an owner cannot be abandoned, and an empty owner is no argument.
  must_acquire(begin_args("unowned"));
  EXPECT_EQ(store().abandon({"s", "unowned", "gw-1"}).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(store().abandon({"s", "unowned", ""}).status().code(), StatusCode::invalid_argument);
  EXPECT_TRUE(store().get({"s", "unowned"}).value().has_value());
  EXPECT_EQ(store().abandon({"s", "absent", "gw-1"}).value(), ReleaseOutcome::fenced);
}

TEST_P(StoreContract, AbandonOfADoneRecordIsFenced) {
  const Fence f = must_acquire(owned(begin_args("k", "fp"), "gw-1"));
  must_commit("k", f, "r");
  EXPECT_EQ(store().abandon({"s", "k", "gw-1"}).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(must_begin(begin_args("k", "fp")).result, "r");
}

TEST_P(StoreContract, AbandonAfterATakeoverByAnotherOwnerIsFenced) {
  must_acquire(owned(begin_args("k", "", kShort), "gw-1"));
  advance(2 * kShort);
  auto o = must_begin(owned(begin_args("k"), "gw-2"));
  ASSERT_EQ(o.kind, Kind::acquired);
  EXPECT_EQ(store().abandon({"s", "k", "gw-1"}).value(), ReleaseOutcome::fenced);
  auto rec = store().get({"s", "k"}).value();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->fence, o.fence);
  EXPECT_EQ(must_commit("k", o.fence, "r"), CommitOutcome::committed);
}

TEST_P(StoreContract, ExtendKeepsTheLeaseAlive) {
  const Fence f = must_acquire(begin_args("k", "", kRenewed, kLong));
  const auto before = store().get({"s", "k"}).value().value();
  for (int i = 0; i < 3; ++i) {
    advance(kRenewed / 2);
    EXPECT_EQ(store().extend({"s", "k", f, kRenewed}).value(), ExtendOutcome::extended);
  }
  // 1.5 leases have passed since begin: without the extensions the key would be free.
  auto o = must_begin(begin_args("k"));
  EXPECT_EQ(o.kind, Kind::in_progress);
  const auto after = store().get({"s", "k"}).value().value();
  ASSERT_TRUE(after.lease_until && before.lease_until);
  EXPECT_GT(*after.lease_until, *before.lease_until);
  // expires_at moves with the lease: it stays lease_until + retention.
  EXPECT_EQ(after.expires_at - *after.lease_until, before.expires_at - *before.lease_until);
  EXPECT_EQ(must_commit("k", f, "done"), CommitOutcome::committed);
}

TEST_P(StoreContract, ExtendWithAStaleFenceIsFenced) {
  const Fence f = must_acquire(begin_args("k"));
  EXPECT_EQ(store().extend({"s", "k", f + 1, kLong}).value(), ExtendOutcome::fenced);
  EXPECT_EQ(store().extend({"s", "absent", f, kLong}).value(), ExtendOutcome::fenced);
}

TEST_P(StoreContract, GetShowsTheRecordAsStored) {
  EXPECT_FALSE(store().get({"s", "k"}).value().has_value());
  const Fence f = must_acquire(begin_args("k", "fp\x01\x00x", kLong, 2 * kLong));
  auto pending = store().get({"s", "k"}).value();
  ASSERT_TRUE(pending);
  EXPECT_EQ(pending->scope, "s");
  EXPECT_EQ(pending->key, "k");
  EXPECT_EQ(pending->state, RecordState::pending);
  EXPECT_EQ(pending->fence, f);
  EXPECT_EQ(pending->fingerprint, "fp\x01");  // a C string literal stops at the NUL
  ASSERT_TRUE(pending->lease_until);
  EXPECT_EQ(pending->expires_at - *pending->lease_until, 2 * kLong);

  must_commit("k", f, "result", 3 * kLong);
  auto done = store().get({"s", "k"}).value();
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, RecordState::done);
  EXPECT_EQ(done->fence, f);
  EXPECT_FALSE(done->lease_until);
  EXPECT_EQ(done->result, "result");
  EXPECT_GT(done->expires_at, *pending->lease_until);  // commit time + 3 × kLong
}

TEST_P(StoreContract, DoneRecordExpiresAfterRetention) {
  const Fence f = must_acquire(begin_args("k", "fp", kLong, kShort));
  must_commit("k", f, "r", kShort);
  EXPECT_EQ(must_begin(begin_args("k", "fp", kLong, kShort)).kind, Kind::replay);
  advance(2 * kShort);
  EXPECT_FALSE(store().get({"s", "k"}).value().has_value());  // I6
  // Expired: absent, so even another fingerprint acquires, afresh.
  auto o = must_begin(begin_args("k", "other"));
  EXPECT_EQ(o.kind, Kind::acquired);
  EXPECT_FALSE(o.recovered);
  EXPECT_GT(o.fence, f);
}

TEST_P(StoreContract, PendingRecordExpiresAfterLeasePlusRetention) {
  const Fence f = must_acquire(begin_args("k", "fp", kShort, kShort));
  advance(3 * kShort);
  EXPECT_FALSE(store().get({"s", "k"}).value().has_value());
  EXPECT_EQ(must_commit("k", f, "late"), CommitOutcome::fenced);
  auto o = must_begin(begin_args("k", "fp"));
  EXPECT_EQ(o.kind, Kind::acquired);
  EXPECT_FALSE(o.recovered);
  EXPECT_GT(o.fence, f);
}

TEST_P(StoreContract, RemoveIsAnOperatorPurgeAndFencesStillGrow) {
  const Fence f = must_acquire(begin_args("k"));
  must_commit("k", f, "r");
  EXPECT_TRUE(store().remove({"s", "k"}).value());
  EXPECT_FALSE(store().remove({"s", "k"}).value());
  EXPECT_FALSE(store().get({"s", "k"}).value().has_value());
  EXPECT_GT(must_acquire(begin_args("k")), f);
}

TEST_P(StoreContract, SweepRemovesOnlyExpiredRecords) {
  for (int i = 0; i < 5; ++i) {
    const std::string key = "short-" + std::to_string(i);
    must_commit(key, must_acquire(begin_args(key)), "r", kShort);
  }
  must_commit("long", must_acquire(begin_args("long")), "r", kLong);
  must_acquire(begin_args("pending"));
  advance(2 * kShort);
  auto swept = store().sweep();
  ASSERT_TRUE(swept.is_ok()) << swept.status().to_string();
  // Backends with native expiry may have dropped some on their own already.
  EXPECT_LE(*swept, 5u);
  if (!store().traits().native_expiry) {
    EXPECT_EQ(*swept, 5u);
  }
  EXPECT_EQ(store().sweep().value(), 0u);
  EXPECT_EQ(must_begin(begin_args("long")).kind, Kind::replay);
  EXPECT_EQ(must_begin(begin_args("pending")).kind, Kind::in_progress);
  EXPECT_EQ(must_begin(begin_args("short-0")).kind, Kind::acquired);
}

TEST_P(StoreContract, FencesNeverRepeatForAKey) {
  std::vector<Fence> seen;
  for (int i = 0; i < 200; ++i) {
    const Fence f = must_acquire(begin_args("k"));
    seen.push_back(f);
    switch (i % 3) {
      case 0:
        ASSERT_EQ(store().release({"s", "k", f}).value(), ReleaseOutcome::released);
        break;
      case 1:
        ASSERT_TRUE(store().remove({"s", "k"}).value());
        break;
      case 2:
        ASSERT_EQ(store().release({"s", "k", f}).value(), ReleaseOutcome::released);
        break;
    }
  }
  for (std::size_t i = 1; i < seen.size(); ++i) ASSERT_GT(seen[i], seen[i - 1]) << "at " << i;
}

TEST_P(StoreContract, InvalidArgumentsAreRejected) {
  EXPECT_EQ(store().begin(begin_args("")).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(store().begin(begin_args("k", "", Duration::zero())).status().code(),
            StatusCode::invalid_argument);
  EXPECT_EQ(store().begin(begin_args("k", "", kLong, Duration::zero())).status().code(),
            StatusCode::invalid_argument);
  EXPECT_EQ(store().commit({"s", "k", 1, "r", Duration::zero()}).status().code(),
            StatusCode::invalid_argument);
  EXPECT_EQ(store().extend({"s", "k", 1, Duration::zero()}).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(store().issue_token({"s", Duration::zero()}).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(store().lock({"n", "", kLong}).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(store().lock({"n", "o", Duration::zero()}).status().code(), StatusCode::invalid_argument);
  // Nothing was created by the rejected calls.
  EXPECT_FALSE(store().get({"s", "k"}).value().has_value());
}

TEST_P(StoreContract, PingAnswers) { EXPECT_TRUE(store().ping().is_ok()); }

// ---- takeovers: the previous fence, and a late commit over the uncertain marker ---------------

TEST_P(StoreContract, ATakeoverNamesTheFenceOfTheClaimItTookOver) {
  const Fence first = must_acquire(begin_args("k", "fp", kShort));
  auto second = take_over(begin_args("k", "fp", kShort));
  EXPECT_EQ(second.previous_fence, first);
  // The silent holder is the one just before, not the first.
  auto third = take_over(begin_args("k", "fp"));
  EXPECT_EQ(third.previous_fence, second.fence);
  // Answers other than a takeover name none.
  auto busy = must_begin(begin_args("k", "fp"));
  EXPECT_EQ(busy.kind, Kind::in_progress);
  EXPECT_EQ(busy.previous_fence, 0u);
  ASSERT_EQ(must_commit("k", third.fence, "r"), CommitOutcome::committed);
  auto replay = must_begin(begin_args("k", "fp"));
  EXPECT_EQ(replay.kind, Kind::replay);
  EXPECT_EQ(replay.previous_fence, 0u);
}

// A released, abandoned, removed or expired record lends its fence to the next acquisition,
// but that acquisition took nothing over.
TEST_P(StoreContract, AFreshAcquisitionNamesNoPreviousFence) {
  auto fresh = [&](BeginArgs a) {
    auto o = must_begin(std::move(a));
    EXPECT_EQ(o.kind, Kind::acquired);
    EXPECT_FALSE(o.recovered);
    EXPECT_EQ(o.previous_fence, 0u);
    return o.fence;
  };
  Fence f = fresh(owned(begin_args("k"), "gw-1"));
  ASSERT_EQ(store().release({"s", "k", f}).value(), ReleaseOutcome::released);
  fresh(owned(begin_args("k"), "gw-1"));
  ASSERT_TRUE(store().remove({"s", "k"}).value());
  fresh(owned(begin_args("k", "", kShort), "gw-1"));
  advance(2 * kShort);  // the lease ran out: abandon still gives the claim back
  ASSERT_EQ(store().abandon({"s", "k", "gw-1"}).value(), ReleaseOutcome::released);
  fresh(begin_args("k", "", kShort, kShort));
  advance(3 * kShort);  // past the lease and the retention: expired, absent
  f = fresh(begin_args("k", "", kShort));
  // Only now a takeover, which names the claim it took over.
  EXPECT_EQ(take_over(begin_args("k")).previous_fence, f);
}

TEST_P(StoreContract, ALateCommitReplacesTheUncertainMarkerOfItsClaim) {
  const auto u = complete_as_uncertain("k");
  const auto before = store().get({"s", "k"}).value();
  ASSERT_TRUE(before);
  ASSERT_EQ(must_commit_over("k", u.late, "the real result", uncertain_prefix(u.late), 2 * kLong),
            CommitOutcome::committed);
  const auto after = store().get({"s", "k"}).value();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->state, RecordState::done);
  EXPECT_EQ(after->fence, u.late);
  EXPECT_EQ(after->result, "the real result");
  EXPECT_FALSE(after->lease_until);
  EXPECT_GT(after->expires_at, before->expires_at);  // now + 2 × kLong
  EXPECT_EQ(after->fingerprint, before->fingerprint);
  auto o = must_begin(begin_args("k", "fp"));
  ASSERT_EQ(o.kind, Kind::replay);
  EXPECT_EQ(o.result, "the real result");
  EXPECT_EQ(o.fence, u.late);

  // Retried (its answer was lost), or with another result: committed, and nothing changes.
  EXPECT_EQ(must_commit_over("k", u.late, "the real result", uncertain_prefix(u.late), 3 * kLong),
            CommitOutcome::committed);
  EXPECT_EQ(must_commit_over("k", u.late, "another result", uncertain_prefix(u.late)),
            CommitOutcome::committed);
  EXPECT_EQ(store().get({"s", "k"}).value(), after);
  // The takeover's fence is no longer the record's.
  EXPECT_EQ(must_commit("k", u.taker, "x"), CommitOutcome::fenced);
  EXPECT_EQ(store().get({"s", "k"}).value(), after);
  // Fences still never repeat: the next acquisition's exceeds the takeover's.
  ASSERT_TRUE(store().remove({"s", "k"}).value());
  EXPECT_GT(must_acquire(begin_args("k")), u.taker);
}

TEST_P(StoreContract, OverUncertainComparesBytesAndAnotherPrefixIsFenced) {
  const auto u = complete_as_uncertain("k");
  const auto before = store().get({"s", "k"}).value();
  const std::string prefix = uncertain_prefix(u.late);
  // Another claim's, one that differs only after the NUL, one longer than the marker,
  // another first byte, none.
  for (const std::string& other : {uncertain_prefix(u.late + 1), std::string("uncertain\0x", 11),
                                   u.marker + "!", "U" + prefix, std::string()}) {
    EXPECT_EQ(must_commit_over("k", u.late, "late", other), CommitOutcome::fenced) << other;
    EXPECT_EQ(store().get({"s", "k"}).value(), before);
  }
  EXPECT_EQ(must_commit_over("k", u.late, "late", prefix), CommitOutcome::committed);
  EXPECT_EQ(must_begin(begin_args("k")).result, "late");
}

TEST_P(StoreContract, APrefixAsLongAsTheStoredResultMatches) {
  const auto u = complete_as_uncertain("k", kLong, "");
  ASSERT_EQ(u.marker, uncertain_prefix(u.late));
  EXPECT_EQ(must_commit_over("k", u.late, std::string("r\0s", 3), u.marker), CommitOutcome::committed);
  EXPECT_EQ(must_begin(begin_args("k")).result, std::string("r\0s", 3));
}

// A pending record has no marker: its holder is alive, or a repeat will take it over.
TEST_P(StoreContract, OverUncertainLeavesAPendingClaimAlone) {
  const Fence late = must_acquire(begin_args("k", "fp", kShort));
  auto taker = take_over(begin_args("k", "fp"));
  const auto before = store().get({"s", "k"}).value();
  EXPECT_EQ(must_commit_over("k", late, "late", uncertain_prefix(late)), CommitOutcome::fenced);
  EXPECT_EQ(must_commit("k", late, "late"), CommitOutcome::fenced);
  EXPECT_EQ(store().get({"s", "k"}).value(), before);
  // Once the takeover completed the record as uncertain, the late commit replaces it.
  ASSERT_EQ(must_commit("k", taker.fence, uncertain_prefix(late) + "details"), CommitOutcome::committed);
  EXPECT_EQ(must_commit_over("k", late, "late", uncertain_prefix(late)), CommitOutcome::committed);
  EXPECT_EQ(must_begin(begin_args("k", "fp")).result, "late");
}

TEST_P(StoreContract, OverUncertainNeverRevivesAnExpiredRecord) {
  const auto gone = complete_as_uncertain("gone", kShort);
  const auto live = complete_as_uncertain("live", kLong);
  advance(2 * kShort);
  EXPECT_EQ(must_commit_over("gone", gone.late, "late", uncertain_prefix(gone.late)), CommitOutcome::fenced);
  EXPECT_FALSE(store().get({"s", "gone"}).value().has_value());
  auto o = must_begin(begin_args("gone", "fp"));
  EXPECT_EQ(o.kind, Kind::acquired);
  EXPECT_FALSE(o.recovered);
  EXPECT_EQ(must_commit_over("live", live.late, "late", uncertain_prefix(live.late)),
            CommitOutcome::committed);
}

// The record takes the commit's fence: it must be one a store hands out.
TEST_P(StoreContract, OverUncertainNeedsAFenceAStoreHandsOut) {
  const auto u = complete_as_uncertain("k");
  const auto before = store().get({"s", "k"}).value();
  for (const Fence f : {Fence{0}, kMaxFence + 1}) {
    auto r = store().commit({"s", "k", f, "late", kLong, uncertain_prefix(u.late)});
    EXPECT_EQ(r.status().code(), StatusCode::invalid_argument) << f;
  }
  EXPECT_EQ(store().get({"s", "k"}).value(), before);
}

// Without over_uncertain a done record of another fence stays fenced, as always.
TEST_P(StoreContract, WithoutOverUncertainTheMarkerStays) {
  const auto u = complete_as_uncertain("k");
  const auto before = store().get({"s", "k"}).value();
  EXPECT_EQ(must_commit("k", u.late, "late"), CommitOutcome::fenced);
  EXPECT_EQ(must_commit_over("k", u.late, "late", ""), CommitOutcome::fenced);
  EXPECT_EQ(store().get({"s", "k"}).value(), before);
  EXPECT_EQ(must_commit_over("k", u.late, "late", uncertain_prefix(u.late)), CommitOutcome::committed);
}

// ---- sizes (idem/limits.h, Store::max_result_bytes) -------------------------------------------

// `n` visible ASCII characters, varied so that no store could keep a prefix only.
std::string visible(std::size_t n, char first) {
  std::string s(n, first);
  for (std::size_t i = 1; i < n; ++i) s[i] = static_cast<char>(0x21 + (i * 7 + first) % 94);
  return s;
}

// The gateway stores a 255-character Idempotency-Key as "<key_space>:<key>" with a key space
// of up to 64 characters, under a scope of up to kMaxScopeBytes.
TEST_P(StoreContract, TheLongestKeyAndScopeAreHeld) {
  const std::string key = visible(64, 'k') + ":" + visible(255, 'c');
  ASSERT_EQ(key.size(), kMaxStoredKeyBytes);
  for (const std::string& scope : {std::string("s"), visible(kMaxScopeBytes, 'S')}) {
    const Fence f = must_acquire(begin_args(key, "fp", kLong, kLong, scope));
    ASSERT_EQ(must_commit(key, f, "longest", kLong, scope), CommitOutcome::committed);
    auto rec = store().get({scope, key});
    ASSERT_TRUE(rec.is_ok()) << rec.status().to_string();
    ASSERT_TRUE(rec->has_value());
    EXPECT_EQ((*rec)->key, key);
    EXPECT_EQ((*rec)->scope, scope);
    auto o = must_begin(begin_args(key, "fp", kLong, kLong, scope));
    EXPECT_EQ(o.kind, Kind::replay);
    EXPECT_EQ(o.result, "longest");
    // A key one character shorter is another record.
    EXPECT_EQ(must_begin(begin_args(key.substr(0, key.size() - 1), "fp", kLong, kLong, scope)).kind,
              Kind::acquired);
  }
}

// The gateway's lock names are "<scope>\n<stored key>".
TEST_P(StoreContract, ALockNameOfTheLongestLengthIsHeld) {
  const std::string name = visible(kMaxScopeBytes, 'S') + "\n" + visible(kMaxStoredKeyBytes, 'k');
  ASSERT_EQ(name.size(), kMaxLockNameBytes);
  auto a = store().lock({name, "a", kLong});
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_EQ(a->kind, LockOutcome::Kind::locked);
  EXPECT_EQ(store().lock({name, "b", kLong}).value().kind, LockOutcome::Kind::busy);
  EXPECT_EQ(store().lock({name.substr(0, name.size() - 1), "b", kLong}).value().kind,
            LockOutcome::Kind::locked);
  EXPECT_EQ(store().extend_lock({name, "a", kLong}).value(), LockExtendOutcome::extended);
  EXPECT_EQ(store().unlock({name, "a"}).value(), UnlockOutcome::released);
  auto b = store().lock({name, "b", kLong}).value();
  EXPECT_EQ(b.kind, LockOutcome::Kind::locked);
  EXPECT_GT(b.fence, a->fence);
}

// A result one byte over the store's limit is refused at once, naming both sizes, and the
// claim stays as it was (the caller may commit a smaller result, or release).
TEST_P(StoreContract, AResultOverTheStoresLimitIsInvalidArgument) {
  const std::uint64_t limit = store().max_result_bytes();
  EXPECT_GE(limit, 4u << 20);                     // every store holds a few MiB
  ASSERT_LE(limit, (1ull << 30) + (1ull << 20));  // and this test can afford one byte more
  const Fence f = must_acquire(begin_args("k"));
  auto over = store().commit({"s", "k", f, std::string(limit + 1, 'r'), kLong});
  ASSERT_EQ(over.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(over.status().message().find(std::to_string(limit + 1)), std::string::npos)
      << over.status().message();
  EXPECT_NE(over.status().message().find(std::to_string(limit)), std::string::npos);
  auto rec = store().get({"s", "k"});
  ASSERT_TRUE(rec.is_ok() && rec->has_value());
  EXPECT_EQ((*rec)->state, RecordState::pending);
  EXPECT_EQ(must_commit("k", f, "small"), CommitOutcome::committed);
}

// ---- listing --------------------------------------------------------------------------------

// Every page of a listing from the start, checking each page's size.
std::vector<Record> list_all(Store& store, ListArgs a) {
  std::vector<Record> out;
  for (int pages = 0; pages < 10000; ++pages) {
    auto page = store.list(a);
    EXPECT_TRUE(page.is_ok()) << page.status().to_string();
    if (!page) break;
    EXPECT_LE(page->records.size(), a.limit);
    out.insert(out.end(), page->records.begin(), page->records.end());
    if (page->next_cursor.empty()) return out;
    a.cursor = page->next_cursor;
  }
  ADD_FAILURE() << "the listing did not end";
  return out;
}

std::multiset<std::string> keys_of(const std::vector<Record>& records) {
  std::multiset<std::string> out;
  for (const Record& r : records) out.insert(r.scope + "/" + r.key);
  return out;
}

ListArgs list_args(std::string key_prefix = "", std::optional<std::string> scope = std::nullopt,
                   std::optional<RecordState> state = std::nullopt, std::size_t limit = kDefaultListLimit) {
  return {std::move(key_prefix), std::move(scope), state, limit, ""};
}

TEST_P(StoreContract, ListFiltersByKeyPrefixScopeAndState) {
  must_commit("a:1", must_acquire(begin_args("a:1")), "r1");
  must_acquire(begin_args("a:2"));
  must_commit("b:1", must_acquire(begin_args("b:1")), "r3");
  must_commit("a:3", must_acquire(begin_args("a:3", "", kLong, kLong, "t")), "r4", kLong, "t");

  EXPECT_EQ(keys_of(list_all(store(), list_args())),
            (std::multiset<std::string>{"s/a:1", "s/a:2", "s/b:1", "t/a:3"}));
  EXPECT_EQ(keys_of(list_all(store(), list_args("a:"))),
            (std::multiset<std::string>{"s/a:1", "s/a:2", "t/a:3"}));
  EXPECT_EQ(keys_of(list_all(store(), list_args("a:", "s"))), (std::multiset<std::string>{"s/a:1", "s/a:2"}));
  EXPECT_EQ(keys_of(list_all(store(), list_args("a:", std::nullopt, RecordState::done))),
            (std::multiset<std::string>{"s/a:1", "t/a:3"}));
  EXPECT_EQ(keys_of(list_all(store(), list_args("", "s", RecordState::pending))),
            (std::multiset<std::string>{"s/a:2"}));
  EXPECT_TRUE(list_all(store(), list_args("c:")).empty());
  EXPECT_TRUE(list_all(store(), list_args("", "")).empty());

  // Records come back as get() shows them.
  auto listed = list_all(store(), list_args("a:1"));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0], store().get({"s", "a:1"}).value().value());
}

TEST_P(StoreContract, ListPagesVisitEveryRecordExactlyOnce) {
  constexpr int kRecords = 7;
  std::multiset<std::string> all;
  for (int i = 0; i < kRecords; ++i) {
    const std::string key = "ks:" + std::to_string(i);
    const Fence f = must_acquire(begin_args(key));
    if (i % 2) must_commit(key, f, "r");
    all.insert("s/" + key);
  }
  must_acquire(begin_args("other:1"));
  for (std::size_t limit = 1; limit <= kRecords + 1; ++limit) {
    EXPECT_EQ(keys_of(list_all(store(), list_args("ks:", std::nullopt, std::nullopt, limit))), all)
        << "pages of " << limit;
  }
}

TEST_P(StoreContract, OrderedListIsNewestFirstAndStableUnderInserts) {
  if (!store().traits().ordered_list) GTEST_SKIP() << GetParam().name << " lists in SCAN order";
  // Later expiry is newer: retention kLong + i seconds.
  for (int i = 0; i < 4; ++i) {
    const std::string key = "o:" + std::to_string(i);
    must_commit(key, must_acquire(begin_args(key)), "r", kLong + std::chrono::seconds(i));
  }
  auto first = store().list(list_args("o:", std::nullopt, std::nullopt, 2));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->records.size(), 2u);
  EXPECT_EQ(first->records[0].key, "o:3");
  EXPECT_EQ(first->records[1].key, "o:2");
  ASSERT_FALSE(first->next_cursor.empty());
  // A record written while the operator pages is newer: it shifts nothing.
  must_commit("o:new", must_acquire(begin_args("o:new")), "r", kLong + std::chrono::seconds(10));
  auto rest = list_args("o:", std::nullopt, std::nullopt, 2);
  rest.cursor = first->next_cursor;
  std::vector<std::string> keys;
  for (const Record& r : list_all(store(), rest)) keys.push_back(r.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"o:1", "o:0"}));
}

TEST_P(StoreContract, ListTakesKeyPrefixesAndScopesLiterally) {
  const std::string space = "sp%_*?[]\\:";
  must_acquire(begin_args(space + "k"));
  must_acquire(begin_args(space + "k", "", kLong, kLong, "sc*?[%_"));
  // Each decoy differs from the prefix in one special character.
  for (std::string decoy : {"spx_*?[]\\:k", "sp%x*?[]\\:k", "sp%_x?[]\\:k", "sp%_*x[]\\:k", "sp%_*?x]\\:k",
                            "sp%_*?[x\\:k", "sp%_*?[]x:k"}) {
    must_acquire(begin_args(decoy));
    must_acquire(begin_args(decoy, "", kLong, kLong, "scx?[%_"));
  }
  EXPECT_EQ(keys_of(list_all(store(), list_args(space))),
            (std::multiset<std::string>{"s/" + space + "k", "sc*?[%_/" + space + "k"}));
  EXPECT_EQ(keys_of(list_all(store(), list_args(space, "sc*?[%_"))),
            (std::multiset<std::string>{"sc*?[%_/" + space + "k"}));
  EXPECT_EQ(list_all(store(), list_args("", "sc*?[%_")).size(), 1u);
  // A prefix ending in the greatest byte has no upper bound but itself.
  const std::string high = "hi\xff";
  must_acquire(begin_args(high + "\xff" + "k"));
  must_acquire(begin_args("hj"));
  EXPECT_EQ(keys_of(list_all(store(), list_args(high))),
            (std::multiset<std::string>{"s/" + high + "\xff" + "k"}));
}

TEST_P(StoreContract, ExpiredRecordsAreNotListed) {
  must_commit("e:short", must_acquire(begin_args("e:short", "", kShort, kShort)), "r", kShort);
  must_acquire(begin_args("e:pending", "", kShort, kShort));
  must_commit("e:long", must_acquire(begin_args("e:long")), "r");
  advance(3 * kShort);
  EXPECT_EQ(keys_of(list_all(store(), list_args("e:"))), (std::multiset<std::string>{"s/e:long"}));
}

TEST_P(StoreContract, ListRejectsBadLimitsAndCursors) {
  for (std::size_t limit : {std::size_t{0}, kMaxListLimit + 1}) {
    EXPECT_EQ(store().list(list_args("", std::nullopt, std::nullopt, limit)).status().code(),
              StatusCode::invalid_argument)
        << limit;
  }
  EXPECT_TRUE(store().list(list_args("", std::nullopt, std::nullopt, kMaxListLimit)).is_ok());
  // The last one is a position in uppercase hex: stores hand out lowercase only.
  for (std::string cursor : {"garbage", "k12", "kzz", "s1.x.0", "s99999.0.0", "k00000000000000000000000a",
                             "k000000000000000100000000AB"}) {
    auto a = list_args();
    a.cursor = cursor;
    EXPECT_EQ(store().list(a).status().code(), StatusCode::invalid_argument) << cursor;
  }
}

// ---- concurrency ----------------------------------------------------------------------------

TEST_P(StoreContract, SixtyFourRacingBeginsAcquireExactlyOnce) {
  for (int round = 0; round < 5; ++round) {
    const std::string key = "race-" + std::to_string(round);
    constexpr int kThreads = 64;
    const auto n = race_begin({&store()}, begin_args(key, "fp"), kThreads);
    EXPECT_EQ(n.acquired, 1) << key;
    EXPECT_EQ(n.in_progress, kThreads - 1) << key;
    EXPECT_EQ(n.other, 0) << key;
  }
}

// A ghost claim (its lease already ran out) is abandoned by its owner while others begin
// and may take it over: whoever acquires keeps its claim, before or after the abandon (an
// abandon names an owner and never removes another's claim).
TEST_P(StoreContract, AbandonRacingBeginsNeverRemovesTheNewHoldersClaim) {
  for (int round = 0; round < 6; ++round) {
    const std::string key = "ghost-" + std::to_string(round);
    must_acquire(owned(begin_args(key, "", kShort), "ghost"));
    advance(2 * kShort);
    constexpr int kThreads = 8;
    std::latch start(kThreads + 1);
    std::atomic<int> acquired{0}, errors{0};
    std::atomic<Fence> holder{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        auto r = store().begin(owned(begin_args(key), "gw-" + std::to_string(i)));
        if (!r) return ++errors, void();
        if (r->kind == Kind::acquired) {
          ++acquired;
          holder = r->fence;
        }
      });
    }
    start.arrive_and_wait();
    auto abandoned = store().abandon({"s", key, "ghost"});
    for (auto& t : threads) t.join();
    ASSERT_TRUE(abandoned.is_ok()) << abandoned.status().to_string();
    EXPECT_EQ(errors.load(), 0);
    // Either the abandon or a takeover came first; one begin acquired in any case.
    ASSERT_EQ(acquired.load(), 1) << key;
    auto rec = store().get({"s", key}).value();
    ASSERT_TRUE(rec) << key << ": the new holder's claim went (abandon " << to_string(*abandoned) << ")";
    EXPECT_EQ(rec->fence, holder.load());
    EXPECT_NE(rec->owner, "ghost");
    EXPECT_EQ(must_commit(key, holder.load(), "r"), CommitOutcome::committed);
  }
}

// I1 under churn: threads keep claiming a few keys; whoever acquires marks the key held,
// and no two ever hold one at once. Fences grow with every acquisition.
TEST_P(StoreContract, AtMostOneHolderUnderChurn) {
  constexpr int kThreads = 16, kKeys = 3, kIterations = 150;
  std::array<std::atomic<int>, kKeys> holders{};
  std::array<std::atomic<Fence>, kKeys> last_fence{};
  std::atomic<int> violations{0}, acquisitions{0}, errors{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kIterations; ++i) {
        const int k = (t + i) % kKeys;
        const std::string key = "churn-" + std::to_string(k);
        auto r = store().begin(begin_args(key));
        if (!r) {
          ++errors;
          continue;
        }
        if (r->kind != Kind::acquired) continue;
        ++acquisitions;
        if (holders[k].fetch_add(1) != 0) ++violations;
        if (last_fence[k].exchange(r->fence) >= r->fence) ++violations;
        holders[k].fetch_sub(1);
        auto rel = store().release({"s", key, r->fence});
        if (!rel || *rel != ReleaseOutcome::released) ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations, 0);
  EXPECT_EQ(errors, 0);
  EXPECT_GT(acquisitions, kKeys);
}

// ---- one-time tokens -------------------------------------------------------------------------

TEST_P(StoreContract, TokensAreLongRandomAndUrlSafe) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto t = store().issue_token({"s", kLong});
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    EXPECT_GE(t->size(), 22u);  // ≥ 128 bits in base64url
    EXPECT_TRUE(std::all_of(t->begin(), t->end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    })) << *t;
    EXPECT_TRUE(seen.insert(*t).second);
  }
}

TEST_P(StoreContract, ATokenIsConsumedOnceAndOnlyInItsScope) {
  const std::string t = store().issue_token({"alice", kLong}).value();
  EXPECT_EQ(store().consume_token({"bob", t}).value(), ConsumeOutcome::invalid);
  EXPECT_EQ(store().consume_token({"alice", "never-issued"}).value(), ConsumeOutcome::invalid);
  EXPECT_EQ(store().consume_token({"alice", t}).value(), ConsumeOutcome::consumed);
  EXPECT_EQ(store().consume_token({"alice", t}).value(), ConsumeOutcome::invalid);
}

TEST_P(StoreContract, AnExpiredTokenIsInvalid) {
  const std::string t = store().issue_token({"s", kShort}).value();
  advance(2 * kShort);
  EXPECT_EQ(store().consume_token({"s", t}).value(), ConsumeOutcome::invalid);
}

TEST_P(StoreContract, RestoreReArmsAConsumedToken) {
  const std::string t = store().issue_token({"s", kLong}).value();
  ASSERT_EQ(store().consume_token({"s", t}).value(), ConsumeOutcome::consumed);
  EXPECT_EQ(store().restore_token({"other", t, kLong}).value(), RestoreOutcome::invalid);
  EXPECT_EQ(store().restore_token({"s", "never-issued", kLong}).value(), RestoreOutcome::invalid);
  EXPECT_EQ(store().restore_token({"s", t, kLong}).value(), RestoreOutcome::restored);
  EXPECT_EQ(store().consume_token({"s", t}).value(), ConsumeOutcome::consumed);
  EXPECT_EQ(store().consume_token({"s", t}).value(), ConsumeOutcome::invalid);

  // A restored token lives for the ttl given at restore.
  ASSERT_EQ(store().restore_token({"s", t, kShort}).value(), RestoreOutcome::restored);
  advance(2 * kShort);
  EXPECT_EQ(store().consume_token({"s", t}).value(), ConsumeOutcome::invalid);
}

// ---- release with a token restore ----------------------------------------------------------

// The gateway's token mode: the record's key is "<key space>:<token>".
ReleaseArgs release_restoring(std::string key, Fence fence, std::string token, Duration ttl) {
  return {"s", std::move(key), fence, TokenRestore{std::move(token), ttl}};
}

TEST_P(StoreContract, AReleaseCanReArmAConsumedTokenInTheSameStep) {
  const std::string token = store().issue_token({"s", kLong}).value();
  ASSERT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::consumed);
  const std::string key = "space:" + token;
  const Fence f = must_acquire(begin_args(key));
  EXPECT_EQ(store().release(release_restoring(key, f, token, kLong)).value(), ReleaseOutcome::released);
  EXPECT_FALSE(store().get({"s", key}).value().has_value());
  EXPECT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::consumed);
  // The record key may also be the token itself.
  const Fence g = must_acquire(begin_args(token));
  EXPECT_EQ(store().release(release_restoring(token, g, token, kLong)).value(), ReleaseOutcome::released);
  EXPECT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::consumed);
}

TEST_P(StoreContract, AFencedReleaseLeavesTheTokenConsumed) {
  const std::string token = store().issue_token({"s", kLong}).value();
  ASSERT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::consumed);
  const std::string key = "space:" + token;
  const Fence f = must_acquire(begin_args(key));
  EXPECT_EQ(store().release(release_restoring(key, f + 1, token, kLong)).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::invalid);
  must_commit(key, f, "r");
  EXPECT_EQ(store().release(release_restoring(key, f, token, kLong)).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::invalid);
  ASSERT_TRUE(store().remove({"s", key}).value());
  EXPECT_EQ(store().release(release_restoring(key, f, token, kLong)).value(), ReleaseOutcome::fenced);
  EXPECT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::invalid);
}

TEST_P(StoreContract, AReleaseRestoringAnUnknownTokenStillReleases) {
  const Fence f = must_acquire(begin_args("space:never-issued"));
  EXPECT_EQ(store().release(release_restoring("space:never-issued", f, "never-issued", kLong)).value(),
            ReleaseOutcome::released);
  EXPECT_EQ(store().consume_token({"s", "never-issued"}).value(), ConsumeOutcome::invalid);
  EXPECT_EQ(store().release(release_restoring("k", 1, "", kLong)).status().code(),
            StatusCode::invalid_argument);
  EXPECT_EQ(store().release(release_restoring("k", 1, "t", Duration::zero())).status().code(),
            StatusCode::invalid_argument);
}

TEST_P(StoreContract, AReleaseRestoringATokenOfAnotherKeyIsOneStepOrRefused) {
  const std::string token = store().issue_token({"s", kLong}).value();
  ASSERT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::consumed);
  const Fence f = must_acquire(begin_args("unrelated-key"));
  auto r = store().release(release_restoring("unrelated-key", f, token, kLong));
  if (std::string_view(store().traits().name) == "redis-cluster") {
    // One script cannot span two slots (docs/design.md): refused, nothing changed.
    EXPECT_EQ(r.status().code(), StatusCode::invalid_argument);
    EXPECT_TRUE(store().get({"s", "unrelated-key"}).value().has_value());
    return;
  }
  EXPECT_EQ(r.value(), ReleaseOutcome::released);
  EXPECT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::consumed);
}

// A duplicate waiting for the key claims it the moment it is released and consumes the
// token at once: it must find the token re-armed, every time.
TEST_P(StoreContract, ADuplicateThatClaimsAfterTheReleaseFindsTheTokenReArmed) {
  for (int round = 0; round < 20; ++round) {
    const std::string token = store().issue_token({"s", kLong}).value();
    const std::string key = "space:" + token;
    const Fence f = must_acquire(begin_args(key));
    ASSERT_EQ(store().consume_token({"s", token}).value(), ConsumeOutcome::consumed);
    std::atomic<bool> go{false};
    Result<ConsumeOutcome> seen = unavailable("never claimed");
    std::thread duplicate([&] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 100000; ++i) {
        auto b = store().begin(begin_args(key));
        if (b && b->kind == Kind::acquired) {
          seen = store().consume_token({"s", token});
          return;
        }
      }
    });
    go = true;
    auto released = store().release(release_restoring(key, f, token, kLong));
    duplicate.join();
    ASSERT_EQ(released.value(), ReleaseOutcome::released);
    ASSERT_TRUE(seen.is_ok()) << seen.status().to_string();
    EXPECT_EQ(*seen, ConsumeOutcome::consumed) << "round " << round;
  }
}

TEST_P(StoreContract, ThirtyTwoRacingConsumersOneWins) {
  for (int round = 0; round < 5; ++round) {
    const std::string t = store().issue_token({"s", kLong}).value();
    constexpr int kThreads = 32;
    std::latch start(kThreads);
    std::atomic<int> consumed{0}, invalid{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&] {
        start.arrive_and_wait();
        auto r = store().consume_token({"s", t});
        if (r && *r == ConsumeOutcome::consumed) ++consumed;
        if (r && *r == ConsumeOutcome::invalid) ++invalid;
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(consumed, 1);
    EXPECT_EQ(invalid, kThreads - 1);
  }
}

// ---- locks -----------------------------------------------------------------------------------

TEST_P(StoreContract, ALockHasOneOwner) {
  auto a = store().lock({"n", "a", kLong}).value();
  ASSERT_EQ(a.kind, LockOutcome::Kind::locked);
  EXPECT_GT(a.fence, 0u);
  EXPECT_LE(a.fence, kMaxFence);
  auto b = store().lock({"n", "b", kLong}).value();
  EXPECT_EQ(b.kind, LockOutcome::Kind::busy);
  EXPECT_GT(b.retry_after, Duration::zero());
  EXPECT_LE(b.retry_after, kLong);
  // The owner asking again (a retry after a lost answer) keeps its lock and fence.
  EXPECT_EQ(store().lock({"n", "a", kLong}).value(), LockOutcome::locked(a.fence));
  // Only the owner can unlock or extend.
  EXPECT_EQ(store().unlock({"n", "b"}).value(), UnlockOutcome::not_owner);
  EXPECT_EQ(store().extend_lock({"n", "b", kLong}).value(), LockExtendOutcome::not_owner);
  EXPECT_EQ(store().lock({"n", "b", kLong}).value().kind, LockOutcome::Kind::busy);
  EXPECT_EQ(store().unlock({"n", "a"}).value(), UnlockOutcome::released);
  EXPECT_EQ(store().unlock({"n", "a"}).value(), UnlockOutcome::not_owner);
  auto b2 = store().lock({"n", "b", kLong}).value();
  EXPECT_EQ(b2.kind, LockOutcome::Kind::locked);
  EXPECT_GT(b2.fence, a.fence);
}

TEST_P(StoreContract, AnExpiredLockIsFreeAndItsFenceGrows) {
  auto a = store().lock({"n", "a", kShort}).value();
  ASSERT_EQ(a.kind, LockOutcome::Kind::locked);
  advance(2 * kShort);
  EXPECT_EQ(store().unlock({"n", "a"}).value(), UnlockOutcome::not_owner);
  EXPECT_EQ(store().extend_lock({"n", "a", kLong}).value(), LockExtendOutcome::not_owner);
  auto b = store().lock({"n", "b", kLong}).value();
  ASSERT_EQ(b.kind, LockOutcome::Kind::locked);
  EXPECT_GT(b.fence, a.fence);
  // The expired owner cannot release the new owner's lock.
  EXPECT_EQ(store().unlock({"n", "a"}).value(), UnlockOutcome::not_owner);
  EXPECT_EQ(store().lock({"n", "c", kLong}).value().kind, LockOutcome::Kind::busy);
}

TEST_P(StoreContract, ExtendingALockKeepsItHeld) {
  ASSERT_EQ(store().lock({"n", "a", kRenewed}).value().kind, LockOutcome::Kind::locked);
  for (int i = 0; i < 3; ++i) {
    advance(kRenewed / 2);
    EXPECT_EQ(store().extend_lock({"n", "a", kRenewed}).value(), LockExtendOutcome::extended);
  }
  EXPECT_EQ(store().lock({"n", "b", kLong}).value().kind, LockOutcome::Kind::busy);
}

TEST_P(StoreContract, LockContentionHasOneOwnerAtATime) {
  constexpr int kThreads = 16, kIterations = 100;
  std::atomic<int> inside{0}, violations{0}, wins{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string owner = "owner-" + std::to_string(t);
      start.arrive_and_wait();
      for (int i = 0; i < kIterations; ++i) {
        auto r = store().lock({"contended", owner, kLong});
        if (!r || r->kind != LockOutcome::Kind::locked) continue;
        ++wins;
        if (inside.fetch_add(1) != 0) ++violations;
        inside.fetch_sub(1);
        if (store().unlock({"contended", owner}).value() != UnlockOutcome::released) ++violations;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations, 0);
  EXPECT_GT(wins, 0);
}

// ---- the Asio face ---------------------------------------------------------------------------

TEST_P(StoreContract, CoroutinesResumeOnTheirOwnExecutor) {
  boost::asio::io_context io;
  bool finished = false;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        namespace asio = boost::asio;
        const auto me = std::this_thread::get_id();
        // Arguments are named locals, never temporaries inside the co_await: g++ 12
        // mis-destroys those.
        BeginArgs first = begin_args("co"), again = begin_args("co"), bad_args = begin_args("");
        auto b = co_await async_begin(store(), std::move(first), asio::use_awaitable);
        EXPECT_EQ(std::this_thread::get_id(), me);
        EXPECT_TRUE(b.is_ok());
        EXPECT_EQ(b->kind, Kind::acquired);
        CommitArgs commit{"s", "co", b->fence, "co-result", kLong};
        auto c = co_await async_commit(store(), std::move(commit), asio::use_awaitable);
        EXPECT_EQ(c.value(), CommitOutcome::committed);
        auto r = co_await async_begin(store(), std::move(again), asio::use_awaitable);
        EXPECT_EQ(r->result, "co-result");
        auto bad = co_await async_begin(store(), std::move(bad_args), asio::use_awaitable);
        EXPECT_EQ(bad.status().code(), StatusCode::invalid_argument);
        finished = true;
      },
      boost::asio::detached);
  io.run();
  EXPECT_TRUE(finished);
}

}  // namespace
}  // namespace idem::testutil
