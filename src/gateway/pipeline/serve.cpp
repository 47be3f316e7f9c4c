// The client listener's handler (http/handler.h): from a checked request head to its answer,
// in the order docs/http.md, "Every problem", gives, cheapest first. Built-in endpoints,
// then the configured routes: no route → relayed; a head the route rejects → answered
// without reading the body; a request forwarded as it is → relayed; else the body is read
// within max_body and the request is protected (gateway.cpp).
#include <chrono>
#include <memory>
#include <optional>

#include "gateway/http/header_fields.h"
#include "gateway/model/method_override.h"
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
  const Route* as_sent = match ? match->route : nullptr;
  // Another route on this path, which a method override could reach at the service
  // (docs/gateway.md, "Method overrides"): one in the head is refused here, one in a form
  // body once the body is read.
  const std::optional<std::uint64_t> overridable =
      override_body_limit(config->routes, as_sent, head.target());
  if (!match && !overridable) co_return co_await relay(exchange, nullptr, config->defaults.upstream_timeout);

  // Cheap checks first: nothing is read or claimed for a request rejected on its head.
  const bool keep_alive = exchange.keep_alive() && exchange.body_done();
  // Views into the head's fields, which stay where they are when the head moves into the
  // parser that reads the body (Beast moves its list of fields, not the fields): identify()
  // reads them again with the body.
  const auto fields = header_fields(head);
  if (overridable)
    if (auto r = refuse_method_override(config->routes, as_sent,
                                        RequestView{head.method_string(), head.target(), fields, {}}))
      co_return Answer{reject_early(*r->route, head, exchange.meta(), r->rejection, keep_alive)};
  if (!match) co_return co_await pass(exchange, *config, nullptr, fields, overridable);

  const Route& route = *match->route;
  Decision decision = check_head(route, RequestView{head.method_string(), head.target(), fields, {}});
  if (decision.verdict == Verdict::reject)
    co_return Answer{reject_early(route, head, exchange.meta(), decision.rejection, keep_alive)};
  // Forwarded as it is (no key on a `required: false` route): streamed, like a request on
  // no route.
  if (decision.verdict == Verdict::unprotected && route.key.kind != KeyRule::Kind::templated)
    co_return co_await pass(exchange, *config, &route, fields, overridable);
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
  const HttpRequest& req = *body.request;
  if (overridable)
    if (auto r = refuse_method_override(config->routes, &route,
                                        RequestView{req.method_string(), req.target(), fields, req.body()}))
      co_return Answer{reject_early(route, req, exchange.meta(), r->rejection, req.keep_alive())};
  co_return co_await protect(*match, req, fields, std::move(decision), exchange.meta());
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

awaitable<std::optional<Answer>> Gateway::pass(HttpExchange& exchange, const Config& config,
                                               const Route* route, std::span<const HeaderField> fields,
                                               std::optional<std::uint64_t> overridable) {
  const Duration timeout = route ? route->policy.upstream_timeout : config.defaults.upstream_timeout;
  if (!overridable || !body_may_override(fields)) co_return co_await relay(exchange, route, timeout);
  const auto t0 = std::chrono::steady_clock::now();
  BodyRead body = co_await exchange.read_body(*overridable);
  if (body.client_gone) co_return std::nullopt;
  if (body.refusal) co_return Answer{std::move(*body.refusal)};
  const HttpRequest& req = *body.request;
  if (auto r = refuse_method_override(config.routes, route,
                                      RequestView{req.method_string(), req.target(), fields, req.body()}))
    co_return Answer{reject_early(*r->route, req, exchange.meta(), r->rejection, req.keep_alive())};
  Reply reply = co_await forward_unprotected(route, timeout, req, exchange.meta(), false);
  if (route)
    count_unprotected(*route, req.method_string(), req.target(), exchange.meta(), reply.response.result_int(),
                      since(t0));
  co_return Answer{std::move(reply.response), std::move(reply.tail)};
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
  UpstreamClient* upstream = upstream_of(route);
  if (!upstream) {
    // No default upstream (docs/gateway.md, "Several services behind one gateway"): the body is
    // not read, so the connection closes after the answer.
    const http::request_header<>& head = exchange.head();
    co_return Answer{problem_response(Problem::upstream_unavailable,
                                      "no upstream to forward to: this request matches no route naming one, "
                                      "and there is no default upstream",
                                      head.version(), false)};
  }
  std::optional<Answer> answer = co_await exchange.relay(*upstream, timeout);
  metrics_.observe_upstream(upstream_label(route), since(t0));
  if (answer && route)
    count_unprotected(*route, method, target, exchange.meta(), answer->response.result_int(), since(t0));
  co_return answer;
}

}  // namespace idem::gateway
