// The in-process registry of requests waiting for the first request with the same key
// (docs/gateway.md, "Duplicates in flight"): the holder notifies the key when it
// commits or releases, so a waiter on this instance wakes at once instead of at its next
// poll. Waiters for holders on other instances rely on polling alone.
// Safe for concurrent use.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <boost/asio/steady_timer.hpp>

namespace idem::gateway {

class Waiters {
 public:
  // One waiter: a timer on the waiting coroutine's executor, cancelled on notify.
  struct Waiter {
    explicit Waiter(const boost::asio::any_io_executor& ex) : timer(ex) {}
    boost::asio::steady_timer timer;
    std::atomic<bool> notified{false};
  };

  // Registers a waiter for (scope, key) until the returned handle is destroyed. Register
  // before asking the store, so a notify between the store's answer and the wait is kept.
  class Registration {
   public:
    Registration(Waiters& w, std::string id, std::shared_ptr<Waiter> waiter);
    ~Registration();
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    Waiter& waiter() { return *waiter_; }

   private:
    Waiters& owner_;
    std::string id_;
    std::shared_ptr<Waiter> waiter_;
  };

  std::unique_ptr<Registration> add(std::string_view scope, std::string_view key,
                                    const boost::asio::any_io_executor& ex);

  // Wakes every waiter of (scope, key): the record was committed or released.
  void notify(std::string_view scope, std::string_view key);

 private:
  std::mutex mu_;
  std::multimap<std::string, std::shared_ptr<Waiter>> waiting_;  // guarded by mu_
};

}  // namespace idem::gateway
