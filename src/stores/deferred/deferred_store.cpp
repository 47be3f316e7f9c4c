#include "stores/deferred/deferred_store.h"

#include <algorithm>

namespace idem {

DeferredStore::DeferredStore(std::string uri, StoreOptions options, Report report, Duration first_retry,
                             Duration max_retry)
    : StoreWrapper("the store has not been reached since the start"),
      uri_(std::move(uri)),
      options_(std::move(options)),
      report_(std::move(report)) {
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
      retarget(*owned_);
      if (report_) report_(Status::ok(), true);
      return;
    }
    if (report_) report_(store.status(), false);
    pause = std::min(pause * 2, max_retry);
  }
}

}  // namespace idem
