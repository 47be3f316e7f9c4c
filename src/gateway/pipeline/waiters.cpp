#include "gateway/pipeline/waiters.h"

#include <boost/asio/post.hpp>

#include "gateway/pipeline/local_key.h"

namespace idem::gateway {

Waiters::Registration::Registration(Waiters& w, std::string i, std::shared_ptr<Waiter> waiter)
    : owner_(w), id_(std::move(i)), waiter_(std::move(waiter)) {}

Waiters::Registration::~Registration() {
  std::lock_guard lock(owner_.mu_);
  auto [b, e] = owner_.waiting_.equal_range(id_);
  for (auto it = b; it != e; ++it)
    if (it->second == waiter_) {
      owner_.waiting_.erase(it);
      break;
    }
}

std::unique_ptr<Waiters::Registration> Waiters::add(std::string_view scope, std::string_view key,
                                                    const boost::asio::any_io_executor& ex) {
  auto waiter = std::make_shared<Waiter>(ex);
  std::string i = local_key(scope, key);
  {
    std::lock_guard lock(mu_);
    waiting_.emplace(i, waiter);
  }
  return std::make_unique<Registration>(*this, std::move(i), std::move(waiter));
}

void Waiters::notify(std::string_view scope, std::string_view key) {
  std::lock_guard lock(mu_);
  auto [b, e] = waiting_.equal_range(local_key(scope, key));
  for (auto it = b; it != e; ++it) {
    it->second->notified.store(true, std::memory_order_release);
    // The timer belongs to the waiter's executor (a strand): cancel it there.
    boost::asio::post(it->second->timer.get_executor(), [w = it->second] { w->timer.cancel(); });
  }
}

}  // namespace idem::gateway
