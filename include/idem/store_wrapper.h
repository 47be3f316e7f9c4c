// StoreWrapper: a Store that forwards every operation to another Store (LevelDB's
// EnvWrapper). A decorator — one that counts, delays, injects faults or observes calls —
// derives from it and overrides just the do_* operations it cares about; the rest keep
// forwarding. An override calls StoreWrapper::do_x (or target().x) to pass a call on.
//
// Arguments reach a wrapper already checked (Store validates before any do_*); the target
// checks them again, which costs a few comparisons.
//
// Thread safety: as the target's; the wrapper itself holds no state.
#pragma once

#include <memory>
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

  Store& target() noexcept { return *target_; }
  const StoreTraits& traits() const noexcept override { return target_->traits(); }
  std::optional<std::uint64_t> foreign_writes() const noexcept override { return target_->foreign_writes(); }
  std::uint64_t max_result_bytes() const noexcept override { return target_->max_result_bytes(); }

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    target_->begin(std::move(a), std::move(cb));
  }
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    target_->commit(std::move(a), std::move(cb));
  }
  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override {
    target_->release(std::move(a), std::move(cb));
  }
  void do_abandon(AbandonArgs a, Callback<ReleaseOutcome> cb) override {
    target_->abandon(std::move(a), std::move(cb));
  }
  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override {
    target_->extend(std::move(a), std::move(cb));
  }
  void do_get(RecordId id, Callback<std::optional<Record>> cb) override {
    target_->get(std::move(id), std::move(cb));
  }
  void do_remove(RecordId id, Callback<bool> cb) override { target_->remove(std::move(id), std::move(cb)); }
  void do_sweep(Callback<std::uint64_t> cb) override { target_->sweep(std::move(cb)); }
  void do_list(ListArgs a, Callback<ListPage> cb) override { target_->list(std::move(a), std::move(cb)); }
  void do_issue_token(IssueTokenArgs a, Callback<std::string> cb) override {
    target_->issue_token(std::move(a), std::move(cb));
  }
  void do_consume_token(TokenArgs a, Callback<ConsumeOutcome> cb) override {
    target_->consume_token(std::move(a), std::move(cb));
  }
  void do_restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb) override {
    target_->restore_token(std::move(a), std::move(cb));
  }
  void do_lock(LockArgs a, Callback<LockOutcome> cb) override { target_->lock(std::move(a), std::move(cb)); }
  void do_unlock(UnlockArgs a, Callback<UnlockOutcome> cb) override {
    target_->unlock(std::move(a), std::move(cb));
  }
  void do_extend_lock(LockArgs a, Callback<LockExtendOutcome> cb) override {
    target_->extend_lock(std::move(a), std::move(cb));
  }
  void do_ping(Callback<Done> cb) override { target_->ping(std::move(cb)); }

 private:
  std::unique_ptr<Store> owned_;  // null when the target is owned elsewhere
  Store* target_;
};

}  // namespace idem
