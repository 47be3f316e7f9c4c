#include "gateway/model/method_override.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

namespace idem::gateway {
namespace {

constexpr std::array<std::string_view, 3> kOverrideHeaders = {"X-HTTP-Method-Override", "X-Method-Override",
                                                              "X-HTTP-Method"};
constexpr std::string_view kOverrideParameter = "_method";

}  // namespace

std::optional<OverrideRefusal> refuse_method_override(std::span<const Route> routes, const Route* as_sent,
                                                      const RequestView& request) {
  std::optional<OverrideRefusal> refusal;
  auto check = [&](std::string_view spelling, std::string_view method) {
    if (refusal) return;
    std::string upper(method);
    for (char& c : upper)
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    const std::optional<RouteMatch> reached = match_route(routes, upper, request.target);
    if (!reached || reached->route == as_sent) return;
    refusal = OverrideRefusal{
        as_sent != nullptr ? as_sent : reached->route,
        {Problem::request_ambiguous,
         std::string(spelling) + " asks for another method, which would take this request to route '" +
             reached->route->name +
             "' at a service that honours it: a method override toward a route is refused"}};
  };
  for (std::string_view header : kOverrideHeaders)
    for_each_list_element(request.headers, header, [&](std::string_view m) { check(header, m); });
  for (const std::string& m : form_values(target_query(request.target), kOverrideParameter))
    check("_method in the query", m);
  if (!request.body.empty() && body_may_override(request.headers)) {
    for (const std::string& m : form_values(request.body, kOverrideParameter))
      check("_method in the form body", m);
  }
  return refusal;
}

std::optional<std::uint64_t> override_body_limit(std::span<const Route> routes, const Route* as_sent,
                                                 std::string_view target) {
  const std::string_view path = target_path(target);
  std::uint64_t limit = as_sent != nullptr ? as_sent->policy.max_body : 0;
  bool other = false;
  for (const Route& route : routes) {
    if (&route == as_sent || !route.path.match(path)) continue;
    other = true;
    limit = std::max(limit, route.policy.max_body);
  }
  return other ? std::optional(limit) : std::nullopt;
}

bool body_may_override(std::span<const HeaderField> headers) {
  return count_headers(headers, "Content-Type") == 1 &&
         is_form_content_type(*find_header(headers, "Content-Type"));
}

}  // namespace idem::gateway
