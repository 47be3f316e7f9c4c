// Lock mode (docs/http.md, "409 locked"): an owner-checked lock held while the upstream
// works, renewed beside the exchange, opened when the service answered or never got the
// request, and left to its lease otherwise.
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
  UpstreamClient* upstream = upstream_of(&route);
  if (!upstream) co_return no_upstream(req);
  const std::string name = id.scope.empty() ? id.record_key : id.scope + "\n" + id.record_key;
  const std::string owner = runner_.next_owner();
  LockArgs args{name, owner, p.lease};
  auto call = async_lock(store_, std::move(args), use_awaitable);
  Result<LockOutcome> r = co_await observe("lock", std::move(call));
  if (!r) co_return co_await store_failed(route, req, meta, r.status());
  if (r->kind == LockOutcome::Kind::busy)
    co_return problem(req, Problem::locked, "another request holds this key", r->retry_after);

  const ForwardRequest fwd = forward_with_claim(*upstream, req, meta, id.key, r->fence);
  UpstreamResult up = co_await exchange_locked(*upstream, fwd, route, name, owner);
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

awaitable<UpstreamResult> Gateway::exchange_locked(UpstreamClient& upstream, const ForwardRequest& fwd,
                                                   const Route& route, const std::string& name,
                                                   const std::string& owner) {
  const auto t0 = Steady::now();
  UpstreamResult up;
  {
    const asio::any_io_executor ex = co_await asio::this_coro::executor;
    const Renewal renewal = renew_lock(ex, route.policy.lease, name, owner);
    auto exchange = upstream.exchange(fwd, route.policy.upstream_timeout, kStreamedPrefix);
    up = co_await std::move(exchange);
  }
  metrics_.observe_upstream(upstream_label(&route), since(t0));
  co_return up;
}

Renewal Gateway::renew_lock(const asio::any_io_executor& ex, Duration lease, const std::string& name,
                            const std::string& owner) {
  auto renew = [this, args = LockArgs{name, owner, lease}]() -> awaitable<Renewal::Renewed> {
    LockArgs sent = args;
    auto call = async_extend_lock(store_, std::move(sent), use_awaitable);
    Result<LockExtendOutcome> r = co_await observe("extend_lock", std::move(call));
    if (!r) co_return Renewal::Renewed::failed;
    co_return *r == LockExtendOutcome::not_owner ? Renewal::Renewed::lost : Renewal::Renewed::kept;
  };
  return Renewal::start(ex, Renewal::Caller::on_executor, lease / 3, std::move(renew),
                        [this] { metrics_.count_store_conflict(); });
}

// The client learns that the store failed, never its address or error: observe() logged those.
}  // namespace idem::gateway
