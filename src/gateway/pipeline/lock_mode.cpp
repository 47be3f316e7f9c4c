// Lock mode (docs/http.md, "409 locked"): an owner-checked lock held while the upstream
// works, renewed beside the exchange, opened when the service answered or never got the
// request, and left to its lease otherwise.
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/pipeline/gateway.h"
#include "gateway/pipeline/gateway_parts.h"
#include "idem/async.h"
#include "util/asio_tokens.h"

namespace idem::gateway {
namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using Steady = std::chrono::steady_clock;

awaitable<Gateway::Reply> Gateway::lock_mode(const Route& route, const Identity& id, const HttpRequest& req,
                                             const RequestMeta& meta) {
  const Policy& p = route.policy;
  const std::string name = id.scope.empty() ? id.record_key : id.scope + "\n" + id.record_key;
  const std::string owner = runner_.next_owner();
  LockArgs args{name, owner, p.lease};
  auto call = async_lock(store_, std::move(args), use_awaitable);
  Result<LockOutcome> r = co_await observe("lock", std::move(call));
  if (!r) co_return co_await store_failed(route, req, meta, r.status());
  if (r->kind == LockOutcome::Kind::busy)
    co_return problem(req, Problem::locked, "another request holds this key", r->retry_after);

  const ForwardRequest fwd = forward_with_claim(req, meta, id.key, r->fence);
  UpstreamResult up = co_await exchange_locked(fwd, route, name, owner);
  if (up.kind == UpstreamResult::Kind::response || up.kind == UpstreamResult::Kind::refused) {
    // The service answered, or never got the request: the work is over, the lock opens.
    UnlockArgs unlock{name, owner};
    auto ucall = async_unlock(store_, std::move(unlock), use_awaitable);
    Result<UnlockOutcome> u = co_await observe("unlock", std::move(ucall));
    if (u && *u == UnlockOutcome::not_owner) metrics_.count_store_conflict();
  }
  // Otherwise (a timeout, a broken connection) the service may still be working: the lock
  // runs out on its lease, never earlier (docs/http.md, "409 locked").
  if (up.kind == UpstreamResult::Kind::refused)
    co_return problem(req, Problem::upstream_unavailable, "the upstream is unavailable: " + up.error);
  if (up.kind != UpstreamResult::Kind::response)
    co_return problem(req, failure_problem(up.kind), "the upstream did not answer: " + up.error);
  co_return forwarded(req, std::move(up), "forwarded");
}

awaitable<UpstreamResult> Gateway::exchange_locked(const ForwardRequest& fwd, const Route& route,
                                                   const std::string& name, const std::string& owner) {
  using namespace asio::experimental::awaitable_operators;
  const auto t0 = Steady::now();
  auto exchange = upstream_.exchange(fwd, route.policy.upstream_timeout, kStreamedPrefix);
  auto renewal = renew_lock(route, name, owner);
  auto both = co_await (std::move(exchange) || std::move(renewal));
  metrics_.observe_upstream(since(t0));
  if (both.index() == 0) co_return std::get<0>(std::move(both));
  UpstreamResult r;
  r.kind = UpstreamResult::Kind::broken;
  r.error = "interrupted";
  co_return r;
}

awaitable<void> Gateway::renew_lock(const Route& route, const std::string& name, const std::string& owner) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const Duration lease = route.policy.lease;
  for (bool lost = false;;) {
    timer.expires_after(lease / 3);
    auto [ec] = co_await timer.async_wait(util::kUseTuple);
    if (ec) co_return;  // the exchange finished
    if (lost) continue;
    LockArgs args{name, owner, lease};
    auto call = async_extend_lock(store_, std::move(args), use_awaitable);
    Result<LockExtendOutcome> r = co_await observe("extend_lock", std::move(call));
    if (r && *r == LockExtendOutcome::not_owner) {
      lost = true;
      metrics_.count_store_conflict();
    }
    auto cs = co_await asio::this_coro::cancellation_state;
    if (cs.cancelled() != asio::cancellation_type::none) co_return;
  }
}

// The client learns that the store failed, never its address or error: observe() logged those.
}  // namespace idem::gateway
