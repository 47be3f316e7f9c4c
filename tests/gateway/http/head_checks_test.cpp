// The head checks (gateway/http/head_checks.h), row by row and without sockets; the edge
// tests (edge_test.cpp) send the same refusals through the idem process.
#include "gateway/http/head_checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

namespace idem::gateway {
namespace {

namespace http = boost::beast::http;
using std::nullopt;

TEST(OriginForm, TargetsAreServedAsTheirOriginFormOrRefused) {
  const std::vector<std::pair<std::string, std::optional<std::string>>> rows = {
      {"/orders", "/orders"},
      {"/orders?x=1", "/orders?x=1"},
      {"?x=1", "/?x=1"},
      {"http://shop.example/orders?x=1", "/orders?x=1"},
      {"https://shop.example", "/"},
      {"HTTP://shop.example?x", "/?x"},
      {"svn+ssh://h/orders", "/orders"},
      {"?next=http://shop.example/orders", "/?next=http://shop.example/orders"},  // a query, not a URL
      {"1http://h/orders", nullopt},  // no scheme: not absolute-form, not a path
      {"h?p://h/orders", nullopt},
      {"%68ttp://h/orders", nullopt},
      {"orders", nullopt},
      {"*", nullopt},
      {"/orders#frag", nullopt},
      {"/orders\\", nullopt},
      {"/orders%2F", nullopt},
      {"/orders%2f", nullopt},
      {"/a%5corders", nullopt},
      {"/x/../orders", nullopt},
      {"/x/%2e%2E/orders", nullopt},
      {"/orders/.", nullopt},
      {"/x/..;/orders", nullopt},
      {"/x/.%3b/orders", nullopt},  // ".;" after decoding: a dot segment with a parameter
      {"/x/...", "/x/..."},
      {"/%zz/orders", "/%zz/orders"},
  };
  for (const auto& [target, want] : rows) EXPECT_EQ(origin_form(target, false), want) << target;
}

TEST(OriginForm, TheAdminListenerNamesKeysWithEncodedSlashes) {
  EXPECT_EQ(origin_form("/v1/records/_/a%2Fb", true), "/v1/records/_/a%2Fb");
  EXPECT_EQ(origin_form("/v1/records/_/a%5Cb", true), "/v1/records/_/a%5Cb");
  EXPECT_EQ(origin_form("/v1/records/_/a%2Fb", false), nullopt);
  EXPECT_EQ(origin_form("/v1/records/_/..", true), nullopt) << "literal dot segments stay refused";
  EXPECT_EQ(origin_form("/v1/records/./x", true), nullopt);
  EXPECT_EQ(origin_form("/v1/records/..;x/k", true), nullopt);
}

// A record whose client-chosen scope or key is ".", "..", ".;x" or "..;x" is named on the
// admin listener with its dots or ';' percent-encoded (issue 29: such records could be
// neither read nor resolved).
TEST(OriginForm, TheAdminListenerNamesDotScopesAndKeysPercentEncoded) {
  for (const char* target : {"/v1/records/%2E%2E/k", "/v1/records/_/%2e", "/v1/records/..%3Bx/k",
                             "/v1/records/.%3B/k", "/v1/records/_/..%3B", "/v1/records/%2E%2E%3Bx/%2E"})
    EXPECT_EQ(origin_form(target, true), std::optional<std::string>(target)) << target;
  for (const char* target : {"/v1/records/%2E%2E/k", "/x/..%3Bx/k", "/x/%2E"})
    EXPECT_EQ(origin_form(target, false), nullopt) << target << " stays refused on the client listener";
}

http::request_header<> head(std::string_view method, std::string_view target, unsigned version = 11,
                            std::vector<std::pair<http::field, std::string>> fields = {}) {
  http::request_header<> h;
  h.method_string(method);
  h.target(target);
  h.version(version);
  // HTTP/1.1 needs a Host on the client listener: a head without one says so.
  if (std::none_of(fields.begin(), fields.end(), [](const auto& f) { return f.first == http::field::host; }))
    h.insert(http::field::host, "x");
  for (auto& [name, value] : fields) h.insert(name, value);
  return h;
}

std::optional<Problem> problem_of(http::request_header<> h, bool admin = false) {
  auto r = refuse_head(h, admin);
  return r ? std::optional<Problem>(r->problem) : std::nullopt;
}

TEST(RefuseHead, FramingOtherServersCouldReadDifferentlyIsRefused) {
  using F = http::field;
  EXPECT_EQ(problem_of(head("POST", "/orders")), nullopt);
  EXPECT_EQ(problem_of(head("POST", "/orders", 11, {{F::transfer_encoding, "chunked"}})), nullopt);
  EXPECT_EQ(problem_of(head("POST", "/orders", 11, {{F::transfer_encoding, "CHUNKED"}})), nullopt);
  EXPECT_EQ(problem_of(head("POST", "/orders", 11, {{F::transfer_encoding, "gzip, chunked"}})),
            Problem::request_invalid);
  EXPECT_EQ(problem_of(head("POST", "/orders", 11,
                            {{F::transfer_encoding, "chunked"}, {F::transfer_encoding, "chunked"}})),
            Problem::request_invalid);
  EXPECT_EQ(problem_of(head("POST", "/orders", 10, {{F::transfer_encoding, "chunked"}})),
            Problem::request_invalid);
  EXPECT_EQ(problem_of(head("POST", "/orders", 11, {{F::content_length, "2"}, {F::content_length, "2"}})),
            Problem::request_invalid);
  EXPECT_EQ(problem_of(head("POST", "/orders", 11, {{F::content_length, "2, 2"}})), Problem::request_invalid);
  EXPECT_EQ(problem_of(head("POST", "/orders", 11, {{F::host, "a"}, {F::host, "b"}})),
            Problem::request_invalid);
  EXPECT_EQ(problem_of(head("POST", "/orders", 20)), Problem::version_not_supported);
  EXPECT_EQ(problem_of(head("POST", "/orders", 9)), Problem::version_not_supported);
}

// RFC 9112 §3.2; an HTTP/1.0 request may come without one (it is given the upstream's).
TEST(RefuseHead, AnHttp11RequestWithoutHostIsRefusedOnTheClientListener) {
  http::request_header<> h;
  h.method(http::verb::post);
  h.target("/orders");
  h.version(11);
  auto r = refuse_head(h, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->problem, Problem::request_invalid);
  EXPECT_EQ(r->detail, "an HTTP/1.1 request needs a Host field");
  EXPECT_FALSE(refuse_head(h, true)) << "the admin listener forwards nothing";
  h.version(10);
  EXPECT_FALSE(refuse_head(h, false));
}

TEST(RefuseHead, MethodsInAnotherCaseAndUnservableTargetsAreRefused) {
  for (const char* m : {"post", "Post", "gEt", "patch"})
    EXPECT_EQ(problem_of(head(m, "/orders")), Problem::request_invalid) << m;
  EXPECT_EQ(problem_of(head("PROPFIND", "/orders")), nullopt) << "an extension method is not a misspelling";
  EXPECT_EQ(problem_of(head("OPTIONS", "*")), nullopt);
  EXPECT_EQ(problem_of(head("GET", "*")), Problem::request_invalid);
  EXPECT_EQ(problem_of(head("POST", "/x/../orders")), Problem::request_invalid);
}

TEST(RefuseHead, ARefusalIsAnsweredInTheRequestsVersionUnlessItIsOneNotSpoken) {
  auto h10 = head("post", "/orders", 10);
  EXPECT_EQ(refuse_head(h10, false)->version, 10u);
  auto h20 = head("POST", "/orders", 20);
  EXPECT_EQ(refuse_head(h20, false)->version, 11u);
  EXPECT_EQ(another_version_refusal().problem, Problem::version_not_supported);
}

TEST(RefuseHead, AnAbsoluteFormTargetIsRewrittenToItsOriginForm) {
  auto h = head("POST", "http://shop.example/orders?x=1");
  EXPECT_FALSE(refuse_head(h, false));
  EXPECT_EQ(h.target(), "/orders?x=1");
}

TEST(SpeaksAnotherVersion, OnlyAWellFormedOtherVersionIsOne) {
  EXPECT_TRUE(speaks_another_version("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
  EXPECT_TRUE(speaks_another_version("GET / HTTP/3.0\r\n"));
  EXPECT_FALSE(speaks_another_version("GET / HTTP/1.1\r\n"));
  EXPECT_FALSE(speaks_another_version("GET / HTTP/2\r\n"));
  EXPECT_FALSE(speaks_another_version("GET / HTTX/2.0\r\n"));
  EXPECT_FALSE(speaks_another_version("PRI"));
}

}  // namespace
}  // namespace idem::gateway
