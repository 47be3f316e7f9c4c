// The HTTP edge under attack (docs/gateway.md, "The HTTP edge"): raw bytes against the
// real `idem serve` binary in front of the test upstream, asserting what the client got
// and what reached the upstream (count and fields). Each attack is bounded in bytes and
// time; the memory attacks read idem's resident set from /proc while they run.
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>

#include "e2e/e2e_fixture.h"
#include "e2e/raw_socket.h"
#include "util/ascii.h"

namespace idem::e2e {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// The routes under attack: a client key, a small body and result, a path parameter.
std::string edge_config(unsigned short listen, unsigned short upstream, unsigned short admin) {
  return config_head(listen, upstream, admin, "memory:") + R"(defaults:
  upstream_timeout: 5s
routes:
  - name: orders
    match: { method: POST, path: /orders }
  - name: small
    match: { method: POST, path: /small }
    max_body: 1KiB
    max_result: 64B
  - name: stock
    match: { method: POST, path: "/skus/{sku}/deduct" }
    key: "stock:{path.sku}"
)";
}

class EdgeTest : public GatewayE2E {
 protected:
  static void SetUpTestSuite() { start(&edge_config); }

  // The requests the upstream received from the n-th on.
  static json::array seen_from(std::size_t n) {
    return json::parse(request(upstream_->port(), verb::get, "/_seen?from=" + std::to_string(n)).body())
        .as_array();
  }
  static std::size_t seen_count() { return seen_from(0).size(); }
  // The values of field `name` in a request the upstream received.
  static std::vector<std::string> field_values(const json::value& seen, std::string_view name) {
    std::vector<std::string> out;
    for (const auto& f : seen.at("fields").as_array())
      if (const auto& n = f.as_array()[0].as_string(); idem::util::iequals({n.data(), n.size()}, name))
        out.emplace_back(f.as_array()[1].as_string());
    return out;
  }
  // Sends `head`, then `unit` over and over (at most `max_bytes`, at most 10 s) while
  // idem's resident set is sampled; returns the largest growth seen, in KiB, and what the
  // client received.
  static long flood(const std::string& head, const std::string& unit, std::size_t max_bytes,
                    std::string* answer) {
    const long before = rss_kib(idem_->pid());
    long peak = before;
    Raw c(port_);
    // The answer is read while the attack goes on: idem answers, then closes, and a close
    // under unread bytes resets the connection.
    std::thread reader([&] { *answer = c.read_all(); });
    c.send(head);
    std::string block;
    while (block.size() < 64 * 1024) block += unit;
    std::size_t sent = 0;
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (sent < max_bytes && Clock::now() < until) {
      if (!c.send(block)) break;
      sent += block.size();
      if (sent % (1024 * 1024) < block.size()) peak = std::max(peak, rss_kib(idem_->pid()));
    }
    peak = std::max(peak, rss_kib(idem_->pid()));
    c.shutdown_send();
    reader.join();
    std::printf("flood of %zu bytes: idem RSS %ld KiB, at most %ld KiB while it ran\n", sent, before, peak);
    return peak - before;
  }
};

// --- Framing -------------------------------------------------------------------------

// One socket sending an endless chunk extension grew idem by hundreds of MiB in seconds.
TEST_F(EdgeTest, AnEndlessChunkExtensionIsRefusedAndCostsNoMemory) {
  for (const char* target : {"/orders", "/unmatched"}) {
    std::string answer;
    const long growth =
        flood(std::string("POST ") + target + " HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + unique("ext") +
                  "\r\nTransfer-Encoding: chunked\r\n\r\n1;a=",
              "a", 64 * 1024 * 1024, &answer);
    EXPECT_LT(growth, kMemoryFactor * 16 * 1024) << target << ": RSS grew by " << growth << " KiB";
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 431")) << target << ": " << answer.substr(0, 200);
    EXPECT_NE(answer.find("urn:idem:problem:header-too-large"), std::string::npos);
  }
}

// Many short extensions add up: together they count against the header limit.
TEST_F(EdgeTest, ManyChunkExtensionsTogetherCountAgainstTheHeaderLimit) {
  std::string answer;
  const long growth =
      flood("POST /orders HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + unique("exts") +
                "\r\nTransfer-Encoding: chunked\r\n\r\n",
            "1;aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=b\r\nx\r\n", 16 * 1024 * 1024, &answer);
  EXPECT_LT(growth, kMemoryFactor * 16 * 1024);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 431")) << answer.substr(0, 200);
}

TEST_F(EdgeTest, AnEndlessTrailerIsRefusedAndCostsNoMemory) {
  for (const char* target : {"/orders", "/unmatched"}) {
    std::string answer;
    const long growth = flood(
        std::string("POST ") + target + " HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + unique("trailer") +
            "\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n",
        "X-Trailer-Field: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 64 * 1024 * 1024, &answer);
    EXPECT_LT(growth, kMemoryFactor * 16 * 1024) << target;
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 431")) << target << ": " << answer.substr(0, 200);
  }
}

// A trailer could override an identity field a front proxy set on the head.
TEST_F(EdgeTest, TrailersAreDroppedNeverMergedIntoTheHeadOrForwarded) {
  for (const char* target : {"/orders", "/unmatched"}) {
    const std::size_t before = seen_count();
    const std::string key = unique("trailers");
    const std::string out = raw_exchange(
        port_, std::string("POST ") + target + " HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + key +
                   "\r\nX-User-Id: attacker\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                   "2\r\n{}\r\n0\r\nX-User-Id: admin\r\nX-Extra: 1\r\n\r\n");
    EXPECT_TRUE(out.starts_with("HTTP/1.1 20")) << target << ": " << out.substr(0, 300);
    json::array seen = seen_from(before);
    ASSERT_EQ(seen.size(), 1u) << target;
    EXPECT_EQ(field_values(seen[0], "X-User-Id"), std::vector<std::string>{"attacker"}) << target;
    EXPECT_TRUE(field_values(seen[0], "X-Extra").empty()) << target;
    EXPECT_EQ(seen[0].at("body_size").as_int64(), 2) << target;
  }
}

// A chunked body cut anywhere between two reads (the last chunk's trailer section cut as
// "0\r\n\r" made a checked build's parser assert: it was offered again the bytes it had
// answered "need more" to) is read on as the rest arrives, whole, and the connection
// serves the request after it. The pause between the writes lets idem read the first part
// alone; without it the test still holds, it only tests less.
TEST_F(EdgeTest, AChunkedRequestCutAnywhereIsForwardedWhole) {
  const std::string body = "2\r\nhe\r\n3;ext=1\r\nllo\r\n0\r\nX-Trailer: t\r\n\r\n";
  for (const char* target : {"/orders", "/unmatched"}) {
    for (std::size_t at = 0; at < body.size(); ++at) {
      const std::size_t before = seen_count();
      Raw c(port_);
      ASSERT_TRUE(c.send(std::string("POST ") + target + " HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " +
                         unique("cut") + "\r\nTransfer-Encoding: chunked\r\n\r\n" + body.substr(0, at)));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ASSERT_TRUE(c.send(body.substr(at) + "GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
      const std::string out = c.read_all();
      EXPECT_TRUE(out.starts_with("HTTP/1.1 201"))
          << target << " cut at " << at << ": " << out.substr(0, 300);
      EXPECT_NE(out.find("HTTP/1.1 200"), std::string::npos) << target << " cut at " << at;
      json::array seen = seen_from(before);
      ASSERT_EQ(seen.size(), 2u) << target << " cut at " << at;
      EXPECT_EQ(seen[0].at("body_size").as_int64(), 5) << target << " cut at " << at;
      EXPECT_EQ(seen[1].at("target").as_string(), "/after") << target << " cut at " << at;
    }
  }
}

// The same of a chunked response: the upstream writes it in two parts.
TEST_F(EdgeTest, AChunkedResponseCutAnywhereReachesTheClientWhole) {
  for (int at = 0; at < 40; ++at) {
    const Headers split{{"X-Test-Split", std::to_string(at) + ",10"}};
    Response passed = request(port_, verb::get, "/split", split);
    EXPECT_EQ(passed.result_int(), 200u) << "cut at " << at;
    EXPECT_EQ(passed.body(), "hello") << "cut at " << at;
    const std::string key = unique("split");
    Response first = post("/orders", key, "{}", split);
    EXPECT_EQ(first.result_int(), 200u) << "cut at " << at << ": " << first.body();
    EXPECT_EQ(first.body(), "hello") << "cut at " << at;
    EXPECT_EQ(post("/orders", key, "{}", split).body(), "hello") << "cut at " << at << " (the replay)";
  }
}

// TE.0: a coding other than chunked leaves the body's length to interpretation; idem read
// it as "no body" and forwarded the body as a second request.
TEST_F(EdgeTest, ATransferEncodingOtherThanExactlyChunkedIsRefusedAndNothingIsForwarded) {
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string te : {"Transfer-Encoding: gzip\r\n", "Transfer-Encoding: chunked, identity\r\n",
                               "Transfer-Encoding: identity\r\n", "Transfer-Encoding: gzip, chunked\r\n",
                               "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                               "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"}) {
    for (const char* target : {"/orders", "/unmatched"}) {
      const std::size_t before = seen_count();
      const std::string out = raw_exchange(
          port_, std::string("POST ") + target + " HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + unique("te") +
                     "\r\n" + te + "\r\n" + smuggled);
      EXPECT_TRUE(out.starts_with("HTTP/1.1 400")) << te << target << ": " << out.substr(0, 200);
      EXPECT_EQ(out.find("HTTP/1.1", 8), std::string::npos) << "a second answer: " << out;
      EXPECT_EQ(seen_count(), before) << te << target;
    }
  }
}

TEST_F(EdgeTest, ContentLengthWithTransferEncodingIsRefused) {
  const std::size_t before = seen_count();
  const std::string out =
      raw_exchange(port_,
                   "POST /unmatched HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(out.starts_with("HTTP/1.1 400")) << out;
  EXPECT_EQ(seen_count(), before);
}

// What nginx in front would refuse, idem refuses too (tests/e2e/framing_differential.py
// checks the two against each other on the whole smuggling corpus).
TEST_F(EdgeTest, FoldedFieldsRepeatedLengthsAndHttp10TransferEncodingAreRefused) {
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string head :
       {"POST /unmatched HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\nContent-Length: 5\r\n\r\nhello",
        "POST /unmatched HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
        "POST /unmatched HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
        "POST /unmatched HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello",
        "POST /unmatched HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"}) {
    const std::size_t before = seen_count();
    const std::string out = raw_exchange(port_, head + smuggled);
    EXPECT_TRUE(out.starts_with("HTTP/1.1 400") || out.starts_with("HTTP/1.0 400"))
        << head << ": " << out.substr(0, 200);
    EXPECT_EQ(out.find("200 OK"), std::string::npos) << "a second answer: " << out;
    EXPECT_EQ(seen_count(), before) << head;
  }
}

TEST_F(EdgeTest, AMalformedChunkSizeIsAnswered400BeforeTheConnectionCloses) {
  const std::string out =
      raw_exchange(port_, "POST /orders HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + unique("chunk") +
                              "\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  EXPECT_TRUE(out.starts_with("HTTP/1.1 400")) << out;
  EXPECT_NE(out.find("urn:idem:problem:request-invalid"), std::string::npos);
}

TEST_F(EdgeTest, TwoHostFieldsAreRefused) {
  const std::string out = raw_exchange(port_, "GET /unmatched HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
  EXPECT_TRUE(out.starts_with("HTTP/1.1 400")) << out;
}

TEST_F(EdgeTest, AnHttp2PriorKnowledgePrefaceGetsAClearRefusal) {
  const std::string out =
      raw_exchange(port_, std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string(9, '\0'));
  EXPECT_TRUE(out.starts_with("HTTP/1.1 505")) << out;
  EXPECT_NE(out.find("urn:idem:problem:version-not-supported"), std::string::npos);
}

// A body dripped a byte at a time, each within the 30 s a read may wait, on a request on no
// route (streamed to the upstream), held its connection and the upstream's for as long as
// the client liked (issue 29). The whole body has a deadline now: 30 s plus a second per
// KiB received. Beside it, an upload that keeps 2 KiB/s goes on past 30 s and is answered.
TEST_F(EdgeTest, ABodyDrippedOnNoRouteIsCutAtItsDeadlineAndASteadyUploadIsNot) {
  std::thread steady_upload([&] {
    Raw c(port_, 60000);
    constexpr int kSeconds = 36, kPerSecond = 2048;
    ASSERT_TRUE(c.send("POST /unmatched HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
                       std::to_string(kSeconds * kPerSecond) + "\r\n\r\n"));
    for (int i = 0; i < kSeconds; ++i) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      ASSERT_TRUE(c.send(std::string(kPerSecond, 's'))) << "cut after " << i << " s at 2 KiB/s";
    }
    const std::string out = c.read_all();
    EXPECT_TRUE(out.starts_with("HTTP/1.1 201")) << out.substr(0, 200);
  });
  Raw c(port_, 60000);
  ASSERT_TRUE(c.send("POST /unmatched HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"));
  const auto t0 = Clock::now();
  std::atomic<bool> closed{false};
  std::thread reader([&] {
    c.read_all();
    closed = true;
  });
  while (!closed && Clock::now() - t0 < std::chrono::seconds(50)) {
    c.send("d");
    for (int i = 0; i < 20 && !closed; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto cut_after = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - t0);
  reader.join();
  steady_upload.join();
  std::printf("a body dripped a byte every 2 s was cut after %lld s\n",
              static_cast<long long>(cut_after.count()));
  EXPECT_TRUE(closed) << "still open after 50 s";
  EXPECT_GE(cut_after, std::chrono::seconds(29));
  EXPECT_LE(cut_after, std::chrono::seconds(33));
}

// --- Route matching errs on the side of protection ------------------------------------

// Express folds case and ignores a trailing '/', nginx merges slashes, Tomcat strips
// ";params": each of these reached the service unprotected.
TEST_F(EdgeTest, EverySpellingOfAProtectedPathIsProtected) {
  for (const char* path :
       {"/orders/", "//orders", "/ORDERS", "/Orders", "/orders;x=1", "/%6Frders", "/orders//"}) {
    const std::string key = unique("spell");
    const std::size_t before = seen_count();
    Response first = request(port_, verb::post, path, {{"Idempotency-Key", key}}, "{}");
    EXPECT_EQ(first.result_int(), 201u) << path;
    json::array seen = seen_from(before);
    ASSERT_EQ(seen.size(), 1u) << path;
    EXPECT_EQ(seen[0].at("target").as_string(), path) << "forwarded with its target unchanged";
    EXPECT_EQ(field_values(seen[0], "Idempotency-Fence").size(), 1u) << path << " was forwarded unprotected";
    Response again = request(port_, verb::post, path, {{"Idempotency-Key", key}}, "{}");
    EXPECT_EQ(header(again, "Idempotent-Replayed"), "true") << path;
    EXPECT_EQ(seen_count(), before + 1) << path;
  }
  // Without a key, every spelling is refused like /orders itself.
  for (const char* path : {"/orders/", "//orders", "/ORDERS", "/orders;x=1"})
    EXPECT_EQ(problem_type(request(port_, verb::post, path, {}, "{}")), "urn:idem:problem:key-missing")
        << path;
}

// Absolute-form ("http://host/orders") is read as its path; a target that merely holds
// "://" after something that is no scheme is not, or "?next=http://h/orders" would reach
// the service as a POST to /orders while every other server reads a query on "/".
TEST_F(EdgeTest, OnlyASchemeMakesATargetAbsoluteForm) {
  const std::string key = unique("abs");
  std::size_t before = seen_count();
  Response absolute =
      request(port_, verb::post, "http://shop.example/orders?x=1", {{"Idempotency-Key", key}}, "{}");
  EXPECT_EQ(absolute.result_int(), 201u) << absolute.body();
  json::array seen = seen_from(before);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].at("target").as_string(), "/orders?x=1");
  EXPECT_EQ(field_values(seen[0], "Idempotency-Fence").size(), 1u) << "an absolute-form /orders is protected";

  for (const char* target : {"?next=http://shop.example/orders", "?a=b://c/orders"}) {
    before = seen_count();
    const std::string out =
        raw_exchange(port_, std::string("POST ") + target +
                                " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}");
    seen = seen_from(before);
    ASSERT_EQ(seen.size(), 1u) << target << ": " << out.substr(0, 200);
    EXPECT_EQ(seen[0].at("target").as_string(), "/" + std::string(target)) << "a query on /, not /orders";
  }
  for (const char* target :
       {"1http://shop.example/orders", "h?p://shop.example/orders", "%68ttp://h/orders"}) {
    before = seen_count();
    const std::string out = raw_exchange(
        port_, std::string("POST ") + target + " HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + unique("s") +
                   "\r\nContent-Length: 2\r\n\r\n{}");
    EXPECT_TRUE(out.starts_with("HTTP/1.1 400")) << target << ": " << out.substr(0, 200);
    EXPECT_EQ(seen_count(), before) << target;
  }
}

TEST_F(EdgeTest, PathParametersComeFromTheNormalizedPath) {
  const std::size_t before = seen_count();
  Response r = request(port_, verb::post, "//skus/A-1;v=2/deduct/", {}, "{}");
  EXPECT_EQ(r.result_int(), 201u) << r.body();
  json::array seen = seen_from(before);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(field_values(seen[0], "Idempotency-Key"), std::vector<std::string>{"stock:A-1"});
}

TEST_F(EdgeTest, TargetsFrameworksDisagreeOnAreRefusedOnEveryPath) {
  const std::size_t before = seen_count();
  for (const char* target :
       {"/orders#frag", "/orders\\", "/orders%2f", "/orders%2F", "/a%2Forders", "/x/../orders",
        "/x/%2e%2E/orders", "/orders/.", "/x/..;/orders", "/orders%5c", "/unmatched/%2F"}) {
    const std::string out = raw_exchange(
        port_, std::string("POST ") + target + " HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + unique("t") +
                   "\r\nContent-Length: 2\r\n\r\n{}");
    EXPECT_TRUE(out.starts_with("HTTP/1.1 400")) << target << ": " << out.substr(0, 200);
    EXPECT_NE(out.find("urn:idem:problem:request-invalid"), std::string::npos) << target;
  }
  for (const char* method : {"post", "Post", "pOST", "get"}) {
    const std::string out = raw_exchange(
        port_, std::string(method) + " /orders HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + unique("m") +
                   "\r\nContent-Length: 2\r\n\r\n{}");
    EXPECT_TRUE(out.starts_with("HTTP/1.1 400")) << method << ": " << out.substr(0, 200);
  }
  EXPECT_EQ(seen_count(), before);
}

// --- Forwarding fields -----------------------------------------------------------------

// The fields of a request from a client that named another scheme, host, port, prefix and
// address (issue 29: password-reset links built from X-Forwarded-Host, TLS claimed with
// X-Forwarded-Ssl) passed through to the upstream.
const char* const kForgedForwarding =
    "Forwarded: for=6.6.6.6;proto=https;host=evil.example\r\nX-Forwarded-For: 6.6.6.6\r\n"
    "X-Forwarded-Proto: https\r\nX-Forwarded-Host: evil.example\r\nX-Forwarded-Port: 8443\r\n"
    "X-Forwarded-Prefix: /evil\r\nX-Forwarded-Ssl: on\r\nX-Real-IP: 6.6.6.6\r\nFront-End-Https: on\r\n";

TEST_F(EdgeTest, AClientsForwardingFieldsAreRemovedOrOverwritten) {
  for (const char* target : {"/orders", "/unmatched"}) {
    const std::size_t before = seen_count();
    const std::string out = raw_exchange(
        port_, std::string("POST ") + target +
                   " HTTP/1.1\r\nHost: shop.example\r\nIdempotency-Key: " + unique("fwd") + "\r\n" +
                   kForgedForwarding + "Connection: close\r\nContent-Length: 2\r\n\r\n{}");
    EXPECT_TRUE(out.starts_with("HTTP/1.1 20")) << target << ": " << out.substr(0, 300);
    json::array seen = seen_from(before);
    ASSERT_EQ(seen.size(), 1u) << target;
    for (const char* name : {"X-Forwarded-Host", "X-Forwarded-Port", "X-Forwarded-Prefix", "X-Forwarded-Ssl",
                             "X-Real-IP", "Front-End-Https"})
      EXPECT_TRUE(field_values(seen[0], name).empty()) << target << ": " << name << " reached the upstream";
    EXPECT_EQ(field_values(seen[0], "X-Forwarded-For"), std::vector<std::string>{"127.0.0.1"}) << target;
    EXPECT_EQ(field_values(seen[0], "X-Forwarded-Proto"), std::vector<std::string>{"http"}) << target;
    EXPECT_EQ(field_values(seen[0], "Forwarded"), std::vector<std::string>{"for=127.0.0.1;proto=http"})
        << target;
    EXPECT_EQ(field_values(seen[0], "Host"), std::vector<std::string>{"shop.example"}) << target;
  }
}

// RFC 9112 §3.2: an HTTP/1.1 request without Host is refused; an HTTP/1.0 one may lack it
// and is forwarded (as HTTP/1.1) with the upstream's authority, never without a Host.
TEST_F(EdgeTest, HostIsRequiredOfHttp11AndAddedForHttp10) {
  for (const char* target : {"/orders", "/unmatched"}) {
    std::size_t before = seen_count();
    std::string out = raw_exchange(port_, std::string("POST ") + target + " HTTP/1.1\r\nIdempotency-Key: " +
                                              unique("nohost") + "\r\nContent-Length: 2\r\n\r\n{}");
    EXPECT_TRUE(out.starts_with("HTTP/1.1 400")) << target << ": " << out.substr(0, 300);
    EXPECT_NE(out.find("Host"), std::string::npos) << out;
    EXPECT_EQ(seen_count(), before) << target;

    out = raw_exchange(port_, std::string("POST ") + target + " HTTP/1.0\r\nIdempotency-Key: " +
                                  unique("host10") + "\r\nContent-Length: 2\r\n\r\n{}");
    EXPECT_TRUE(out.starts_with("HTTP/1.0 20")) << target << ": " << out.substr(0, 300);
    json::array seen = seen_from(before);
    ASSERT_EQ(seen.size(), 1u) << target;
    EXPECT_EQ(field_values(seen[0], "Host"),
              std::vector<std::string>{"127.0.0.1:" + std::to_string(upstream_->port())})
        << target;
  }
}

// Behind a TLS-terminating proxy the gateway trusts (`trusted_proxies`), the service still
// learns that the client used https, for which host, and from which address; the request
// log names that client. (Before: X-Forwarded-Proto: http, and redirect URLs broke.)
TEST(TrustedProxiesE2E, ATrustedProxysForwardingFieldsAreKeptAndAppendedTo) {
  const std::string dir = temp_dir();
  Process upstream({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true);
  const unsigned short port = free_port(), admin = free_port();
  write_file(dir + "/idem.yaml", config_head(port, upstream.port(), admin, "memory:") + R"(trusted_proxies:
  - 127.0.0.1
  - "::1"
routes:
  - name: orders
    match: { method: POST, path: /orders }
)");
  Process idem({IDEM_BIN, "serve", "--config", dir + "/idem.yaml"}, dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000)) << read_text(dir + "/idem.log");
  auto seen_last = [&] {
    json::array all = json::parse(request(upstream.port(), verb::get, "/_seen?from=0").body()).as_array();
    return all.back();
  };
  auto values = [](const json::value& seen, std::string_view name) {
    std::vector<std::string> out;
    for (const auto& f : seen.at("fields").as_array())
      if (const auto& n = f.as_array()[0].as_string(); idem::util::iequals({n.data(), n.size()}, name))
        out.emplace_back(f.as_array()[1].as_string());
    return out;
  };
  for (const char* target : {"/orders", "/unmatched"}) {
    const std::string out = raw_exchange(
        port,
        std::string("POST ") + target +
            " HTTP/1.1\r\nHost: shop.example\r\nIdempotency-Key: trusted-1\r\n"
            "X-Forwarded-For: 6.6.6.6, 203.0.113.7\r\nX-Forwarded-Proto: https\r\n"
            "X-Forwarded-Host: shop.example\r\nForwarded: for=203.0.113.7;proto=https;host=shop.example\r\n"
            "Connection: close\r\nContent-Length: 2\r\n\r\n{}");
    EXPECT_TRUE(out.starts_with("HTTP/1.1 20")) << target << ": " << out.substr(0, 300);
    const json::value seen = seen_last();
    EXPECT_EQ(values(seen, "X-Forwarded-Proto"), std::vector<std::string>{"https"}) << target;
    EXPECT_EQ(values(seen, "X-Forwarded-For"), std::vector<std::string>{"6.6.6.6, 203.0.113.7, 127.0.0.1"})
        << target;
    EXPECT_EQ(
        values(seen, "Forwarded"),
        std::vector<std::string>{"for=203.0.113.7;proto=https;host=shop.example, for=127.0.0.1;proto=http"})
        << target;
    EXPECT_EQ(values(seen, "X-Forwarded-Host"), std::vector<std::string>{"shop.example"}) << target;
  }
  // The log line of the protected request names the client the proxy vouched for.
  EXPECT_TRUE(testutil::eventually([&] {
    return read_text(dir + "/idem.log").find(R"("client":"203.0.113.7")") != std::string::npos;
  })) << read_text(dir + "/idem.log");
  remove_dir(dir);
}

// --- Responses -----------------------------------------------------------------------

TEST_F(EdgeTest, FieldsTheUpstreamNamesInConnectionAreNeitherForwardedNorReplayed) {
  const std::string key = unique("hop");
  Response first =
      request(port_, verb::post, "/orders", {{"Idempotency-Key", key}, {"X-Test-Hop", "X-Secret"}}, "{}");
  EXPECT_EQ(first.result_int(), 201u);
  EXPECT_EQ(header(first, "X-Secret"), "");
  Response replay =
      request(port_, verb::post, "/orders", {{"Idempotency-Key", key}, {"X-Test-Hop", "X-Secret"}}, "{}");
  EXPECT_EQ(header(replay, "Idempotent-Replayed"), "true");
  EXPECT_EQ(header(replay, "X-Secret"), "");
  EXPECT_EQ(header(replay, "X-Upstream"), "test");  // end-to-end fields are kept
  Response plain = request(port_, verb::get, "/unmatched", {{"X-Test-Hop", "X-Secret"}});
  EXPECT_EQ(plain.result_int(), 200u);
  EXPECT_EQ(header(plain, "X-Secret"), "");
}

// An event stream on no route arrives event by event, not all at once at its end.
TEST_F(EdgeTest, AnEventStreamIsPassedOnAsItArrives) {
  Raw c(port_);
  const auto t0 = Clock::now();
  c.send("GET /events HTTP/1.1\r\nHost: x\r\nX-Test-Stream: 6,400\r\n\r\n");
  std::string out;
  ASSERT_TRUE(c.read_until(out, "data: 0"));
  const auto first = Clock::now() - t0;
  ASSERT_TRUE(c.read_until(out, "data: 5"));
  const auto last = Clock::now() - t0;
  // The upstream sends the first event at 0.4 s and the last at 2.4 s.
  EXPECT_LT(first, last - std::chrono::milliseconds(1000)) << "the first event was held back";
  EXPECT_NE(out.find("Transfer-Encoding: chunked"), std::string::npos);
}

TEST_F(EdgeTest, LargeBodiesOnNoRouteStreamThroughInBothDirections) {
  const long before = rss_kib(idem_->pid());
  const std::string body(48 * 1024 * 1024, 'u');
  Response up = request(port_, verb::post, "/upload", {{"X-Test-Body-Size", "2"}}, body);
  EXPECT_EQ(up.result_int(), 201u);
  json::array seen = seen_from(seen_count() - 1);
  EXPECT_EQ(seen[0].at("body_size").as_int64(), 48 * 1024 * 1024);
  Response down = request(port_, verb::get, "/download", {{"X-Test-Body-Size", std::to_string(48 << 20)}});
  EXPECT_EQ(down.result_int(), 200u);
  EXPECT_EQ(down.body().size(), 48u << 20);
  const long growth = rss_kib(idem_->pid()) - before;
  EXPECT_LT(growth, kMemoryFactor * 16 * 1024) << "RSS grew by " << growth << " KiB";
}

// A response larger than max_result passes through to the first client, is not held
// whole, and its repeats get result-not-stored (never a second execution).
TEST_F(EdgeTest, AResponseOverMaxResultStreamsAndIsNotStored) {
  const long before = rss_kib(idem_->pid());
  const std::string key = unique("big");
  Response first = request(port_, verb::post, "/small",
                           {{"Idempotency-Key", key}, {"X-Test-Body-Size", "33554432"}}, "{}");
  EXPECT_EQ(first.result_int(), 201u);
  EXPECT_EQ(first.body().size(), 33554432u) << first.body().substr(0, 300);
  EXPECT_LT(rss_kib(idem_->pid()) - before, kMemoryFactor * 16 * 1024);
  Response again = request(port_, verb::post, "/small", {{"Idempotency-Key", key}}, "{}");
  EXPECT_EQ(problem_type(again), "urn:idem:problem:result-not-stored");
}

// Not a test of a limit but a figure for the docs: what idle keep-alive connections cost.
TEST_F(EdgeTest, IdleKeepAliveConnectionsCostLittleMemory) {
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  const std::size_t n = std::min<std::size_t>(2000, files.rlim_cur > 200 ? files.rlim_cur - 200 : 0);
  const long before = rss_kib(idem_->pid());
  std::vector<std::unique_ptr<Raw>> conns;
  for (std::size_t i = 0; i < n; ++i) {
    conns.push_back(std::make_unique<Raw>(port_));
    // Answered by idem itself (400 key-missing), the connection kept alive.
    conns.back()->send("POST /orders HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  }
  for (auto& c : conns) {
    std::string out;
    ASSERT_TRUE(c->read_until(out, "\r\n\r\n"));
  }
  const long growth = rss_kib(idem_->pid()) - before;
  std::printf("%zu idle keep-alive connections: idem RSS %ld -> %ld KiB (%.1f KiB each)\n", n, before,
              before + growth, n ? static_cast<double>(growth) / static_cast<double>(n) : 0.0);
  EXPECT_LT(growth, 2 * kMemoryFactor * static_cast<long>(n) * 32) << "more than 32 KiB per idle connection";
}

// --- The keep-alive race ---------------------------------------------------------------

// An upstream that closes an idle keep-alive connection just as a request is sent on it
// never saw the request; taken for an unknown outcome, it blocked the key as uncertain for
// a day. Requests arrive now after a short pause, now after a long one (past the
// upstream's idle limit of 1 s): with the pool's idle limit configured below it, or
// learned from the upstream's Keep-Alive header, no request meets a closing connection.
TEST(UpstreamKeepAlive, AnUpstreamClosingIdleConnectionsNeverMakesAKeyUncertain) {
  for (const bool announce : {false, true}) {
    const std::string dir = temp_dir();
    std::vector<std::string> argv{IDEM_TEST_UPSTREAM, "--idle-close-ms", "1000"};
    if (announce) argv.emplace_back("--announce");
    Process upstream(argv, dir + "/upstream.log", true);
    const unsigned short port = free_port(), admin = free_port();
    // Announced: the default pool limit (3 s) is cut to half the announced timeout.
    write_file(dir + "/idem.yaml", config_head(port, upstream.port(), admin, "memory:") +
                                       (announce ? "" : "upstream_idle_timeout: 600ms\n") + R"(routes:
  - name: orders
    match: { method: POST, path: /orders }
)");
    Process idem({IDEM_BIN, "serve", "--config", dir + "/idem.yaml"}, dir + "/idem.log");
    ASSERT_TRUE(wait_healthy(admin, 5000));
    for (int i = 0; i < 8; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(i % 2 ? 300 : 1200));
      const std::string key = "ka-" + std::to_string(announce) + "-" + std::to_string(i);
      Response r = request(port, verb::post, "/orders", {{"Idempotency-Key", key}}, "{}");
      EXPECT_EQ(r.result_int(), 201u) << "announce " << announce << ", request " << i << ": " << r.body();
      Response again = request(port, verb::post, "/orders", {{"Idempotency-Key", key}}, "{}");
      EXPECT_EQ(header(again, "Idempotent-Replayed"), "true") << again.body();
    }
    remove_dir(dir);
  }
}

}  // namespace
}  // namespace idem::e2e
