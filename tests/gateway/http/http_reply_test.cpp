// The gateway runtime's pure helpers: problem+json replies, Retry-After, hop-by-hop
// stripping, metrics rendering and the records JSON.
#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "gateway/admin/record_json.h"
#include "gateway/http/head_writer.h"
#include "gateway/http/http_reply.h"
#include "gateway/http/upstream.h"
#include "gateway/model/request_meta.h"
#include "gateway/model/stored_result.h"
#include "gateway/pipeline/metrics.h"
#include "idem/version.h"

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
  EXPECT_TRUE(o.at("retryable").as_bool());
  const std::string instance(o.at("instance").as_string());
  ASSERT_TRUE(instance.starts_with("urn:uuid:")) << instance;
  EXPECT_TRUE(is_uuid(std::string_view(instance).substr(9))) << instance;
  EXPECT_FALSE(boost::json::parse(problem_response(Problem::key_reused, "", 11, true).body())
                   .as_object()
                   .at("retryable")
                   .as_bool());
}

// The client listener's problems name the request (docs/http.md, "Every problem").
TEST(ProblemResponse, TheInstanceNamesTheRequestId) {
  HttpResponse r = problem_response(Problem::key_missing, "no key", 11, true, milliseconds(1000));
  r.set("X-Request-Id", "3f2c1e4a-9b8d-4c7e-a6f5-0123456789ab");
  name_problem_instance(r, "3f2c1e4a-9b8d-4c7e-a6f5-0123456789ab");
  std::vector<std::string> names;
  for (const auto& f : r) names.emplace_back(f.name_string());
  EXPECT_EQ(names, (std::vector<std::string>{"Content-Type", "Cache-Control", "Content-Length", "Retry-After",
                                             "X-Request-Id"}));
  auto o = boost::json::parse(r.body()).as_object();
  EXPECT_EQ(o.at("instance").as_string(), "urn:uuid:3f2c1e4a-9b8d-4c7e-a6f5-0123456789ab");
  EXPECT_EQ(r[http::field::content_length], std::to_string(r.body().size()));
  // A client's id that is no UUID: percent-encoded beyond RFC 3986's unreserved set.
  name_problem_instance(r, "req 1/a");
  EXPECT_EQ(boost::json::parse(r.body()).as_object().at("instance").as_string(),
            "urn:idem:request:req%201%2Fa");
  name_problem_instance(r, "abc-1.2_3~");
  EXPECT_EQ(boost::json::parse(r.body()).as_object().at("instance").as_string(),
            "urn:idem:request:abc-1.2_3~");
}

TEST(ProblemResponse, TheServicesOwnProblemsAndReplaysKeepTheirInstance) {
  const std::string theirs = R"({"type":"https://shop.example/out-of-stock","instance":"/orders/7"})";
  HttpResponse up{http::status::conflict, 11};
  up.set(http::field::content_type, "application/problem+json");
  up.body() = theirs;
  name_problem_instance(up, "3f2c1e4a-9b8d-4c7e-a6f5-0123456789ab");
  EXPECT_EQ(up.body(), theirs);
  HttpResponse replay = problem_response(Problem::key_missing, "no key", 11, true);
  replay.set(kReplayedHeader, "true");
  const std::string before = replay.body();
  name_problem_instance(replay, "3f2c1e4a-9b8d-4c7e-a6f5-0123456789ab");
  EXPECT_EQ(replay.body(), before);
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
  HttpRequest fwd = make_forward_request(req, up, request_meta(req.base(), "127.0.0.1"));
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

// strip_hop_by_hop tells the fields apart by Beast's code for their name: every name of the
// list, in any case, and however it was added, is one Beast knows and is removed.
TEST(HopByHop, EveryListedNameInAnyCaseIsStripped) {
  for (std::string_view name : kHopByHopFields) {
    std::string mixed(name);
    for (std::size_t i = 0; i < mixed.size(); i += 2)
      if (mixed[i] >= 'a' && mixed[i] <= 'z') mixed[i] = static_cast<char>(mixed[i] - 'a' + 'A');
    EXPECT_NE(http::string_to_field(mixed), http::field::unknown) << mixed;
    http::fields f;
    f.insert(mixed, "1");
    f.insert("X-Kept", "yes");
    strip_hop_by_hop(f);
    EXPECT_EQ(f.count(mixed), 0u) << mixed;
    EXPECT_EQ(f["X-Kept"], "yes");
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
  m.observe_upstream("", milliseconds(30));
  m.observe_upstream("billing", milliseconds(300));
  m.count_token_issued();
  const std::string text = m.render();
  EXPECT_NE(text.find("idem_requests_total{route=\"orders\",outcome=\"forwarded\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("idem_requests_total{route=\"orders\",outcome=\"key_reused\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("idem_store_seconds_bucket{op=\"begin\",le=\"0.0025\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("idem_store_seconds_count{op=\"begin\"} 1\n"), std::string::npos);
  // By upstream: "" the default, else the name routes give it (docs/observability.md).
  EXPECT_NE(text.find("idem_upstream_seconds_bucket{upstream=\"\",le=\"0.025\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("idem_upstream_seconds_bucket{upstream=\"\",le=\"0.05\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("idem_upstream_seconds_bucket{upstream=\"\",le=\"+Inf\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("idem_upstream_seconds_bucket{upstream=\"billing\",le=\"0.25\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("idem_upstream_seconds_bucket{upstream=\"billing\",le=\"0.5\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("idem_upstream_seconds_count{upstream=\"billing\"} 1\n"), std::string::npos);
  EXPECT_EQ(text.find("# TYPE idem_upstream_seconds"), text.rfind("# TYPE idem_upstream_seconds"))
      << "one family";
  EXPECT_NE(text.find("idem_tokens_issued_total 1\n"), std::string::npos);
  EXPECT_NE(text.find("idem_inflight 0\n"), std::string::npos);
}

TEST(Metrics, BuildInfoProcessAndReloads) {
  Metrics m;
  std::string text = m.render();
  EXPECT_NE(text.find("idem_build_info{version=\"" + std::string(kVersion) + "\"} 1\n"), std::string::npos);
  for (const char* name :
       {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
        "process_open_fds", "process_max_fds", "process_start_time_seconds"})
    EXPECT_NE(text.find(std::string("\n# TYPE ") + name + " "), std::string::npos) << name;
  EXPECT_NE(text.find("idem_config_reloads_total{result=\"ok\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("idem_config_reloads_total{result=\"failed\"} 0\n"), std::string::npos);
  auto last_success = [&] {
    const std::string name = "\nidem_config_last_reload_success_timestamp_seconds ";
    const auto at = text.find(name);
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size()));
  };
  const double start = last_success();
  EXPECT_GT(start, 1.7e9);
  m.count_reload(false);
  text = m.render();
  EXPECT_NE(text.find("idem_config_reloads_total{result=\"failed\"} 1\n"), std::string::npos);
  EXPECT_EQ(last_success(), start) << "a failed reload changes nothing";
  m.count_reload(true);
  text = m.render();
  EXPECT_NE(text.find("idem_config_reloads_total{result=\"ok\"} 1\n"), std::string::npos);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(last_success(), now, 5);
}

// The buckets reach the configured timeout and deadline, however long, and a call cut off
// by one lands in its own bucket.
TEST(Metrics, BucketsCoverTheConfiguredTimeouts) {
  EXPECT_EQ(latency_buckets(std::chrono::seconds(30)).back(), 60);
  EXPECT_EQ(latency_buckets(std::chrono::seconds(90)).back(), 90);
  const auto b = latency_buckets(milliseconds(3500));
  EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
  EXPECT_EQ(std::count(b.begin(), b.end(), 3.5), 1);
  EXPECT_EQ(latency_buckets(std::chrono::seconds(5)).size(), latency_buckets(Duration{}).size());

  Metrics m(MetricsOptions{std::chrono::seconds(120), milliseconds(7500)});
  m.observe_upstream("", std::chrono::seconds(100));
  m.observe_upstream("", std::chrono::seconds(120));
  m.observe_store("begin", milliseconds(7500));
  const std::string text = m.render();
  EXPECT_NE(text.find("idem_upstream_seconds_bucket{upstream=\"\",le=\"60\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("idem_upstream_seconds_bucket{upstream=\"\",le=\"120\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("idem_upstream_seconds_bucket{upstream=\"\",le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("idem_store_seconds_bucket{op=\"begin\",le=\"5\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("idem_store_seconds_bucket{op=\"begin\",le=\"7.5\"} 1\n"), std::string::npos) << text;
}

TrustedProxies trusting(const char* range) { return TrustedProxies({*parse_ip_range(range)}); }

// The forwarding fields (docs/gateway.md, "Forwarding fields"): from a trusted proxy,
// X-Forwarded-For and Forwarded appended to, X-Forwarded-Proto kept; the trace context
// untouched, the request id kept or generated, and none of them removable through the
// client's Connection header.
TEST(ForwardRequest, CarriesTheForwardingFields) {
  HttpRequest req{http::verb::post, "/orders", 11};
  req.set(http::field::host, "shop.example");
  req.insert("X-Forwarded-For", "1.2.3.4");
  req.insert("X-Forwarded-For", "5.6.7.8");
  req.set("X-Forwarded-Proto", "https");
  req.set("Forwarded", "for=1.2.3.4;proto=https;host=shop.example");
  req.set("X-Forwarded-Host", "shop.example");
  req.set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  req.set("tracestate", "a=1");
  req.set("X-Request-Id", "client-1");
  req.set(http::field::connection, "X-Request-Id, X-Forwarded-Proto");
  const TrustedProxies proxies = trusting("10.0.0.0/8");
  const RequestMeta meta = request_meta(req.base(), "10.0.0.9", &proxies);
  EXPECT_EQ(meta.request_id.view(), "client-1");
  EXPECT_TRUE(meta.trusted_peer);
  EXPECT_EQ(meta.origin(), "5.6.7.8");
  UpstreamUrl up;
  HttpRequest fwd = make_forward_request(req, up, meta);
  EXPECT_EQ(fwd.count("X-Forwarded-For"), 1u);
  EXPECT_EQ(fwd["X-Forwarded-For"], "1.2.3.4, 5.6.7.8, 10.0.0.9");
  // Named in Connection, the proxy's X-Forwarded-Proto went with the hop: this hop's.
  EXPECT_EQ(fwd.count("X-Forwarded-Proto"), 1u);
  EXPECT_EQ(fwd["X-Forwarded-Proto"], "http");
  EXPECT_EQ(fwd["Forwarded"], "for=1.2.3.4;proto=https;host=shop.example, for=10.0.0.9;proto=http");
  EXPECT_EQ(fwd["X-Forwarded-Host"], "shop.example");
  EXPECT_EQ(fwd["traceparent"], "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  EXPECT_EQ(fwd["tracestate"], "a=1");
  EXPECT_EQ(fwd.count("X-Request-Id"), 1u);
  EXPECT_EQ(fwd["X-Request-Id"], "client-1");
  req.set(http::field::connection, "close");
  EXPECT_EQ(make_forward_request(req, up, meta)["X-Forwarded-Proto"], "https")
      << "a TLS proxy's word is kept";
  // The client's own X-Forwarded-For, declared hop-by-hop, goes; the gateway's entry stays.
  req.set(http::field::connection, "X-Forwarded-For");
  EXPECT_EQ(make_forward_request(req, up, meta)["X-Forwarded-For"], "10.0.0.9");

  // From any other peer nothing of it is believed: every forwarding field removed or
  // overwritten.
  for (const TrustedProxies* none : {static_cast<const TrustedProxies*>(nullptr), &proxies}) {
    const RequestMeta direct = request_meta(req.base(), "203.0.113.5", none);
    EXPECT_FALSE(direct.trusted_peer);
    EXPECT_EQ(direct.origin(), "203.0.113.5");
    HttpRequest f = make_forward_request(req, up, direct);
    EXPECT_EQ(f["X-Forwarded-For"], "203.0.113.5");
    EXPECT_EQ(f["X-Forwarded-Proto"], "http");
    EXPECT_EQ(f["Forwarded"], "for=203.0.113.5;proto=http");
    EXPECT_EQ(f.count("X-Forwarded-Host"), 0u);
    EXPECT_EQ(f[http::field::host], "shop.example");
  }

  HttpRequest bare{http::verb::get, "/x", 11};
  bare.insert("X-Request-Id", "one");
  bare.insert("X-Request-Id", "two");
  const RequestMeta generated = request_meta(bare.base(), "::1");
  EXPECT_TRUE(generated.request_id.generated());
  HttpRequest f2 = make_forward_request(bare, up, generated);
  EXPECT_EQ(f2.count("X-Request-Id"), 1u);
  EXPECT_EQ(f2["X-Request-Id"], generated.request_id.view());
  EXPECT_EQ(f2["X-Forwarded-For"], "::1");
  EXPECT_EQ(f2["Forwarded"], "for=\"[::1]\";proto=http");

  // More X-Forwarded-For fields than are held inline: all combined, in order.
  HttpRequest many{http::verb::get, "/x", 11};
  std::string expected;
  for (int i = 0; i < 20; ++i) {
    many.insert("X-Forwarded-For", "10.0.0." + std::to_string(i));
    expected += "10.0.0." + std::to_string(i) + ", ";
  }
  const TrustedProxies all = trusting("0.0.0.0/0");
  HttpRequest f3 = make_forward_request(many, up, request_meta(many.base(), "192.0.2.1", &all));
  EXPECT_EQ(f3.count("X-Forwarded-For"), 1u);
  EXPECT_EQ(f3["X-Forwarded-For"], expected + "192.0.2.1");
}

// Every field a client could use to claim another origin, scheme, host or path prefix is
// gone from a request that came straight from it (the fields of issue 29's review).
TEST(ForwardRequest, NoForwardingFieldOfAnUntrustedClientReachesTheUpstream) {
  HttpRequest req{http::verb::post, "/orders", 11};
  req.set(http::field::host, "shop.example");
  for (const char* name :
       {"Forwarded", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Forwarded-Port",
        "X-Forwarded-Prefix", "X-Forwarded-Ssl", "X-Real-IP", "Front-End-Https", "x-forwarded-host",
        "X-Forwarded-Scheme", "X-Forwarded-Protocol", "X-Client-IP", "True-Client-IP", "X-Url-Scheme"})
    req.insert(name, "evil.example");
  req.body() = "{}";
  const RequestMeta meta = request_meta(req.base(), "198.51.100.4");
  const std::string head = forward_request(req, UpstreamUrl{}, meta, {}).head;
  EXPECT_EQ(head.find("evil"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nX-Forwarded-For: 198.51.100.4\r\nX-Forwarded-Proto: http\r\n"
                      "Forwarded: for=198.51.100.4;proto=http\r\n"),
            std::string::npos)
      << head;
}

// An HTTP/1.0 request may come without Host; forwarded as HTTP/1.1 it gets the upstream's.
TEST(ForwardRequest, AnHttp10RequestWithoutHostGetsTheUpstreamsAuthority) {
  HttpRequest req{http::verb::get, "/x", 10};
  UpstreamUrl up;
  up.host = "127.0.0.1";
  up.port = 9000;
  const RequestMeta meta = request_meta(req.base(), "127.0.0.1");
  HttpRequest fwd = make_forward_request(req, up, meta);
  EXPECT_EQ(fwd.version(), 11u);
  EXPECT_EQ(fwd[http::field::host], "127.0.0.1:9000");
  up.host = "::1";
  EXPECT_EQ(make_forward_request(req, up, meta)[http::field::host], "[::1]:9000");
  up.host = "backend";
  up.port = 80;
  EXPECT_EQ(make_forward_request(req, up, meta)[http::field::host], "backend");
  req.set(http::field::host, "shop.example");
  EXPECT_EQ(make_forward_request(req, up, meta)[http::field::host], "shop.example");
}

// forward_request writes the bytes of make_forward_request's request with the key and
// fence set, as append_head writes them, straight from the client's request: checked over
// requests drawn from every field the forwarding treats specially (hop-by-hop ones,
// Connection naming others, forwarding fields, request ids, framing, the key and fence), in
// any case and order, on every method and with or without a body and a base path.
TEST(ForwardRequest, WrittenStraightFromTheClientsRequestAsTheCopyWouldBe) {
  std::mt19937 rng(20261202);
  auto pick = [&rng](auto const& options) { return options[rng() % options.size()]; };
  const std::vector<std::string> names = {"Host",
                                          "Content-Type",
                                          "X-Kept",
                                          "Connection",
                                          "connection",
                                          "Keep-Alive",
                                          "TE",
                                          "Trailer",
                                          "Transfer-Encoding",
                                          "Upgrade",
                                          "Proxy-Authorization",
                                          "Proxy-Connection",
                                          "Expect",
                                          "Idempotency-Fence",
                                          "idempotency-fence",
                                          "Idempotency-Key",
                                          "IDEMPOTENCY-KEY",
                                          "X-Forwarded-For",
                                          "x-forwarded-for",
                                          "X-Forwarded-Proto",
                                          "Forwarded",
                                          "forwarded",
                                          "X-Forwarded-Host",
                                          "X-Real-IP",
                                          "X-Request-Id",
                                          "x-request-id",
                                          "Content-Length",
                                          "X-Private",
                                          "traceparent"};
  const std::vector<std::string> values = {"1",
                                           "close",
                                           "keep-alive",
                                           "X-Private",
                                           "x-private, X-Kept",
                                           "X-Request-Id",
                                           "x-forwarded-for",
                                           "Idempotency-Key",
                                           "Host",
                                           "content-length",
                                           "chunked",
                                           "100-continue",
                                           "10.0.0.1",
                                           "",
                                           " a , ,b "};
  const std::vector<http::verb> methods = {http::verb::post, http::verb::put,     http::verb::patch,
                                           http::verb::get,  http::verb::delete_, http::verb::head};
  for (int round = 0; round < 3000; ++round) {
    HttpRequest req{pick(methods), rng() % 4 ? "/orders/1?x=y" : "/", rng() % 5 ? 11u : 10u};
    const int fields = static_cast<int>(rng() % 12);
    for (int i = 0; i < fields; ++i) req.insert(pick(names), pick(values));
    if (rng() % 3) req.body() = std::string(rng() % 40, 'b');
    UpstreamUrl up;
    if (rng() % 3 == 0) up.base_path = "/api";
    if (rng() % 4 == 0) req.erase(http::field::host);
    static const TrustedProxies proxies = trusting("10.0.0.0/8");
    const RequestMeta meta = request_meta(req.base(), rng() % 2 ? "10.0.0.9" : "::1", &proxies);
    const std::string key = "key-" + std::to_string(round), fence = std::to_string(rng());
    const std::array<std::pair<std::string_view, std::string_view>, 2> set{
        {{"Idempotency-Key", key}, {"Idempotency-Fence", fence}}};

    HttpRequest copy = make_forward_request(req, up, meta);
    for (const auto& [name, value] : set) copy.set(name, value);
    std::string expected;
    append_head(expected, copy.base());
    const ForwardRequest written = forward_request(req, up, meta, set);
    ASSERT_EQ(written.head, expected) << "round " << round;
    EXPECT_EQ(written.body, copy.body());
    EXPECT_EQ(written.head_request, req.method() == http::verb::head);
    // Without fields to set: as make_forward_request alone.
    std::string plain;
    append_head(plain, make_forward_request(req, up, meta).base());
    ASSERT_EQ(forward_request(req, up, meta, {}).head, plain) << "round " << round;
  }
  // More X-Forwarded-For fields and more names listed in Connection than are held inline.
  HttpRequest many{http::verb::post, "/orders", 11};
  std::string listed;
  for (int i = 0; i < 12; ++i) {
    many.insert("X-Forwarded-For", "10.0.0." + std::to_string(i));
    many.insert("X-Hop-" + std::to_string(i), "gone");
    listed += "x-hop-" + std::to_string(i) + ", ";
  }
  many.insert(http::field::connection, listed + "X-Hop-11");
  many.insert("X-Kept", "yes");
  const TrustedProxies all = trusting("0.0.0.0/0");
  const RequestMeta meta = request_meta(many.base(), "192.0.2.1", &all);
  std::string expected;
  append_head(expected, make_forward_request(many, UpstreamUrl{}, meta).base());
  const std::string written = forward_request(many, UpstreamUrl{}, meta, {}).head;
  EXPECT_EQ(written, expected);
  EXPECT_EQ(written.find("X-Hop-"), std::string::npos) << written;
  EXPECT_NE(written.find("10.0.0.11, 192.0.2.1"), std::string::npos) << written;
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

#include "gateway/admin/raw_json.h"

namespace idem::gateway {
namespace {

TEST(RawJson, MemberTextIsTheValueAsWritten) {
  EXPECT_EQ(member_text(R"({"a":1,"result": {"x":[1,"}",{"y":"\"]"}]} ,"b":2})", "result"),
            R"({"x":[1,"}",{"y":"\"]"}]})");
  EXPECT_EQ(member_text(R"( { "\u0072esult" : 1e400 } )", "result"), "1e400");
  EXPECT_EQ(member_text(R"({"results":1,"result":"x"})", "result"), R"("x")");
  EXPECT_EQ(member_text(R"({"a":{"result":1}})", "result"), std::nullopt);  // only top-level members
  EXPECT_EQ(member_text(R"({})", "result"), std::nullopt);
  EXPECT_EQ(member_text(R"([1])", "result"), std::nullopt);
}

TEST(RawJson, ValueTextIsJsonOrAString) {
  EXPECT_EQ(json_value_text(" 1790000000000000001 "), "1790000000000000001");
  EXPECT_EQ(json_value_text("{\"a\":1e400}"), "{\"a\":1e400}");
  EXPECT_EQ(json_value_text("not json"), "\"not json\"");
  EXPECT_EQ(with_member("{}", "value", "1"), "{\"value\":1}");
  EXPECT_EQ(with_member("{\"a\":1}", "v\"", "[]"), "{\"a\":1,\"v\\\"\":[]}");
}

}  // namespace
}  // namespace idem::gateway
