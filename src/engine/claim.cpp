// The claim runner (engine/claim.h): acquire → renew → settle on a store, with the settles
// that fail retried on a thread of the runner's own. Its decision tables are in
// on_uncertain.cpp.
#include "engine/claim.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include <unistd.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "idem/async.h"
#include "util/asio_tokens.h"

namespace idem {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using Steady = std::chrono::steady_clock;

// ---- Claim ------------------------------------------------------------------------------------

Claim::Claim(ClaimRunner& runner, const BeginArgs& args, const BeginOutcome& b)
    : runner_(&runner),
      scope_(args.scope),
      key_(args.key),
      owner_(args.owner),
      fingerprint_(args.fingerprint),
      fence_(b.fence),
      recovered_(b.recovered),
      previous_fence_(b.previous_fence),
      lease_(args.lease),
      retention_(args.retention) {}

Claim::Claim(Claim&& o) noexcept
    : runner_(std::exchange(o.runner_, nullptr)),
      scope_(std::move(o.scope_)),
      key_(std::move(o.key_)),
      owner_(std::move(o.owner_)),
      fingerprint_(std::move(o.fingerprint_)),
      fence_(o.fence_),
      recovered_(o.recovered_),
      previous_fence_(o.previous_fence_),
      started_(o.started_),
      lease_(o.lease_),
      retention_(o.retention_),
      lost_(o.lost_) {}

Claim::~Claim() {
  // Dropped unsettled before the work started (an exception, a cancelled caller): give it
  // back rather than leave it to expire into an uncertain key. After, its outcome is unknown.
  if (runner_ && !started_)
    runner_->settle_later(scope_, key_, owner_, fence_, Settlement::release, {}, lease_, retention_,
                          OnUncertain::hold, {});
}

// ---- the runner's own thread ------------------------------------------------------------------

struct ClaimRunner::Background {
  asio::io_context ctx{1};
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ctx);
  std::once_flag started;
  std::thread thread;
  std::atomic<bool> stopping{false};
  // Retries waiting out a pause, and how often they were woken: touched on the thread only,
  // but `sleepers` is read by store_answered() from any thread.
  std::vector<asio::steady_timer*> sleeping;
  std::atomic<int> sleepers{0};
  std::uint64_t wakes = 0;
  std::atomic<bool> wake_posted{false};

  asio::any_io_executor executor() {
    std::call_once(started, [this] { thread = std::thread([this] { ctx.run(); }); });
    return ctx.get_executor();
  }

  ~Background() {
    stopping = true;
    work.reset();
    // Started or not, the thread is joined only once it exists; its loop ends when the
    // store calls in flight have answered and every retry has seen `stopping`.
    std::call_once(started, [] {});
    if (thread.joinable()) thread.join();
  }
};

ClaimRunner::ClaimRunner(Store& store, ClaimHooks hooks, ClaimRunnerLimits limits)
    : store_(store), hooks_(std::move(hooks)), limits_(limits), bg_(std::make_unique<Background>()) {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  instance_ = buf;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  mark_instance_ = std::string(host) + "/" + instance_;
}

ClaimRunner::~ClaimRunner() = default;

asio::any_io_executor ClaimRunner::executor() const { return bg_->executor(); }

std::string ClaimRunner::next_owner() { return instance_ + "-" + std::to_string(++calls_); }

template <class T>
awaitable<Result<T>> ClaimRunner::observe(const char* op, awaitable<Result<T>> call, bool foreground) {
  const auto t0 = Steady::now();
  Result<T> r = co_await std::move(call);
  if (hooks_.observed)
    hooks_.observed(op, std::chrono::duration_cast<Duration>(Steady::now() - t0),
                    r ? Status::ok() : r.status());
  // A pending settle's own answers do not wake the others: a commit that keeps failing
  // while its extend succeeds would otherwise retry without pause.
  if (r && foreground) store_answered();
  co_return r;
}

void ClaimRunner::store_answered() noexcept {
  if (bg_->sleepers.load(std::memory_order_relaxed) == 0 || bg_->wake_posted.exchange(true)) return;
  asio::post(bg_->ctx, [bg = bg_.get()] {
    bg->wake_posted = false;
    ++bg->wakes;
    for (asio::steady_timer* t : bg->sleeping) t->cancel();
  });
}

void ClaimRunner::after_settle(const std::string& scope, const std::string& key) {
  if (hooks_.settled) hooks_.settled(scope, key);
}

// ---- acquire ----------------------------------------------------------------------------------

awaitable<Acquired> ClaimRunner::acquire(std::string scope, std::string key, std::string fingerprint,
                                         const ClaimPolicy& policy, std::string owner) {
  if (owner.empty()) owner = next_owner();
  Acquired a;
  if (std::shared_ptr<Pending> p = pending_for(scope, key)) {
    // This runner knows the outcome of the key's last claim better than the store does.
    std::optional<Result<BeginOutcome>> held = co_await answer_from(p, fingerprint);
    if (held) {
      a.begun = std::move(*held);
      a.step = after_begin(a.begun, policy.on_uncertain, policy.uncertain_marker);
      co_return a;
    }
  }
  const BeginArgs args{std::move(scope), std::move(key),   std::move(fingerprint),
                       policy.lease,     policy.retention, std::move(owner)};
  BeginArgs sent = args;
  auto call = async_begin(store_, std::move(sent), use_awaitable);
  a.begun = co_await observe("begin", std::move(call));
  a.step = after_begin(a.begun, policy.on_uncertain, policy.uncertain_marker);
  if (a.step == BeginStep::unknown) {
    // The begin may have claimed the key although its answer was lost: nothing will run
    // under that claim, so it is given back rather than left to expire into an uncertain key.
    settle_later(args.scope, args.key, args.owner, 0, Settlement::release, {}, args.lease, args.retention,
                 policy.on_uncertain, policy.uncertain_marker);
  } else if (a.step == BeginStep::run || a.step == BeginStep::hold_uncertain) {
    a.claim.emplace(Claim(*this, args, *a.begun));
  }
  co_return a;
}

// ---- renew ------------------------------------------------------------------------------------

Renewal ClaimRunner::renew_while(Claim& claim, const ClaimPolicy& policy, const asio::any_io_executor& ex) {
  if (!policy.renew) return {};
  ExtendArgs args{claim.scope(), claim.key(), claim.fence(), policy.lease};
  auto renew = [this, args]() -> awaitable<Renewal::Renewed> {
    ExtendArgs sent = args;
    auto call = async_extend(store_, std::move(sent), use_awaitable);
    Result<ExtendOutcome> r = co_await observe("extend", std::move(call));
    if (!r) co_return Renewal::Renewed::failed;
    co_return *r == ExtendOutcome::fenced ? Renewal::Renewed::lost : Renewal::Renewed::kept;
  };
  // Lost: a commit would be fenced, so there is nothing left to keep.
  auto on_lost = [this, lost = claim.lost_] {
    lost->store(true);
    if (hooks_.conflict) hooks_.conflict();
  };
  return Renewal::start(ex, policy.lease / 3, std::move(renew), std::move(on_lost));
}

awaitable<void> ClaimRunner::renewing(Claim& claim, const ClaimPolicy& policy, awaitable<void> work) {
  // Named locals, no temporaries beside a co_await: g++ 12 destroys those twice. The
  // renewal ends however the work ends (an exception included).
  const asio::any_io_executor ex = co_await asio::this_coro::executor;
  const Renewal renewal = renew_while(claim, policy, ex);
  co_await std::move(work);
}

Renewal ClaimRunner::renew_in_background(Claim& claim, const ClaimPolicy& policy) {
  return renew_while(claim, policy, executor());
}

// ---- settle -----------------------------------------------------------------------------------

// A settle retried in the background (settle_later): what acquire() answers from meanwhile.
struct ClaimRunner::Pending {
  std::string id;  // pending_'s key
  std::string scope, key, owner;
  Fence fence = 0;  // 0: the give-back of a claim whose begin answer was lost, by owner
  Duration lease{}, retention{};
  OnUncertain on_uncertain = OnUncertain::hold;
  std::string uncertain_marker;
  std::optional<TokenRestore> restore;
  std::string fingerprint;  // the claim's: a repeat of another is answered mismatch
  Steady::time_point give_up;
  // Changed under ClaimRunner::pending_mu_ (a result the store refused becomes the marker).
  Settlement how = Settlement::release;
  std::string result;
  std::size_t held_bytes = 0;  // counted in background_bytes_
  std::atomic<bool> finished{false};
};

namespace {

Status fenced_status() {
  return failed_precondition(
      "fenced: the claim was lost while the work ran (taken over or removed); "
      "nothing stored");
}

std::string pending_id(const std::string& scope, const std::string& key) {
  return std::to_string(scope.size()) + ':' + scope + key;
}

bool commits(Settlement how) { return how == Settlement::commit || how == Settlement::mark_uncertain; }

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string ClaimRunner::mark(std::string_view marker, Fence service_fence) const {
  return uncertain_result(marker, UncertainMark{service_fence, mark_instance_, now_ms()});
}

std::shared_ptr<ClaimRunner::Pending> ClaimRunner::pending_for(const std::string& scope,
                                                               const std::string& key) {
  if (background_.load(std::memory_order_relaxed) == 0) return nullptr;  // the common case: no lock
  std::lock_guard lock(pending_mu_);
  auto it = pending_.find(pending_id(scope, key));
  if (it == pending_.end() || it->second->finished.load()) return nullptr;
  return it->second;
}

void ClaimRunner::forget(const std::shared_ptr<Pending>& p) {
  std::lock_guard lock(pending_mu_);
  if (p->finished.exchange(true)) return;
  background_bytes_ -= p->held_bytes;
  p->held_bytes = 0;
  auto it = pending_.find(p->id);
  if (it != pending_.end() && it->second == p) pending_.erase(it);
}

std::pair<Settlement, std::string> ClaimRunner::held(const Pending& p) {
  std::lock_guard lock(pending_mu_);
  return {p.how, commits(p.how) ? p.result : std::string()};
}

awaitable<std::optional<Result<BeginOutcome>>> ClaimRunner::answer_from(std::shared_ptr<Pending> p,
                                                                        std::string_view fingerprint) {
  auto [how, result] = held(*p);
  if (commits(how)) {
    // As the store would answer (docs/design.md): an empty fingerprint matches any.
    if (!p->fingerprint.empty() && !fingerprint.empty() && p->fingerprint != fingerprint)
      co_return Result<BeginOutcome>(BeginOutcome::mismatch());
    // The work's answer is known here: the repeat gets it, with no store call, and the
    // commit is retried at once. A short expires_in: a cache in front asks again soon.
    store_answered();
    co_return Result<BeginOutcome>(BeginOutcome::replay(p->fence, std::move(result), kHeldAnswerTtl));
  }
  // A pending release (or give-back) goes first: a begin now could take the claim over as
  // if its outcome were unknown, when this runner knows the work did not take effect.
  Status failed;
  bool found = false;
  if (p->fence != 0) {
    ReleaseArgs args{p->scope, p->key, p->fence};
    args.restore_token = p->restore;
    auto call = async_release(store_, std::move(args), use_awaitable);
    Result<ReleaseOutcome> r = co_await observe("release", std::move(call));
    if (!r) failed = r.status();
    found = true;  // released, or fenced: either way the claim is not this runner's any more
  } else {
    AbandonArgs args{p->scope, p->key, p->owner};
    auto call = async_abandon(store_, std::move(args), use_awaitable);
    Result<ReleaseOutcome> r = co_await observe("abandon", std::move(call));
    if (!r) failed = r.status();
    // fenced: nothing of ours yet; the background keeps looking for a late begin's claim.
    found = r && *r == ReleaseOutcome::released;
  }
  if (!failed.is_ok()) co_return Result<BeginOutcome>(std::move(failed));
  if (found) {
    forget(p);
    after_settle(p->scope, p->key);
  }
  co_return std::nullopt;
}

awaitable<Status> ClaimRunner::settle(Claim& claim, const ClaimPolicy& policy, Settlement how,
                                      std::string result, std::optional<TokenRestore> restore) {
  if (claim.settled()) co_return failed_precondition("claim already settled");
  claim.runner_ = nullptr;
  Status out;
  bool answered = true;
  switch (how) {
    case Settlement::leave:
      co_return Status::ok();
    case Settlement::none:
      co_return fenced_status();
    case Settlement::commit:
    case Settlement::mark_uncertain: {
      // The fence the service may have received: this claim's once its work started; a
      // takeover that runs nothing names the claim it took over.
      const Fence service_fence = claim.started_ || !claim.recovered_ ? claim.fence_ : claim.previous_fence_;
      if (how == Settlement::mark_uncertain) result = mark(policy.uncertain_marker, service_fence);
      CommitArgs args{claim.scope(), claim.key(), claim.fence(), result, claim.retention_};
      if (how == Settlement::commit)
        args.over_uncertain = uncertain_prefix(policy.uncertain_marker, claim.fence());
      auto call = async_commit(store_, std::move(args), use_awaitable);
      Result<CommitOutcome> r = co_await observe("commit", std::move(call));
      if (!r && r.status().code() == StatusCode::invalid_argument && how == Settlement::commit) {
        // The store cannot hold this result (too large): retrying cannot help. The work took
        // effect, so its outcome is settled as unknown: held as uncertain, or left to expire.
        out = r.status();
        const Settlement instead = settle_for(WorkEnd::unknown, policy.on_uncertain, false);
        if (instead == Settlement::mark_uncertain) {
          CommitArgs marker{claim.scope(), claim.key(), claim.fence(),
                            mark(policy.uncertain_marker, claim.fence()), claim.retention_};
          auto mcall = async_commit(store_, std::move(marker), use_awaitable);
          Result<CommitOutcome> m = co_await observe("commit", std::move(mcall));
          if (!m) {
            answered = false;
            settle_later(claim.scope(), claim.key(), claim.owner(), claim.fence(), instead, {}, claim.lease_,
                         claim.retention_, policy.on_uncertain, policy.uncertain_marker, std::nullopt,
                         claim.fingerprint_);
          }
        }
      } else if (!r) {
        out = r.status();
        answered = false;
        // Commit is idempotent: retried with the same fence until the store answers.
        settle_later(claim.scope(), claim.key(), claim.owner(), claim.fence(), how, std::move(result),
                     claim.lease_, claim.retention_, policy.on_uncertain, policy.uncertain_marker,
                     std::nullopt, claim.fingerprint_);
      } else if (*r == CommitOutcome::fenced) {
        out = fenced_status();
        if (hooks_.conflict) hooks_.conflict();
      }
      break;
    }
    case Settlement::release: {
      ReleaseArgs args{claim.scope(), claim.key(), claim.fence()};
      args.restore_token = restore;
      auto call = async_release(store_, std::move(args), use_awaitable);
      Result<ReleaseOutcome> r = co_await observe("release", std::move(call));
      if (!r) {
        out = r.status();
        answered = false;
        // By fence, and re-arming the token: the user may submit again with it.
        settle_later(claim.scope(), claim.key(), claim.owner(), claim.fence(), how, {}, claim.lease_,
                     claim.retention_, policy.on_uncertain, policy.uncertain_marker, std::move(restore));
      } else if (*r == ReleaseOutcome::fenced) {
        out = fenced_status();
        if (hooks_.conflict) hooks_.conflict();
      }
      break;
    }
  }
  // Waiters may begin again once the store answered; a settle retried in the background
  // tells them when it is done.
  if (answered) after_settle(claim.scope(), claim.key());
  co_return out;
}

void ClaimRunner::settle_later(std::string scope, std::string key, std::string owner, Fence fence,
                               Settlement how, std::string result, Duration lease, Duration retention,
                               OnUncertain on_uncertain, std::string_view uncertain_marker,
                               std::optional<TokenRestore> restore, std::string fingerprint) {
  if (background_.load() >= limits_.max_settles) {
    std::fprintf(stderr,
                 "idem: %lld claims are being settled in the background already; leaving one to expire\n",
                 static_cast<long long>(limits_.max_settles));
    return;
  }
  auto p = std::make_shared<Pending>();
  p->id = pending_id(scope, key);
  p->scope = std::move(scope);
  p->key = std::move(key);
  p->owner = std::move(owner);
  p->fence = fence;
  p->lease = lease;
  p->retention = retention;
  p->on_uncertain = on_uncertain;
  p->uncertain_marker = std::string(uncertain_marker);
  p->restore = std::move(restore);
  p->fingerprint = std::move(fingerprint);
  // Worth trying for as long as the claim can live: past lease + retention it is gone by
  // itself (a pending commit keeps extending its lease meanwhile).
  p->give_up = Steady::now() + lease + retention;
  p->how = how;
  if (how == Settlement::commit &&
      result.size() > limits_.max_bytes - std::min(limits_.max_bytes, background_bytes_.load())) {
    // Past the budget for held results: settled as an unknown outcome (docs/gateway.md,
    // "When the store fails").
    std::fprintf(stderr,
                 "idem: pending results would exceed %zu bytes; settling one of %zu bytes as an unknown "
                 "outcome\n",
                 limits_.max_bytes, result.size());
    p->how = settle_for(WorkEnd::unknown, on_uncertain, false);
    if (p->how != Settlement::mark_uncertain) return;  // retry: left to expire
    result.clear();
  }
  if (p->how == Settlement::mark_uncertain && result.empty()) result = mark(p->uncertain_marker, p->fence);
  p->result = std::move(result);
  p->held_bytes = p->result.size();
  ++background_;
  ++unanswered_;
  {
    std::lock_guard lock(pending_mu_);
    background_bytes_ += p->held_bytes;
    pending_[p->id] = p;
  }
  asio::co_spawn(bg_->executor(), retry_pending(std::move(p)), asio::detached);
}

awaitable<void> ClaimRunner::retry_pending(std::shared_ptr<Pending> p) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  Duration pause = std::chrono::milliseconds(100);
  // A give-back looks for one lease: a begin whose answer was lost may reach the store
  // after the first abandon did, and would leave a claim nobody works under.
  const auto look_until = Steady::now() + p->lease;
  bool answered = false;
  for (;;) {
    if (p->finished.load()) break;  // settled by acquire() meanwhile
    const std::uint64_t wakes = bg_->wakes;
    auto [how, result] = held(*p);
    if (commits(how)) {
      CommitArgs args{p->scope, p->key, p->fence, std::move(result), p->retention};
      if (how == Settlement::commit) args.over_uncertain = uncertain_prefix(p->uncertain_marker, p->fence);
      auto call = async_commit(store_, std::move(args), use_awaitable);
      Result<CommitOutcome> r = co_await observe("commit", std::move(call), false);
      if (r) {
        if (*r == CommitOutcome::fenced && hooks_.conflict) hooks_.conflict();
        answered = true;
        break;
      }
      if (r.status().code() == StatusCode::invalid_argument && how == Settlement::commit) {
        // Too large for the store: settled as an unknown outcome instead, never retried.
        const Settlement instead = settle_for(WorkEnd::unknown, p->on_uncertain, false);
        {
          std::lock_guard lock(pending_mu_);
          p->how = instead;
          background_bytes_ -= p->held_bytes;
          p->result = mark(p->uncertain_marker, p->fence);
          p->held_bytes = p->result.size();
          background_bytes_ += p->held_bytes;
        }
        if (instead != Settlement::mark_uncertain) break;
        continue;
      }
      // Keep the claim while its result waits: past its lease another caller would take
      // the key over as if the outcome were unknown.
      ExtendArgs ext{p->scope, p->key, p->fence, p->lease};
      auto ecall = async_extend(store_, std::move(ext), use_awaitable);
      (void)co_await observe("extend", std::move(ecall), false);
    } else if (p->fence != 0) {
      ReleaseArgs args{p->scope, p->key, p->fence};
      args.restore_token = p->restore;
      auto call = async_release(store_, std::move(args), use_awaitable);
      Result<ReleaseOutcome> r = co_await observe("release", std::move(call), false);
      if (r) {
        answered = true;
        break;
      }
    } else {
      // By owner: the fence of a claim whose begin answer was lost is not known.
      AbandonArgs args{p->scope, p->key, p->owner};
      auto call = async_abandon(store_, std::move(args), use_awaitable);
      Result<ReleaseOutcome> r = co_await observe("abandon", std::move(call), false);
      if (r && !answered) {
        answered = true;
        --unanswered_;  // from here on it only looks for a late claim
      }
      if (r && (*r == ReleaseOutcome::released || Steady::now() >= look_until)) break;
    }
    if (bg_->wakes != wakes) {
      // The store answered someone meanwhile: again at once, from the shortest pause.
      pause = std::chrono::milliseconds(100);
      continue;
    }
    // Waits in slices, so that a runner being destroyed is not held up by a long pause; and
    // among the sleepers, so that store_answered() cuts the pause short.
    const auto resume = Steady::now() + pause;
    bg_->sleeping.push_back(&timer);
    ++bg_->sleepers;
    while (!bg_->stopping.load() && bg_->wakes == wakes && Steady::now() < resume &&
           Steady::now() < p->give_up) {
      timer.expires_after(std::min<Steady::duration>(resume - Steady::now(), std::chrono::milliseconds(100)));
      co_await timer.async_wait(util::kUseTuple);
    }
    --bg_->sleepers;
    bg_->sleeping.erase(std::find(bg_->sleeping.begin(), bg_->sleeping.end(), &timer));
    if (bg_->stopping.load() || Steady::now() >= p->give_up) break;
    pause = bg_->wakes != wakes ? Duration(std::chrono::milliseconds(100))
                                : std::min<Duration>(pause * 2, std::chrono::seconds(5));
  }
  const bool by_us = !p->finished.load();
  forget(p);
  // No longer settling before anyone hears that it is settled.
  if (!(answered && p->fence == 0 && !commits(p->how))) --unanswered_;
  --background_;
  if (answered && by_us) after_settle(p->scope, p->key);
}

}  // namespace idem
