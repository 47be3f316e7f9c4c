#include "gateway/pipeline/coalescer.h"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/pipeline/local_key.h"
#include "util/asio_tokens.h"

namespace idem::gateway {
namespace asio = boost::asio;

struct Coalescer::Flight {
  std::string id;
  std::string fingerprint;
  std::mutex mu;
  bool done = false;                                         // guarded by mu
  Outcome outcome;                                           // guarded by mu
  std::vector<std::shared_ptr<asio::steady_timer>> waiting;  // guarded by mu
};

Coalescer::Lead& Coalescer::Lead::operator=(Lead&& o) noexcept {
  if (this != &o) {
    publish(nullptr);
    owner_ = o.owner_;
    flight_ = std::move(o.flight_);
    o.owner_ = nullptr;
  }
  return *this;
}

void Coalescer::Lead::publish(Outcome outcome) {
  if (!flight_) return;
  owner_->finish(flight_, std::move(outcome));
  flight_.reset();
}

Coalescer::Joined Coalescer::join(std::string_view scope, std::string_view key,
                                  std::string_view fingerprint) {
  std::string id = local_key(scope, key);
  std::lock_guard lock(mu_);
  auto [it, fresh] = flights_.try_emplace(std::move(id));
  if (fresh) {
    auto f = std::make_shared<Flight>();
    f->id = it->first;
    f->fingerprint = std::string(fingerprint);
    it->second = f;
    return Joined{Lead(this, std::move(f)), nullptr};
  }
  if (it->second->fingerprint != fingerprint) return {};
  return Joined{Lead(), it->second};
}

void Coalescer::finish(const std::shared_ptr<Flight>& f, Outcome outcome) {
  {
    std::lock_guard lock(mu_);
    auto it = flights_.find(f->id);
    if (it != flights_.end() && it->second == f) flights_.erase(it);
  }
  std::vector<std::shared_ptr<asio::steady_timer>> waiting;
  {
    std::lock_guard lock(f->mu);
    f->done = true;
    f->outcome = std::move(outcome);
    waiting.swap(f->waiting);
  }
  // Each timer belongs to its follower's executor (one thread per io_context): cancel it
  // there. The follower started waiting in the handler that registered it, so the cancel
  // runs after the wait began.
  for (auto& t : waiting) asio::post(t->get_executor(), [t] { t->cancel(); });
}

asio::awaitable<std::optional<Coalescer::Outcome>> Coalescer::wait(
    std::shared_ptr<Flight> f, std::chrono::steady_clock::time_point until) {
  auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, until);
  {
    std::lock_guard lock(f->mu);
    if (f->done) co_return f->outcome;
    f->waiting.push_back(timer);
  }
  following_.fetch_add(1, std::memory_order_relaxed);
  (void)co_await timer->async_wait(util::kUseTuple);
  following_.fetch_sub(1, std::memory_order_relaxed);
  std::lock_guard lock(f->mu);
  if (f->done) co_return f->outcome;
  std::erase(f->waiting, timer);  // timed out: a long flight keeps no dead timers
  co_return std::nullopt;
}

std::size_t Coalescer::in_flight() const {
  std::lock_guard lock(mu_);
  return flights_.size();
}

}  // namespace idem::gateway
