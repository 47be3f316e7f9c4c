// The admin listener's endpoints (docs/admin.md): health, readiness, metrics, records,
// the control API — the engine over HTTP/JSON — and the operator's page (`GET /` and its
// files under /ui/, ui_assets.h). Who may call them is decided by admin_access.h
// (docs/admin.md): the page, records and the control API require a token (Bearer, or
// Basic with the token as the password) when admin.token_env or admin.tokens is set, one
// with the `operator` role for the page and records, `control` for the control API
// (docs/admin.md, "Tokens and roles"); without a token every request for a foreign Host
// is refused; token or not, requests from another site's page (a foreign Origin) are.
// Every record deleted is told in an audit line on standard error and counted in
// idem_admin_actions_total. Store errors are answered without the store's address or
// error text; those go to standard error.
// Safe for concurrent use.
#pragma once

#include <atomic>
#include <memory>

#include <boost/asio/awaitable.hpp>

#include "gateway/http/handler.h"
#include "gateway/http/http_reply.h"
#include "gateway/model/admin_access.h"
#include "gateway/model/config/config.h"
#include "gateway/model/readiness.h"
#include "gateway/pipeline/metrics.h"
#include "gateway/pipeline/replay_cache.h"
#include "idem/store.h"

namespace idem::gateway {

class Admin final : public RequestHandler {
 public:
  // `cache` (may be null): the gateway's replay cache, which forgets what DELETE removes.
  Admin(const Config& config, Store& store, Metrics& metrics, ReplayCache* cache);

  // The admin listener's handler (http/handler.h): decides from the head whether the
  // request may be served (refuse()) and answers a probe, before it reads a byte of body;
  // then reads the body whole, at most 1 MiB, and answers it with handle().
  boost::asio::awaitable<std::optional<Answer>> serve(HttpExchange& exchange) override;
  // Answers one fully read admin request. Never throws.
  // `peer`: the client's address, for the audit line.
  boost::asio::awaitable<HttpResponse> handle(const HttpRequest& req, std::string_view peer = {});
  // The answer a request gets from its head alone, or nullopt when it may be served: 403
  // for a foreign Origin or (without a token) Host, 404 for no such endpoint, 401 without
  // a known token where one is required, 403 for a token without the endpoint's role
  // (docs/admin.md). Never for a GET of /healthz, /readyz
  // or /metrics that passes the Origin and Host rules. `keep_alive`: whether the client lets
  // the connection be kept.
  std::optional<HttpResponse> refuse(const http::request_header<>& head, bool keep_alive) const;

  // SIGHUP: the control API's defaults (lease, retention, token ttl) and the admin token of
  // `next` apply from the next request on.
  void reload(std::shared_ptr<const Config> next);
  // SIGTERM: /readyz answers 503 (problem shutting-down) from now on, so load balancers
  // stop sending while the drain finishes; everything else keeps answering. Otherwise
  // /readyz follows the store and the routes' policy of the running config
  // (model/readiness.h), and /healthz never asks the store.
  void set_draining() noexcept { draining_.store(true); }

 private:
  // GET /healthz, /readyz or /metrics (`head` passed refuse()).
  boost::asio::awaitable<HttpResponse> probe(const http::request_header<>& head, bool keep_alive);
  boost::asio::awaitable<HttpResponse> records(const HttpRequest& req, std::string_view rest,
                                               std::string_view peer);
  boost::asio::awaitable<HttpResponse> list_records(const HttpRequest& req);
  // POST /v1/records/resolve (docs/admin.md, "Resolving uncertain records in bulk"): one
  // audit line per record acted on.
  boost::asio::awaitable<HttpResponse> resolve_records(const HttpRequest& req, std::string_view peer);
  // The audit of an action on a record (docs/admin.md, "Tokens and roles"): one JSON line on
  // standard error naming the token of `req`, `peer`, the record (`before`: as read before
  // the action, null when none was read), the action ("delete"; a resolution names its
  // own) and `decision`; counted in idem_admin_actions_total when `applied`.
  void audit(const HttpRequest& req, std::string_view peer, std::string_view action, const RecordId& id,
             const Record* before, std::string_view decision, bool applied);
  // POST /v1/<op>: the endpoint of the table in admin.cpp that `op` names.
  boost::asio::awaitable<HttpResponse> control(const HttpRequest& req, std::string_view op,
                                               const Config& config);
  struct ControlCall;
  boost::asio::awaitable<HttpResponse> control_begin(ControlCall& c);
  boost::asio::awaitable<HttpResponse> control_commit(ControlCall& c);
  boost::asio::awaitable<HttpResponse> control_release(ControlCall& c);
  boost::asio::awaitable<HttpResponse> control_abandon(ControlCall& c);
  boost::asio::awaitable<HttpResponse> control_extend(ControlCall& c);
  boost::asio::awaitable<HttpResponse> control_issue_token(ControlCall& c);
  boost::asio::awaitable<HttpResponse> control_consume_token(ControlCall& c);
  boost::asio::awaitable<HttpResponse> control_restore_token(ControlCall& c);
  boost::asio::awaitable<HttpResponse> control_lock(ControlCall& c);
  boost::asio::awaitable<HttpResponse> control_extend_lock(ControlCall& c);
  static std::optional<LockArgs> lock_args(ControlCall& c, HttpResponse& bad);
  boost::asio::awaitable<HttpResponse> control_unlock(ControlCall& c);
  HttpResponse failed(const ControlCall& c, const Status& s) const;
  // 503 store-unavailable, saying nothing of the store; `op` and `s` go to standard error.
  HttpResponse store_failed(const HttpRequest& req, std::string_view op, const Status& s) const;

  // What a reload replaces, together: a request sees one config and its tokens.
  struct Settings {
    std::shared_ptr<const Config> config;
    AdminTokens tokens;
  };
  static std::shared_ptr<const Settings> settings_of(std::shared_ptr<const Config> config);

  std::atomic<std::shared_ptr<const Settings>> settings_;
  Store& store_;
  Metrics& metrics_;
  ReplayCache* cache_;
  // The last /readyz answer, so a change is logged once: ready with the store, ready
  // without it (every route passes), not ready.
  enum class Ready { yes, without_store, no };
  void log_readiness(const Readiness& r, const Status& ping);
  std::atomic<Ready> ready_{Ready::yes};
  std::atomic<bool> draining_{false};
};

}  // namespace idem::gateway
