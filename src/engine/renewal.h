// The one renewal loop (docs/design.md, "One claim runner"): a lease kept alive while work runs, for
// a claim of the claim runner, a claim of a blocking Guard caller and a lock of the
// gateway's lock mode alike. Every `every`, on `ex`, `renew` asks the store to extend the
// lease; when it answers that the lease was lost (taken over or removed), `on_lost` runs
// once and the renewal ends, as there is nothing left to keep. A store that fails is asked
// again at the next turn. Most work ends before its first renewal is due, so until then a
// renewal is one timer, and a coroutine runs only once one is due.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "idem/clock.h"

namespace idem {

class Renewal {
 public:
  enum class Renewed { kept, lost, failed };
  using Renew = std::function<boost::asio::awaitable<Renewed>()>;

  Renewal() = default;  // renews nothing
  // Starts renewing on `ex`. `renew` and `on_lost` run on `ex`, and not after stop() (a
  // store call in flight then finishes, but its answer is not acted on): whatever they use
  // must outlive the renewal's last call, not only the Renewal.
  static Renewal start(const boost::asio::any_io_executor& ex, Duration every, Renew renew,
                       std::function<void()> on_lost);

  Renewal(Renewal&& o) noexcept : state_(std::move(o.state_)) {}
  Renewal& operator=(Renewal&& o) noexcept;  // stops this one first
  Renewal(const Renewal&) = delete;
  Renewal& operator=(const Renewal&) = delete;
  ~Renewal() { stop(); }

  // Ends the renewal. From any thread; idempotent.
  void stop() noexcept;

 private:
  struct State;
  static void arm(const std::shared_ptr<State>& s);
  static boost::asio::awaitable<void> renew_due(std::shared_ptr<State> s);
  std::shared_ptr<State> state_;
};

}  // namespace idem
