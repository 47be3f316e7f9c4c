// ScopedLock: a thin wrapper over the lock operations.
#include "idem/scoped_lock.h"

#include <thread>
#include <utility>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/state_machine.h"
#include "idem/async.h"
#include "lib/wait_budget.h"

namespace idem {

namespace asio = boost::asio;

namespace {

// The owner a caller did not name: random, so two processes never share one by accident.
Result<std::string> owner_or_random(std::string owner) {
  if (!owner.empty()) return owner;
  return core::random_token();
}

}  // namespace

ScopedLock::ScopedLock(Store& store, std::string name, std::string owner, const LockOutcome& outcome,
                       bool blocking)
    : store_(&store),
      name_(std::move(name)),
      owner_(std::move(owner)),
      owns_(outcome.kind == LockOutcome::Kind::locked),
      blocking_(blocking),
      fence_(outcome.fence),
      retry_after_(outcome.retry_after) {}

ScopedLock::ScopedLock(ScopedLock&& other) noexcept
    : store_(other.store_),
      name_(std::move(other.name_)),
      owner_(std::move(other.owner_)),
      owns_(std::exchange(other.owns_, false)),
      blocking_(other.blocking_),
      fence_(other.fence_),
      retry_after_(other.retry_after_) {}

ScopedLock& ScopedLock::operator=(ScopedLock&& other) noexcept {
  if (this != &other) {
    reset();
    store_ = other.store_;
    name_ = std::move(other.name_);
    owner_ = std::move(other.owner_);
    owns_ = std::exchange(other.owns_, false);
    blocking_ = other.blocking_;
    fence_ = other.fence_;
    retry_after_ = other.retry_after_;
  }
  return *this;
}

ScopedLock::~ScopedLock() { reset(); }

void ScopedLock::reset() noexcept {
  if (!owns_) return;
  owns_ = false;
  try {
    UnlockArgs args{name_, owner_};
    if (blocking_) {
      (void)store_->unlock(std::move(args));
    } else {
      store_->unlock(std::move(args), [](Result<UnlockOutcome>) {});
    }
  } catch (...) {
    // Out of memory copying the name: the lock lapses after its ttl.
  }
}

Result<ScopedLock> ScopedLock::acquire(Store& store, std::string name, LockOptions options) {
  auto owner = owner_or_random(std::move(options.owner));
  if (!owner) return owner.status();
  LockArgs args{std::move(name), std::move(*owner), options.ttl};
  lib::WaitBudget budget(options.wait);
  for (;;) {
    auto r = store.lock(args);
    if (!r) return r.status();
    if (r->kind == LockOutcome::Kind::busy) {
      if (auto sleep = budget.next(r->retry_after)) {
        std::this_thread::sleep_for(*sleep);
        continue;
      }
    }
    return ScopedLock(store, std::move(args.name), std::move(args.owner), *r, /*blocking=*/true);
  }
}

asio::awaitable<Result<ScopedLock>> ScopedLock::async_acquire(Store& store, std::string name,
                                                              LockOptions options) {
  auto owner = owner_or_random(std::move(options.owner));
  if (!owner) co_return owner.status();
  LockArgs args{std::move(name), std::move(*owner), options.ttl};
  lib::WaitBudget budget(options.wait);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    auto r = co_await idem::async_lock(store, args, asio::use_awaitable);
    if (!r) co_return r.status();
    if (r->kind == LockOutcome::Kind::busy) {
      if (auto sleep = budget.next(r->retry_after)) {
        timer.expires_after(*sleep);
        co_await timer.async_wait(asio::use_awaitable);
        continue;
      }
    }
    co_return ScopedLock(store, std::move(args.name), std::move(args.owner), *r, /*blocking=*/false);
  }
}

Status ScopedLock::settle_unlock(const Result<UnlockOutcome>& r) {
  if (!r) return r.status();  // may not have happened: still ours to release
  owns_ = false;
  return Status::ok();
}

Result<UnlockOutcome> ScopedLock::unlock() {
  if (!owns_) return UnlockOutcome::not_owner;
  auto r = store_->unlock(UnlockArgs{name_, owner_});
  if (auto s = settle_unlock(r); !s) return s;
  return r;
}

asio::awaitable<Result<UnlockOutcome>> ScopedLock::async_unlock() {
  if (!owns_) co_return UnlockOutcome::not_owner;
  UnlockArgs args{name_, owner_};  // a named local: see async_run_body in guard.cpp
  auto r = co_await idem::async_unlock(*store_, std::move(args), asio::use_awaitable);
  if (auto s = settle_unlock(r); !s) co_return s;
  co_return r;
}

void ScopedLock::settle_extend(const Result<LockExtendOutcome>& r) {
  if (r && *r == LockExtendOutcome::not_owner) owns_ = false;  // lapsed: nothing left to release
}

Result<LockExtendOutcome> ScopedLock::extend(Duration ttl) {
  if (!owns_) return LockExtendOutcome::not_owner;
  auto r = store_->extend_lock(LockArgs{name_, owner_, ttl});
  settle_extend(r);
  return r;
}

asio::awaitable<Result<LockExtendOutcome>> ScopedLock::async_extend(Duration ttl) {
  if (!owns_) co_return LockExtendOutcome::not_owner;
  LockArgs args{name_, owner_, ttl};
  auto r = co_await idem::async_extend_lock(*store_, std::move(args), asio::use_awaitable);
  settle_extend(r);
  co_return r;
}

}  // namespace idem
