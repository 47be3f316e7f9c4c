// The blocking forms of Store's operations, and the names of outcomes.
#include "idem/store.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "core/listing.h"
#include "core/state_machine.h"

namespace idem {
namespace {

// Waits for one callback. When the store answers inline (memory), no system call is
// made; otherwise the caller sleeps on the atomic until the store's thread answers. The
// state is shared because the answering thread still touches it (notify) after the
// waiter may already have seen `ready` and returned.
template <class T, class Start>
Result<T> wait_for(Start&& start) {
  struct Slot {
    std::optional<Result<T>> value;
    std::atomic<bool> ready{false};
  };
  auto slot = std::make_shared<Slot>();
  start([slot](Result<T> r) {
    slot->value.emplace(std::move(r));
    slot->ready.store(true, std::memory_order_release);
    slot->ready.notify_one();
  });
  slot->ready.wait(false, std::memory_order_acquire);
  return std::move(*slot->value);
}

// The checks of core::validate, and those that depend on the store: a commit's result
// must fit in it.
template <class Arg>
Status check(const Store&, const Arg& a) {
  return core::validate(a);
}
Status check(const Store& store, const CommitArgs& a) {
  if (a.result.size() > store.max_result_bytes()) {
    return invalid_argument("the result is " + std::to_string(a.result.size()) + " bytes, more than the " +
                            std::to_string(store.max_result_bytes()) + " bytes this " + store.traits().name +
                            " store can hold");
  }
  return core::validate(a);
}

}  // namespace

// Each operation in both forms. The asynchronous form checks the arguments once for every
// backend (check) and answers invalid_argument itself; the blocking form waits for the
// asynchronous one.
#define IDEM_OPERATION(Ret, name, Arg)                                                  \
  void Store::name(Arg a, Callback<Ret> cb) {                                           \
    if (auto s = check(*this, a); !s) return cb(std::move(s));                          \
    do_##name(std::move(a), std::move(cb));                                             \
  }                                                                                     \
  Result<Ret> Store::name(Arg a) {                                                      \
    return wait_for<Ret>([&](Callback<Ret> cb) { name(std::move(a), std::move(cb)); }); \
  }

IDEM_OPERATION(BeginOutcome, begin, BeginArgs)
IDEM_OPERATION(CommitOutcome, commit, CommitArgs)
IDEM_OPERATION(ReleaseOutcome, release, ReleaseArgs)
IDEM_OPERATION(ReleaseOutcome, abandon, AbandonArgs)
IDEM_OPERATION(ExtendOutcome, extend, ExtendArgs)
IDEM_OPERATION(std::optional<Record>, get, RecordId)
IDEM_OPERATION(bool, remove, RecordId)
IDEM_OPERATION(ListPage, list, ListArgs)
IDEM_OPERATION(std::string, issue_token, IssueTokenArgs)
IDEM_OPERATION(ConsumeOutcome, consume_token, TokenArgs)
IDEM_OPERATION(RestoreOutcome, restore_token, RestoreTokenArgs)
IDEM_OPERATION(LockOutcome, lock, LockArgs)
IDEM_OPERATION(UnlockOutcome, unlock, UnlockArgs)
IDEM_OPERATION(LockExtendOutcome, extend_lock, LockArgs)
#undef IDEM_OPERATION

Result<std::uint64_t> Store::sweep() {
  return wait_for<std::uint64_t>([&](Callback<std::uint64_t> cb) { do_sweep(std::move(cb)); });
}

Result<Done> Store::ping() {
  return wait_for<Done>([&](Callback<Done> cb) { do_ping(std::move(cb)); });
}

const char* to_string(RecordState s) noexcept { return s == RecordState::pending ? "pending" : "done"; }

const char* to_string(BeginOutcome::Kind k) noexcept {
  switch (k) {
    case BeginOutcome::Kind::acquired:
      return "acquired";
    case BeginOutcome::Kind::replay:
      return "replay";
    case BeginOutcome::Kind::in_progress:
      return "in_progress";
    case BeginOutcome::Kind::mismatch:
      return "mismatch";
  }
  return "?";
}
const char* to_string(CommitOutcome o) noexcept {
  return o == CommitOutcome::committed ? "committed" : "fenced";
}
const char* to_string(ReleaseOutcome o) noexcept {
  return o == ReleaseOutcome::released ? "released" : "fenced";
}
const char* to_string(ExtendOutcome o) noexcept {
  return o == ExtendOutcome::extended ? "extended" : "fenced";
}
const char* to_string(ConsumeOutcome o) noexcept {
  return o == ConsumeOutcome::consumed ? "consumed" : "invalid";
}
const char* to_string(RestoreOutcome o) noexcept {
  return o == RestoreOutcome::restored ? "restored" : "invalid";
}
const char* to_string(LockOutcome::Kind k) noexcept {
  return k == LockOutcome::Kind::locked ? "locked" : "busy";
}
const char* to_string(UnlockOutcome o) noexcept {
  return o == UnlockOutcome::released ? "released" : "not_owner";
}
const char* to_string(LockExtendOutcome o) noexcept {
  return o == LockExtendOutcome::extended ? "extended" : "not_owner";
}

}  // namespace idem
