#include "gateway/deferred_store.h"

#include <algorithm>

namespace idem::gateway {

DeferredStore::DeferredStore(std::string uri, StoreOptions options, Report report, Duration first_retry,
                             Duration max_retry)
    : uri_(std::move(uri)), options_(std::move(options)), report_(std::move(report)) {
  opener_ = std::thread([this, first_retry, max_retry] { keep_opening(first_retry, max_retry); });
}

DeferredStore::~DeferredStore() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  opener_.join();
  // owned_ (if any) is destroyed after this, and waits for the calls in flight on it.
}

void DeferredStore::keep_opening(Duration first_retry, Duration max_retry) {
  Duration pause = first_retry;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (stop_cv_.wait_for(lock, pause, [this] { return stopping_; })) return;
    }
    auto store = open_store(uri_, options_);
    if (store) {
      owned_ = std::move(*store);
      inner_.store(owned_.get(), std::memory_order_release);
      if (report_) report_(Status::ok(), true);
      return;
    }
    if (report_) report_(store.status(), false);
    pause = std::min(pause * 2, max_retry);
  }
}

const StoreTraits& DeferredStore::traits() const noexcept {
  static const StoreTraits unopened{"unopened", false, false, false};
  const Store* s = inner();
  return s ? s->traits() : unopened;
}

#define IDEM_FORWARD(name, Arg, Out)                                     \
  void DeferredStore::do_##name(Arg a, Callback<Out> cb) {               \
    forward(cb, [&](Store& s) { s.name(std::move(a), std::move(cb)); }); \
  }
IDEM_FORWARD(begin, BeginArgs, BeginOutcome)
IDEM_FORWARD(commit, CommitArgs, CommitOutcome)
IDEM_FORWARD(release, ReleaseArgs, ReleaseOutcome)
IDEM_FORWARD(abandon, AbandonArgs, ReleaseOutcome)
IDEM_FORWARD(list, ListArgs, ListPage)
IDEM_FORWARD(extend, ExtendArgs, ExtendOutcome)
IDEM_FORWARD(get, RecordId, std::optional<Record>)
IDEM_FORWARD(remove, RecordId, bool)
IDEM_FORWARD(issue_token, IssueTokenArgs, std::string)
IDEM_FORWARD(consume_token, TokenArgs, ConsumeOutcome)
IDEM_FORWARD(restore_token, RestoreTokenArgs, RestoreOutcome)
IDEM_FORWARD(lock, LockArgs, LockOutcome)
IDEM_FORWARD(unlock, UnlockArgs, UnlockOutcome)
IDEM_FORWARD(extend_lock, LockArgs, LockExtendOutcome)
#undef IDEM_FORWARD

void DeferredStore::do_sweep(Callback<std::uint64_t> cb) {
  forward(cb, [&](Store& s) { s.sweep(std::move(cb)); });
}

void DeferredStore::do_ping(Callback<Done> cb) {
  forward(cb, [&](Store& s) { s.ping(std::move(cb)); });
}

}  // namespace idem::gateway
