// The one renewal loop (docs/design.md, "One claim runner"): a lease kept alive while work runs, for
// a claim of the claim runner, a claim of a blocking Guard caller and a lock of the
// gateway's lock mode alike. Every `every`, on `ex`, `renew` asks the store to extend the
// lease; when it answers that the lease was lost (taken over or removed), `on_lost` runs
// once and the renewal ends, as there is nothing left to keep. A store that fails is asked
// again at the next turn. Most work ends before its first renewal is due, so until then a
// renewal is one timer, and a coroutine runs only once one is due.
#pragma once

#include <atomic>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "idem/clock.h"

namespace idem {

class Renewal {
 public:
  enum class Renewed { kept, lost, failed };

  // Where start() and stop() are called: on `ex`'s own thread (a coroutine that awaits its
  // work there: the timer is touched at once), or on another (each touch is posted to `ex`).
  enum class Caller { on_executor, elsewhere };

  Renewal() = default;  // renews nothing
  // Starts renewing on `ex`: `renew()` returns an awaitable<Renewed>; `on_lost()` returns
  // nothing. Both run on `ex`, and not after stop() (a store call in flight then finishes,
  // but its answer is not acted on): whatever they use must outlive the renewal's last
  // call, not only the Renewal. One allocation, for both and the timer.
  template <class Renew, class OnLost>
  static Renewal start(const boost::asio::any_io_executor& ex, Caller caller, Duration every, Renew renew,
                       OnLost on_lost) {
    Renewal r;
    r.state_ =
        std::make_shared<StateOf<Renew, OnLost>>(ex, caller, every, std::move(renew), std::move(on_lost));
    begin(r.state_);
    return r;
  }

  Renewal(Renewal&& o) noexcept : state_(std::move(o.state_)) {}
  Renewal& operator=(Renewal&& o) noexcept;  // stops this one first
  Renewal(const Renewal&) = delete;
  Renewal& operator=(const Renewal&) = delete;
  ~Renewal() { stop(); }

  // Ends the renewal. From any thread; idempotent.
  void stop() noexcept;

 private:
  struct State {
    State(const boost::asio::any_io_executor& ex, Caller c, Duration e);
    virtual ~State() = default;
    virtual boost::asio::awaitable<Renewed> renew() = 0;
    virtual void on_lost() = 0;
    boost::asio::steady_timer timer;  // touched on its executor only
    const Caller caller;
    const Duration every;
    std::atomic<bool> stopped{false};
  };
  template <class Renew, class OnLost>
  struct StateOf final : State {
    StateOf(const boost::asio::any_io_executor& ex, Caller c, Duration e, Renew r, OnLost l)
        : State(ex, c, e), renew_(std::move(r)), on_lost_(std::move(l)) {}
    boost::asio::awaitable<Renewed> renew() override { return renew_(); }
    void on_lost() override { on_lost_(); }
    Renew renew_;
    OnLost on_lost_;
  };
  static void begin(const std::shared_ptr<State>& s);
  static void arm(const std::shared_ptr<State>& s);
  static boost::asio::awaitable<void> renew_due(std::shared_ptr<State> s);
  std::shared_ptr<State> state_;
};

}  // namespace idem
