// StoreWrapper: a Store that forwards every operation to another Store (LevelDB's
// EnvWrapper). A decorator — one that counts, delays, injects faults or observes calls —
// derives from it and overrides just the do_* operations it cares about; the rest keep
// forwarding. An override calls StoreWrapper::do_x (or target().x) to pass a call on.
//
// A derived wrapper may also start without a target and get one later (retarget()): until
// then every call is answered `unavailable`, so a service can start before its store is
// reachable (the gateway does: docs/admin.md, "When the store is down").
//
// Arguments reach a wrapper already checked (Store validates before any do_*); the target
// checks them again, which costs a few comparisons.
//
// Thread safety: as the target's; retarget() may race with calls, which go to the old
// target or the new one.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "idem/store.h"

namespace idem {

class StoreWrapper : public Store {
 public:
  // Wraps a store owned elsewhere, which must outlive the wrapper.
  explicit StoreWrapper(Store& target) noexcept : target_(&target) {}
  // Wraps a store and owns it.
  explicit StoreWrapper(std::unique_ptr<Store> target) noexcept
      : owned_(std::move(target)), target_(owned_.get()) {}

  // The store calls go to; only for a wrapper that has one.
  Store& target() noexcept { return *target_.load(std::memory_order_acquire); }
  bool has_target() const noexcept { return target_.load(std::memory_order_acquire) != nullptr; }

  // Without a target: traits named "unopened", no foreign writes, no bound on results.
  const StoreTraits& traits() const noexcept override {
    static const StoreTraits unopened{"unopened", false, false, false};
    const Store* t = target_.load(std::memory_order_acquire);
    return t ? t->traits() : unopened;
  }
  std::optional<std::uint64_t> foreign_writes() const noexcept override {
    const Store* t = target_.load(std::memory_order_acquire);
    return t ? t->foreign_writes() : std::nullopt;
  }
  std::uint64_t max_result_bytes() const noexcept override {
    const Store* t = target_.load(std::memory_order_acquire);
    return t ? t->max_result_bytes() : std::numeric_limits<std::uint64_t>::max();
  }

 protected:
  // No target yet: every call is answered `unavailable` with `why` as its message.
  explicit StoreWrapper(std::string why) : absent_(std::move(why)) {}
  // From now on calls go to `target`, which must outlive the wrapper (and the calls already
  // forwarded to the previous target stay with it).
  void retarget(Store& target) noexcept { target_.store(&target, std::memory_order_release); }

  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    forward(cb, [&](Store& t) { t.begin(std::move(a), std::move(cb)); });
  }
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    forward(cb, [&](Store& t) { t.commit(std::move(a), std::move(cb)); });
  }
  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override {
    forward(cb, [&](Store& t) { t.release(std::move(a), std::move(cb)); });
  }
  void do_abandon(AbandonArgs a, Callback<ReleaseOutcome> cb) override {
    forward(cb, [&](Store& t) { t.abandon(std::move(a), std::move(cb)); });
  }
  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override {
    forward(cb, [&](Store& t) { t.extend(std::move(a), std::move(cb)); });
  }
  void do_get(RecordId id, Callback<std::optional<Record>> cb) override {
    forward(cb, [&](Store& t) { t.get(std::move(id), std::move(cb)); });
  }
  void do_remove(RecordId id, Callback<bool> cb) override {
    forward(cb, [&](Store& t) { t.remove(std::move(id), std::move(cb)); });
  }
  void do_sweep(Callback<std::uint64_t> cb) override {
    forward(cb, [&](Store& t) { t.sweep(std::move(cb)); });
  }
  void do_list(ListArgs a, Callback<ListPage> cb) override {
    forward(cb, [&](Store& t) { t.list(std::move(a), std::move(cb)); });
  }
  void do_issue_token(IssueTokenArgs a, Callback<std::string> cb) override {
    forward(cb, [&](Store& t) { t.issue_token(std::move(a), std::move(cb)); });
  }
  void do_consume_token(TokenArgs a, Callback<ConsumeOutcome> cb) override {
    forward(cb, [&](Store& t) { t.consume_token(std::move(a), std::move(cb)); });
  }
  void do_restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb) override {
    forward(cb, [&](Store& t) { t.restore_token(std::move(a), std::move(cb)); });
  }
  void do_lock(LockArgs a, Callback<LockOutcome> cb) override {
    forward(cb, [&](Store& t) { t.lock(std::move(a), std::move(cb)); });
  }
  void do_unlock(UnlockArgs a, Callback<UnlockOutcome> cb) override {
    forward(cb, [&](Store& t) { t.unlock(std::move(a), std::move(cb)); });
  }
  void do_extend_lock(LockArgs a, Callback<LockExtendOutcome> cb) override {
    forward(cb, [&](Store& t) { t.extend_lock(std::move(a), std::move(cb)); });
  }
  void do_ping(Callback<Done> cb) override {
    forward(cb, [&](Store& t) { t.ping(std::move(cb)); });
  }

 private:
  template <class T, class Call>
  void forward(Callback<T>& cb, Call&& call) {
    if (Store* t = target_.load(std::memory_order_acquire))
      call(*t);
    else
      cb(Status(StatusCode::unavailable, absent_));
  }

  std::unique_ptr<Store> owned_;  // null when the target is owned elsewhere
  std::atomic<Store*> target_{nullptr};
  const std::string absent_;  // the message while there is no target
};

}  // namespace idem
