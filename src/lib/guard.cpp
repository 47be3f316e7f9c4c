// Guard: begin → fn → commit or release, in a blocking and a coroutine form, both on the
// claim runner (engine/claim.h), which makes every decision; they differ only in how they wait.
#include "idem/guard.h"

#include <exception>
#include <future>
#include <optional>
#include <thread>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "engine/claim.h"
#include "lib/wait_budget.h"
#include "util/ceil_ms.h"

namespace idem {

namespace asio = boost::asio;
using SteadyClock = std::chrono::steady_clock;

// ---- GuardResult -------------------------------------------------------------------------

GuardResult GuardResult::make_executed(std::string value, Fence fence, bool recovered, Status store_status) {
  GuardResult r(Outcome::executed, Status::ok());
  r.value_ = std::move(value);
  r.fence_ = fence;
  r.recovered_ = recovered;
  r.stored_ = store_status.is_ok();
  r.store_status_ = std::move(store_status);
  return r;
}

GuardResult GuardResult::make_replayed(std::string value, Fence fence) {
  GuardResult r(Outcome::replayed, Status::ok());
  r.value_ = std::move(value);
  r.fence_ = fence;
  r.stored_ = true;
  return r;
}

GuardResult GuardResult::make_in_progress(Duration retry_after) {
  GuardResult r(Outcome::in_progress,
                unavailable("key in progress: another caller is running it; retry after " +
                            std::to_string(util::ceil_ms(retry_after)) + " ms"));
  r.retry_after_ = retry_after;
  return r;
}

GuardResult GuardResult::make_key_reused() {
  return {Outcome::key_reused, failed_precondition("key reused with a different fingerprint")};
}

GuardResult GuardResult::make_outcome_unknown() {
  return {Outcome::outcome_unknown,
          failed_precondition("outcome of an earlier attempt is unknown (its lease expired mid-run); "
                              "remove the record to run again")};
}

GuardResult GuardResult::make_failed(Status why) {
  if (why.is_ok()) why = internal_error("guard: failed without a reason");
  return {Outcome::failed, std::move(why)};
}

const char* to_string(GuardResult::Outcome o) noexcept {
  switch (o) {
    case GuardResult::Outcome::executed:
      return "executed";
    case GuardResult::Outcome::replayed:
      return "replayed";
    case GuardResult::Outcome::in_progress:
      return "in_progress";
    case GuardResult::Outcome::key_reused:
      return "key_reused";
    case GuardResult::Outcome::outcome_unknown:
      return "outcome_unknown";
    case GuardResult::Outcome::failed:
      return "failed";
  }
  return "?";
}

using lib::WaitBudget;

namespace {

// The marker of an uncertain record, and the escape that keeps results from looking like it
// (guard.h).
constexpr std::string_view kUncertainMarker("\0uncertain", 10);

std::string encode_result(std::string value) {
  if (!value.empty() && value.front() == '\0') value.insert(value.begin(), '\0');
  return value;
}

std::string decode_result(std::string stored) {
  if (stored.size() >= 2 && stored[0] == '\0' && stored[1] == '\0') stored.erase(stored.begin());
  return stored;
}

ClaimPolicy claim_policy(const GuardOptions& o) {
  return ClaimPolicy{o.lease, o.retention, o.renew, o.on_uncertain, kUncertainMarker};
}

// The answer for a begin step that ends the run; nullopt for run (fn runs) and busy (wait).
std::optional<GuardResult> answer_for(Acquired& a) {
  switch (a.step) {
    case BeginStep::replay:
      return GuardResult::make_replayed(decode_result(std::move(a.begun->result)), a.begun->fence);
    case BeginStep::uncertain:
    case BeginStep::hold_uncertain:
      return GuardResult::make_outcome_unknown();
    case BeginStep::mismatch:
      return GuardResult::make_key_reused();
    case BeginStep::not_applied:
    case BeginStep::unknown:
      return GuardResult::make_failed(a.begun.status());
    case BeginStep::busy:
    case BeginStep::run:
      return std::nullopt;
  }
  return GuardResult::make_failed(internal_error("guard: unknown begin step"));
}

// The guard's answer once fn returned a result and the claim was settled.
GuardResult finish(std::string value, const Claim& claim, Status settled) {
  return GuardResult::make_executed(std::move(value), claim.fence(), claim.recovered(), std::move(settled));
}

}  // namespace

struct Guard::Runner {
  Runner(Store& store, const GuardOptions& options) : policy(claim_policy(options)), runner(store) {}

  const ClaimPolicy policy;
  ClaimRunner runner;
};

Guard::Guard(Store& store, GuardOptions options)
    : store_(store), options_(std::move(options)), runner_(std::make_unique<Runner>(store, options_)) {}

Guard::~Guard() = default;

// ---- blocking ---------------------------------------------------------------------------------

namespace {

// Runs one store step (acquire, settle: coroutines) to its end on the calling thread, so that
// blocking callers make their store calls in parallel as they would without the runner.
template <class T>
T run_here(asio::awaitable<T> step) {
  asio::io_context ctx(1);
  std::future<T> done = asio::co_spawn(ctx, std::move(step), asio::use_future);
  ctx.run();
  return done.get();
}

}  // namespace

// fn runs on the caller's thread while the runner renews the claim from its own.
GuardResult Guard::run_body(std::string scope, std::string key, std::string fingerprint, Body body) {
  WaitBudget budget(options_.wait);
  ClaimRunner& runner = runner_->runner;
  const ClaimPolicy& policy = runner_->policy;
  const std::string owner = runner.next_owner();  // one per run, also across waits
  for (;;) {
    Acquired a = run_here(runner.acquire(scope, key, fingerprint, policy, owner));
    if (a.step == BeginStep::busy) {
      if (auto sleep = budget.next(a.begun->retry_after)) {
        std::this_thread::sleep_for(*sleep);
        continue;
      }
      return GuardResult::make_in_progress(a.begun->retry_after);
    }
    if (a.step == BeginStep::hold_uncertain)
      (void)run_here(runner.settle(*a.claim, policy, Settlement::mark_uncertain));
    if (auto answer = answer_for(a)) return std::move(*answer);

    Claim& claim = *a.claim;
    const Attempt attempt{scope, key, claim.fence(), claim.recovered()};
    claim.started();  // settled explicitly below, also when fn throws
    std::optional<Result<std::string>> out;
    {
      Renewal renewal = runner.renew_in_background(claim, policy);
      try {
        out.emplace(body(attempt));
      } catch (...) {
        renewal.stop();
        (void)run_here(
            runner.settle(claim, policy, settle_for(WorkEnd::failed, policy.on_uncertain, claim.lost())));
        throw;
      }
    }
    if (!*out) {
      // Nothing is stored so that a retry runs again.
      (void)run_here(
          runner.settle(claim, policy, settle_for(WorkEnd::failed, policy.on_uncertain, claim.lost())));
      return GuardResult::make_failed(out->status());
    }
    const Settlement how = settle_for(WorkEnd::succeeded, policy.on_uncertain, claim.lost());
    Status settled = run_here(runner.settle(claim, policy, how, encode_result(out->value())));
    return finish(std::move(*out).value(), claim, std::move(settled));
  }
}

// ---- asynchronous -----------------------------------------------------------------------------

// GCC 12 mishandles non-trivial temporaries in a full-expression that contains co_await (they
// may be destroyed twice), so every argument built for a co_await is a named local.
asio::awaitable<GuardResult> Guard::async_run_body(std::string scope, std::string key,
                                                   std::string fingerprint, AsyncBody body) {
  WaitBudget budget(options_.wait);
  ClaimRunner& runner = runner_->runner;
  const ClaimPolicy& policy = runner_->policy;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const std::string owner = runner.next_owner();  // one per run, also across waits
  for (;;) {
    Acquired a = co_await runner.acquire(scope, key, fingerprint, policy, owner);
    if (a.step == BeginStep::busy) {
      if (auto sleep = budget.next(a.begun->retry_after)) {
        timer.expires_after(*sleep);
        co_await timer.async_wait(asio::use_awaitable);
        continue;
      }
      co_return GuardResult::make_in_progress(a.begun->retry_after);
    }
    if (a.step == BeginStep::hold_uncertain)
      (void)co_await runner.settle(*a.claim, policy, Settlement::mark_uncertain);
    if (auto answer = answer_for(a)) co_return std::move(*answer);

    Claim& claim = *a.claim;
    const Attempt attempt{scope, key, claim.fence(), claim.recovered()};
    claim.started();  // settled explicitly below, also when fn throws
    std::optional<Result<std::string>> out;
    std::exception_ptr thrown;
    auto run_fn = [&]() -> asio::awaitable<void> {
      Result<std::string> r = co_await body(attempt);
      out.emplace(std::move(r));
    };
    try {
      auto work = run_fn();
      co_await runner.renewing(claim, policy, std::move(work));
    } catch (...) {
      thrown = std::current_exception();  // fn threw, or the caller was cancelled
    }
    // A cancelled caller interrupted fn mid-way: whatever fn had begun may have taken
    // effect, so its outcome is unknown and `on_uncertain` decides, as for a gateway request
    // whose service did not answer (docs/design.md). fn's own exception or error says it failed.
    const bool cancelled =
        (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
    // fn has finished; the claim must now be settled even if this coroutine was cancelled
    // meanwhile, and a cancelled coroutine would refuse to start the store call.
    co_await asio::this_coro::reset_cancellation_state();
    if (thrown && cancelled) {
      const Settlement how = settle_for(WorkEnd::unknown, policy.on_uncertain, claim.lost());
      (void)co_await runner.settle(claim, policy, how);
      std::rethrow_exception(thrown);
    }
    if (thrown || !*out) {
      const Settlement how = settle_for(WorkEnd::failed, policy.on_uncertain, claim.lost());
      (void)co_await runner.settle(claim, policy, how);
      if (thrown) std::rethrow_exception(thrown);
      co_return GuardResult::make_failed(out->status());
    }
    const Settlement how = settle_for(WorkEnd::succeeded, policy.on_uncertain, claim.lost());
    std::string stored = encode_result(out->value());
    Status settled = co_await runner.settle(claim, policy, how, std::move(stored));
    co_return finish(std::move(*out).value(), claim, std::move(settled));
  }
}

}  // namespace idem
