// Guard: run a function at most once per idempotency key and give every repeat the first
// result (docs/design.md). It wraps the record operations of store.h — begin, then commit on
// success or release on failure — so that application code stays one call long:
//
//   idem::Guard guard(store, {.lease = 30s, .retention = 24h});
//   auto r = guard.run("user-7", key, fingerprint, [&](idem::Fence fence) -> idem::Result<std::string> {
//     return create_order(request, fence);  // the side effect, at most once per key
//   });
//   if (!r) return reply_error(r);          // r.outcome() says why, r.status() explains
//   reply(r.value(), r.replayed());
//
// What a run does, by the answer of begin:
//   acquired     fn runs. Success: its result is committed and returned, `executed`.
//                An error returned or an exception thrown by fn: the claim is released
//                (nothing stored; a retry runs fn again) and the error is returned /
//                the exception rethrown.
//   replay       the stored result of the first run, byte for byte, `replayed`; fn does not run.
//   in_progress  another caller is running fn for this key: the guard polls begin for up
//                to `wait` (backoff bounded by the holder's remaining lease), then answers
//                `in_progress` with retry_after.
//   mismatch     the key was used with a different fingerprint: `key_reused`; nothing runs.
//   acquired, recovered
//                the previous holder's lease expired mid-run: its outcome is unknown.
//                `on_uncertain` decides: retry runs fn (Attempt::recovered tells it so,
//                and the fence is greater than the lost holder's); hold (the default)
//                answers `outcome_unknown` and completes the record as uncertain, so every
//                repeat is answered the same way until an operator removes it
//                (store.remove) or its retention passes. Nothing runs twice under `hold`.
//
// Fencing: fn receives the fence of its claim; a service can make its own writes
// conditional on it. If the claim was lost while fn ran (a takeover after the lease
// expired, an operator's remove), commit answers `fenced`: the guard still returns fn's
// result, `executed` with stored() == false, and never overwrites the newer holder.
// With `renew`, the lease is extended every lease/3 while fn runs, so a slow fn keeps it.
//
// Errors are values: when the store cannot answer begin, the run answers `failed` with
// the store's Status and nothing runs (a begin whose answer was lost may have claimed the
// key: that claim is given back by owner in the background). When commit fails after fn
// ran, the run answers `executed` with stored() == false and store_status() set: the
// caller has its result, and the commit is retried in the background until the store
// answers; meanwhile repeats through this Guard are replayed that result (with no store
// call), and repeats elsewhere wait, as the claim's lease is kept while the commit is pending.
//
// Every run goes through the claim runner (docs/design.md, "One claim runner"), as the
// gateway's requests do. Results are stored as fn returned them, except that one starting
// with a zero byte gets a second one in front (removed again on replay): so a result can
// never be mistaken for the record of an uncertain outcome.
//
// Thread safety: a Guard is safe for concurrent use from any number of threads and
// coroutines. The Store must outlive the Guard. run() blocks the calling thread;
// async_run() never blocks its executor (fn aside).
//
// GCC 12 miscompiles some temporaries in a full-expression that contains co_await: a
// braced aggregate (`Options{...}`) or a lambda capturing a std::string by value is
// destroyed twice. Build such arguments as named variables before `co_await`.
#pragma once

#include <cassert>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "idem/clock.h"
#include "idem/detail/unique_function.h"
#include "idem/on_uncertain.h"
#include "idem/record.h"
#include "idem/status.h"
#include "idem/store.h"

namespace idem {

struct GuardOptions {
  Duration lease = std::chrono::seconds(60);    // > 0: how long a claim is held
  Duration retention = std::chrono::hours(24);  // > 0: how long the result is replayed
  Duration wait = std::chrono::seconds(5);      // how long a repeat waits for a running first; 0 = never
  bool renew = true;                            // extend the lease every lease/3 while fn runs
  // When begin takes over a claim whose holder's lease expired (it may or may not have run
  // the side effect): hold answers outcome_unknown until an operator decides; retry runs
  // fn again under a greater fence.
  OnUncertain on_uncertain = OnUncertain::hold;
};

// What fn learns about its claim. Valid for the duration of the call.
struct Attempt {
  std::string_view scope;
  std::string_view key;
  Fence fence = 0;         // greater than every fence handed out for this key before
  bool recovered = false;  // an earlier holder's lease expired mid-run (on_uncertain = retry)
};

// The answer of Guard::run. Reads like Result<std::string>: true when there is a result
// (executed now or replayed); otherwise outcome() says why not and status() explains.
class [[nodiscard]] GuardResult {
 public:
  enum class Outcome {
    executed,         // fn ran now; value() is its result (see stored())
    replayed,         // the first run's result, byte for byte; fn did not run
    in_progress,      // another caller holds the key; retry after retry_after()
    key_reused,       // the key was used with a different fingerprint; nothing ran
    outcome_unknown,  // on_uncertain = hold and an earlier run did not finish; nothing ran
    failed,           // fn or the store failed (status()); nothing stored, a retry runs again
  };

  // `failed` with an internal error: only so that a GuardResult can be what Asio's co_spawn
  // and awaitable operators complete with (they need default-constructible values).
  GuardResult() : GuardResult(Outcome::failed, internal_error("guard: no answer")) {}

  bool is_ok() const noexcept { return outcome_ == Outcome::executed || outcome_ == Outcome::replayed; }
  explicit operator bool() const noexcept { return is_ok(); }
  Outcome outcome() const noexcept { return outcome_; }
  bool executed() const noexcept { return outcome_ == Outcome::executed; }
  bool replayed() const noexcept { return outcome_ == Outcome::replayed; }

  // The result; only when is_ok().
  const std::string& value() const& {
    assert(is_ok() && "GuardResult::value() without a result");
    return value_;
  }
  std::string&& value() && {
    assert(is_ok() && "GuardResult::value() without a result");
    return std::move(value_);
  }
  const std::string& operator*() const& { return value(); }
  const std::string* operator->() const { return &value(); }

  // ok when is_ok(); otherwise why not, with the code telling the caller what to do:
  //   in_progress      unavailable ("... retry after 250 ms")
  //   key_reused       failed_precondition ("key reused with a different fingerprint")
  //   outcome_unknown  failed_precondition ("outcome of an earlier attempt is unknown ...")
  //   failed           fn's own Status, or the store's
  const Status& status() const noexcept { return status_; }

  // executed: the fence fn ran under; replayed: the fence of the run that committed.
  Fence fence() const noexcept { return fence_; }
  // executed: fn ran after taking over an expired claim (on_uncertain = retry).
  bool recovered() const noexcept { return recovered_; }
  // executed: the result was committed, so repeats replay it. False when commit answered
  // `fenced` (the claim was lost while fn ran; the newer holder is left alone) or failed.
  bool stored() const noexcept { return stored_; }
  // executed and not stored: why (failed_precondition for `fenced`, else the store's error).
  const Status& store_status() const noexcept { return store_status_; }
  // in_progress: how long until the holder's lease ends, by the store's clock.
  Duration retry_after() const noexcept { return retry_after_; }

  // Constructors for the outcomes; the guard builds these, tests and fakes may too.
  static GuardResult make_executed(std::string value, Fence fence, bool recovered, Status store_status);
  static GuardResult make_replayed(std::string value, Fence fence);
  static GuardResult make_in_progress(Duration retry_after);
  static GuardResult make_key_reused();
  static GuardResult make_outcome_unknown();
  static GuardResult make_failed(Status why);

 private:
  GuardResult(Outcome o, Status s) : outcome_(o), status_(std::move(s)) {}

  Outcome outcome_;
  Status status_;
  std::string value_;
  Fence fence_ = 0;
  bool recovered_ = false;
  bool stored_ = false;
  Status store_status_;
  Duration retry_after_{};
};

// "executed", "replayed", "in_progress", "key_reused", "outcome_unknown", "failed".
const char* to_string(GuardResult::Outcome o) noexcept;

namespace detail {

// Calls fn with what it asks for: (const Attempt&), (Fence) or ().
template <class Fn>
decltype(auto) call_with_attempt(Fn& fn, const Attempt& a) {
  if constexpr (std::is_invocable_v<Fn&, const Attempt&>) {
    return fn(a);
  } else if constexpr (std::is_invocable_v<Fn&, Fence>) {
    return fn(a.fence);
  } else {
    static_assert(std::is_invocable_v<Fn&>,
                  "a guarded function takes (const idem::Attempt&), (idem::Fence) or ()");
    return fn();
  }
}

// A body's answer as Result<std::string>: Result<std::string> or std::string as is,
// Status (ok = an empty result), void (an empty result; failure by exception).
template <class Fn>
Result<std::string> call_to_result(Fn& fn, const Attempt& a) {
  using R = decltype(call_with_attempt(fn, a));
  if constexpr (std::is_void_v<R>) {
    call_with_attempt(fn, a);
    return std::string();
  } else if constexpr (std::is_same_v<std::decay_t<R>, Status>) {
    Status s = call_with_attempt(fn, a);
    if (s.is_ok()) return std::string();
    return s;
  } else {
    static_assert(std::is_convertible_v<R, Result<std::string>>,
                  "a guarded function returns Result<std::string>, std::string, Status or void");
    return call_with_attempt(fn, a);
  }
}

template <class T>
struct AwaitableValue;
template <class T, class Executor>
struct AwaitableValue<boost::asio::awaitable<T, Executor>> {
  using type = T;
};

}  // namespace detail

class Guard {
 public:
  // The Store must outlive the Guard. Options are not validated here: a zero lease or
  // retention makes every run answer `failed` with the store's invalid_argument.
  explicit Guard(Store& store, GuardOptions options = {});
  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  // Runs fn at most once per (scope, key) within the retention, blocking the caller (see
  // the top of this file). fn takes (const Attempt&), (Fence) or () and returns
  // Result<std::string>, std::string, Status or void. An empty fingerprint matches any.
  template <class Fn>
  GuardResult run(std::string scope, std::string key, std::string fingerprint, Fn&& fn) {
    return run_body(std::move(scope), std::move(key), std::move(fingerprint),
                    Body([&fn](const Attempt& a) { return detail::call_to_result(fn, a); }));
  }

  // The same for coroutines: fn returns boost::asio::awaitable of one of the types above.
  // Waits and lease renewal use timers on the coroutine's executor; store calls go through
  // idem/async.h. fn is kept alive until it completes. Cancelling the awaiting coroutine
  // cancels fn (if it supports it) and rethrows; fn may have taken effect before it was
  // interrupted, so its outcome is unknown: under `hold` the record is completed as
  // uncertain, under `retry` the claim is left to its lease.
  template <class Fn>
  boost::asio::awaitable<GuardResult> async_run(std::string scope, std::string key, std::string fingerprint,
                                                Fn fn) {
    return async_run_body(std::move(scope), std::move(key), std::move(fingerprint),
                          AsyncBody(AsyncAdapter<Fn>{std::move(fn)}));
  }

  const GuardOptions& options() const noexcept { return options_; }
  Store& store() const noexcept { return store_; }

 private:
  using Body = detail::UniqueFunction<Result<std::string>(const Attempt&)>;
  using AsyncBody = detail::UniqueFunction<boost::asio::awaitable<Result<std::string>>(const Attempt&)>;

  template <class Fn>
  struct AsyncAdapter {
    Fn fn;
    boost::asio::awaitable<Result<std::string>> operator()(const Attempt& a) {
      using A = std::decay_t<decltype(detail::call_with_attempt(fn, a))>;
      using R = typename detail::AwaitableValue<A>::type;
      if constexpr (std::is_void_v<R>) {
        co_await detail::call_with_attempt(fn, a);
        co_return std::string();
      } else if constexpr (std::is_same_v<R, Status>) {
        Status s = co_await detail::call_with_attempt(fn, a);
        if (s.is_ok()) co_return std::string();
        co_return s;
      } else {
        R value = co_await detail::call_with_attempt(fn, a);
        co_return Result<std::string>(std::move(value));
      }
    }
  };

  GuardResult run_body(std::string scope, std::string key, std::string fingerprint, Body body);
  boost::asio::awaitable<GuardResult> async_run_body(std::string scope, std::string key,
                                                     std::string fingerprint, AsyncBody body);

  // The claim runner and the policy the runs use, behind a pointer so that the runner is
  // no part of this contract: one allocation per Guard, none per run.
  struct Runner;

  Store& store_;
  const GuardOptions options_;
  const std::unique_ptr<Runner> runner_;
};

}  // namespace idem
