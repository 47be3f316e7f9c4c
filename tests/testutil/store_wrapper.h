// A Store that forwards every operation to another (LevelDB's EnvWrapper): a test derives
// from it and overrides just the operations it wants to watch or break, so fault and
// observation decorators stay a few lines each.
#pragma once

#include <memory>
#include <utility>

#include "idem/store.h"

namespace idem::testutil {

class StoreWrapper : public Store {
 public:
  explicit StoreWrapper(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}
  const StoreTraits& traits() const noexcept override { return inner_->traits(); }
  Store& inner() noexcept { return *inner_; }

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    inner_->begin(std::move(a), std::move(cb));
  }
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    inner_->commit(std::move(a), std::move(cb));
  }
  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override {
    inner_->release(std::move(a), std::move(cb));
  }
  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override {
    inner_->extend(std::move(a), std::move(cb));
  }
  void do_get(RecordId id, Callback<std::optional<Record>> cb) override {
    inner_->get(std::move(id), std::move(cb));
  }
  void do_remove(RecordId id, Callback<bool> cb) override { inner_->remove(std::move(id), std::move(cb)); }
  void do_sweep(Callback<std::uint64_t> cb) override { inner_->sweep(std::move(cb)); }
  void do_list(ListArgs a, Callback<ListPage> cb) override { inner_->list(std::move(a), std::move(cb)); }
  void do_issue_token(IssueTokenArgs a, Callback<std::string> cb) override {
    inner_->issue_token(std::move(a), std::move(cb));
  }
  void do_consume_token(TokenArgs a, Callback<ConsumeOutcome> cb) override {
    inner_->consume_token(std::move(a), std::move(cb));
  }
  void do_restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb) override {
    inner_->restore_token(std::move(a), std::move(cb));
  }
  void do_lock(LockArgs a, Callback<LockOutcome> cb) override { inner_->lock(std::move(a), std::move(cb)); }
  void do_unlock(UnlockArgs a, Callback<UnlockOutcome> cb) override {
    inner_->unlock(std::move(a), std::move(cb));
  }
  void do_extend_lock(LockArgs a, Callback<LockExtendOutcome> cb) override {
    inner_->extend_lock(std::move(a), std::move(cb));
  }
  void do_ping(Callback<Done> cb) override { inner_->ping(std::move(cb)); }

 private:
  std::unique_ptr<Store> inner_;
};

}  // namespace idem::testutil
