// A store that `idem serve` can start without: when the store cannot be reached at start
// (docs/admin.md, "When the store is down"), the gateway still listens, and this store
// answers every call `unavailable` while a thread of its own keeps opening the real store,
// with growing pauses (up to `max_retry`). Once it opens, every call goes to it. /readyz
// answers 503 until then, and protected requests follow `on_store_error`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "idem/open.h"
#include "idem/store.h"

namespace idem::gateway {

class DeferredStore final : public Store {
 public:
  // What the opening thread has to say (each failure, and the success), for the log.
  using Report = std::function<void(const Status& status, bool opened)>;

  DeferredStore(std::string uri, StoreOptions options, Report report,
                Duration first_retry = std::chrono::milliseconds(500),
                Duration max_retry = std::chrono::seconds(5));
  ~DeferredStore() override;

  // True once the real store is open.
  bool opened() const noexcept { return inner_.load(std::memory_order_acquire) != nullptr; }

  const StoreTraits& traits() const noexcept override;
  std::optional<std::uint64_t> foreign_writes() const noexcept override {
    const Store* s = inner();
    return s ? s->foreign_writes() : std::nullopt;
  }
  // The real store's; before it opens, no bound (every call is answered unavailable then).
  std::uint64_t max_result_bytes() const noexcept override {
    const Store* s = inner();
    return s ? s->max_result_bytes() : std::numeric_limits<std::uint64_t>::max();
  }

 private:
  void keep_opening(Duration first_retry, Duration max_retry);
  Store* inner() const noexcept { return inner_.load(std::memory_order_acquire); }

  // Forwards to the real store once open; before that, answers `unavailable`.
  template <class T, class Call>
  void forward(Callback<T>& cb, Call&& call) {
    if (Store* s = inner())
      call(*s);
    else
      cb(Status(StatusCode::unavailable, "the store has not been reached since the start"));
  }

  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override;
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override;
  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override;
  void do_abandon(AbandonArgs a, Callback<ReleaseOutcome> cb) override;
  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override;
  void do_get(RecordId id, Callback<std::optional<Record>> cb) override;
  void do_remove(RecordId id, Callback<bool> cb) override;
  void do_sweep(Callback<std::uint64_t> cb) override;
  void do_list(ListArgs a, Callback<ListPage> cb) override;
  void do_issue_token(IssueTokenArgs a, Callback<std::string> cb) override;
  void do_consume_token(TokenArgs a, Callback<ConsumeOutcome> cb) override;
  void do_restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb) override;
  void do_lock(LockArgs a, Callback<LockOutcome> cb) override;
  void do_unlock(UnlockArgs a, Callback<UnlockOutcome> cb) override;
  void do_extend_lock(LockArgs a, Callback<LockExtendOutcome> cb) override;
  void do_ping(Callback<Done> cb) override;

  const std::string uri_;
  const StoreOptions options_;
  const Report report_;
  std::unique_ptr<Store> owned_;  // written once, by the opening thread, before inner_
  std::atomic<Store*> inner_{nullptr};
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread opener_;
};

}  // namespace idem::gateway
