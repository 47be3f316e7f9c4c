// The claim runner (engine/claim.h): its two decision tables row by row, and acquire → settle
// on a memory store behind a wrapper that loses answers or fails calls, the way a network
// store does.
#include "engine/claim.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "idem/open.h"
#include "idem/store_wrapper.h"
#include "testutil/eventually.h"

namespace idem {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr std::string_view kMarker("\0uncertain", 10);

Result<BeginOutcome> begun(BeginOutcome::Kind kind, bool recovered = false, std::string result = {}) {
  BeginOutcome b;
  b.kind = kind;
  b.fence = 7;
  b.recovered = recovered;
  b.result = std::move(result);
  return b;
}

// ---- the decision tables ----------------------------------------------------------------------

TEST(AfterBegin, EveryAnswerUnderEveryPolicy) {
  using K = BeginOutcome::Kind;
  struct Row {
    Result<BeginOutcome> begun;
    OnUncertain policy;
    BeginStep expected;
  };
  const std::vector<Row> rows = {
      {begun(K::acquired), OnUncertain::hold, BeginStep::run},
      {begun(K::acquired), OnUncertain::retry, BeginStep::run},
      {begun(K::acquired, true), OnUncertain::hold, BeginStep::hold_uncertain},
      {begun(K::acquired, true), OnUncertain::retry, BeginStep::run},
      {begun(K::replay, false, "first"), OnUncertain::hold, BeginStep::replay},
      {begun(K::replay, false, ""), OnUncertain::retry, BeginStep::replay},
      {begun(K::replay, false, std::string(kMarker)), OnUncertain::hold, BeginStep::uncertain},
      // Completed as uncertain under hold: a caller under retry does not run it either.
      {begun(K::replay, false, std::string(kMarker)), OnUncertain::retry, BeginStep::uncertain},
      // A marker followed by its mark (engine/uncertain_mark.h) is uncertain; results that only
      // contain it are not (each face escapes its results so that none starts with it).
      {begun(K::replay, false, std::string(kMarker) + "fence=7;instance=h/1;at=0"), OnUncertain::hold,
       BeginStep::uncertain},
      {begun(K::replay, false, "x" + std::string(kMarker)), OnUncertain::hold, BeginStep::replay},
      {begun(K::in_progress), OnUncertain::hold, BeginStep::busy},
      {begun(K::in_progress), OnUncertain::retry, BeginStep::busy},
      {begun(K::mismatch), OnUncertain::hold, BeginStep::mismatch},
      {begun(K::mismatch), OnUncertain::retry, BeginStep::mismatch},
      {unavailable("refused"), OnUncertain::hold, BeginStep::not_applied},
      {failed_precondition("bad"), OnUncertain::retry, BeginStep::not_applied},
      {deadline_exceeded("lost"), OnUncertain::hold, BeginStep::unknown},
      {deadline_exceeded("lost"), OnUncertain::retry, BeginStep::unknown},
  };
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_STREQ(to_string(after_begin(rows[i].begun, rows[i].policy, kMarker)), to_string(rows[i].expected))
        << "row " << i;
}

TEST(AfterBegin, AnEmptyMarkerMatchesNoResult) {
  EXPECT_EQ(after_begin(begun(BeginOutcome::Kind::replay, false, ""), OnUncertain::hold, ""),
            BeginStep::replay);
}

TEST(SettleFor, EveryEndUnderEveryPolicy) {
  struct Row {
    WorkEnd end;
    OnUncertain policy;
    bool lost;
    Settlement expected;
  };
  const std::vector<Row> rows = {
      {WorkEnd::succeeded, OnUncertain::hold, false, Settlement::commit},
      {WorkEnd::succeeded, OnUncertain::retry, false, Settlement::commit},
      {WorkEnd::failed, OnUncertain::hold, false, Settlement::release},
      {WorkEnd::failed, OnUncertain::retry, false, Settlement::release},
      {WorkEnd::unknown, OnUncertain::hold, false, Settlement::mark_uncertain},
      {WorkEnd::unknown, OnUncertain::retry, false, Settlement::leave},
      // A lost claim belongs to its newer holder, whatever the work did.
      {WorkEnd::succeeded, OnUncertain::hold, true, Settlement::none},
      {WorkEnd::failed, OnUncertain::retry, true, Settlement::none},
      {WorkEnd::unknown, OnUncertain::hold, true, Settlement::none},
      {WorkEnd::unknown, OnUncertain::retry, true, Settlement::none},
  };
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_STREQ(to_string(settle_for(rows[i].end, rows[i].policy, rows[i].lost)),
                 to_string(rows[i].expected))
        << "row " << i;
}

// ---- the mark of an uncertain record ----------------------------------------------------------

TEST(UncertainMark, RoundTripsAndNamesItsFenceInItsPrefix) {
  const UncertainMark m{1234, "host-a/0123abcd", 1796475377201};
  const std::string r = uncertain_result(kMarker, m);
  EXPECT_TRUE(r.starts_with(kMarker));
  EXPECT_TRUE(r.starts_with(uncertain_prefix(kMarker, 1234)));
  EXPECT_FALSE(r.starts_with(uncertain_prefix(kMarker, 123))) << "fence 123 is not a prefix of 1234";
  EXPECT_EQ(read_uncertain(r, kMarker), m);
  EXPECT_EQ(read_uncertain(kMarker, kMarker), UncertainMark{}) << "an earlier release's marker alone";
  EXPECT_EQ(uncertain_result(kMarker, {0, "h/1", 5}), kMarker) << "no fence known: the marker alone";
  EXPECT_FALSE(read_uncertain("first", kMarker).has_value());
  EXPECT_FALSE(read_uncertain(r, "").has_value());
  EXPECT_EQ(read_uncertain(uncertain_result(kMarker, {5, "a;b", 1}), kMarker)->instance, "a");
}

// ---- the runner -------------------------------------------------------------------------------

// A memory store whose next calls of one kind can be made to fail: `lose` applies the call and
// reports its answer lost (deadline_exceeded); `refuse` does not apply it (unavailable).
class FlakyStore final : public StoreWrapper {
 public:
  FlakyStore() : StoreWrapper(open_store("memory:").value()) {}

  std::atomic<int> lose_begin{0}, lose_commit{0}, refuse_commit{0}, refuse_release{0}, refuse_abandon{0};
  std::atomic<int> refuse_extend{0};
  std::atomic<int> abandons{0}, commits{0}, begins{0}, releases{0};
  // Results longer than this are refused as the store would refuse them: invalid_argument.
  std::atomic<std::size_t> max_result{std::size_t(-1)};
  // The next begin is answered "lost" at once, and reaches the store this much later (a
  // statement still queued at a server when its client gave up).
  std::atomic<int> delay_lost_begin_ms{0};
  std::atomic<int> late_claims{0};  // delayed begins that landed and acquired

  ~FlakyStore() override {
    for (auto& t : late_) t.join();
  }

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    ++begins;
    if (const int ms = delay_lost_begin_ms.exchange(0); ms > 0) {
      cb(deadline_exceeded("begin: answer lost"));
      late_.emplace_back([this, a = std::move(a), ms]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        auto r = target().begin(std::move(a));
        if (r && r->kind == BeginOutcome::Kind::acquired) ++late_claims;
      });
      return;
    }
    target().begin(std::move(a), [this, cb = std::move(cb)](Result<BeginOutcome> r) mutable {
      if (take(lose_begin)) return cb(deadline_exceeded("begin: answer lost"));
      cb(std::move(r));
    });
  }
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    ++commits;
    if (a.result.size() > max_result.load()) return cb(invalid_argument("commit: result too large"));
    if (take(refuse_commit)) return cb(unavailable("commit: refused"));
    target().commit(std::move(a), [this, cb = std::move(cb)](Result<CommitOutcome> r) mutable {
      if (take(lose_commit)) return cb(deadline_exceeded("commit: answer lost"));
      cb(std::move(r));
    });
  }
  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override {
    if (take(refuse_extend)) return cb(unavailable("extend: refused"));
    StoreWrapper::do_extend(std::move(a), std::move(cb));
  }
  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override {
    ++releases;
    if (take(refuse_release)) return cb(unavailable("release: refused"));
    StoreWrapper::do_release(std::move(a), std::move(cb));
  }
  void do_abandon(AbandonArgs a, Callback<ReleaseOutcome> cb) override {
    ++abandons;
    if (take(refuse_abandon)) return cb(unavailable("abandon: refused"));
    StoreWrapper::do_abandon(std::move(a), std::move(cb));
  }

 private:
  std::vector<std::thread> late_;  // touched by the test's thread only (begin is called there)

  static bool take(std::atomic<int>& n) {
    for (int v = n.load(); v > 0;)
      if (n.compare_exchange_weak(v, v - 1)) return true;
    return false;
  }
};

// Counts the runner's `settled` calls, so tests wait on that event rather than poll.
class Settled {
 public:
  ClaimHooks hooks() {
    ClaimHooks h;
    h.settled = [this](const std::string&, const std::string&) {
      std::lock_guard lock(mu_);
      ++count_;
      cv_.notify_all();
    };
    h.conflict = [this] { ++conflicts; };
    h.observed = [this](const char* op, Duration, const Status& s) {
      std::lock_guard lock(mu_);
      if (std::string_view(op) == "extend" && s.is_ok()) ++extends_;
      cv_.notify_all();
    };
    return h;
  }
  bool wait_for(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 30s, [&] { return count_ >= n; });
  }
  bool wait_for_extends(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 30s, [&] { return extends_ >= n; });
  }
  std::atomic<int> conflicts{0};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
  int extends_ = 0;
};

template <class T>
T run(asio::awaitable<T> step) {
  asio::io_context ctx;
  auto f = asio::co_spawn(ctx, std::move(step), asio::use_future);
  ctx.run();
  return f.get();
}

ClaimPolicy policy(OnUncertain on_uncertain = OnUncertain::hold) {
  return ClaimPolicy{60s, 24h, false, on_uncertain, kMarker};
}

std::optional<Record> record(Store& store, const std::string& key) {
  return store.get(RecordId{"s", key}).value();
}

TEST(ClaimRunner, ABeginWhoseAnswerIsLostIsGivenBackByItsOwner) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  store.lose_begin = 1;
  store.refuse_abandon = 2;  // and the store is still down for the first give-backs
  Acquired a = run(runner.acquire("s", "k", "", policy()));
  EXPECT_EQ(a.step, BeginStep::unknown);
  EXPECT_FALSE(a.claim.has_value());
  ASSERT_TRUE(settled.wait_for(1));
  EXPECT_EQ(store.abandons.load(), 3);
  EXPECT_FALSE(record(store, "k").has_value()) << "the claim the lost begin made is gone";
  EXPECT_FALSE(runner.settling());

  // So the retry runs at once, as a fresh claim, not a takeover of an uncertain one.
  Acquired again = run(runner.acquire("s", "k", "", policy()));
  EXPECT_EQ(again.step, BeginStep::run);
  EXPECT_FALSE(again.claim->recovered());
  EXPECT_TRUE(run(runner.settle(*again.claim, policy(), Settlement::commit, "r")).is_ok());
}

TEST(ClaimRunner, AGiveBackLeavesAnotherOwnersClaimAlone) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  // The lost begin found the key held by someone else (in_progress): it made no claim.
  ASSERT_TRUE(store.begin(BeginArgs{"s", "k", "", 60s, 24h, "someone-else"}));
  store.lose_begin = 1;
  // A give-back keeps looking for its claim for one lease: a short one here.
  const ClaimPolicy p{500ms, 24h, false, OnUncertain::hold, kMarker};
  EXPECT_EQ(run(runner.acquire("s", "k", "", p)).step, BeginStep::unknown);
  ASSERT_TRUE(settled.wait_for(1));
  EXPECT_GE(store.abandons.load(), 2) << "it looked more than once";
  auto r = record(store, "k");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->owner, "someone-else");
  EXPECT_EQ(r->state, RecordState::pending);
}

TEST(ClaimRunner, ACommitWhoseAnswerIsLostIsRetriedAndTheFirstResultStays) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  Acquired a = run(runner.acquire("s", "k", "", policy()));
  ASSERT_EQ(a.step, BeginStep::run);
  store.lose_commit = 1;
  Status s = run(runner.settle(*a.claim, policy(), Settlement::commit, "first"));
  EXPECT_EQ(s.code(), StatusCode::deadline_exceeded);
  ASSERT_TRUE(settled.wait_for(1));
  EXPECT_GE(store.commits.load(), 2);
  auto r = record(store, "k");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->state, RecordState::done);
  EXPECT_EQ(r->result, "first");
  EXPECT_EQ(settled.conflicts.load(), 0) << "the retried commit is not a conflict";
  EXPECT_EQ(run(runner.acquire("s", "k", "", policy())).step, BeginStep::replay);
}

TEST(ClaimRunner, ARefusedCommitIsRetriedUntilTheStoreAnswers) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  Acquired a = run(runner.acquire("s", "k", "", policy()));
  store.refuse_commit = 3;
  EXPECT_EQ(run(runner.settle(*a.claim, policy(), Settlement::commit, "v")).code(), StatusCode::unavailable);
  EXPECT_TRUE(runner.settling());
  ASSERT_TRUE(settled.wait_for(1));
  EXPECT_EQ(store.commits.load(), 4);
  EXPECT_EQ(record(store, "k")->result, "v");
}

TEST(ClaimRunner, AFailedReleaseIsRetriedByFenceAndReArmsItsToken) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  const std::string token = store.issue_token(IssueTokenArgs{"s", 1h}).value();
  Acquired a = run(runner.acquire("s", "k", "", policy()));
  ASSERT_EQ(store.consume_token(TokenArgs{"s", token}).value(), ConsumeOutcome::consumed);
  store.refuse_release = 1;  // the store is briefly down when the work failed
  EXPECT_EQ(run(runner.settle(*a.claim, policy(), Settlement::release, {}, TokenRestore{token, 1h})).code(),
            StatusCode::unavailable);
  ASSERT_TRUE(settled.wait_for(1));
  EXPECT_EQ(store.releases.load(), 2);
  EXPECT_EQ(store.abandons.load(), 0);
  EXPECT_FALSE(record(store, "k").has_value());
  // Nothing ran: the user's resubmission with the same token is accepted.
  EXPECT_EQ(store.consume_token(TokenArgs{"s", token}).value(), ConsumeOutcome::consumed);
}

// ---- a known outcome is never treated as unknown (docs/gateway.md, "When the store fails") ----

// The store refuses every commit until `recover` (a Redis made read-only, say).
void store_down_for_commits(FlakyStore& store) { store.refuse_commit = 1'000'000; }
void recover(FlakyStore& store) { store.refuse_commit = 0; }

TEST(PendingSettle, ARepeatOfAKeyWhoseCommitIsPendingIsAnsweredFromItWithoutTheStore) {
  for (OnUncertain on : {OnUncertain::hold, OnUncertain::retry}) {
    FlakyStore store;
    Settled settled;
    ClaimRunner runner(store, settled.hooks());
    const ClaimPolicy p{60s, 24h, false, on, kMarker};
    Acquired a = run(runner.acquire("s", "k", "", p));
    store_down_for_commits(store);
    EXPECT_FALSE(run(runner.settle(*a.claim, p, Settlement::commit, "first")).is_ok());
    ASSERT_TRUE(runner.settling());
    const int begins = store.begins.load();
    Acquired again = run(runner.acquire("s", "k", "", p));
    EXPECT_EQ(again.step, BeginStep::replay) << to_string(on);
    EXPECT_EQ(again.begun->result, "first");
    EXPECT_EQ(again.begun->expires_in, ClaimRunner::kHeldAnswerTtl);
    EXPECT_EQ(store.begins.load(), begins) << "answered without asking the store";
    recover(store);
    ASSERT_TRUE(settled.wait_for(1));
    EXPECT_EQ(record(store, "k")->result, "first");
    EXPECT_FALSE(runner.settling());
  }
}

// A repeat with the key but another request (another fingerprint: a hostile client, or a
// client that reused its key) is told so, as the store would tell it: it never gets the held
// answer to someone else's request.
TEST(PendingSettle, APendingCommitAnswersOnlyItsOwnFingerprint) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  Acquired a = run(runner.acquire("s", "k", "fp-first", policy()));
  store_down_for_commits(store);
  EXPECT_FALSE(run(runner.settle(*a.claim, policy(), Settlement::commit, "first")).is_ok());
  EXPECT_EQ(run(runner.acquire("s", "k", "fp-other", policy())).step, BeginStep::mismatch);
  EXPECT_EQ(run(runner.acquire("s", "k", "fp-first", policy())).begun->result, "first");
  EXPECT_EQ(run(runner.acquire("s", "k", "", policy())).begun->result, "first") << "an empty one matches any";
  recover(store);
  ASSERT_TRUE(settled.wait_for(1));
}

TEST(PendingSettle, AnOutageLongerThanTheLeaseNeitherRunsTheKeyAgainNorMakesItUncertain) {
  // The store refuses commits (and the renewals fail with them) past the claim's lease;
  // when it is writable again the client's retry comes to this runner first.
  for (OnUncertain on : {OnUncertain::hold, OnUncertain::retry}) {
    FlakyStore store;
    Settled settled;
    ClaimRunner runner(store, settled.hooks());
    const ClaimPolicy p{300ms, 24h, false, on, kMarker};
    Acquired a = run(runner.acquire("s", "k", "", p));
    store_down_for_commits(store);
    store.refuse_extend = 1'000'000;
    EXPECT_FALSE(run(runner.settle(*a.claim, p, Settlement::commit, "first")).is_ok());
    ASSERT_TRUE(testutil::eventually([&] { return store.commits.load() >= 4; }));  // > 300 ms of outage
    store.refuse_extend = 0;
    recover(store);
    Acquired again = run(runner.acquire("s", "k", "", p));
    EXPECT_EQ(again.step, BeginStep::replay) << to_string(on);
    EXPECT_FALSE(again.claim.has_value()) << "nothing runs again";
    EXPECT_EQ(again.begun->result, "first");
    ASSERT_TRUE(settled.wait_for(1));
    EXPECT_EQ(record(store, "k")->result, "first") << "the known answer was committed, not a marker";
    EXPECT_EQ(run(runner.acquire("s", "k", "", p)).begun->result, "first");
  }
}

TEST(PendingSettle, ThePendingCommitKeepsItsLeaseSoAnotherInstanceWaits) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  ClaimRunner other(store);  // another gateway on the same store
  const ClaimPolicy p{300ms, 24h, false, OnUncertain::retry, kMarker};
  Acquired a = run(runner.acquire("s", "k", "", p));
  store_down_for_commits(store);  // commits fail; extends go through
  EXPECT_FALSE(run(runner.settle(*a.claim, p, Settlement::commit, "first")).is_ok());
  // Past three leases of retrying, the claim is still held.
  ASSERT_TRUE(settled.wait_for_extends(4));
  ASSERT_TRUE(testutil::eventually([&] { return store.commits.load() >= 5; }));
  Acquired elsewhere = run(other.acquire("s", "k", "", p));
  EXPECT_EQ(elsewhere.step, BeginStep::busy) << "not taken over: the work would run twice";
  recover(store);
  ASSERT_TRUE(settled.wait_for(1));
  EXPECT_EQ(run(other.acquire("s", "k", "", p)).begun->result, "first");
}

TEST(PendingSettle, PendingSettlesGoAtOnceWhenTheStoreAnswersAgain) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  Acquired a = run(runner.acquire("s", "k", "", policy()));
  store_down_for_commits(store);
  EXPECT_FALSE(run(runner.settle(*a.claim, policy(), Settlement::commit, "first")).is_ok());
  // Six refusals: the backoff has grown past 3 s (0.1 + 0.2 + 0.4 + 0.8 + 1.6 s waited).
  ASSERT_TRUE(testutil::eventually([&] { return store.commits.load() >= 6; }));
  recover(store);
  const auto t0 = std::chrono::steady_clock::now();
  Acquired b = run(runner.acquire("s", "other", "", policy()));  // the store answers someone
  ASSERT_EQ(b.step, BeginStep::run);
  ASSERT_TRUE(settled.wait_for(1));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms) << "not after the 3.2 s pause";
  EXPECT_EQ(record(store, "k")->result, "first");
}

TEST(PendingSettle, APendingReleaseGoesBeforeTheRepeatsBegin) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  const ClaimPolicy p{300ms, 24h, false, OnUncertain::hold, kMarker};
  Acquired a = run(runner.acquire("s", "k", "", p));
  // The store refuses the release, and its retries: past the lease, a begin would take the
  // claim over as if its outcome were unknown, and under hold answer "uncertain" for work
  // that failed.
  store.refuse_release = 1'000'000;
  EXPECT_FALSE(run(runner.settle(*a.claim, p, Settlement::release)).is_ok());
  std::this_thread::sleep_for(400ms);  // the lease running out is the subject here
  Acquired refused = run(runner.acquire("s", "k", "", p));
  EXPECT_EQ(refused.step, BeginStep::not_applied) << "the release could not go first: nothing else does";
  store.refuse_release = 0;
  Acquired again = run(runner.acquire("s", "k", "", p));
  EXPECT_EQ(again.step, BeginStep::run);
  ASSERT_TRUE(again.claim.has_value());
  EXPECT_FALSE(again.claim->recovered());
}

TEST(PendingSettle, AResultTheStoreCannotHoldIsSettledAsUnknownNeverRetried) {
  for (OnUncertain on : {OnUncertain::hold, OnUncertain::retry}) {
    FlakyStore store;
    ClaimRunner runner(store);
    store.max_result = 200;  // the mark fits; the result does not
    const ClaimPolicy p{60s, 24h, false, on, kMarker};
    Acquired a = run(runner.acquire("s", "k", "", p));
    EXPECT_EQ(run(runner.settle(*a.claim, p, Settlement::commit, std::string(1000, 'x'))).code(),
              StatusCode::invalid_argument);
    EXPECT_FALSE(runner.settling()) << "never retried";
    if (on == OnUncertain::hold) {
      EXPECT_TRUE(read_uncertain(record(store, "k")->result, kMarker).has_value())
          << "at most once: held as uncertain";
    } else {
      EXPECT_EQ(record(store, "k")->state, RecordState::pending) << "left to its lease";
    }
  }
}

TEST(PendingSettle, ResultsPastTheByteBudgetAreSettledAsUnknown) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks(), ClaimRunnerLimits{.max_settles = 100, .max_bytes = 150});
  store_down_for_commits(store);
  std::vector<Acquired> claims;
  for (const char* k : {"a", "b"}) claims.push_back(run(runner.acquire("s", k, "", policy())));
  (void)run(runner.settle(*claims[0].claim, policy(), Settlement::commit, std::string(100, 'a')));
  EXPECT_EQ(runner.settling_bytes(), 100u);
  (void)run(runner.settle(*claims[1].claim, policy(), Settlement::commit, std::string(100, 'b')));
  EXPECT_GT(runner.settling_bytes(), 100u) << "the second is held as uncertain";
  EXPECT_LT(runner.settling_bytes(), 200u);
  EXPECT_EQ(run(runner.acquire("s", "b", "", policy())).step, BeginStep::uncertain);
  recover(store);
  ASSERT_TRUE(settled.wait_for(2));
  EXPECT_EQ(record(store, "a")->result, std::string(100, 'a'));
  EXPECT_TRUE(read_uncertain(record(store, "b")->result, kMarker).has_value());
  EXPECT_EQ(runner.settling_bytes(), 0u);
}

// Another instance takes the claim over while this one's commit cannot land, and under hold
// marks the record uncertain, naming the fence this claim's work carried; this runner's late
// commit then replaces that mark, so the key answers the first result after all.
TEST(PendingSettle, ATakeoverMarksTheFenceTheWorkCarriedAndTheLateCommitRecoversTheAnswer) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  ClaimRunner other(store);  // another gateway on the same store
  const ClaimPolicy p{300ms, 24h, false, OnUncertain::hold, kMarker};
  Acquired a = run(runner.acquire("s", "k", "", p));
  a.claim->started();
  store_down_for_commits(store);
  store.refuse_extend = 1'000'000;  // the claim's lease runs out
  EXPECT_FALSE(run(runner.settle(*a.claim, p, Settlement::commit, "first")).is_ok());
  ASSERT_TRUE(testutil::eventually([&] { return store.commits.load() >= 4; }));  // > 300 ms
  Acquired taken = run(other.acquire("s", "k", "", p));
  ASSERT_EQ(taken.step, BeginStep::hold_uncertain);
  EXPECT_EQ(taken.claim->previous_fence(), a.claim->fence());
  recover(store);  // `other` writes its mark; this runner's commit is due again
  EXPECT_TRUE(run(other.settle(*taken.claim, p, Settlement::mark_uncertain)).is_ok());
  ASSERT_TRUE(testutil::eventually([&] { return record(store, "k")->result == "first"; }, 20s))
      << "the late commit did not replace the mark";
  EXPECT_EQ(record(store, "k")->fence, a.claim->fence());
  Acquired after = run(other.acquire("s", "k", "", p));
  EXPECT_EQ(after.step, BeginStep::replay);
  EXPECT_EQ(after.begun->result, "first");
}

TEST(PendingSettle, ATakeoverMarkNamesTheFenceOfTheClaimItTookOver) {
  FlakyStore store;
  ClaimRunner runner(store);
  const ClaimPolicy p{100ms, 24h, false, OnUncertain::hold, kMarker};
  Acquired silent = run(runner.acquire("s", "k", "", p));
  silent.claim->started();             // its holder goes silent
  std::this_thread::sleep_for(200ms);  // its lease running out is the subject
  Acquired taken = run(runner.acquire("s", "k", "", p));
  ASSERT_EQ(taken.step, BeginStep::hold_uncertain);
  EXPECT_TRUE(run(runner.settle(*taken.claim, p, Settlement::mark_uncertain)).is_ok());
  const auto mark = read_uncertain(record(store, "k")->result, kMarker);
  ASSERT_TRUE(mark.has_value());
  EXPECT_EQ(mark->fence, silent.claim->fence()) << "not the takeover's own fence, which reached no service";
  EXPECT_NE(record(store, "k")->fence, silent.claim->fence());
}

TEST(PendingSettle, ABeginThatReachesTheStoreAfterItsGiveBackLeavesNoGhostClaim) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  const ClaimPolicy p{3s, 24h, false, OnUncertain::hold, kMarker};
  store.delay_lost_begin_ms = 300;
  EXPECT_EQ(run(runner.acquire("s", "k", "", p)).step, BeginStep::unknown);
  // Once the store answered the give-back, a shutdown drain need not wait for its looking.
  EXPECT_TRUE(testutil::eventually([&] { return !runner.settling(); }, 2s));
  // The first give-back found nothing; the begin lands 300 ms later, with a claim nobody
  // works under, which after its lease would make the key uncertain under hold.
  ASSERT_TRUE(testutil::eventually([&] { return store.late_claims.load() == 1; }, 2s));
  EXPECT_TRUE(testutil::eventually([&] { return !record(store, "k").has_value(); }, 2500ms))
      << "the give-back went on looking and found it within its lease";
}

TEST(ClaimRunner, MarkUncertainStoresTheMarkerAndLeaveKeepsTheClaim) {
  FlakyStore store;
  ClaimRunner runner(store);
  Acquired a = run(runner.acquire("s", "held", "", policy()));
  a.claim->started();
  EXPECT_TRUE(run(runner.settle(*a.claim, policy(), Settlement::mark_uncertain)).is_ok());
  const auto mark = read_uncertain(record(store, "held")->result, kMarker);
  ASSERT_TRUE(mark.has_value());
  EXPECT_EQ(mark->fence, a.claim->fence()) << "the work started under this claim's fence";
  EXPECT_FALSE(mark->instance.empty());
  EXPECT_GT(mark->at_ms, 0);
  EXPECT_EQ(run(runner.acquire("s", "held", "", policy(OnUncertain::retry))).step, BeginStep::uncertain);

  Acquired b = run(runner.acquire("s", "left", "", policy(OnUncertain::retry)));
  EXPECT_TRUE(run(runner.settle(*b.claim, policy(OnUncertain::retry), Settlement::leave)).is_ok());
  EXPECT_EQ(record(store, "left")->state, RecordState::pending);
  EXPECT_FALSE(runner.settling());
}

TEST(ClaimRunner, AClaimSettlesOnce) {
  FlakyStore store;
  ClaimRunner runner(store);
  Acquired a = run(runner.acquire("s", "k", "", policy()));
  EXPECT_TRUE(run(runner.settle(*a.claim, policy(), Settlement::commit, "one")).is_ok());
  EXPECT_TRUE(a.claim->settled());
  EXPECT_EQ(run(runner.settle(*a.claim, policy(), Settlement::release)).code(),
            StatusCode::failed_precondition);
  EXPECT_EQ(record(store, "k")->result, "one");
}

TEST(ClaimRunner, ALostClaimIsNotOverwrittenAndCountsAConflict) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  Acquired a = run(runner.acquire("s", "k", "", policy()));
  ASSERT_TRUE(store.remove(RecordId{"s", "k"}).value());  // an operator removed it mid-run
  Acquired newer = run(runner.acquire("s", "k", "", policy()));
  ASSERT_EQ(newer.step, BeginStep::run);
  EXPECT_EQ(run(runner.settle(*a.claim, policy(), Settlement::commit, "stale")).code(),
            StatusCode::failed_precondition);
  EXPECT_EQ(settled.conflicts.load(), 1);
  EXPECT_TRUE(run(runner.settle(*newer.claim, policy(), Settlement::commit, "newer")).is_ok());
  EXPECT_EQ(record(store, "k")->result, "newer");
}

TEST(ClaimRunner, AClaimDroppedBeforeItsWorkStartedIsGivenBack) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  {
    Acquired a = run(runner.acquire("s", "k", "", policy()));
    ASSERT_EQ(a.step, BeginStep::run);
  }
  ASSERT_TRUE(settled.wait_for(1));
  EXPECT_FALSE(record(store, "k").has_value());
}

TEST(ClaimRunner, AClaimDroppedAfterItsWorkStartedIsLeftToItsLease) {
  FlakyStore store;
  ClaimRunner runner(store);
  {
    Acquired a = run(runner.acquire("s", "k", "", policy()));
    a.claim->started();  // the request may have reached the service: its outcome is unknown
  }
  EXPECT_FALSE(runner.settling());
  EXPECT_EQ(store.abandons.load(), 0);
  EXPECT_EQ(record(store, "k")->state, RecordState::pending);
}

TEST(ClaimRunner, OwnersAreUniquePerCallAndPerRunner) {
  FlakyStore store;
  ClaimRunner one(store), two(store);
  std::set<std::string> owners;
  for (int i = 0; i < 100; ++i) {
    owners.insert(one.next_owner());
    owners.insert(two.next_owner());
  }
  EXPECT_EQ(owners.size(), 200u);
}

TEST(ClaimRunner, RenewalKeepsTheClaimWhileTheWorkRunsAndStopsWithIt) {
  FlakyStore store;
  Settled settled;
  ClaimRunner runner(store, settled.hooks());
  ClaimPolicy p{300ms, 24h, true, OnUncertain::hold, kMarker};
  Acquired a = run(runner.acquire("s", "k", "", p));
  const TimePoint first_lease = record(store, "k")->lease_until.value();
  {
    Renewal renewal = runner.renew_in_background(*a.claim, p);
    ASSERT_TRUE(settled.wait_for_extends(2));
    EXPECT_GT(record(store, "k")->lease_until, first_lease);
    // Moving a renewal over another stops the one it replaces (they renew the same claim).
    // A renewal that never stops keeps the runner's thread busy, so the runner's destructor
    // at the end of this test would never return: the test hangs and ctest fails it.
    renewal = runner.renew_in_background(*a.claim, p);
    ASSERT_TRUE(settled.wait_for_extends(3));
  }
  EXPECT_FALSE(a.claim->lost());
  EXPECT_TRUE(run(runner.settle(*a.claim, p, Settlement::commit, "v")).is_ok());
}

}  // namespace
}  // namespace idem
