// Routing, problem answers and the helpers the handlers share.
#include "shop_service.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include <boost/json.hpp>

#include "checkout_page.h"

namespace shop {

Reply problem(unsigned status, std::string_view name, std::string detail) {
  static constexpr std::pair<std::string_view, std::string_view> kTitles[] = {
      {"bad-request", "Bad request"},
      {"unknown-sku", "Unknown SKU"},
      {"unknown-order", "Unknown order"},
      {"out-of-stock", "Out of stock"},
      {"fenced", "A newer attempt holds this key"},
      {"contention", "Too many concurrent deductions"},
      {"body-too-large", "Request body too large"},
      {"not-found", "Not found"},
      {"method-not-allowed", "Method not allowed"},
      {"unavailable", "Database unavailable"},
      {"internal", "Internal error"},
  };
  std::string_view title = name;
  for (const auto& [n, t] : kTitles) {
    if (n == name) title = t;
  }
  Reply r;
  r.status = status;
  r.content_type = "application/problem+json";
  r.body = boost::json::serialize(boost::json::object{{"type", "urn:shop:problem:" + std::string(name)},
                                                      {"title", title},
                                                      {"status", status},
                                                      {"detail", std::move(detail)}});
  return r;
}

std::string random_id(std::size_t length) {
  static constexpr char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<std::size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string id(length, '0');
  for (char& c : id) c = kAlphabet[pick(rng)];
  return id;
}

std::int64_t now_micros() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

Shop::Shop(DbPool& pool, idem::Guard& guard, ShopOptions options, std::function<void()> on_paid)
    : pool_(pool), guard_(guard), options_(std::move(options)), on_paid_(std::move(on_paid)) {}

Reply Shop::handle(const Request& req) noexcept {
  try {
    return route(req);
  } catch (const DbError& e) {
    std::fprintf(stderr, "shop: %s %s: %s\n", req.method.c_str(), req.path.c_str(), e.what());
    if (e.kind() == DbError::Kind::unavailable || e.kind() == DbError::Kind::retry) {
      Reply r = problem(503, "unavailable", "the database did not answer; try again");
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    return problem(500, "internal", "the request failed; see the shop's log");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shop: %s %s: %s\n", req.method.c_str(), req.path.c_str(), e.what());
    return problem(500, "internal", "the request failed; see the shop's log");
  }
}

namespace {

// "/prefix/<segment>[suffix]" → segment, when it is one non-empty path segment.
std::optional<std::string> segment(std::string_view path, std::string_view prefix, std::string_view suffix) {
  if (!path.starts_with(prefix) || !path.ends_with(suffix) || path.size() <= prefix.size() + suffix.size()) {
    return std::nullopt;
  }
  std::string_view s = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
  if (s.find('/') != std::string_view::npos) return std::nullopt;
  return std::string(s);
}

}  // namespace

Reply Shop::route(const Request& req) {
  const bool get = req.method == "GET", post = req.method == "POST";
  const std::string& p = req.path;
  auto only = [&](bool ok, auto&& answer) -> Reply {
    return ok ? answer() : problem(405, "method-not-allowed", req.method + " is not allowed on " + p);
  };
  if (p == "/") {
    return only(get, [] { return Reply{200, "text/html; charset=utf-8", std::string(kCheckoutPage), {}}; });
  }
  if (p == "/healthz") return only(get, [] { return Reply{200, "text/plain", "ok", {}}; });
  if (p == "/orders") return only(post, [&] { return create_order(req); });
  if (p == "/pay/callback") {
    return only(post, [&] {
      try {
        return pay_callback(req);
      } catch (const DbError& e) {  // the platform reads "fail" and sends again later
        std::fprintf(stderr, "shop: POST /pay/callback: %s\n", e.what());
        return Reply{503, "text/plain", "fail", {{"Retry-After", "1"}}};
      }
    });
  }
  if (p == "/pay/notify") return only(post, [&] { return pay_notify(req); });
  if (auto sku = segment(p, "/skus/", "/deduct")) return only(post, [&] { return deduct(*sku, req); });
  if (auto sku = segment(p, "/skus/", "")) return only(get, [&] { return get_sku(*sku); });
  if (auto no = segment(p, "/orders/", "")) return only(get, [&] { return get_order(*no); });
  return problem(404, "not-found", "no such resource: " + p);
}

void Shop::maybe_slow() const {
  if (options_.slow_percent <= 0 || options_.slow_ms <= 0) return;
  thread_local std::mt19937 rng(std::random_device{}());
  if (std::uniform_int_distribution<int>(0, 99)(rng) < options_.slow_percent) {
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.slow_ms));
  }
}

}  // namespace shop
