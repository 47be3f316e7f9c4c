#include "engine/renewal.h"

#include <algorithm>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>

#include "util/asio_tokens.h"

namespace idem {
namespace asio = boost::asio;

struct Renewal::State {
  State(const asio::any_io_executor& ex, Duration e, Renew r, std::function<void()> l)
      : timer(ex),
        every(std::max<Duration>(e, std::chrono::milliseconds(1))),
        renew(std::move(r)),
        on_lost(std::move(l)) {}
  asio::steady_timer timer;  // touched on its executor only
  const Duration every;
  const Renew renew;
  const std::function<void()> on_lost;
  std::atomic<bool> stopped{false};
};

Renewal Renewal::start(const asio::any_io_executor& ex, Duration every, Renew renew,
                       std::function<void()> on_lost) {
  Renewal r;
  r.state_ = std::make_shared<State>(ex, every, std::move(renew), std::move(on_lost));
  // On the executor, as everything that touches the timer.
  asio::dispatch(ex, [s = r.state_] { arm(s); });
  return r;
}

void Renewal::arm(const std::shared_ptr<State>& s) {
  if (s->stopped.load()) return;
  s->timer.expires_after(s->every);
  s->timer.async_wait([s](const boost::system::error_code& ec) {
    if (ec || s->stopped.load()) return;
    asio::co_spawn(s->timer.get_executor(), renew_due(s), asio::detached);
  });
}

asio::awaitable<void> Renewal::renew_due(std::shared_ptr<State> s) {
  for (;;) {
    const Renewed r = co_await s->renew();
    if (s->stopped.load()) co_return;  // the work ended meanwhile: what follows it decides
    if (r == Renewed::lost) {
      if (s->on_lost) s->on_lost();
      co_return;
    }
    s->timer.expires_after(s->every);
    // Cancelled when the work is done, which is how almost every renewal ends: told by the
    // error code, since a thrown exception costs more than the rest of a short request.
    auto [ec] = co_await s->timer.async_wait(util::kUseTuple);
    if (ec || s->stopped.load()) co_return;
  }
}

void Renewal::stop() noexcept {
  std::shared_ptr<State> s = std::exchange(state_, nullptr);
  if (!s) return;
  s->stopped.store(true);
  // At once when called on the timer's executor (the work's own coroutine), else posted.
  asio::dispatch(s->timer.get_executor(), [s] { s->timer.cancel(); });
}

Renewal& Renewal::operator=(Renewal&& o) noexcept {
  if (this != &o) {
    stop();
    state_ = std::move(o.state_);
  }
  return *this;
}

}  // namespace idem
