// ScopedLock: the lock operations of store.h (docs/design.md) with less ceremony. It holds a
// store lock for a scope, like std::unique_lock:
//
//   auto lock = idem::ScopedLock::acquire(store, "stock:sku-42", {.ttl = 10s, .wait = 2s});
//   if (!lock) return lock.status();                          // the store could not answer
//   if (!lock->owns_lock()) return busy(lock->retry_after());  // someone else holds it
//   deduct_stock(sku, lock->fence());                          // writes conditional on the fence
//   // the lock is released when `lock` goes (or by lock->unlock())
//
// Coroutines: `co_await ScopedLock::async_acquire(store, name, options)` with `options` a
// named variable — GCC 12 destroys a braced LockOptions temporary in a co_await
// expression twice (see guard.h).
//
// Thread safety: a ScopedLock is one owner's handle — use it from one thread at a time
// (it may move between threads). The Store must outlive it.
#pragma once

#include <chrono>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "idem/clock.h"
#include "idem/operations.h"
#include "idem/record.h"
#include "idem/status.h"
#include "idem/store.h"

namespace idem {

struct LockOptions {
  Duration ttl = std::chrono::seconds(30);  // > 0: the lock lapses after this unless extended
  Duration wait = Duration{0};              // how long acquire retries while busy; 0 = try once
  std::string owner = {};                   // empty: a fresh random owner id (192 bits)
};

class [[nodiscard]] ScopedLock {
 public:
  // Locks `name`, retrying while busy for up to options.wait (a backoff bounded by the
  // holder's remaining ttl). Returns a ScopedLock that owns the lock, or — when still
  // busy — one that does not (owns_lock() false, retry_after() set). A Status when the
  // store could not answer (or, with an empty owner, no random id could be made);
  // invalid_argument for an empty name or a zero ttl. Asking again with the owner of a
  // live lock re-locks it: same fence, ttl renewed (store.h).
  static Result<ScopedLock> acquire(Store& store, std::string name, LockOptions options = {});
  // The same without blocking: waits on a timer of the coroutine's executor.
  static boost::asio::awaitable<Result<ScopedLock>> async_acquire(Store& store, std::string name,
                                                                  LockOptions options = {});

  ScopedLock(ScopedLock&& other) noexcept;
  ScopedLock& operator=(ScopedLock&& other) noexcept;
  ScopedLock(const ScopedLock&) = delete;
  ScopedLock& operator=(const ScopedLock&) = delete;

  // Releases a lock still owned, never throwing and ignoring errors (an unreleased lock
  // lapses after its ttl). A lock from acquire() is released before the destructor
  // returns; one from async_acquire() is released without waiting, so that no event loop
  // blocks — call async_unlock() first when the next step needs the lock free.
  ~ScopedLock();

  bool owns_lock() const noexcept { return owns_; }
  const std::string& name() const noexcept { return name_; }
  const std::string& owner() const noexcept { return owner_; }
  // owns_lock(): greater than every fence handed out for this name before.
  Fence fence() const noexcept { return fence_; }
  // !owns_lock() after acquire: how long until the current holder's lock lapses.
  Duration retry_after() const noexcept { return retry_after_; }

  // Releases the lock now. `released`; or `not_owner` when this handle does not own it or
  // the lock lapsed (another owner's lock is never touched). Afterwards owns_lock() is
  // false — except on a Status, when nothing may have happened and the destructor tries again.
  Result<UnlockOutcome> unlock();
  boost::asio::awaitable<Result<UnlockOutcome>> async_unlock();

  // Renews the lock for ttl from now. `not_owner` when it lapsed (owns_lock() turns false).
  Result<LockExtendOutcome> extend(Duration ttl);
  boost::asio::awaitable<Result<LockExtendOutcome>> async_extend(Duration ttl);

 private:
  ScopedLock(Store& store, std::string name, std::string owner, const LockOutcome& outcome, bool blocking);
  void reset() noexcept;
  Status settle_unlock(const Result<UnlockOutcome>& r);
  void settle_extend(const Result<LockExtendOutcome>& r);

  Store* store_;
  std::string name_;
  std::string owner_;
  bool owns_ = false;
  bool blocking_ = true;  // acquired by the blocking form: the destructor waits for the unlock
  Fence fence_ = 0;
  Duration retry_after_{};
};

}  // namespace idem
