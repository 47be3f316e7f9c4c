// A store that `idem serve` can start without: when the store cannot be reached at start
// (docs/admin.md, "When the store is down"), the gateway still listens, and this store
// answers every call `unavailable` while a thread of its own keeps opening the real store,
// with growing pauses (up to `max_retry`). Once it opens, every call goes to it. /readyz
// answers 503 until then, and protected requests follow `on_store_error`.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "idem/open.h"
#include "idem/store.h"
#include "idem/store_wrapper.h"

namespace idem {

class DeferredStore final : public StoreWrapper {
 public:
  // What the opening thread has to say (each failure, and the success), for the log.
  using Report = std::function<void(const Status& status, bool opened)>;

  DeferredStore(std::string uri, StoreOptions options, Report report,
                Duration first_retry = std::chrono::milliseconds(500),
                Duration max_retry = std::chrono::seconds(5));
  ~DeferredStore() override;

  // True once the real store is open.
  bool opened() const noexcept { return has_target(); }

 private:
  void keep_opening(Duration first_retry, Duration max_retry);

  const std::string uri_;
  const StoreOptions options_;
  const Report report_;
  std::unique_ptr<Store> owned_;  // written once, by the opening thread, before it is the target
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread opener_;
};

}  // namespace idem
