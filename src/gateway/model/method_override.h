// Method overrides (docs/gateway.md, "Method overrides"): a request that asks the service
// to run it as another method, which frameworks honour before they route it:
//   X-HTTP-Method-Override   Rack's MethodOverride (Rails, Sinatra), Symfony and Laravel,
//                            ASP.NET Core's UseHttpMethodOverride, Express's method-override
//   X-Method-Override        Express's method-override (its "IBM" spelling)
//   X-HTTP-Method            Express's method-override (its "Microsoft" spelling), OData
//   _method in the query     Spring's HiddenHttpMethodFilter (getParameter), Symfony and
//                            Laravel, Express's method-override with a query getter
//   _method in a form body   Rack's MethodOverride, Spring's HiddenHttpMethodFilter,
//                            Symfony and Laravel
// The gateway cannot know whether the service honours one, nor which: so a request whose
// override would reach a route other than the one it matches as sent is refused
// (request_ambiguous). Matched as the overridden method instead, it would be protected as
// the wrong route wherever the service ignores the override (and a POST route on the same
// path would then see its requests keyed in another route's key space); refused, it is
// right for every service. An override toward the route the request matches anyway, or
// toward no route, changes nothing the gateway protects and passes. Pure; safe for
// concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "gateway/model/problem.h"
#include "gateway/model/request_view.h"
#include "gateway/model/route.h"

namespace idem::gateway {

struct OverrideRefusal {
  // The route the refusal is counted and logged under: the one the request matches as
  // sent, or else the one its override would reach.
  const Route* route;
  Rejection rejection;
};

// The refusal of the first override in `request` (the three headers, every element of
// each of their lines, upper-cased as frameworks do; every `_method` of the query, and of
// the body when it is application/x-www-form-urlencoded, pairs split at '&' and ';') whose
// method, with the request's target, matches a route other than `as_sent` (nullptr when the
// request as sent matches none). nullopt when there is none.
std::optional<OverrideRefusal> refuse_method_override(std::span<const Route> routes, const Route* as_sent,
                                                      const RequestView& request);

// When the path of `target` matches a route other than `as_sent`, whatever its methods (so
// an override could take the request there, and needs a look): the largest max_body of
// the routes that match the path, `as_sent` included, which bounds the form body read to
// look for an `_method` in a request otherwise streamed. nullopt when no other route's
// path matches: no override can change the route, and nothing needs a look.
std::optional<std::uint64_t> override_body_limit(std::span<const Route> routes, const Route* as_sent,
                                                 std::string_view target);

// True when the body of `head` is application/x-www-form-urlencoded (one Content-Type),
// so it may carry an `_method`.
bool body_may_override(std::span<const HeaderField> headers);

}  // namespace idem::gateway
