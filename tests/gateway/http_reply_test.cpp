// The gateway runtime's pure helpers: problem+json replies, Retry-After, hop-by-hop
// stripping, metrics rendering and the records JSON.
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "gateway/admin/metrics.h"
#include "gateway/admin/record_json.h"
#include "gateway/http/http_reply.h"
#include "gateway/http/upstream.h"
#include "gateway/stored_result.h"

namespace idem::gateway {
namespace {

using std::chrono::milliseconds;

TEST(ProblemResponse, IsProblemJsonWithTheSpecFields) {
  HttpResponse r = problem_response(Problem::in_progress, "busy", 11, true, milliseconds(1500));
  EXPECT_EQ(r.result_int(), 409u);
  EXPECT_EQ(r[http::field::content_type], "application/problem+json");
  EXPECT_EQ(r[http::field::retry_after], "2");
  auto o = boost::json::parse(r.body()).as_object();
  EXPECT_EQ(o.at("type").as_string(), "urn:idem:problem:in-progress");
  EXPECT_EQ(o.at("status").as_int64(), 409);
  EXPECT_FALSE(o.at("title").as_string().empty());
  EXPECT_EQ(o.at("detail").as_string(), "busy");
  EXPECT_EQ(r[http::field::content_length], std::to_string(r.body().size()));
}

TEST(HopByHop, StrippedWithTheFieldsConnectionNames) {
  HttpRequest req{http::verb::post, "/orders", 11};
  req.set(http::field::connection, "keep-alive, X-Private");
  req.set("X-Private", "1");
  req.set("Keep-Alive", "timeout=5");
  req.set(http::field::transfer_encoding, "chunked");
  req.set("Idempotency-Fence", "99");
  req.set("X-Kept", "yes");
  req.body() = "{}";
  UpstreamUrl up;
  up.base_path = "/api";
  HttpRequest fwd = make_forward_request(req, up, RequestMeta{"127.0.0.1", RequestId::generate()});
  EXPECT_EQ(fwd.count("X-Private"), 0u);
  EXPECT_EQ(fwd.count("Keep-Alive"), 0u);
  EXPECT_EQ(fwd.count(http::field::transfer_encoding), 0u);
  EXPECT_EQ(fwd.count("Idempotency-Fence"), 0u);
  EXPECT_EQ(fwd["X-Kept"], "yes");
  EXPECT_EQ(fwd.target(), "/api/orders");
  EXPECT_EQ(fwd[http::field::content_length], "2");
}

// Names listed in several Connection fields, in any case, and more of them than
// strip_hop_by_hop keeps inline (8): all are removed, nothing else is.
TEST(HopByHop, EveryNameOfEveryConnectionFieldIsStripped) {
  for (const int listed : {1, 8, 9, 20}) {
    http::fields f;
    std::string first, second;
    for (int i = 0; i < listed; ++i) {
      std::string& list = i % 2 ? second : first;
      list += (list.empty() ? "" : " , ") + std::string("x-p") + std::to_string(i);
      f.insert("X-P" + std::to_string(i), "1");
    }
    f.insert(http::field::connection, first + ", , connection");
    if (!second.empty()) f.insert(http::field::connection, second);
    f.insert("Upgrade", "h2c");
    f.insert("X-Kept", "yes");
    f.insert("Content-Length", "2");
    strip_hop_by_hop(f);
    std::vector<std::string> left;
    for (const auto& field : f) left.emplace_back(field.name_string());
    EXPECT_EQ(left, (std::vector<std::string>{"X-Kept", "Content-Length"})) << listed << " names listed";
  }
}

TEST(HopByHop, OneListForForwardingAndStoring) {
  for (std::string_view name : kHopByHopFields) {
    std::string upper(name);
    for (char& c : upper) c = c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    EXPECT_TRUE(is_hop_by_hop(name)) << name;
    EXPECT_TRUE(is_hop_by_hop(upper)) << upper;
    EXPECT_TRUE(is_unstorable_header(upper)) << upper;
  }
  // Framing and cookies are not hop-by-hop: forwarded, but never stored for a replay.
  for (std::string_view name : {"Content-Length", "Set-Cookie"}) {
    EXPECT_FALSE(is_hop_by_hop(name)) << name;
    EXPECT_TRUE(is_unstorable_header(name)) << name;
  }
  for (std::string_view name : {"Content-Type", "Location", "X-Kept", "Trailers", "T"}) {
    EXPECT_FALSE(is_hop_by_hop(name)) << name;
    EXPECT_FALSE(is_unstorable_header(name)) << name;
  }
}

TEST(Metrics, RendersTheSpecNames) {
  Metrics m;
  m.count_request("orders", "forwarded");
  m.count_request("orders", "forwarded");
  m.count_request("orders", "key_reused");
  m.observe_store("begin", milliseconds(2));
  m.observe_upstream(milliseconds(30));
  m.count_token_issued();
  const std::string text = m.render();
  EXPECT_NE(text.find("idem_requests_total{route=\"orders\",outcome=\"forwarded\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("idem_requests_total{route=\"orders\",outcome=\"key_reused\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("idem_store_seconds_bucket{op=\"begin\",le=\"0.0025\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("idem_store_seconds_count{op=\"begin\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("idem_upstream_seconds_bucket{le=\"0.025\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("idem_upstream_seconds_bucket{le=\"+Inf\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("idem_tokens_issued_total 1\n"), std::string::npos);
  EXPECT_NE(text.find("idem_inflight 0\n"), std::string::npos);
}

// The upstream's response is encoded in place; it reads back as the StoredResult it is,
// without the fields a replay must not carry.
TEST(StoredResponse, EncodedInPlaceAsTheStoredResultItIs) {
  const std::vector<std::pair<std::string_view, std::string_view>> fields = {
      {"Content-Type", "application/json"},
      {"Set-Cookie", "s=1"},
      {"Content-Length", "7"},
      {"X-Order", "42"},
      {"connection", "close"},
      {"X-Order", "43"}};
  const std::string bytes = encode_response(201, fields, "{\"a\":1}");
  StoredResult expected;
  expected.response.status = 201;
  expected.response.headers = {{"Content-Type", "application/json"}, {"X-Order", "42"}, {"X-Order", "43"}};
  expected.response.body = "{\"a\":1}";
  EXPECT_EQ(bytes, encode(expected));
  auto back = decode_stored_result(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, expected);
}

TEST(RecordJson, DoneResponseAndPending) {
  Record r;
  r.scope = "";
  r.key = "k";
  r.state = RecordState::done;
  r.fence = 42;
  r.expires_at = from_micros(1'800'000'000'123'456);
  StoredResult s;
  s.response.status = 201;
  r.result = encode(s);
  auto o = boost::json::parse(record_json(r)).as_object();
  EXPECT_EQ(o.at("scope").as_string(), "");
  EXPECT_EQ(o.at("state").as_string(), "done");
  EXPECT_EQ(o.at("fence").as_int64(), 42);
  EXPECT_EQ(o.at("expires_at").as_string(), "2027-01-15T08:00:00.123456Z");
  EXPECT_EQ(o.at("result").as_string(), "response");
  EXPECT_EQ(o.at("response_status").as_int64(), 201);

  Record p;
  p.key = "k";
  p.lease_until = from_micros(1'800'000'000'000'000);
  auto q = boost::json::parse(record_json(p)).as_object();
  EXPECT_EQ(q.at("state").as_string(), "pending");
  EXPECT_TRUE(q.contains("lease_until"));
  EXPECT_FALSE(q.contains("result"));
}

}  // namespace
}  // namespace idem::gateway
