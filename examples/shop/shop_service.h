// The shop's HTTP API (README.md "The shop's HTTP API") as plain functions of a request:
// no sockets here, so the business rules read top to bottom and the server around them
// (shop.cpp) stays small.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "db.h"
#include "idem/guard.h"

namespace shop {

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without its query
  std::string body;
  std::optional<std::string> idempotency_key;    // the gateway's, forwarded
  std::optional<std::string> idempotency_fence;  // the gateway's, forwarded
  std::optional<std::string> pay_signature;      // X-Pay-Signature (POST /pay/notify)
};

struct Reply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // Location, Retry-After, ...
};

// application/problem+json, type urn:shop:problem:<name>.
Reply problem(unsigned status, std::string_view name, std::string detail);

struct ShopOptions {
  std::string secret = "shop-demo-secret";  // the payment platform's HMAC key
  int slow_percent = 0;                     // this share of orders and deductions ...
  int slow_ms = 0;                          // ... sleeps this long after committing
};

// Thread-safe: one Shop serves every connection thread; each request leases its own
// database connection from the pool.
class Shop {
 public:
  // on_paid runs after a callback committed a payment (and its outbox row): it wakes the
  // relay. The pool and the guard must outlive the Shop.
  Shop(DbPool& pool, idem::Guard& guard, ShopOptions options, std::function<void()> on_paid);

  // The answer to one request. Never throws: a database failure is a 503 (or 500 for a
  // bug), logged once on stderr.
  Reply handle(const Request& req) noexcept;

 private:
  Reply route(const Request& req);
  Reply create_order(const Request& req);
  Reply get_order(const std::string& order_no);
  Reply get_sku(const std::string& sku_id);
  Reply deduct(const std::string& sku_id, const Request& req);
  Reply pay_callback(const Request& req);
  Reply callback_answer(const idem::GuardResult& r, const std::string& order_no);
  Reply pay_notify(const Request& req);
  void maybe_slow() const;  // --slow-percent/--slow-ms, after a commit

  DbPool& pool_;
  idem::Guard& guard_;
  const ShopOptions options_;
  std::function<void()> on_paid_;
};

// Small pieces the handlers share.
std::string random_id(std::size_t length);  // [0-9a-z], from a CSPRNG-seeded generator
std::int64_t now_micros();                  // the *_at columns: µs since the Unix epoch

}  // namespace shop
