#include "gateway/pipeline/gateway.h"
#include "gateway/model/forwarding.h"

#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/string.hpp>

#include "gateway/model/answer_rule.h"
#include "gateway/model/jsonrpc.h"
#include "gateway/model/reply_plan.h"
#include "gateway/model/request_meta.h"
#include "gateway/model/request_view.h"
#include "gateway/model/stored_result.h"
#include "gateway/model/upstream_end.h"
#include "gateway/pipeline/gateway_parts.h"
#include "idem/async.h"
#include "util/asio_tokens.h"

namespace idem::gateway {
namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using Steady = std::chrono::steady_clock;

namespace {

// How often a waiter asks the store again, for holders on other instances.
constexpr auto kPollInterval = std::chrono::milliseconds(200);
// The upstream's response as its record keeps it (StoredResult codec).
std::string stored_response(const HttpResponse& res) {
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  fields.reserve(16);
  for (const auto& f : res) fields.emplace_back(f.name_string(), f.value());
  return encode_response(res.result_int(), fields, res.body());
}

// The record of an uncertain outcome, as the claim runner stores it (StoredResult codec).
std::string_view uncertain_marker() {
  static const std::string marker = [] {
    StoredResult r;
    r.kind = StoredResult::Kind::uncertain;
    return encode(r);
  }();
  return marker;
}

// Whether the service asked for its answer not to be kept (kReleaseHeader: true), and the
// field removed, so that neither the record nor the client sees it.
bool take_release_request(HttpResponse& res) {
  bool asked = false;
  const auto [first, last] = res.equal_range(kReleaseHeader);
  for (auto it = first; it != last; ++it) asked = asked || boost::beast::iequals(it->value(), "true");
  res.erase(kReleaseHeader);
  return asked;
}

bool is_event_stream(const HttpResponse& res) {
  const auto type = res.find(http::field::content_type);
  return type != res.end() && has_media_type(type->value(), "text/event-stream");
}

// A body in a Content-Encoding (gzip...) is not JSON text its `id` could be replaced in.
bool is_encoded(const HttpResponse& res) {
  const auto coding = res.find(http::field::content_encoding);
  return coding != res.end() && !boost::beast::iequals(coding->value(), "identity");
}

// A refusal of the gateway's own on a JSON-RPC route as the JSON-RPC error MCP clients read
// (docs/configuration.md, "JSON-RPC routes"): HTTP 200, the problem+json object as
// `error.data`, Retry-After kept.
HttpResponse as_jsonrpc_error(HttpResponse problem, Problem p, std::string_view id) {
  const int code = p == Problem::body_invalid ? kJsonRpcInvalidRequest : kJsonRpcGatewayError;
  std::string body = jsonrpc_error(id, code, problem_title(p), problem.body());
  problem.result(http::status::ok);
  problem.set(http::field::content_type, "application/json");
  problem.body() = std::move(body);
  problem.prepare_payload();
  return problem;
}

ClaimPolicy claim_policy(const Policy& p) {
  return ClaimPolicy{p.lease, p.retention, true, p.on_uncertain, uncertain_marker()};
}

}  // namespace

UpstreamClient* Gateway::upstream_of(const Route* route) const { return upstreams_.of(*config(), route); }

Gateway::Reply Gateway::no_upstream(const HttpRequest& req) const {
  return problem(
      req, Problem::upstream_unavailable,
      "no upstream to forward to: this request matches no route naming one, and there is no default "
      "upstream");
}

ForwardRequest Gateway::forward_with_claim(const UpstreamClient& upstream, const HttpRequest& req,
                                           const RequestMeta& meta, std::string_view key, Fence fence) const {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, fence).ptr;
  const std::array<std::pair<std::string_view, std::string_view>, 2> set{
      {{"Idempotency-Key", key},
       {kFenceHeader, std::string_view(digits, static_cast<std::size_t>(end - digits))}}};
  return forward_over(upstream, req, meta, set);
}

ForwardRequest Gateway::forward_over(const UpstreamClient& upstream, const HttpRequest& req,
                                     const RequestMeta& meta, SetFields set) const {
  ForwardRequest fwd = forward_request(req, upstream.url(), meta, set);
  if (meta.tls) forwarded_over_tls(fwd.head, meta.trusted_peer && !req[kForwardedProtoHeader].empty());
  return fwd;
}

Gateway::Gateway(const Config& config, Store& store, Upstreams& upstreams, Metrics& metrics,
                 std::shared_ptr<const Clock> clock, std::string_view key_hash_secret,
                 std::string_view principal_secret)
    : config_(std::make_shared<const Config>(config)),
      store_(store),
      upstreams_(upstreams),
      metrics_(metrics),
      cache_(store, {config.replay_cache.max_bytes, config.replay_cache.shared_ttl}, std::move(clock)),
      runner_(store, ClaimHooks{
                         .settled = [this](const std::string& scope,
                                           const std::string& key) { waiters_.notify(scope, key); },
                         .observed = [this](const char* op, Duration latency,
                                            const Status& status) { observed(op, latency, status); },
                         .conflict = [this] { metrics_.count_store_conflict(); },
                     }),
      key_hasher_(key_hash_secret),
      principal_binder_(principal_secret) {}

void Gateway::observed(const char* op, Duration latency, const Status& status) {
  metrics_.observe_store(op, latency);
  if (!status.is_ok()) {
    metrics_.count_store_error();
    std::fprintf(stderr, "idem: store %s failed: %s\n", op, status.to_string().c_str());
  }
}

Gateway::Reply Gateway::problem(const HttpRequest& req, Problem p, std::string_view detail,
                                std::optional<Duration> retry_after) const {
  return {problem_response(p, detail, req.version(), req.keep_alive(), retry_after),
          problem_metric_name(p),
          {},
          p};
}

HttpResponse Gateway::reject_early(const Route& route, const http::request_header<>& req,
                                   const RequestMeta& meta, const Rejection& r, bool keep_alive) {
  auto res = problem_response(r.problem, r.detail, req.version(), keep_alive);
  metrics_.count_request(route.name, problem_metric_name(r.problem));
  log(route, nullptr, req.method_string(), req.target(), meta, problem_metric_name(r.problem),
      res.result_int(), Duration{});
  return res;
}

awaitable<Answer> Gateway::protect(const RouteMatch& match, const HttpRequest& req,
                                   std::span<const HeaderField> fields, Decision head,
                                   const RequestMeta& meta) {
  const auto t0 = Steady::now();
  const Route& route = *match.route;
  const RequestView view{req.method_string(), req.target(), fields, req.body()};
  Decision d = identify(route, match.params, view, std::move(head));
  // Whose the record is travels in its fingerprint (principal.h): another principal's
  // begin is then answered `mismatch` by the store, in every state of the record.
  if (d.verdict == Verdict::protect && route.mode == Mode::replay)
    d.identity.fingerprint = principal_binder_.bind(std::move(d.identity.fingerprint), d.identity.principal);

  Reply reply;
  if (d.verdict == Verdict::reject) {
    reply = problem(req, d.rejection.problem, d.rejection.detail);
  } else if (d.verdict == Verdict::unprotected) {
    reply = co_await forward_unprotected(&route, route.policy.upstream_timeout, req, meta, false);
  } else if (route.mode == Mode::lock) {
    reply = co_await lock_mode(route, d.identity, req, meta);
  } else {
    // Up to the claim, then the work: one after the other, so the upstream exchange is
    // awaited few frames deep (docs/gateway-internals.md).
    Claimed c = co_await replay_mode(route, d.identity, req, meta);
    if (c.reply) {
      reply = std::move(*c.reply);
    } else {
      const ClaimPolicy policy = claim_policy(route.policy);
      reply = co_await run_claimed(route, d.identity, req, meta, *c.claim, policy, c.lead);
    }
  }
  if (reply.problem && !d.identity.jsonrpc_id.empty())
    reply.response = as_jsonrpc_error(std::move(reply.response), *reply.problem, d.identity.jsonrpc_id);
  metrics_.count_request(route.name, reply.outcome);
  log(route, d.verdict == Verdict::protect ? &d.identity : nullptr, req.method_string(), req.target(), meta,
      reply.outcome, reply.response.result_int(), since(t0));
  co_return Answer{std::move(reply.response), std::move(reply.tail)};
}

void Gateway::count_unprotected(const Route& route, std::string_view method, std::string_view target,
                                const RequestMeta& meta, unsigned status, Duration latency) {
  metrics_.count_request(route.name, "unprotected");
  log(route, nullptr, method, target, meta, "unprotected", status, latency);
}

awaitable<Gateway::Claimed> Gateway::replay_mode(const Route& route, Identity& id, const HttpRequest& req,
                                                 const RequestMeta& meta) {
  const Policy& p = route.policy;
  const auto wait_until = Steady::now() + p.wait;
  if (auto hit = cache_.get(id.scope, id.record_key, id.fingerprint))
    co_return Claimed{answer_replay(route, id, req, *hit, false)};
  // A duplicate of a request in flight here waits for its outcome without asking the store
  // (docs/gateway.md, "Duplicates in flight"). With wait 0 a duplicate is answered at once,
  // by the store.
  Coalescer::Lead lead;
  bool waited = false;
  while (p.wait > Duration::zero()) {
    Coalescer::Joined j = coalescer_.join(id.scope, id.record_key, id.fingerprint);
    if (j.lead) {
      lead = std::move(j.lead);
      // A leader that finished between this request's cache lookup and its join left its
      // result in the cache.
      if (auto hit = cache_.get(id.scope, id.record_key, id.fingerprint))
        co_return Claimed{answer_replay(route, id, req, *hit, waited)};
      break;
    }
    if (!j.follow) break;  // in flight with another fingerprint: the store answers
    std::optional<Coalescer::Outcome> o = co_await coalescer_.wait(std::move(j.follow), wait_until);
    waited = true;
    if (!o) break;  // the deadline passed: the store says how long the holder may still take
    if (*o) co_return Claimed{answer_replay(route, id, req, **o, true)};
    // The leader gave its claim back (a 5xx, a failure): lead or follow anew.
  }
  co_return co_await claim_from_store(route, id, req, meta, wait_until, waited, std::move(lead));
}

awaitable<Gateway::Claimed> Gateway::claim_from_store(const Route& route, Identity& id,
                                                      const HttpRequest& req, const RequestMeta& meta,
                                                      Steady::time_point wait_until, bool waited,
                                                      Coalescer::Lead lead) {
  const ClaimPolicy policy = claim_policy(route.policy);
  // Registered on the first in_progress, then the store is asked again before waiting, so a
  // commit between the store's answer and the registration is not missed.
  std::unique_ptr<Waiters::Registration> reg;
  const std::string owner = runner_.next_owner();  // one per request, also across waits
  int rereads = 0;                                 // mismatches read back whose record was gone by then
  // The request's own (bound) fingerprint while it answers as one without credentials, to
  // an unbound record's (as_unbound below); empty otherwise.
  std::string bound;
  for (;;) {
    // Taken before the begin is sent, for a replay the store answers: see below.
    const ReplayCache::Ticket ticket = cache_.ticket();
    Acquired a = co_await runner_.acquire(id.scope, id.record_key, id.fingerprint, policy, owner);
    // A takeover: the previous holder's outcome is unknown. The service is asked first
    // (docs/http.md, "When the service can say what happened"), under the new claim.
    if ((a.step == BeginStep::run || a.step == BeginStep::hold_uncertain) && a.claim->recovered() &&
        route.policy.status && bound.empty()) {
      Resolution r = co_await ask_status(route, id, meta, a.claim->fence());
      if (r.reading == StatusReading::never_happened) a.step = BeginStep::run;
      if (r.reading == StatusReading::done) {
        std::optional<Reply> resolved =
            co_await keep_resolved(route, id, req, *a.claim, std::move(r.answer), lead);
        if (resolved) co_return Claimed{std::move(resolved)};
      }
    }
    switch (a.step) {
      case BeginStep::not_applied:
      case BeginStep::unknown:
        // A claim an unknown begin may have made is given back by the runner, so it never
        // turns into an uncertain key (docs/gateway.md, "When the store fails").
        {
          // Named, not beside the co_await: g++ 12 destroys such temporaries twice.
          Reply failed = co_await store_failed(route, req, meta, a.begun.status());
          co_return Claimed{std::move(failed)};
        }
      case BeginStep::mismatch: {
        // Another request, or another principal's (docs/http.md, "Whose answer a replay
        // is"): the record's fingerprint says which. Read only on a mismatch.
        auto call = async_get(store_, RecordId{id.scope, id.record_key}, asio::use_awaitable);
        Result<std::optional<Record>> record = co_await observe("get", std::move(call));
        if (!record) {
          Reply failed = co_await store_failed(route, req, meta, record.status());
          co_return Claimed{std::move(failed)};
        }
        if (!*record) {
          if (++rereads < 3) continue;  // released or expired since: begin again
          co_return Claimed{problem(req, Problem::key_reused, "this key was used with a different request")};
        }
        switch (read_mismatch((*record)->fingerprint, id.fingerprint)) {
          case MismatchReading::principal_mismatch:
            co_return Claimed{problem(req, Problem::principal_mismatch,
                                      "this key was used by another principal (other credentials, or none)")};
          case MismatchReading::key_reused:
            co_return Claimed{
                problem(req, Problem::key_reused, "this key was used with a different request")};
          case MismatchReading::as_unbound:
            // A record bound to no one: this request is treated as one without credentials.
            if (bound.empty()) bound = id.fingerprint;
            id.fingerprint = std::move((*record)->fingerprint);
            continue;
        }
        co_return Claimed{problem(req, Problem::key_reused, "this key was used with a different request")};
      }
      case BeginStep::replay:
      case BeginStep::uncertain: {
        auto stored = std::make_shared<const std::string>(std::move(a.begun->result));
        // The next repeat is answered from memory too (a record committed by another
        // instance, or one that left the cache). Kept for what the record still lives,
        // counted from before the begin went out: never past its expiry. Not an uncertain
        // record: a late commit of its claim's answer may still replace it.
        if (a.step == BeginStep::replay)
          cache_.put(ticket, id.scope, id.record_key, id.fingerprint, stored, a.begun->expires_in);
        lead.publish(stored);
        co_return Claimed{answer_replay(route, id, req, *stored, waited)};
      }
      case BeginStep::hold_uncertain: {
        // The previous holder died mid-request: its outcome is unknown, so nothing runs again.
        // Duplicates waiting here are told the same; nothing is kept in memory, since the
        // holder's late commit may still replace the mark with the answer.
        Status settled = co_await runner_.settle(*a.claim, policy, Settlement::mark_uncertain);
        log_unsettled(route, settled);
        if (settled.is_ok()) lead.publish(std::make_shared<const std::string>(uncertain_marker()));
        co_return Claimed{problem(req, Problem::outcome_uncertain,
                                  "the first request with this key did not finish; its outcome is unknown")};
      }
      case BeginStep::run:
        if (!bound.empty()) {
          // The unbound record went away between the read and this begin, so the claim was
          // made without this request's principal: a record another principal could be
          // replayed. Nothing ran under it; it is given back, and the request begins again
          // as itself.
          Status given_back = co_await runner_.settle(*a.claim, policy, Settlement::release);
          if (!given_back.is_ok()) {
            Reply failed = co_await store_failed(route, req, meta, given_back);
            co_return Claimed{std::move(failed)};
          }
          if (++rereads >= 3)
            co_return Claimed{
                problem(req, Problem::key_reused, "this key was used with a different request")};
          id.fingerprint = std::exchange(bound, std::string());
          continue;
        }
        reg.reset();
        co_return Claimed{std::nullopt, std::move(a.claim), std::move(lead)};
      case BeginStep::busy:
        break;
    }
    const auto now = Steady::now();
    if (now >= wait_until)
      co_return Claimed{
          problem(req, Problem::in_progress, "a request with this key is in progress", a.begun->retry_after)};
    if (!reg) {
      reg = waiters_.add(id.scope, id.record_key, co_await asio::this_coro::executor);
      continue;
    }
    auto& w = reg->waiter();
    if (!w.notified.exchange(false)) {
      const auto left = wait_until - now;
      w.timer.expires_after(left < kPollInterval ? left : Steady::duration(kPollInterval));
      co_await w.timer.async_wait(util::kUseTuple);
      w.notified.store(false);
    }
    waited = true;
  }
}

Gateway::Reply Gateway::answer_replay(const Route& route, const Identity& id, const HttpRequest& req,
                                      std::string_view stored, bool waited) const {
  Result<StoredResult> r = decode_stored_result(stored);
  const ReplyPlan plan = reply_for(r, route.policy.on_duplicate);
  if (plan.problem) return problem(req, *plan.problem, plan.detail);
  HttpResponse res{static_cast<http::status>(r->response.status), req.version()};
  for (const auto& [name, value] : r->response.headers) res.insert(name, value);
  res.set(kReplayedHeader, "true");
  res.body() = std::move(r->response.body);
  // The answer to this call, not the first one (docs/configuration.md, "JSON-RPC routes").
  if (route.jsonrpc) res.body() = with_jsonrpc_id(res.body(), id.jsonrpc_id);
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return {std::move(res), waited ? "waited" : "replayed"};
}

awaitable<Gateway::Reply> Gateway::run_claimed(const Route& route, const Identity& id, const HttpRequest& req,
                                               const RequestMeta& meta, Claim& claim,
                                               const ClaimPolicy& policy, Coalescer::Lead& lead) {
  const Policy& p = route.policy;
  const bool token_route = route.key.kind == KeyRule::Kind::token;
  // Only a reload that removed the default upstream while this request waited leaves none.
  UpstreamClient* upstream = upstream_of(&route);
  if (!upstream) {
    (void)co_await runner_.settle(claim, policy, Settlement::release);
    lead.publish(nullptr);
    co_return no_upstream(req);
  }
  if (token_route && !claim.recovered()) {
    TokenArgs args{id.scope, id.key};
    auto call = async_consume_token(store_, std::move(args), use_awaitable);
    Result<ConsumeOutcome> c = co_await observe("consume_token", std::move(call));
    if (!c || *c == ConsumeOutcome::invalid) {
      // The claim was ours only while the token was checked: give it back, token untouched.
      (void)co_await runner_.settle(claim, policy, Settlement::release);
      if (!c) co_return co_await store_failed(route, req, meta, c.status());
      co_return problem(req, Problem::token_invalid,
                        "the Idempotency-Token is unknown, expired or already used");
    }
  }

  const ForwardRequest fwd = forward_with_claim(*upstream, req, meta, id.key, claim.fence());
  claim.started();
  // The lease is renewed while the upstream works, by a timer beside this frame; the
  // exchange is awaited here directly (docs/gateway-internals.md).
  const auto t0 = Steady::now();
  UpstreamResult up;
  std::optional<StatusReading> asked;
  {
    const asio::any_io_executor ex = co_await asio::this_coro::executor;
    const Renewal renewal = runner_.renew_while(claim, policy, ex);
    const auto deadline = Steady::now() + p.upstream_timeout;
    UpstreamClient::Connected sent = co_await upstream->send(fwd, deadline);
    if (sent.conn)
      up = co_await upstream->receive(std::move(*sent.conn), fwd.head_request, deadline, p.max_result);
    else
      up = std::move(sent.failure);
    // An unknown outcome is asked of the service while the claim is still renewed
    // (docs/http.md, "When the service can say what happened").
    if (p.status && !claim.lost() &&
        (up.kind == UpstreamResult::Kind::timeout || up.kind == UpstreamResult::Kind::broken)) {
      Resolution r = co_await ask_status(route, id, meta, claim.fence());
      asked = r.reading;
      if (r.reading == StatusReading::done) up = std::move(r.answer);
    }
  }
  metrics_.observe_upstream(upstream_label(&route), since(t0));

  const Exchange exchange =
      up.kind == UpstreamResult::Kind::response ? Exchange::answered
      : up.kind == UpstreamResult::Kind::refused || asked == StatusReading::never_happened
          ? Exchange::not_sent
          : Exchange::unknown;
  const unsigned status = exchange == Exchange::answered ? up.response.result_int() : 0;
  WorkEnd end = work_end(exchange, status, p.cache_5xx);
  // The route's and the service's own say on which answers are final (docs/http.md,
  // "Answers the service does not want kept"): released like a 5xx, never replayed.
  if (exchange == Exchange::answered) {
    const AnswerSeen seen{status,
                          up.tail ? std::nullopt : std::optional<std::string_view>(up.response.body()),
                          take_release_request(up.response)};
    if (end == WorkEnd::succeeded && releases_answer(p.release_on, p.success_when, seen))
      end = WorkEnd::failed;
    // A JSON-RPC error is the tool's failure, and neither a stream nor an encoded body can
    // be replayed with another `id` (docs/configuration.md, "JSON-RPC routes"): released, so
    // a retry runs.
    if (end == WorkEnd::succeeded && route.jsonrpc &&
        (is_event_stream(up.response) || is_encoded(up.response) ||
         (seen.body && is_jsonrpc_error(*seen.body))))
      end = WorkEnd::failed;
  }
  std::string result;
  if (end == WorkEnd::succeeded) {
    const bool within_max_result = !up.tail && up.response.body().size() <= p.max_result;
    if (within_max_result) result = stored_response(up.response);
    if (!within_max_result || result.size() > store_.max_result_bytes()) {
      // Too large to replay (over max_result, or more than the store holds): the record
      // says so, and the body streams through to this client only.
      StoredResult marker;
      marker.kind = StoredResult::Kind::not_stored;
      marker.response.status = status;
      result = encode(marker);
    }
  }
  const Settlement how = settle_for(end, policy.on_uncertain, claim.lost());
  // On a token route the user may submit again with the same token (docs/http.md,
  // "One-time tokens"): the store re-arms it in the same step that releases the claim, so
  // a duplicate waiting for the key finds both, and a claim that was not ours to release
  // (taken over, removed by an operator) re-arms nothing.
  std::optional<TokenRestore> restore;
  if (how == Settlement::release && token_route) restore = TokenRestore{id.key, config()->tokens.ttl};
  // Duplicates waiting here replay what was committed; after a release they go to the
  // store, where one of them may run again.
  std::shared_ptr<const std::string> committed;
  if (how == Settlement::commit) committed = std::make_shared<const std::string>(result);
  const ReplayCache::Ticket ticket = cache_.ticket();
  Status settled = co_await runner_.settle(claim, policy, how, std::move(result), std::move(restore));
  log_unsettled(route, settled);
  if (committed && settled.is_ok()) {
    cache_.put(ticket, id.scope, id.record_key, id.fingerprint, committed, p.retention);
    lead.publish(std::move(committed));
  } else {
    lead.publish(nullptr);
  }

  if (up.kind == UpstreamResult::Kind::response)
    co_return forwarded(req, std::move(up), asked ? "resolved" : "forwarded");
  if (up.kind == UpstreamResult::Kind::refused)
    co_return problem(req, Problem::upstream_unavailable, "the upstream is unavailable: " + up.error);
  co_return problem(req, failure_problem(up.kind), "the upstream did not answer: " + up.error);
}

awaitable<std::optional<Gateway::Reply>> Gateway::keep_resolved(const Route& route, const Identity& id,
                                                                const HttpRequest& req, Claim& claim,
                                                                UpstreamResult answer,
                                                                Coalescer::Lead& lead) {
  const Policy& p = route.policy;
  const unsigned status = answer.response.result_int();
  if (work_end(Exchange::answered, status, p.cache_5xx) != WorkEnd::succeeded) co_return std::nullopt;
  auto stored = std::make_shared<const std::string>(stored_response(answer.response));
  if (stored->size() > store_.max_result_bytes()) co_return std::nullopt;
  const ClaimPolicy policy = claim_policy(p);
  const ReplayCache::Ticket ticket = cache_.ticket();
  Status settled = co_await runner_.settle(claim, policy, Settlement::commit, std::string(*stored));
  log_unsettled(route, settled);
  if (!settled.is_ok()) {
    lead.publish(nullptr);
    co_return problem(req, Problem::outcome_uncertain,
                      "the first request with this key did not finish; its outcome is unknown");
  }
  cache_.put(ticket, id.scope, id.record_key, id.fingerprint, stored, p.retention);
  lead.publish(stored);
  Reply r = answer_replay(route, id, req, *stored, false);
  r.outcome = "resolved";
  co_return r;
}

void Gateway::log_unsettled(const Route& route, const Status& settled) const {
  // The client still gets the upstream's answer; the store failure was logged and counted
  // as it happened, and the runner retries it in the background.
  if (settled.code() == StatusCode::failed_precondition)
    std::fprintf(stderr,
                 "idem: route %s: claim lost (lease taken over or record removed); result not stored\n",
                 route.name.c_str());
}

awaitable<Gateway::Reply> Gateway::store_failed(const Route& route, const HttpRequest& req,
                                                const RequestMeta& meta, const Status&) {
  if (route.policy.on_store_error == OnStoreError::pass)
    co_return co_await forward_unprotected(&route, route.policy.upstream_timeout, req, meta, true);
  co_return problem(req, Problem::store_unavailable, "the idempotency store is unavailable",
                    Duration(1'000'000));
}

awaitable<Gateway::Reply> Gateway::forward_unprotected(const Route* route, Duration timeout,
                                                       const HttpRequest& req, const RequestMeta& meta,
                                                       bool mark) {
  UpstreamClient* upstream = upstream_of(route);
  if (!upstream) co_return no_upstream(req);
  const ForwardRequest fwd = forward_over(*upstream, req, meta, {});
  const auto t0 = Steady::now();
  UpstreamResult up = co_await upstream->exchange(fwd, timeout, kStreamedPrefix);
  metrics_.observe_upstream(upstream_label(route), since(t0));
  Reply r = up.kind == UpstreamResult::Kind::response
                ? forwarded(req, std::move(up), "unprotected")
                : problem(req, failure_problem(up.kind), "the upstream did not answer: " + up.error);
  if (mark) r.response.set(kStatusHeader, "unprotected");
  r.outcome = "unprotected";
  co_return r;
}

Gateway::Reply Gateway::forwarded(const HttpRequest& req, UpstreamResult up, std::string_view outcome) const {
  const bool streamed = up.tail != nullptr;
  return Reply{make_client_response(std::move(up.response), req.version(), req.keep_alive(),
                                    req.method() == http::verb::head, streamed),
               outcome, std::move(up.tail)};
}

}  // namespace idem::gateway
