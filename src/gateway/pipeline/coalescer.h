// Request coalescing (docs/gateway.md, "Duplicates in flight"): while one request with a key
// is in flight on this gateway, a duplicate (same key, same fingerprint) attaches to it and
// waits for its outcome without asking the store, as nginx's proxy_cache_lock or Go's
// singleflight do. The first request, the leader, asks the store and runs as before; when
// it is done it publishes what its duplicates should answer:
//   - a stored result (the response it committed, or the record it found done): they
//     replay it;
//   - nothing (it released its claim: a 5xx, an upstream that was not reached, a store
//     that failed): they go to the store themselves, and one of them may run again.
// Across gateways the store still decides: coalescing only saves the store calls of
// duplicates that meet on one instance. A request whose fingerprint differs from the
// leader's never attaches (the store answers it: mismatch or busy).
// Safe for concurrent use; a follower waits on its own executor.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

namespace idem::gateway {

class Coalescer {
 public:
  struct Flight;

  // What a leader publishes: the stored result its duplicates replay, or null (go to the
  // store).
  using Outcome = std::shared_ptr<const std::string>;

  // The first request's handle. Publishes once; one destroyed unpublished publishes null.
  class Lead {
   public:
    Lead() = default;
    Lead(Lead&& o) noexcept = default;
    Lead& operator=(Lead&& o) noexcept;
    ~Lead() { publish(nullptr); }
    explicit operator bool() const noexcept { return flight_ != nullptr; }
    // Wakes every follower with `outcome` and ends the flight: later arrivals lead anew.
    void publish(Outcome outcome);

   private:
    friend class Coalescer;
    Lead(Coalescer* owner, std::shared_ptr<Flight> f) : owner_(owner), flight_(std::move(f)) {}
    Coalescer* owner_ = nullptr;
    std::shared_ptr<Flight> flight_;
  };

  // Either a Lead (no flight for the key: this request leads one), or a flight to follow
  // (same key and fingerprint in flight), or neither (in flight with another fingerprint).
  struct Joined {
    Lead lead;
    std::shared_ptr<Flight> follow;
  };
  Joined join(std::string_view scope, std::string_view key, std::string_view fingerprint);

  // Waits for the flight's outcome until `until`: the outcome, or nullopt at the deadline.
  boost::asio::awaitable<std::optional<Outcome>> wait(std::shared_ptr<Flight> flight,
                                                      std::chrono::steady_clock::time_point until);

  std::size_t in_flight() const;  // flights led now
  // Followers waiting now, over all flights.
  std::size_t following() const noexcept { return following_.load(std::memory_order_relaxed); }

 private:
  void finish(const std::shared_ptr<Flight>& f, Outcome outcome);

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;  // guarded by mu_
  std::atomic<std::size_t> following_{0};
};

}  // namespace idem::gateway
