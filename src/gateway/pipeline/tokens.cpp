// POST tokens.path (docs/http.md, "One-time tokens"): a one-time token for the request's
// subject, within the bounds of tokens.per_client and tokens.max_live.
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "gateway/http/header_fields.h"
#include "gateway/pipeline/gateway.h"
#include "gateway/pipeline/gateway_parts.h"
#include "idem/async.h"

namespace idem::gateway {
using boost::asio::awaitable;
using boost::asio::use_awaitable;

awaitable<HttpResponse> Gateway::issue_token(const HttpRequest& req, const RequestMeta& meta,
                                             const Config& config) {
  // Scoped as the token routes scope the requests that spend it.
  ProblemOr<std::string> scope = subject_of(config.tokens.subject, header_fields(req));
  if (!scope)
    co_return problem_response(scope.problem(), scope.rejection().detail, req.version(), req.keep_alive());
  // Each token costs the store a row or key for its ttl: bounded per client and in all
  // before the store is asked (token_limits.h).
  if (const TokenLimiter::Verdict v = tokens_.take(meta.origin(), config.tokens.limits(), Steady::now());
      !v) {
    metrics_.count_token_refused();
    co_return problem_response(Problem::too_many_tokens,
                               v.refusal == TokenLimiter::Refusal::client
                                   ? "this client was issued too many tokens; retry after Retry-After seconds"
                                   : "too many unexpired tokens were issued; retry after Retry-After seconds",
                               req.version(), req.keep_alive(), v.retry_after);
  }
  IssueTokenArgs args{std::move(*scope), config.tokens.ttl};
  auto call = async_issue_token(store_, std::move(args), use_awaitable);
  Result<std::string> token = co_await observe("issue_token", std::move(call));
  if (!token)
    co_return problem_response(Problem::store_unavailable, "the idempotency store is unavailable",
                               req.version(), req.keep_alive(), Duration(1'000'000));
  metrics_.count_token_issued();
  boost::json::object o;
  o["token"] = *token;
  o["expires_in"] = std::chrono::duration_cast<std::chrono::seconds>(config.tokens.ttl).count();
  co_return json_response(http::status::created, boost::json::serialize(o), req.version(), req.keep_alive());
}

}  // namespace idem::gateway
