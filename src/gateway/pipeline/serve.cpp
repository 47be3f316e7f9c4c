// The client listener's handler (http/handler.h): from a checked request head to its answer,
// in the order docs/http.md, "Every problem", gives, cheapest first. Built-in endpoints,
// then the configured routes: no route → relayed; a head the route rejects → answered
// without reading the body; a request forwarded as it is → relayed; else the body is read
// within max_body and the request is protected (gateway.cpp).
#include <chrono>
#include <memory>
#include <optional>

#include "gateway/http/header_fields.h"
#include "gateway/pipeline/gateway.h"
#include "gateway/pipeline/gateway_parts.h"

namespace idem::gateway {
using boost::asio::awaitable;

namespace {

// POST /_idem/tokens takes no body; a small one is read and ignored.
constexpr std::uint64_t kTokenBodyLimit = 4096;

}  // namespace

awaitable<std::optional<Answer>> Gateway::serve(HttpExchange& exchange) {
  const http::request_header<>& head = exchange.head();
  // Held until the answer: the route matched stays valid across a reload.
  const std::shared_ptr<const Config> config = this->config();
  // The gateway's own endpoint, matched by exact method and path before any configured
  // route, and only where some route takes its tokens (docs/http.md, "One-time tokens"):
  // elsewhere the path is the upstream's.
  if (head.method() == http::verb::post && target_path(head.target()) == config->tokens.path &&
      config->issues_tokens())
    co_return co_await serve_tokens(exchange, *config);

  auto match = match_route(config->routes, head.method_string(), head.target());
  if (!match) co_return co_await relay(exchange, nullptr, config->defaults.upstream_timeout);

  // Cheap checks first: nothing is read or claimed for a request rejected on its head.
  const Route& route = *match->route;
  const bool keep_alive = exchange.keep_alive() && exchange.body_done();
  // Views into the head's fields, which stay where they are when the head moves into the
  // parser that reads the body (Beast moves its list of fields, not the fields): identify()
  // reads them again with the body.
  const auto fields = header_fields(head);
  Decision decision = check_head(route, RequestView{head.method_string(), head.target(), fields, {}});
  if (decision.verdict == Verdict::reject)
    co_return Answer{reject_early(route, head, exchange.meta(), decision.rejection, keep_alive)};
  // Forwarded as it is (no key on a `required: false` route): streamed, like a request on
  // no route.
  if (decision.verdict == Verdict::unprotected && route.key.kind != KeyRule::Kind::templated)
    co_return co_await relay(exchange, &route, route.policy.upstream_timeout);
  if (auto length = exchange.content_length())
    if (auto r = check_body_size(route, *length))
      co_return Answer{reject_early(route, head, exchange.meta(), *r, keep_alive)};

  BodyRead body = co_await exchange.read_body(route.policy.max_body);
  if (body.client_gone) co_return std::nullopt;
  if (body.too_large) {
    // A body over max_body is counted and logged as the route's problem.
    auto r = check_body_size(route, route.policy.max_body + 1);
    co_return Answer{reject_early(route, exchange.head(), exchange.meta(), *r, false)};
  }
  if (body.refusal) co_return Answer{std::move(*body.refusal)};
  co_return co_await protect(*match, *body.request, fields, std::move(decision), exchange.meta());
}

RequestMeta Gateway::meta(const http::request_header<>& head, std::string_view peer) const {
  const std::shared_ptr<const Config> config = this->config();
  return request_meta(head, peer, config->trusted_proxies.empty() ? nullptr : &config->trusted_proxies);
}

awaitable<std::optional<Answer>> Gateway::serve_tokens(HttpExchange& exchange, const Config& config) {
  BodyRead body = co_await exchange.read_body(kTokenBodyLimit);
  if (body.client_gone) co_return std::nullopt;
  if (body.refusal) co_return Answer{std::move(*body.refusal)};
  co_return Answer{co_await issue_token(*body.request, exchange.meta(), config)};
}

awaitable<std::optional<Answer>> Gateway::relay(HttpExchange& exchange, const Route* route,
                                                Duration timeout) {
  const auto t0 = std::chrono::steady_clock::now();
  // The head moves to the forwarded request: what the log line of a route's request names
  // is kept first.
  std::string method, target;
  if (route) {
    method = exchange.head().method_string();
    target = exchange.head().target();
  }
  std::optional<Answer> answer = co_await exchange.relay(upstream_, timeout);
  metrics_.observe_upstream(since(t0));
  if (answer && route)
    count_unprotected(*route, method, target, exchange.meta(), answer->response.result_int(), since(t0));
  co_return answer;
}

}  // namespace idem::gateway
