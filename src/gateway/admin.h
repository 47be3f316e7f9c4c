// The admin listener's endpoints (SPEC §3.5, §3.7): health, readiness, metrics, records
// and the control API — the engine over HTTP/JSON. Records and the control API require
// `Authorization: Bearer <token>` when admin.token_env is set.
// Safe for concurrent use.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "gateway/config.h"
#include "gateway/http_reply.h"
#include "gateway/metrics.h"
#include "idem/store.h"

namespace idem::gateway {

class Admin {
 public:
  Admin(const Config& config, Store& store, Metrics& metrics);

  // Answers one fully read admin request. Never throws.
  boost::asio::awaitable<HttpResponse> handle(const HttpRequest& req);

 private:
  boost::asio::awaitable<HttpResponse> records(const HttpRequest& req, std::string_view rest);
  boost::asio::awaitable<HttpResponse> control(const HttpRequest& req, std::string_view op);
  bool authorized(const HttpRequest& req) const;

  const Config& config_;
  Store& store_;
  Metrics& metrics_;
};

}  // namespace idem::gateway
