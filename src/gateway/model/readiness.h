// What GET /readyz answers (docs/admin.md, "Readiness"): one table over whether the gateway
// drains, whether the store answered its ping, and what the routes do without the store,
// so a store outage pulls a gateway out of its load balancer only when some of its traffic
// would be refused. Liveness (/healthz) is not decided here: it never asks the store.
// Pure; safe for concurrent use.
//
//   draining   store answers   every route can be served without it    answer
//   yes        (not asked)     -                                        503 shutting-down
//   no         yes             -                                        200 ready, store ok
//   no         no              yes                                      200 ready, store unavailable
//   no         no              no                                       503 store-unavailable
//
// A route can be served without the store when its on_store_error is `pass` and it does
// not take one-time tokens (`key: token`): its clients get their tokens from
// POST /_idem/tokens, which cannot issue one without the store whatever the route's policy.
// `mode: lock` follows on_store_error as replay mode does (`pass` forwards without the
// lock). Unmatched requests never need the store. The control API and the records on the
// admin listener are not counted: their callers are services that read 503
// store-unavailable and retry, and every gateway sharing the store answers them alike.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gateway/model/problem.h"
#include "gateway/model/route.h"

namespace idem::gateway {

// Why a route cannot be served without the store.
struct StoreDependence {
  const Route* route;
  enum class Why { on_store_error_reject, token_key } why;
};

// The routes that cannot be served while the store is down, in the config's order.
std::vector<StoreDependence> routes_needing_store(std::span<const Route> routes);

struct Readiness {
  std::optional<Problem> problem;  // nullopt: 200 with `body`; else 503 with this problem
  std::string body;                // the 200's JSON body
  std::string detail;              // the problem's detail
};

// The answer of /readyz. `store_answers` is ignored while draining (the store is not
// asked then).
Readiness readiness(bool draining, bool store_answers, std::span<const Route> routes);

}  // namespace idem::gateway
