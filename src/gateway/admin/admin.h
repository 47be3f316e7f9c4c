// The admin listener's endpoints (docs/admin.md): health, readiness, metrics, records,
// the control API — the engine over HTTP/JSON — and the operator's page (`GET /` and its
// files under /ui/, ui_assets.h). Who may call them is decided by admin_access.h
// (docs/admin.md): the page, records and the control API require the token (Bearer, or
// Basic with the token as the password) when admin.token_env is set; without a token
// every request for a foreign Host is refused; token or not, requests from another
// site's page (a foreign Origin) are. Store errors are answered without the store's
// address or error text; those go to standard error.
// Safe for concurrent use.
#pragma once

#include <atomic>

#include <boost/asio/awaitable.hpp>

#include "gateway/admin/admin_access.h"
#include "gateway/admin/metrics.h"
#include "gateway/config/config.h"
#include "gateway/http/http_reply.h"
#include "gateway/replay_cache.h"
#include "idem/store.h"

namespace idem::gateway {

class Admin {
 public:
  // `cache` (may be null): the gateway's replay cache, which forgets what DELETE removes.
  Admin(const Config& config, Store& store, Metrics& metrics, ReplayCache* cache);

  // Answers one fully read admin request. Never throws.
  boost::asio::awaitable<HttpResponse> handle(const HttpRequest& req);

 private:
  boost::asio::awaitable<HttpResponse> records(const HttpRequest& req, std::string_view rest);
  boost::asio::awaitable<HttpResponse> list_records(const HttpRequest& req);
  boost::asio::awaitable<HttpResponse> control(const HttpRequest& req, std::string_view op);
  // 503 store-unavailable, saying nothing of the store; `op` and `s` go to standard error.
  HttpResponse store_failed(const HttpRequest& req, std::string_view op, const Status& s) const;

  const Config& config_;
  Store& store_;
  Metrics& metrics_;
  ReplayCache* cache_;
  const AdminToken token_;
  std::atomic<bool> ready_{true};  // the last /readyz outcome, so a failing store is logged once
};

}  // namespace idem::gateway
