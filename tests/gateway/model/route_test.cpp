// Path patterns and route matching (docs/gateway.md `match`).
#include "gateway/model/route.h"

#include <gtest/gtest.h>

#include "gateway/model/config/config.h"

namespace idem::gateway {
namespace {

PathPattern pattern(std::string_view text) {
  Result<PathPattern> p = PathPattern::parse(text);
  EXPECT_TRUE(p.is_ok()) << text << ": " << p.status().message();
  return p ? *p : PathPattern();
}

bool matches(std::string_view pat, std::string_view path) { return pattern(pat).match(path).has_value(); }

std::string parse_error(std::string_view text) {
  Result<PathPattern> p = PathPattern::parse(text);
  return p ? "no error" : p.status().message();
}

bool covers(std::string_view a, std::string_view b) { return pattern(a).covers(pattern(b)); }

// covers() (for `idem check`'s shadowed routes) claims only what match() bears out: for every
// pair it says covers, each sample path the second matches, the first matches too.
TEST(PathPattern, CoversOnlyWhatItSurelyMatches) {
  EXPECT_TRUE(covers("/orders", "/orders"));
  EXPECT_TRUE(covers("/orders", "/ORDERS/"));  // folded as requests are
  EXPECT_TRUE(covers("/orders/{id}", "/orders/42"));
  EXPECT_TRUE(covers("/{a}/{b}", "/orders/{id}"));
  EXPECT_TRUE(covers("/*", "/orders"));
  EXPECT_TRUE(covers("/orders/*", "/orders/42"));
  EXPECT_TRUE(covers("/orders/*", "/orders/{id}/items/*"));
  EXPECT_FALSE(covers("/orders/42", "/orders/{id}"));
  EXPECT_FALSE(covers("/orders/{id}", "/orders/{id}/items"));
  EXPECT_FALSE(covers("/orders/*", "/orders"));
  EXPECT_FALSE(covers("/orders", "/orders/*"));
  EXPECT_FALSE(covers("/orders/{id}", "/payments/{id}"));
  EXPECT_FALSE(pattern("/orders").covers(*PathPattern::parse("/orders", true)));  // format_suffix differs
  const char* patterns[] = {"/",
                            "/*",
                            "/orders",
                            "/orders/*",
                            "/orders/{id}",
                            "/{a}/{b}",
                            "/orders/42",
                            "/orders/{id}/items",
                            "/{x}",
                            "/payments/{id}"};
  const char* paths[] = {"/",         "/orders",     "/orders/",          "/orders/42",
                         "/orders/7", "/payments/1", "/orders/42/items",  "/a/b",
                         "/a",        "/ORDERS/42",  "/orders/42/items/3"};
  for (const char* a : patterns)
    for (const char* b : patterns) {
      if (!covers(a, b)) continue;
      for (const char* path : paths)
        if (matches(b, path)) {
          EXPECT_TRUE(matches(a, path)) << a << " covers " << b << " but not " << path;
        }
    }
}

TEST(PathPattern, Exact) {
  EXPECT_TRUE(matches("/orders", "/orders"));
  EXPECT_FALSE(matches("/orders", "/orders/1"));
  EXPECT_FALSE(matches("/orders", "/order"));
  EXPECT_FALSE(matches("/orders", "/ordersx"));
  EXPECT_FALSE(matches("/orders", "/"));
  EXPECT_FALSE(matches("/orders", "orders"));
  EXPECT_FALSE(matches("/orders", ""));
  EXPECT_TRUE(matches("/", "/"));
  EXPECT_FALSE(matches("/", "/a"));
  EXPECT_TRUE(matches("/a/b/c", "/a/b/c"));
}

// Every spelling under which a framework would route a request to /orders (Express folds
// case and ignores a trailing '/', nginx merges slashes, Tomcat strips ";params") is
// /orders to the route table too: none reaches the upstream unprotected.
TEST(PathPattern, SpellingsFrameworksRouteAlikeMatchAlike) {
  for (std::string_view path : {"/orders", "/orders/", "//orders", "/ORDERS", "/Orders", "/orders;x=1",
                                "/orders;jsessionid=1/", "///orders//", "/%6Frders", "/%4F%52DERS"})
    EXPECT_TRUE(matches("/orders", path)) << path;
  EXPECT_TRUE(matches("/Orders/New", "/orders/new"));  // the pattern is folded too
  EXPECT_TRUE(matches("/a/b", "/a//b"));
  EXPECT_TRUE(matches("/a/b", "/a;x/b;y"));
  EXPECT_TRUE(matches("/a//b/", "/a/b"));  // and so are patterns
  EXPECT_TRUE(matches("/", "//"));
  EXPECT_TRUE(matches("/", "/;x"));
  EXPECT_FALSE(matches("/orders", "/orders/x"));
  EXPECT_FALSE(matches("/orders", "/orders.json"));
}

TEST(PathPattern, PercentDecodedSegments) {
  EXPECT_TRUE(matches("/caf%C3%A9", "/caf\xC3\xA9"));
  EXPECT_TRUE(matches("/a b", "/a%20b"));
  EXPECT_FALSE(matches("/a+b", "/a%20b"));  // '+' is not a space in paths
  EXPECT_TRUE(matches("/a%", "/a%"));       // a stray '%' is itself
}

TEST(PathPattern, Prefix) {
  EXPECT_TRUE(matches("/forms/*", "/forms/x"));
  EXPECT_TRUE(matches("/forms/*", "/forms/x/y/z"));
  EXPECT_TRUE(matches("/forms/*", "/forms/"));
  EXPECT_TRUE(matches("/forms/*", "/FORMS//"));
  EXPECT_TRUE(matches("/forms/*", "//forms;a/x"));
  EXPECT_FALSE(matches("/forms/*", "/forms"));
  EXPECT_FALSE(matches("/forms/*", "/forms;a"));
  EXPECT_FALSE(matches("/forms/*", "/formsx/y"));
  EXPECT_FALSE(matches("/forms/*", "/other/x"));
  EXPECT_TRUE(pattern("/forms/*").is_prefix());
  EXPECT_FALSE(pattern("/forms").is_prefix());
  // "/*" is every path.
  for (std::string_view path : {"/", "/a", "/a/b/", "//"}) EXPECT_TRUE(matches("/*", path)) << path;
}

TEST(PathPattern, Params) {
  PathPattern p = pattern("/skus/{sku}/deduct");
  EXPECT_TRUE(p.has_param("sku"));
  EXPECT_FALSE(p.has_param("id"));
  std::optional<PathParams> m = p.match("/skus/A-17/deduct");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m, (PathParams{{"sku", "A-17"}}));
  EXPECT_EQ(*p.match("/skus/a%20c/deduct"), (PathParams{{"sku", "a c"}}));
  // Parameters come from the normalized path but keep their case: ids differing only by
  // case are different ids to a case-sensitive service, so they must not share a key.
  EXPECT_EQ(*p.match("//SKUS/Ab;v=2/deduct/"), (PathParams{{"sku", "Ab"}}));
  EXPECT_EQ(*p.match("/skus/%E8%AE%A2%E5%8D%95/deduct"), (PathParams{{"sku", "\xE8\xAE\xA2\xE5\x8D\x95"}}));
  EXPECT_FALSE(p.match("/skus//deduct").has_value());  // slashes merged: no sku
  EXPECT_FALSE(p.match("/skus/1/2/deduct").has_value());
  EXPECT_FALSE(p.match("/skus/1").has_value());

  PathPattern two = pattern("/u/{user_id}/o/{order}/*");
  EXPECT_EQ(*two.match("/u/7/o/9/items/3"), (PathParams{{"user_id", "7"}, {"order", "9"}}));
  EXPECT_FALSE(two.match("/u/7/o/9").has_value());
}

TEST(PathPattern, Errors) {
  EXPECT_EQ(parse_error("orders"), "must start with '/'");
  EXPECT_EQ(parse_error(""), "must start with '/'");
  EXPECT_EQ(parse_error("/a?b=1"), "a path pattern has no query or fragment ('?', '#')");
  EXPECT_EQ(parse_error("/a/*/b"), "'*' is allowed only as a trailing \"/*\" (a prefix match)");
  EXPECT_EQ(parse_error("/a*"), "'*' is allowed only as a trailing \"/*\" (a prefix match)");
  EXPECT_EQ(parse_error("/a/{b}c"), "a {parameter} must be a whole path segment (\"/a/{name}/b\")");
  EXPECT_EQ(parse_error("/a/{b"), "a {parameter} must be a whole path segment (\"/a/{name}/b\")");
  EXPECT_EQ(parse_error("/a/{}"), "parameter {}: names are letters, digits and '_'");
  EXPECT_EQ(parse_error("/a/{b-c}"), "parameter {b-c}: names are letters, digits and '_'");
  EXPECT_EQ(parse_error("/{a}/{a}"), "parameter {a} appears twice");
  EXPECT_EQ(parse_error("/a/{b}/*"), "no error");
}

// `match.format_suffix`: Rails' implicit `(.:format)` and Spring MVC's suffix pattern
// match (up to 5.2) route `/skus/A-1/deduct.json` and `/orders/A-1.json` to the handlers
// of `/skus/{sku}/deduct` and `/orders/{id}`.
TEST(PathPattern, FormatSuffix) {
  const PathPattern deduct = *PathPattern::parse("/skus/{sku}/deduct", true);
  EXPECT_TRUE(deduct.format_suffix());
  for (std::string_view path :
       {"/skus/A-1/deduct", "/skus/A-1/deduct.json", "/skus/A-1/DEDUCT.Json", "/skus/A-1/deduct.xml/",
        "/skus/A-1/deduct.json;v=1", "/skus/A-1/deduct%2Ejson", "/skus/A-1/deduct.",
        "/skus/A-1/deduct.tar.gz"})  // Spring: anything after '.'
    EXPECT_EQ(deduct.match(path), (PathParams{{"sku", "A-1"}})) << path;
  for (std::string_view path : {"/skus/A-1/deductjson", "/skus/A-1/deduc.json", "/skus/A-1/deduct-json"})
    EXPECT_FALSE(deduct.match(path).has_value()) << path;
  // Only the last segment takes a suffix; a parameter before it keeps its dots.
  EXPECT_EQ(deduct.match("/skus/A.1/deduct.json"), (PathParams{{"sku", "A.1"}}));

  // A parameter last: its value without the suffix, up to the last '.' (Spring's reading;
  // Rails routes only a value without dots).
  const PathPattern order = *PathPattern::parse("/orders/{id}", true);
  EXPECT_EQ(order.match("/orders/A-1.json"), (PathParams{{"id", "A-1"}}));
  EXPECT_EQ(order.match("/orders/A-1"), (PathParams{{"id", "A-1"}}));
  EXPECT_EQ(order.match("/orders/A.1.json"), (PathParams{{"id", "A.1"}}));
  EXPECT_EQ(order.match("/orders/A-1%2Ejson"), (PathParams{{"id", "A-1"}}));
  // Without the option, a suffix is part of the path (and of the parameter).
  EXPECT_FALSE(matches("/skus/{sku}/deduct", "/skus/A-1/deduct.json"));
  EXPECT_EQ(pattern("/orders/{id}").match("/orders/A-1.json"), (PathParams{{"id", "A-1.json"}}));
  // A prefix pattern matches every path below it already.
  EXPECT_NE(PathPattern::parse("/forms/*", true).status().message().find("prefix pattern"),
            std::string::npos);
}

TEST(PathPattern, DefaultConstructedMatchesNothing) {
  PathPattern p;
  EXPECT_FALSE(p.match("/").has_value());
  EXPECT_FALSE(p.match("/a").has_value());
}

std::vector<Route> table() {
  Config c = load_config_text(R"(
routes:
  - name: one-order
    match: {method: [POST, PUT], path: "/orders/{id}"}
  - name: orders
    match: {method: POST, path: /orders/*}
  - name: catch-all
    match: {method: POST, path: /*}
  - name: patch-exact
    match: {method: patch, path: /orders/special}
)",
                              "routes.yaml");
  return c.routes;
}

std::string matched(const std::vector<Route>& routes, std::string_view method, std::string_view target) {
  std::optional<RouteMatch> m = match_route(routes, method, target);
  return m ? m->route->name : "none";
}

TEST(MatchRoute, FirstMatchWins) {
  std::vector<Route> routes = table();
  EXPECT_EQ(matched(routes, "POST", "/orders/7"), "one-order");
  EXPECT_EQ(matched(routes, "PUT", "/orders/7"), "one-order");
  EXPECT_EQ(matched(routes, "POST", "/orders/7/items"), "orders");
  EXPECT_EQ(matched(routes, "POST", "/orders"), "catch-all");
  EXPECT_EQ(matched(routes, "POST", "/"), "catch-all");
  // Even where a later route is more specific.
  EXPECT_EQ(matched(routes, "POST", "/orders/special"), "one-order");
  EXPECT_EQ(matched(routes, "PATCH", "/orders/special"), "patch-exact");
}

TEST(MatchRoute, MethodMustBeListed) {
  std::vector<Route> routes = table();
  EXPECT_EQ(matched(routes, "GET", "/orders/7"), "none");
  EXPECT_EQ(matched(routes, "DELETE", "/x"), "none");
  // Methods are case-sensitive on the wire; the HTTP layer refuses "post" (400) before
  // the route table is asked.
  EXPECT_EQ(matched(routes, "post", "/x"), "none");
  EXPECT_EQ(matched(routes, "PATCH", "/orders/7"), "none");
}

TEST(MatchRoute, QueryIsIgnoredAndParamsAreReturned) {
  std::vector<Route> routes = table();
  std::optional<RouteMatch> m = match_route(routes, "PUT", "/orders/a%20b?x=1&y=/2");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->route, &routes[0]);
  EXPECT_EQ(m->params, (PathParams{{"id", "a b"}}));
  EXPECT_TRUE(match_route(routes, "POST", "/orders/1/x?")->params.empty());
}

TEST(MatchRoute, UnmatchedTargets) {
  std::vector<Route> routes = table();
  EXPECT_EQ(matched(routes, "POST", "*"), "none");  // asterisk-form
  EXPECT_EQ(matched(routes, "POST", ""), "none");
  EXPECT_EQ(matched({}, "POST", "/"), "none");
}

TEST(MatchRoute, DefaultRoute) {
  std::vector<Route> routes = default_config().routes;
  for (std::string_view target : {"/", "/orders", "/a/b/c?x=1"}) {
    EXPECT_EQ(matched(routes, "POST", target), "default") << target;
    EXPECT_EQ(matched(routes, "PATCH", target), "default") << target;
  }
  for (std::string_view method : {"GET", "PUT", "DELETE", "HEAD", "OPTIONS"}) {
    EXPECT_EQ(matched(routes, method, "/orders"), "none") << method;
  }
  EXPECT_FALSE(routes[0].required);
}

}  // namespace
}  // namespace idem::gateway
