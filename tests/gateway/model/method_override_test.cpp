// Method overrides (gateway/model/method_override.h): an override that would take a request
// to another route at a service that honours it is refused; one toward the route it
// matches anyway, or toward no route, passes. Each spelling names the frameworks that
// honour it.
#include "gateway/model/method_override.h"

#include <gtest/gtest.h>

#include "gateway/model/config/config.h"
#include "gateway/model/test_request.h"

namespace idem::gateway {
namespace {

using testing::TestRequest;

const Config& config() {
  static const Config c = load_config_text(R"(
defaults:
  max_body: 1KiB
routes:
  - name: profile
    match: {method: PUT, path: /me}
    max_body: 4KiB
  - name: create-me
    match: {method: POST, path: /me}
  - name: both
    match: {method: [POST, PATCH], path: "/users/{id}"}
  - name: orders
    match: {method: POST, path: /orders}
  - name: cancel
    match: {method: DELETE, path: /orders}
)",
                                           "override.yaml");
  return c;
}

// "-" when the request passes, else the route the refusal is counted under.
std::string refused(TestRequest& r) {
  const std::optional<RouteMatch> as_sent = match_route(config().routes, r.method, r.target);
  const std::optional<OverrideRefusal> refusal =
      refuse_method_override(config().routes, as_sent ? as_sent->route : nullptr, r.view());
  if (!refusal) return "-";
  EXPECT_EQ(refusal->rejection.problem, Problem::request_ambiguous);
  EXPECT_NE(refusal->rejection.detail.find("is refused"), std::string::npos) << refusal->rejection.detail;
  return refusal->route->name;
}

TEST(MethodOverride, EverySpellingTowardAnotherRouteIsRefused) {
  struct Row {
    const char* method;
    const char* target;
    std::vector<std::pair<std::string, std::string>> fields;
    const char* body;
    const char* refused;
  };
  const std::pair<std::string, std::string> form{"Content-Type", "application/x-www-form-urlencoded"};
  for (const Row& r : {
           // POST /orders is protected as `orders`; a DELETE would reach `cancel`.
           Row{"POST", "/orders", {{"X-HTTP-Method-Override", "DELETE"}}, "", "orders"},  // Rack, Symfony,
                                                                                          // ASP.NET
           Row{"POST", "/orders", {{"X-Method-Override", "DELETE"}}, "", "orders"},       // method-override
           Row{"POST", "/orders", {{"X-HTTP-Method", "DELETE"}}, "", "orders"},  // method-override, OData
           Row{"POST", "/orders", {{"x-http-method-override", "delete"}}, "", "orders"},       // any case
           Row{"POST", "/orders", {{"X-HTTP-Method-Override", "GET, DELETE"}}, "", "orders"},  // the last
                                                                                               // element
           Row{"POST",
               "/orders",
               {{"X-HTTP-Method-Override", "GET"}, {"X-HTTP-Method-Override", "DELETE"}},
               "",
               "orders"},
           Row{"POST", "/orders?_method=DELETE", {}, "", "orders"},  // Spring's getParameter, Laravel
           Row{"POST", "/orders?a=1;_method=DELETE", {}, "", "orders"},
           Row{"POST", "/orders?_method=delete&_method=POST", {}, "", "orders"},
           Row{"POST", "/orders?%5Fmethod=DELETE", {}, "", "orders"},
           Row{"POST", "/orders", {form}, "_method=DELETE", "orders"},  // Rack, Spring, Laravel: the form
                                                                        // body
           Row{"POST", "/orders", {form}, "a=1&_method=delete", "orders"},
           // On no route as sent, counted under the route it would reach.
           Row{"GET", "/ORDERS/?_method=DELETE", {}, "", "cancel"},
           Row{"PATCH", "/me", {{"X-HTTP-Method-Override", "PUT"}}, "", "profile"},
           // Passes: toward the route it matches anyway, toward no route, or no override.
           Row{"POST", "/orders", {{"X-HTTP-Method-Override", "POST"}}, "", "-"},
           Row{"POST", "/users/7", {{"X-HTTP-Method-Override", "PATCH"}}, "", "-"},
           Row{"POST", "/orders", {{"X-HTTP-Method-Override", "PUT"}}, "", "-"},
           Row{"POST", "/elsewhere", {{"X-HTTP-Method-Override", "DELETE"}}, "", "-"},
           Row{"POST", "/orders?method=DELETE&x_method=DELETE", {}, "", "-"},
           Row{"POST", "/orders", {{"X-Override", "DELETE"}}, "", "-"},
           // A body that is no form carries no `_method` to any framework above.
           Row{"POST", "/orders", {{"Content-Type", "application/json"}}, "_method=DELETE", "-"},
           Row{"POST", "/orders", {}, "_method=DELETE", "-"},
       }) {
    TestRequest req;
    req.method = r.method;
    req.target = r.target;
    req.headers = r.fields;
    req.body = r.body;
    EXPECT_EQ(refused(req), r.refused) << r.method << " " << r.target << " " << r.body;
  }
}

// Only a path with a route other than the one a request matches needs a look, within the
// largest max_body of the path's routes.
TEST(MethodOverride, OverrideBodyLimit) {
  const std::vector<Route>& routes = config().routes;
  const Route* profile = &routes[0];
  const Route* both = &routes[2];
  EXPECT_EQ(override_body_limit(routes, nullptr, "/me?x=1"), 4096u);
  EXPECT_EQ(override_body_limit(routes, &routes[1], "/me"), 4096u);
  EXPECT_EQ(override_body_limit(routes, profile, "/me"), 4096u);
  EXPECT_EQ(override_body_limit(routes, nullptr, "/Orders/"), 1024u);
  EXPECT_EQ(override_body_limit(routes, nullptr, "/elsewhere"), std::nullopt);
  EXPECT_EQ(override_body_limit(routes, both, "/users/7"), std::nullopt);  // one route on the path
  EXPECT_EQ(override_body_limit(routes, nullptr, "/users/7"), 1024u);
}

}  // namespace
}  // namespace idem::gateway
