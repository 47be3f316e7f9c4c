#include "gateway/model/readiness.h"

#include <boost/json.hpp>

namespace idem::gateway {

namespace {

// How many routes the 503's detail names; the rest are counted.
constexpr std::size_t kNamedRoutes = 5;

const char* reason(StoreDependence::Why why) {
  switch (why) {
    case StoreDependence::Why::on_store_error_reject:
      return "on_store_error: reject";
    case StoreDependence::Why::token_key:
      return "key: token";
  }
  return "";
}

}  // namespace

std::vector<StoreDependence> routes_needing_store(std::span<const Route> routes) {
  std::vector<StoreDependence> needing;
  for (const Route& r : routes) {
    // A token route first: its tokens come from the store whatever its policy.
    if (r.key.kind == KeyRule::Kind::token)
      needing.push_back({&r, StoreDependence::Why::token_key});
    else if (r.policy.on_store_error == OnStoreError::reject)
      needing.push_back({&r, StoreDependence::Why::on_store_error_reject});
  }
  return needing;
}

Readiness readiness(bool draining, bool store_answers, std::span<const Route> routes) {
  if (draining) return {Problem::shutting_down, {}, "the gateway is shutting down"};
  if (store_answers) return {std::nullopt, R"({"status":"ready","store":"ok"})", {}};
  const std::vector<StoreDependence> needing = routes_needing_store(routes);
  if (needing.empty()) {
    boost::json::object o;
    o["status"] = "ready";
    o["store"] = "unavailable";
    o["detail"] =
        "the idempotency store is unavailable; every route forwards requests unprotected (on_store_error: "
        "pass)";
    return {std::nullopt, boost::json::serialize(o), {}};
  }
  std::string detail = needing.size() == 1 ? "the idempotency store is unavailable, and a route needs it: "
                                           : "the idempotency store is unavailable, and " +
                                                 std::to_string(needing.size()) + " routes need it: ";
  for (std::size_t i = 0; i < needing.size() && i < kNamedRoutes; ++i) {
    if (i > 0) detail += ", ";
    detail += needing[i].route->name + " (" + reason(needing[i].why) + ")";
  }
  if (needing.size() > kNamedRoutes)
    detail += ", and " + std::to_string(needing.size() - kNamedRoutes) + " more";
  return {Problem::store_unavailable, {}, std::move(detail)};
}

}  // namespace idem::gateway
