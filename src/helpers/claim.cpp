// The claim runner (idem/claim.h): the decision tables, and acquire → renew → settle on a
// store, with the settles that fail retried on a thread of the runner's own.
#include "idem/claim.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include <boost/asio/as_tuple.hpp>
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

namespace idem {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using Steady = std::chrono::steady_clock;

// ---- the decisions ----------------------------------------------------------------------------

BeginStep after_begin(const Result<BeginOutcome>& begun, OnUncertain on_uncertain,
                      std::string_view uncertain_marker) noexcept {
  if (!begun)
    return begun.status().code() == StatusCode::deadline_exceeded ? BeginStep::unknown
                                                                  : BeginStep::not_applied;
  switch (begun->kind) {
    case BeginOutcome::Kind::acquired:
      return begun->recovered && on_uncertain == OnUncertain::hold ? BeginStep::hold_uncertain
                                                                   : BeginStep::run;
    case BeginOutcome::Kind::replay:
      return !uncertain_marker.empty() && begun->result == uncertain_marker ? BeginStep::uncertain
                                                                            : BeginStep::replay;
    case BeginOutcome::Kind::mismatch:
      return BeginStep::mismatch;
    case BeginOutcome::Kind::in_progress:
      return BeginStep::busy;
  }
  return BeginStep::not_applied;
}

Settlement settle_for(WorkEnd end, OnUncertain on_uncertain, bool claim_lost) noexcept {
  if (claim_lost) return Settlement::none;
  switch (end) {
    case WorkEnd::succeeded:
      return Settlement::commit;
    case WorkEnd::failed:
      return Settlement::release;
    case WorkEnd::unknown:
      return on_uncertain == OnUncertain::hold ? Settlement::mark_uncertain : Settlement::leave;
  }
  return Settlement::leave;
}

const char* to_string(OnUncertain p) noexcept { return p == OnUncertain::hold ? "hold" : "retry"; }

const char* to_string(BeginStep s) noexcept {
  switch (s) {
    case BeginStep::run:
      return "run";
    case BeginStep::hold_uncertain:
      return "hold_uncertain";
    case BeginStep::replay:
      return "replay";
    case BeginStep::uncertain:
      return "uncertain";
    case BeginStep::mismatch:
      return "mismatch";
    case BeginStep::busy:
      return "busy";
    case BeginStep::not_applied:
      return "not_applied";
    case BeginStep::unknown:
      return "unknown";
  }
  return "?";
}

const char* to_string(Settlement s) noexcept {
  switch (s) {
    case Settlement::commit:
      return "commit";
    case Settlement::release:
      return "release";
    case Settlement::mark_uncertain:
      return "mark_uncertain";
    case Settlement::leave:
      return "leave";
    case Settlement::none:
      return "none";
  }
  return "?";
}

// ---- Claim ------------------------------------------------------------------------------------

Claim::Claim(ClaimRunner& runner, const BeginArgs& args, const BeginOutcome& b)
    : runner_(&runner),
      scope_(args.scope),
      key_(args.key),
      owner_(args.owner),
      fence_(b.fence),
      recovered_(b.recovered),
      lease_(args.lease),
      retention_(args.retention) {}

Claim::Claim(Claim&& o) noexcept
    : runner_(std::exchange(o.runner_, nullptr)),
      scope_(std::move(o.scope_)),
      key_(std::move(o.key_)),
      owner_(std::move(o.owner_)),
      fence_(o.fence_),
      recovered_(o.recovered_),
      started_(o.started_),
      lease_(o.lease_),
      retention_(o.retention_),
      lost_(o.lost_) {}

Claim::~Claim() {
  // Dropped unsettled before the work started (an exception, a cancelled caller): give it
  // back rather than leave it to expire into an uncertain key. After, its outcome is unknown.
  if (runner_ && !started_)
    runner_->settle_later(scope_, key_, owner_, fence_, Settlement::release, {}, lease_, retention_);
}

// ---- the runner's own thread ------------------------------------------------------------------

struct ClaimRunner::Background {
  asio::io_context ctx{1};
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ctx);
  std::once_flag started;
  std::thread thread;
  std::atomic<bool> stopping{false};

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

void ClaimRunner::Renewal::stop() noexcept {
  if (auto signal = std::exchange(signal_, nullptr))
    asio::post(ex_, [signal = std::move(signal)] { signal->emit(asio::cancellation_type::terminal); });
}

ClaimRunner::Renewal& ClaimRunner::Renewal::operator=(Renewal&& o) noexcept {
  if (this != &o) {
    stop();
    ex_ = std::move(o.ex_);
    signal_ = std::move(o.signal_);
  }
  return *this;
}

ClaimRunner::ClaimRunner(Store& store, ClaimHooks hooks)
    : store_(store), hooks_(std::move(hooks)), bg_(std::make_unique<Background>()) {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  instance_ = buf;
}

ClaimRunner::~ClaimRunner() = default;

asio::any_io_executor ClaimRunner::executor() const { return bg_->executor(); }

std::string ClaimRunner::next_owner() { return instance_ + "-" + std::to_string(++calls_); }

template <class T>
awaitable<Result<T>> ClaimRunner::observe(const char* op, awaitable<Result<T>> call) {
  const auto t0 = Steady::now();
  Result<T> r = co_await std::move(call);
  if (hooks_.observed)
    hooks_.observed(op, std::chrono::duration_cast<Duration>(Steady::now() - t0),
                    r ? Status::ok() : r.status());
  co_return r;
}

void ClaimRunner::after_settle(const std::string& scope, const std::string& key) {
  if (hooks_.settled) hooks_.settled(scope, key);
}

// ---- acquire ----------------------------------------------------------------------------------

awaitable<Acquired> ClaimRunner::acquire(std::string scope, std::string key, std::string fingerprint,
                                         const ClaimPolicy& policy, std::string owner) {
  if (owner.empty()) owner = next_owner();
  const BeginArgs args{std::move(scope), std::move(key),   std::move(fingerprint),
                       policy.lease,     policy.retention, std::move(owner)};
  BeginArgs sent = args;
  auto call = async_begin(store_, std::move(sent), use_awaitable);
  Acquired a;
  a.begun = co_await observe("begin", std::move(call));
  a.step = after_begin(a.begun, policy.on_uncertain, policy.uncertain_marker);
  if (a.step == BeginStep::unknown) {
    // The begin may have claimed the key although its answer was lost: nothing will run
    // under that claim, so it is given back rather than left to expire into an uncertain key.
    settle_later(args.scope, args.key, args.owner, 0, Settlement::release, {}, args.lease, args.retention);
  } else if (a.step == BeginStep::run || a.step == BeginStep::hold_uncertain) {
    a.claim.emplace(Claim(*this, args, *a.begun));
  }
  co_return a;
}

// ---- renew ------------------------------------------------------------------------------------

awaitable<void> ClaimRunner::keep_alive(ExtendArgs args, std::shared_ptr<std::atomic<bool>> lost) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const Duration every = std::max<Duration>(args.lease / 3, std::chrono::milliseconds(1));
  for (;;) {
    timer.expires_after(every);
    // Cancelled when the work is done, which is how almost every renewal ends: told by the
    // error code, since a thrown exception costs more than the rest of a short request.
    auto [ec] = co_await timer.async_wait(asio::as_tuple(use_awaitable));
    if (ec) co_return;
    if (lost->load()) continue;  // lost: commit would be fenced; nothing to keep
    ExtendArgs sent = args;
    auto call = async_extend(store_, std::move(sent), use_awaitable);
    Result<ExtendOutcome> r = co_await observe("extend", std::move(call));
    if (r && *r == ExtendOutcome::fenced) {
      lost->store(true);
      if (hooks_.conflict) hooks_.conflict();
    }
  }
}

// A renewal on the work's executor. Most work ends long before its first renewal is due
// (lease/3): so until then it is one timer, and a coroutine runs only once one is due.
struct ClaimRunner::Renewer {
  Renewer(const asio::any_io_executor& ex, ExtendArgs a, std::shared_ptr<std::atomic<bool>> l)
      : timer(ex),
        args(std::move(a)),
        lost(std::move(l)),
        every(std::max<Duration>(args.lease / 3, std::chrono::milliseconds(1))) {}
  asio::steady_timer timer;
  ExtendArgs args;
  std::shared_ptr<std::atomic<bool>> lost;
  Duration every;
  bool stopped = false;  // the work ended; touched only on the timer's executor
};

void ClaimRunner::arm(const std::shared_ptr<Renewer>& r) {
  r->timer.expires_after(r->every);
  r->timer.async_wait([this, r](const boost::system::error_code& ec) {
    if (ec || r->stopped) return;
    asio::co_spawn(r->timer.get_executor(), renew_due(r), asio::detached);
  });
}

awaitable<void> ClaimRunner::renew_due(std::shared_ptr<Renewer> r) {
  for (;;) {
    if (!r->lost->load()) {  // lost: commit would be fenced; nothing to keep
      ExtendArgs sent = r->args;
      auto call = async_extend(store_, std::move(sent), use_awaitable);
      Result<ExtendOutcome> out = co_await observe("extend", std::move(call));
      if (r->stopped) co_return;  // the work ended meanwhile: its settle decides
      if (out && *out == ExtendOutcome::fenced) {
        r->lost->store(true);
        if (hooks_.conflict) hooks_.conflict();
      }
    }
    r->timer.expires_after(r->every);
    auto [ec] = co_await r->timer.async_wait(asio::as_tuple(use_awaitable));
    if (ec || r->stopped) co_return;
  }
}

awaitable<void> ClaimRunner::renewing(Claim& claim, const ClaimPolicy& policy, awaitable<void> work) {
  if (!policy.renew) {
    co_await std::move(work);
    co_return;
  }
  // Named locals, no temporaries beside a co_await: g++ 12 destroys those twice.
  const asio::any_io_executor ex = co_await asio::this_coro::executor;
  ExtendArgs args{claim.scope(), claim.key(), claim.fence(), policy.lease};
  auto r = std::make_shared<Renewer>(ex, std::move(args), claim.lost_);
  arm(r);
  // Ends the renewal however the work ends (an exception included).
  struct Stop {
    Renewer& r;
    ~Stop() {
      r.stopped = true;
      r.timer.cancel();
    }
  } stop{*r};
  co_await std::move(work);
}

ClaimRunner::Renewal ClaimRunner::renew_in_background(Claim& claim, const ClaimPolicy& policy) {
  Renewal renewal;
  if (!policy.renew) return renewal;
  renewal.ex_ = executor();
  renewal.signal_ = std::make_shared<asio::cancellation_signal>();
  ExtendArgs args{claim.scope(), claim.key(), claim.fence(), policy.lease};
  asio::co_spawn(renewal.ex_, keep_alive(std::move(args), claim.lost_),
                 asio::bind_cancellation_slot(renewal.signal_->slot(),
                                              [signal = renewal.signal_](std::exception_ptr) {}));
  return renewal;
}

// ---- settle -----------------------------------------------------------------------------------

namespace {

Status fenced_status() {
  return failed_precondition(
      "fenced: the claim was lost while the work ran (taken over or removed); "
      "nothing stored");
}

}  // namespace

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
      if (how == Settlement::mark_uncertain) result = std::string(policy.uncertain_marker);
      CommitArgs args{claim.scope(), claim.key(), claim.fence(), result, claim.retention_};
      auto call = async_commit(store_, std::move(args), use_awaitable);
      Result<CommitOutcome> r = co_await observe("commit", std::move(call));
      if (!r) {
        out = r.status();
        answered = false;
        // Commit is idempotent: retried with the same fence until the store answers.
        settle_later(claim.scope(), claim.key(), claim.owner(), claim.fence(), how, std::move(result),
                     claim.lease_, claim.retention_);
      } else if (*r == CommitOutcome::fenced) {
        out = fenced_status();
        if (hooks_.conflict) hooks_.conflict();
      }
      break;
    }
    case Settlement::release: {
      ReleaseArgs args{claim.scope(), claim.key(), claim.fence()};
      args.restore_token = std::move(restore);
      auto call = async_release(store_, std::move(args), use_awaitable);
      Result<ReleaseOutcome> r = co_await observe("release", std::move(call));
      if (!r) {
        out = r.status();
        answered = false;
        settle_later(claim.scope(), claim.key(), claim.owner(), claim.fence(), how, {}, claim.lease_,
                     claim.retention_);
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
                               Settlement how, std::string result, Duration lease, Duration retention) {
  // Worth trying for as long as the claim can live: past its lease a repeat takes it over,
  // and past lease + retention it is gone by itself.
  const auto give_up = Steady::now() + lease + retention;
  if (background_.load() >= kMaxBackgroundSettles) {
    std::fprintf(stderr,
                 "idem: %lld claims are being settled in the background already; leaving one to expire\n",
                 static_cast<long long>(kMaxBackgroundSettles));
    return;
  }
  ++background_;
  const bool commit = how == Settlement::commit || how == Settlement::mark_uncertain;
  auto task = [this, scope = std::move(scope), key = std::move(key), owner = std::move(owner), fence, commit,
               result = std::move(result), retention, give_up]() -> awaitable<void> {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    Duration pause = std::chrono::milliseconds(100);
    bool answered = false;
    for (;;) {
      if (commit) {
        CommitArgs args{scope, key, fence, result, retention};
        auto call = async_commit(store_, std::move(args), use_awaitable);
        answered = static_cast<bool>(co_await observe("commit", std::move(call)));
      } else {
        // By owner: the fence of a claim whose begin answer was lost is not known.
        AbandonArgs args{scope, key, owner};
        auto call = async_abandon(store_, std::move(args), use_awaitable);
        answered = static_cast<bool>(co_await observe("abandon", std::move(call)));
      }
      if (answered) break;
      // Waits in slices, so that a runner being destroyed is not held up by a long pause.
      const auto resume = Steady::now() + pause;
      while (!bg_->stopping.load() && Steady::now() < resume && Steady::now() < give_up) {
        timer.expires_after(
            std::min<Steady::duration>(resume - Steady::now(), std::chrono::milliseconds(100)));
        co_await timer.async_wait(asio::as_tuple(use_awaitable));
      }
      if (bg_->stopping.load() || Steady::now() >= give_up) break;
      pause = std::min<Duration>(pause * 2, std::chrono::seconds(5));
    }
    // No longer settling before anyone hears that it is settled.
    --background_;
    if (answered) after_settle(scope, key);
  };
  asio::co_spawn(bg_->executor(), std::move(task), asio::detached);
}

}  // namespace idem
