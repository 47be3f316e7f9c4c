// The request pipeline of `idem serve` (docs/http.md, docs/gateway.md): what happens to a request once
// the HTTP layer has read it. validate → claim → forward or local reply → capture the
// response → store or release → answer, with every store and upstream call bounded by a
// deadline and every outcome counted and logged once.
//
// The Gateway is the client listener's handler (http/handler.h): serve() matches the
// route, checks the head, reads the body within the route's max_body through the
// exchange, then protects the request (serve.cpp); unmatched requests are relayed by the
// exchange as their body arrives. Once the body is read nothing here touches the client's
// connection, so a client that disconnects never cancels an upstream exchange: the result
// is stored all the same.
// Safe for concurrent use from any number of coroutines on any executors.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "engine/claim.h"
#include "gateway/http/handler.h"
#include "gateway/http/http_reply.h"
#include "gateway/http/upstream.h"
#include "gateway/http/upstreams.h"
#include "gateway/model/config/config.h"
#include "gateway/model/principal.h"
#include "gateway/model/request_identity.h"
#include "gateway/model/status_check.h"
#include "gateway/model/token_limits.h"
#include "gateway/pipeline/coalescer.h"
#include "gateway/pipeline/metrics.h"
#include "gateway/pipeline/replay_cache.h"
#include "gateway/pipeline/waiters.h"
#include "idem/store.h"

namespace idem::gateway {

class Gateway final : public RequestHandler {
  using Steady = std::chrono::steady_clock;

 public:
  // `clock` is the one the store judges expiry by (the system clock when null): the replay
  // cache uses it too.
  // `key_hash_secret` keys the request log's key_hash (KeyHasher): the install's secret,
  // or "" for a random one of this gateway's own. `principal_secret` keys the principal
  // hashes records are bound to (PrincipalBinder): the same on every gateway of a store.
  Gateway(const Config& config, Store& store, Upstreams& upstreams, Metrics& metrics,
          std::shared_ptr<const Clock> clock = nullptr, std::string_view key_hash_secret = {},
          std::string_view principal_secret = {});

  // The config in force. A request keeps the one it was matched with (its routes and
  // policies) until it is answered, whatever reload() does meanwhile.
  std::shared_ptr<const Config> config() const noexcept { return config_.load(std::memory_order_acquire); }
  // SIGHUP (docs/operations.md, "Reloading the config"): routes, policies and tokens of
  // `next` apply to the requests that arrive from now on. What was built from the first
  // config stays: the replay cache's size. The caller reloads the Upstreams first.
  void reload(std::shared_ptr<const Config> next) noexcept {
    config_.store(std::move(next), std::memory_order_release);
  }
  // The results this gateway committed, for replays without a store call; the admin API
  // erases what it removes.
  ReplayCache& replay_cache() noexcept { return cache_; }
  // Requests in flight that duplicates on this instance attach to, and those attached now.
  const Coalescer& coalescer() const noexcept { return coalescer_; }

  // A request on the client listener, from its checked head to its answer (serve.cpp):
  // the built-in endpoint (POST tokens.path, when a route takes tokens), then the routes. Answers, counts
  // idem_requests_total and logs one line for every request of a route.
  boost::asio::awaitable<std::optional<Answer>> serve(HttpExchange& exchange) override;
  // The request's context under the config's trusted_proxies (docs/gateway.md,
  // "Forwarding fields").
  RequestMeta meta(const http::request_header<>& head, std::string_view peer) const override;

  // The request log (one JSON line per protected request) is written to standard output
  // in batches: when 16 KiB have gathered, or when flush_log() is called, which the owner
  // does every 100 ms and at shutdown. So a busy gateway makes one write per batch rather
  // than per request; a line is at most 100 ms late (and lost if the process is killed).
  void flush_log();

  // True while claims are settled or given back in the background (a store call that failed,
  // retried by the claim runner): the shutdown drain waits for them too, within its bound.
  bool settling() const noexcept { return runner_.settling(); }

 private:
  // A request of a protected route whose head was checked (`head` is check_head's answer
  // on `fields`, the views into the request's head fields) and whose body is read.
  // Answers, counts idem_requests_total and logs one line. A response too large to hold
  // whole comes with a tail to stream (its record is settled already: not stored).
  // `meta` (the client's address and the request id) must outlive the call.
  boost::asio::awaitable<Answer> protect(const RouteMatch& match, const HttpRequest& req,
                                         std::span<const HeaderField> fields, Decision head,
                                         const RequestMeta& meta);
  // POST tokens.path: a one-time token for the request's subject, within the bounds of
  // `tokens_` (tokens.cpp).
  boost::asio::awaitable<std::optional<Answer>> serve_tokens(HttpExchange& exchange, const Config& config);
  boost::asio::awaitable<HttpResponse> issue_token(const HttpRequest& req, const RequestMeta& meta,
                                                   const Config& config);
  // A request on no route (`route` null), or one of a route forwarded as it is: relayed
  // as its body arrives, observed (idem_upstream_seconds) and, for a route, counted and
  // logged `unprotected`.
  boost::asio::awaitable<std::optional<Answer>> relay(HttpExchange& exchange, const Route* route,
                                                      Duration timeout);
  // The same, where another route on the path could be reached by a method override
  // (`overridable`: override_body_limit's answer): a form body, which may carry an
  // `_method` (docs/gateway.md, "Method overrides"), is read whole within that limit and
  // looked at first, then forwarded (or refused, counted under the route it would reach);
  // any other body, or with `overridable` empty, is relayed.
  boost::asio::awaitable<std::optional<Answer>> pass(HttpExchange& exchange, const Config& config,
                                                     const Route* route, std::span<const HeaderField> fields,
                                                     std::optional<std::uint64_t> overridable);
  // A protected request rejected before its body was read (check_head, max_body): counts
  // and logs it.
  HttpResponse reject_early(const Route& route, const http::request_header<>& req, const RequestMeta& meta,
                            const Rejection& r, bool keep_alive);
  void count_unprotected(const Route& route, std::string_view method, std::string_view target,
                         const RequestMeta& meta, unsigned status, Duration latency);

  struct Reply {
    HttpResponse response;
    std::string_view outcome;                 // the idem_requests_total label
    std::unique_ptr<ResponseTail> tail = {};  // the rest of a response too large to hold
    std::optional<Problem> problem = {};      // set by problem(): the gateway's own refusal
  };
  Reply problem(const HttpRequest& req, Problem p, std::string_view detail,
                std::optional<Duration> retry_after = std::nullopt) const;

  // Replay mode up to the work: the answer when there is one without running (from memory,
  // from a request in flight here that this one waited for, or from the store: a replay, a
  // refusal, in progress past `wait`), else the claim to run and the flight `lead` that
  // duplicates here follow. Returns before the work starts, so the work is awaited by
  // protect() itself, few frames deep.
  struct Claimed {
    std::optional<Reply> reply;
    std::optional<Claim> claim = {};
    Coalescer::Lead lead = {};
  };
  boost::asio::awaitable<Claimed> replay_mode(const Route& route, Identity& id, const HttpRequest& req,
                                              const RequestMeta& meta);
  // The store's part of replay_mode: begin, waiting for a holder while `wait` lasts.
  boost::asio::awaitable<Claimed> claim_from_store(const Route& route, Identity& id, const HttpRequest& req,
                                                   const RequestMeta& meta, Steady::time_point wait_until,
                                                   bool waited, Coalescer::Lead lead);
  // Runs the claimed request: forwards it (renewing the claim), settles the claim and
  // publishes the outcome to `lead`'s followers.
  boost::asio::awaitable<Reply> run_claimed(const Route& route, const Identity& id, const HttpRequest& req,
                                            const RequestMeta& meta, Claim& claim, const ClaimPolicy& policy,
                                            Coalescer::Lead& lead);
  boost::asio::awaitable<Reply> lock_mode(const Route& route, const Identity& id, const HttpRequest& req,
                                          const RequestMeta& meta);
  boost::asio::awaitable<Reply> forward_unprotected(const Route* route, Duration timeout,
                                                    const HttpRequest& req, const RequestMeta& meta,
                                                    bool mark);
  boost::asio::awaitable<Reply> store_failed(const Route& route, const HttpRequest& req,
                                             const RequestMeta& meta, const Status& s);
  // The upstream's response as this client's answer, its tail (if any) still to stream.
  Reply forwarded(const HttpRequest& req, UpstreamResult up, std::string_view outcome) const;
  // On a JSON-RPC route the stored answer carries `id.jsonrpc_id` instead of the first call's.
  Reply answer_replay(const Route& route, const Identity& id, const HttpRequest& req, std::string_view stored,
                      bool waited) const;

  // The forwarded request of a claimed key: the client's, with the key and the claim's fence.
  // forward_request to `upstream`, with the forwarding fields saying https for a request that
  // came over TLS (forwarded_over_tls).
  ForwardRequest forward_over(const UpstreamClient& upstream, const HttpRequest& req, const RequestMeta& meta,
                              SetFields set) const;
  ForwardRequest forward_with_claim(const UpstreamClient& upstream, const HttpRequest& req,
                                    const RequestMeta& meta, std::string_view key, Fence fence) const;
  // The upstream a request of `route` (null: on no route) goes to under the config in force
  // (Upstreams::of); null when there is none (no default upstream).
  UpstreamClient* upstream_of(const Route* route) const;
  // What idem_upstream_seconds calls that upstream: the route's `upstream`, "" for the default.
  static std::string_view upstream_label(const Route* route) {
    return route ? std::string_view(route->upstream) : std::string_view();
  }
  // 502 for a request with no upstream to go to.
  Reply no_upstream(const HttpRequest& req) const;
  // The upstream exchange while the lock is renewed (renew_lock), as the claim runner
  // renews a claim (run_claimed). The renewal ends when the response's head and first
  // bytes are in: the rest of a larger body streams after the lock is released.
  boost::asio::awaitable<UpstreamResult> exchange_locked(UpstreamClient& upstream, const ForwardRequest& fwd,
                                                         const Route& route, const std::string& name,
                                                         const std::string& owner);
  // Extends the lock every lease/3 on `ex`; a renewal answered not_owner is counted as a
  // conflict and not tried again.
  Renewal renew_lock(const boost::asio::any_io_executor& ex, Duration lease, const std::string& name,
                     const std::string& owner);
  // What the route's status endpoint says became of `id` under the claim `fence`
  // (status_call.cpp): the service's original answer when it ran. Counts
  // idem_resolutions_total and writes the audit line.
  struct Resolution {
    StatusReading reading = StatusReading::unknown;
    UpstreamResult answer;  // done: the original answer, as the upstream would have given it
  };
  boost::asio::awaitable<Resolution> ask_status(const Route& route, const Identity& id,
                                                const RequestMeta& meta, Fence fence);
  // A takeover's claim completed with the answer the status endpoint gave (a replay of it
  // for this request), or nullopt, the claim untouched, when that answer is not one to keep.
  boost::asio::awaitable<std::optional<Reply>> keep_resolved(const Route& route, const Identity& id,
                                                             const HttpRequest& req, Claim& claim,
                                                             UpstreamResult answer, Coalescer::Lead& lead);
  // Logs a settle answered fenced (the claim was lost while the upstream worked).
  void log_unsettled(const Route& route, const Status& settled) const;

  template <class T>
  boost::asio::awaitable<Result<T>> observe(const char* op, boost::asio::awaitable<Result<T>> call);

  // One line of the request log (docs/observability.md, "The request log").
  void log(const Route& route, const Identity* id, std::string_view method, std::string_view target,
           const RequestMeta& meta, std::string_view outcome, unsigned status, Duration latency);
  void write_log_locked();  // requires log_mu_
  // After every store call: idem_store_seconds, idem_store_errors_total and the log.
  void observed(const char* op, Duration latency, const Status& status);

  std::atomic<std::shared_ptr<const Config>> config_;
  Store& store_;
  Upstreams& upstreams_;
  Metrics& metrics_;
  Waiters waiters_;
  ReplayCache cache_;
  Coalescer coalescer_;
  ClaimRunner runner_;          // after waiters_, which its hooks use: destroyed first
  TokenLimiter tokens_;         // tokens.per_client and tokens.max_live
  const KeyHasher key_hasher_;  // the request log's key_hash
  const PrincipalBinder principal_binder_;
  std::mutex log_mu_;
  std::string log_buffer_;  // guarded by log_mu_
};

}  // namespace idem::gateway
