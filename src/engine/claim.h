// The claim runner: the one way idem runs work under a claim (docs/design.md, "One claim
// runner"). The gateway, the Guard and the Deduplicator all run on it:
//
//   acquire   one begin, read by after_begin(). A begin whose outcome is unknown (its
//             answer was lost) may have claimed the key: that claim is given back by its
//             owner in the background, so it never turns into an uncertain key. The
//             give-back keeps looking for the claim for one lease, since the begin may
//             reach the store after the first give-back did.
//   work      while the work runs, the claim's lease is renewed every lease/3; a renewal
//             answered `fenced` marks the claim lost.
//   settle    settle_for() says what the work's end means: commit the result, release
//             the claim, complete it as uncertain, or leave it to expire. A settle whose
//             store call fails is retried in the background until the store answers
//             (commit is idempotent, release goes by fence and re-arms its token). A claim
//             dropped unsettled is given back in the background too.
//
// A known outcome is never treated as unknown (docs/gateway.md, "When the store fails"):
// while a settle of this runner is pending, acquire() answers every repeat of its key from
// it (a pending commit: a replay of its result; a pending release: the release is sent
// first) and never takes the key over; the lease of a pending commit is extended with each
// retry; and pending settles are retried at once whenever the store answers a call again,
// not after their backoff. A result the store refuses as too large (invalid_argument), or
// one that would take the runner's pending results past their byte budget, is settled as
// an unknown outcome instead (`on_uncertain`): never retried, never held.
//
// The decisions are the pure functions after_begin() and settle_for(), tested without a
// store; they live in idem/on_uncertain.h, which has no Asio. Background work runs on one
// thread of the runner's own, at most ClaimRunnerLimits::max_settles at once holding at
// most max_bytes of results; past that a claim is left to expire (and `on_uncertain`
// decides for its repeats). settling() tells a shutdown drain whether any is still going.
//
// Internal to libidem: the Guard (and through it the Deduplicator) holds a runner behind a
// pointer (include/idem/guard.h); the gateway uses it directly.
//
// Thread safety: a ClaimRunner is safe for concurrent use. The Store must outlive it. Its
// destructor waits for store calls in flight and abandons background retries.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include "engine/renewal.h"
#include "engine/uncertain_mark.h"
#include "idem/clock.h"
#include "idem/on_uncertain.h"
#include "idem/record.h"
#include "idem/status.h"
#include "idem/store.h"

namespace idem {

// How one face runs its claims (the gateway: per route).
struct ClaimPolicy {
  Duration lease = std::chrono::seconds(60);    // > 0
  Duration retention = std::chrono::hours(24);  // > 0
  bool renew = true;                            // extend the lease every lease/3 while working
  OnUncertain on_uncertain = OnUncertain::hold;
  // What an uncertain record's result starts with; the runner appends the mark
  // (engine/uncertain_mark.h). Each face stores results in a form in which no real result
  // starts with it (the gateway's stored responses; the Guard escapes results).
  // A view: the storage outlives every use of the policy (each face keeps it static).
  std::string_view uncertain_marker;
};

// Called by the runner (from any thread; keep them short and thread-safe).
struct ClaimHooks {
  // A claim was settled or given back: local waiters for (scope, key) may begin again.
  std::function<void(const std::string& scope, const std::string& key)> settled;
  // After each store call the runner makes: its name ("begin", "commit", ...), how long it
  // took, and how it ended.
  std::function<void(const char* op, Duration latency, const Status& status)> observed;
  // A commit, release or renewal answered fenced: the claim was taken over or removed.
  std::function<void()> conflict;
};

class ClaimRunner;

// What the runner may hold for settles retried in the background.
struct ClaimRunnerLimits {
  std::int64_t max_settles = 10000;                // settles and give-backs at once
  std::size_t max_bytes = std::size_t{256} << 20;  // results held by pending commits, in bytes
};

// An acquired claim. Move-only; settle it once with ClaimRunner::settle. One destroyed
// unsettled (an exception, a coroutine destroyed mid-way) is given back by its owner in the
// background, unless started() was called: once the work may have taken effect, a dropped
// claim is left to its lease, after which `on_uncertain` decides for the next repeat.
class Claim {
 public:
  Claim(Claim&& o) noexcept;
  Claim& operator=(Claim&&) = delete;  // Acquired holds it in an optional: emplace, never assign
  Claim(const Claim&) = delete;
  ~Claim();

  const std::string& scope() const noexcept { return scope_; }
  const std::string& key() const noexcept { return key_; }
  const std::string& owner() const noexcept { return owner_; }
  Fence fence() const noexcept { return fence_; }
  bool recovered() const noexcept { return recovered_; }  // taken over from an expired holder
  // recovered: the fence of the claim taken over (its silent holder's work carried it).
  Fence previous_fence() const noexcept { return previous_fence_; }
  // A renewal answered fenced: the claim was taken over or removed while the work ran.
  bool lost() const noexcept { return lost_->load(); }
  bool settled() const noexcept { return runner_ == nullptr; }
  // The work may take effect from now on (the request is about to be sent).
  void started() noexcept { started_ = true; }

 private:
  friend class ClaimRunner;
  Claim(ClaimRunner& runner, const BeginArgs& args, const BeginOutcome& b);

  ClaimRunner* runner_;  // null once settled
  std::string scope_, key_, owner_, fingerprint_;
  Fence fence_;
  bool recovered_;
  Fence previous_fence_;
  bool started_ = false;
  Duration lease_, retention_;
  std::shared_ptr<std::atomic<bool>> lost_ = std::make_shared<std::atomic<bool>>(false);
};

// One begin's answer: the store's, what it means, and the claim when there is one (run,
// hold_uncertain).
struct Acquired {
  Result<BeginOutcome> begun = internal_error("claim: no begin");
  BeginStep step = BeginStep::not_applied;
  std::optional<Claim> claim;
};

class ClaimRunner {
 public:
  // How long a repeat answered from a pending commit may be replayed from memory before it
  // asks again (BeginOutcome::expires_in of such an answer).
  static constexpr Duration kHeldAnswerTtl = std::chrono::seconds(1);

  explicit ClaimRunner(Store& store, ClaimHooks hooks = {}, ClaimRunnerLimits limits = {});
  ~ClaimRunner();
  ClaimRunner(const ClaimRunner&) = delete;
  ClaimRunner& operator=(const ClaimRunner&) = delete;

  Store& store() const noexcept { return store_; }

  // A fresh owner id: unique to this runner's process and call.
  std::string next_owner();

  // One begin under `policy` (its lease and retention), by `owner` (a fresh one when
  // empty), and what it means. While a settle of this runner for the key is pending, the
  // answer comes from it (see the top of this file): a pending commit answers `replay` (or
  // `uncertain`) with its result and expires_in = kHeldAnswerTtl, without a store call (a
  // request of another fingerprint: `mismatch`, as the store would answer); a pending
  // release is sent first, and its failure answers `not_applied`.
  boost::asio::awaitable<Acquired> acquire(std::string scope, std::string key, std::string fingerprint,
                                           const ClaimPolicy& policy, std::string owner = {});

  // Runs `work` while the claim's lease is renewed every lease/3 (when policy.renew); a
  // renewal answered fenced sets claim.lost(). Ends when work ends; work's exceptions
  // propagate. The renewal runs on the awaiting coroutine's executor.
  boost::asio::awaitable<void> renewing(Claim& claim, const ClaimPolicy& policy,
                                        boost::asio::awaitable<void> work);

  // Renews the claim on `ex` (the caller's executor) every lease/3 until the returned
  // renewal is stopped or destroyed (when policy.renew; nothing otherwise), for a coroutine
  // that awaits its work itself, with no frame of the runner's around it. A renewal
  // answered fenced sets claim.lost(). The renewal must not outlive the runner.
  [[nodiscard]] Renewal renew_while(Claim& claim, const ClaimPolicy& policy,
                                    const boost::asio::any_io_executor& ex);
  // The same from the runner's own thread: for blocking callers, whose work holds their
  // thread.
  [[nodiscard]] Renewal renew_in_background(Claim& claim, const ClaimPolicy& policy);

  // Settles the claim as `how` says (`result` for commit), once. On a token route the
  // release re-arms `restore` in the same store step. Answers ok; failed_precondition
  // when the store answered fenced (the claim was lost: nothing stored, the newer holder
  // left alone); or the store's error, after which the settle is retried in the background.
  // mark_uncertain commits policy.uncertain_marker with a mark naming the fence the service
  // may have received: this claim's once started(), else (a takeover that runs nothing) the
  // fence of the claim taken over. A commit also replaces the mark a takeover of this claim
  // wrote elsewhere meanwhile (CommitArgs::over_uncertain): under hold the answer is
  // recovered.
  boost::asio::awaitable<Status> settle(Claim& claim, const ClaimPolicy& policy, Settlement how,
                                        std::string result = {},
                                        std::optional<TokenRestore> restore = std::nullopt);

  // True while settles or give-backs are retried in the background and the store has not
  // answered them yet (a give-back that goes on looking for a late begin's claim after the
  // store answered does not count: a shutdown drain need not wait for it).
  bool settling() const noexcept { return unanswered_.load() > 0; }
  // Bytes of results held by pending commits.
  std::size_t settling_bytes() const noexcept { return background_bytes_.load(); }

  // The store answered a call that was not the runner's own (a face's lock or token call):
  // pending settles are retried at once. The runner's own calls count by themselves. Cheap
  // when nothing is pending; any thread.
  void store_answered() noexcept;

  // The runner's own thread, for blocking callers that drive acquire and settle.
  boost::asio::any_io_executor executor() const;

 private:
  friend class Claim;
  struct Background;
  struct Pending;

  // Retries a settle (or the give-back of a claim that may exist: fence 0, by owner) until
  // the store answers or the claim would have expired anyway.
  void settle_later(std::string scope, std::string key, std::string owner, Fence fence, Settlement how,
                    std::string result, Duration lease, Duration retention, OnUncertain on_uncertain,
                    std::string_view uncertain_marker, std::optional<TokenRestore> restore = std::nullopt,
                    std::string fingerprint = {});
  boost::asio::awaitable<void> retry_pending(std::shared_ptr<Pending> p);
  // acquire() for a key with a pending settle: the answer it holds, or nullopt when a begin
  // should follow (a pending release went through).
  // A pending commit answers only a request of its fingerprint (another is a mismatch).
  boost::asio::awaitable<std::optional<Result<BeginOutcome>>> answer_from(std::shared_ptr<Pending> p,
                                                                          std::string_view fingerprint);
  // The uncertain record naming `service_fence`, marked by this runner now.
  std::string mark(std::string_view marker, Fence service_fence) const;
  // A pending settle's settlement and, for a commit, its result: a copy taken under the lock.
  std::pair<Settlement, std::string> held(const Pending& p);
  std::shared_ptr<Pending> pending_for(const std::string& scope, const std::string& key);
  void forget(const std::shared_ptr<Pending>& p);
  template <class T>
  boost::asio::awaitable<Result<T>> observe(const char* op, boost::asio::awaitable<Result<T>> call,
                                            bool foreground = true);
  void after_settle(const std::string& scope, const std::string& key);

  Store& store_;
  ClaimHooks hooks_;
  std::string instance_;       // random: names owners
  std::string mark_instance_;  // the host and instance_: who marks records uncertain
  std::atomic<std::uint64_t> calls_{0};
  ClaimRunnerLimits limits_;
  std::atomic<std::int64_t> background_{0};
  std::atomic<std::int64_t> unanswered_{0};  // of background_, those the store never answered
  std::atomic<std::size_t> background_bytes_{0};
  std::mutex pending_mu_;
  std::unordered_map<std::string, std::shared_ptr<Pending>> pending_;  // by scope and key; the latest
  std::unique_ptr<Background> bg_;
};

}  // namespace idem
