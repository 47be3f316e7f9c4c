// End to end: the operator's page on the admin listener (docs/admin.md, "The operator's
// page") — its files and headers, Basic authentication for browsers, and the Origin rules
// that keep other sites' pages out, with and without admin.token_env.
#include <cstdlib>
#include <memory>
#include <vector>

#include "e2e/e2e_fixture.h"

namespace idem::e2e {
namespace {

std::vector<std::string> all(const Response& r, http::field name) {
  std::vector<std::string> out;
  for (auto [it, end] = r.equal_range(name); it != end; ++it) out.emplace_back(it->value());
  return out;
}

// What every file of the page is served with.
void expect_page_headers(const Response& r, const std::string& type) {
  EXPECT_EQ(r.result_int(), 200u) << r.body();
  EXPECT_EQ(header(r, "Content-Type"), type);
  EXPECT_EQ(header(r, "Content-Security-Policy"), "default-src 'self'; frame-ancestors 'none'");
  EXPECT_EQ(header(r, "X-Frame-Options"), "DENY");
  EXPECT_EQ(header(r, "Cache-Control"), "no-store");
  EXPECT_EQ(header(r, "X-Content-Type-Options"), "nosniff");
  EXPECT_FALSE(r.body().empty());
}

// A gateway whose admin listener has a token, on the memory store, with no upstream
// (the test makes records through the control API).
class AdminPageWithToken : public ::testing::Test {
 protected:
  static constexpr const char* kToken = "pa:ge-t0ken";  // a ':' in it: Basic splits at the first one
  static constexpr const char* kBasic = "Basic b3BlcmF0b3I6cGE6Z2UtdDBrZW4=";  // operator:pa:ge-t0ken
  void SetUp() override {
    write_file(dir_ + "/idem.yaml", "upstream: http://127.0.0.1:9\nstore: \"memory:\"\nlisten: 127.0.0.1:" +
                                        std::to_string(free_port()) + "\nadmin:\n  listen: 127.0.0.1:" +
                                        std::to_string(admin_) + "\n  token_env: IDEM_PAGE_E2E_TOKEN\n");
    ::setenv("IDEM_PAGE_E2E_TOKEN", kToken, 1);
    idem_ = std::make_unique<Process>(
        std::vector<std::string>{IDEM_BIN, "serve", "--config", dir_ + "/idem.yaml"}, dir_ + "/idem.log");
    ASSERT_TRUE(wait_healthy(admin_, 5000)) << "idem did not start; see " << dir_ << "/idem.log";
  }
  void TearDown() override {
    idem_.reset();
    remove_dir(dir_);
  }
  // A pending record s/KEY, made through the control API.
  void begin(const std::string& key) {
    Response r =
        request(admin_, verb::post, "/v1/begin",
                {{"Authorization", std::string("Bearer ") + kToken}, {"Content-Type", "application/json"}},
                R"({"scope":"s","key":")" + key + R"(","lease_ms":60000})");
    ASSERT_EQ(r.result_int(), 200u) << r.body();
  }
  unsigned record_status(const std::string& key) {
    return request(admin_, verb::get, "/v1/records/s/" + key, {{"Authorization", kBasic}}).result_int();
  }

  std::string dir_ = temp_dir();
  unsigned short admin_ = free_port();
  std::string host_ = "127.0.0.1:" + std::to_string(admin_);
  std::unique_ptr<Process> idem_;
};

TEST_F(AdminPageWithToken, UnauthorizedPageChallengesBasicAndBearer) {
  for (const Headers& h :
       {Headers{}, Headers{{"Authorization", "Basic b3BlcmF0b3I6d3Jvbmc="}},  // operator:wrong
        Headers{{"Authorization", "Bearer pa:ge-t0ke"}}}) {
    Response r = request(admin_, verb::get, "/", h);
    EXPECT_EQ(r.result_int(), 401u) << r.body();
    EXPECT_EQ(problem_type(r), "urn:idem:problem:unauthorized");
    EXPECT_EQ(all(r, http::field::www_authenticate),
              (std::vector<std::string>{R"(Bearer realm="idem admin")", R"(Basic realm="idem admin")"}));
    EXPECT_EQ(r.body().find("<html"), std::string::npos);
  }
  // The records API says the same; the files of the page need the token too.
  Response records = request(admin_, verb::get, "/v1/records");
  EXPECT_EQ(records.result_int(), 401u);
  EXPECT_EQ(all(records, http::field::www_authenticate).size(), 2u);
  EXPECT_EQ(request(admin_, verb::get, "/ui/app.js").result_int(), 401u);
}

TEST_F(AdminPageWithToken, ThePageAndItsFilesWithBasicOrBearer) {
  for (const std::string& auth : {std::string(kBasic), std::string("basic b3BlcmF0b3I6cGE6Z2UtdDBrZW4="),
                                  std::string("Bearer ") + kToken}) {
    Response page = request(admin_, verb::get, "/", {{"Authorization", auth}});
    expect_page_headers(page, "text/html; charset=utf-8");
    EXPECT_NE(page.body().find(R"(<script src="/ui/app.js")"), std::string::npos);
    expect_page_headers(request(admin_, verb::get, "/ui/app.js", {{"Authorization", auth}}),
                        "text/javascript; charset=utf-8");
    expect_page_headers(request(admin_, verb::get, "/ui/style.css", {{"Authorization", auth}}),
                        "text/css; charset=utf-8");
  }
  // A query changes nothing; other methods are refused; unknown files are 404.
  expect_page_headers(request(admin_, verb::get, "/?refresh=1", {{"Authorization", kBasic}}),
                      "text/html; charset=utf-8");
  for (verb m : {verb::post, verb::delete_, verb::put}) {
    Response r =
        request(admin_, m, "/", {{"Authorization", kBasic}, {"Content-Type", "application/json"}}, "{}");
    EXPECT_EQ(r.result_int(), 405u) << r.body();
    EXPECT_EQ(header(r, "Allow"), "GET");
  }
  for (const char* path :
       {"/ui/", "/ui/nope.js", "/ui//app.js", "/ui%2Fapp.js", "/index.htm", "/favicon.ico"})
    EXPECT_EQ(request(admin_, verb::get, path, {{"Authorization", kBasic}}).result_int(), 404u) << path;
  EXPECT_EQ(request(admin_, verb::get, "/ui/../ui/app.js", {{"Authorization", kBasic}}).result_int(), 400u);
  // Basic works for the records API as it does for the page.
  EXPECT_EQ(
      request(admin_, verb::get, "/v1/records?uncertain=true", {{"Authorization", kBasic}}).result_int(),
      200u);
}

// With Basic, a browser sends the credentials on its own, whichever page makes the request:
// only the listener's own page may change or read records.
TEST_F(AdminPageWithToken, OnlyTheListenersOwnOriginMayUseTheCredentials) {
  const std::string key = "origin-k";
  begin(key);
  for (const char* origin :
       {"http://evil.example", "null", "https://127.0.0.1", "http://127.0.0.1", "http://localhost"}) {
    const Headers h = {{"Authorization", kBasic}, {"Host", host_}, {"Origin", origin}};
    Response del = request(admin_, verb::delete_, "/v1/records/s/" + key, h);
    EXPECT_EQ(del.result_int(), 403u) << origin << ": " << del.body();
    EXPECT_EQ(problem_type(del), "urn:idem:problem:forbidden");
    EXPECT_EQ(request(admin_, verb::get, "/v1/records?uncertain=true", h).result_int(), 403u) << origin;
    EXPECT_EQ(request(admin_, verb::get, "/", h).result_int(), 403u) << origin;
    Headers post = h;
    post.emplace_back("Content-Type", "application/json");
    EXPECT_EQ(request(admin_, verb::post, "/v1/begin", post, R"({"scope":"s","key":"other"})").result_int(),
              403u)
        << origin;
    // Probes do not carry credentials and learn nothing of records: not checked.
    EXPECT_EQ(request(admin_, verb::get, "/healthz", h).result_int(), 200u) << origin;
  }
  // Two Origin fields, one of them right, are still another site.
  EXPECT_EQ(request(admin_, verb::delete_, "/v1/records/s/" + key,
                    {{"Authorization", kBasic},
                     {"Host", host_},
                     {"Origin", "http://" + host_},
                     {"Origin", "http://evil.example"}})
                .result_int(),
            403u);
  EXPECT_EQ(record_status(key), 200u);  // nothing was removed
  EXPECT_EQ(record_status("other"), 404u);

  // The page's own DELETE: Origin http:// + Host, under whatever name the listener is reached.
  Response own = request(admin_, verb::delete_, "/v1/records/s/" + key,
                         {{"Authorization", kBasic}, {"Host", host_}, {"Origin", "http://" + host_}});
  EXPECT_EQ(own.result_int(), 204u) << own.body();
  EXPECT_EQ(record_status(key), 404u);
  begin(key);
  EXPECT_EQ(request(admin_, verb::delete_, "/v1/records/s/" + key,
                    {{"Authorization", kBasic},
                     {"Host", "admin.example:9901"},
                     {"Origin", "http://admin.example:9901"}})
                .result_int(),
            204u);
  // The Origin rule comes before the token: a foreign page without credentials learns the same.
  EXPECT_EQ(
      request(admin_, verb::get, "/", {{"Host", host_}, {"Origin", "http://evil.example"}}).result_int(),
      403u);
}

// Without a token (the shared fixture), the page is served to this machine, and its own
// fetch calls (a loopback Host and the matching Origin) may remove a record.
TEST_F(GatewayE2E, OperatorPageWithoutATokenServesThisMachineOnly) {
  const std::string host = "127.0.0.1:" + std::to_string(admin_);
  Response page = request(admin_, verb::get, "/", {{"Host", host}});
  expect_page_headers(page, "text/html; charset=utf-8");
  expect_page_headers(request(admin_, verb::get, "/ui/app.js", {{"Host", host}}),
                      "text/javascript; charset=utf-8");
  for (const char* path : {"/", "/ui/app.js"}) {
    EXPECT_EQ(request(admin_, verb::get, path, {{"Host", "evil.example"}}).result_int(), 403u) << path;
    EXPECT_EQ(
        request(admin_, verb::get, path, {{"Host", host}, {"Origin", "http://evil.example"}}).result_int(),
        403u)
        << path;
  }

  const std::string key = unique("page");
  const Headers json = {{"Content-Type", "application/json"}};
  ASSERT_EQ(
      request(admin_, verb::post, "/v1/begin", json, R"({"scope":"s","key":")" + key + R"("})").result_int(),
      200u);
  // Another site's page, or a rebound host name with its own Origin: refused.
  for (const Headers& h : {Headers{{"Host", host}, {"Origin", "http://evil.example"}},
                           Headers{{"Host", host}, {"Origin", "http://localhost:" + std::to_string(admin_)}},
                           Headers{{"Host", "evil.example:" + std::to_string(admin_)},
                                   {"Origin", "http://evil.example:" + std::to_string(admin_)}}})
    EXPECT_EQ(request(admin_, verb::delete_, "/v1/records/s/" + key, h).result_int(), 403u);
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/s/" + key).result_int(), 200u);
  Response own =
      request(admin_, verb::delete_, "/v1/records/s/" + key, {{"Host", host}, {"Origin", "http://" + host}});
  EXPECT_EQ(own.result_int(), 204u) << own.body();
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/s/" + key).result_int(), 404u);
}

// A key may hold '/' and '\\' (any visible ASCII): on the admin listener %2F and %5C name
// them inside a segment, so the page (and curl) can read and remove such a record. The
// client listener still refuses them (docs/gateway.md), and literal dot segments stay
// refused.
TEST_F(GatewayE2E, AdminPathsTakeAnEncodedSlashOrBackslashInASegment) {
  const std::string key = unique("a/b\\c");
  ASSERT_EQ(post("/orders", key).result_int(), 201u);
  const std::string path =
      "/v1/records/_/orders:" + key.substr(0, 1) + "%2F" + key.substr(2, 1) + "%5c" + key.substr(4);
  Response rec = request(admin_, verb::get, path);
  ASSERT_EQ(rec.result_int(), 200u) << path << ": " << rec.body();
  EXPECT_EQ(body_json(rec).at("key").as_string(), "orders:" + key);
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/_/orders:" + key.substr(0, 1) + "/b").result_int(), 400u);
  EXPECT_EQ(request(admin_, verb::delete_, path).result_int(), 204u);
  EXPECT_EQ(request(admin_, verb::get, path).result_int(), 404u);
  for (const char* refused :
       {"/v1/records/_/..", "/v1/records/./k", "/v1/records/_/..;x", "/v1/records/_/k#x"})
    EXPECT_TRUE(raw_exchange(admin_, std::string("GET ") + refused + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    .starts_with("HTTP/1.1 400"))
        << refused;
  EXPECT_TRUE(raw_exchange(port_, "POST /orders%2Fx HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
                  .starts_with("HTTP/1.1 400"));
}

// A client chooses its scope (subject: header:X-User-Id): one that decodes to a dot segment
// with or without a parameter (".", "..", ".;x", "..;x") made a record the admin API could
// neither read nor remove (issue 29). With its dots or ';' percent-encoded it is named.
TEST_F(GatewayE2E, AdminPathsNameAScopeThatLooksLikeADotSegment) {
  for (const auto& [scope, segment] : std::vector<std::pair<std::string, std::string>>{
           {"..;x", "..%3Bx"}, {".;x", ".%3Bx"}, {"..", "%2E%2E"}, {".", "%2e"}, {"..;", "%2E%2E%3B"}}) {
    const std::string key = unique("dots");
    ASSERT_EQ(post("/user", key, "{}", {{"X-User-Id", scope}}).result_int(), 201u) << scope;
    const std::string path = "/v1/records/" + segment + "/user:" + key;
    Response rec = request(admin_, verb::get, path);
    ASSERT_EQ(rec.result_int(), 200u) << path << ": " << rec.body();
    EXPECT_EQ(body_json(rec).at("scope").as_string(), scope);
    EXPECT_EQ(
        request(admin_, verb::get, "/v1/records/" + segment + "/" + key + "?key_space=user").result_int(),
        200u)
        << scope;
    EXPECT_EQ(request(admin_, verb::delete_, path).result_int(), 204u) << path;
    EXPECT_EQ(request(admin_, verb::get, path).result_int(), 404u) << path;
    // Removed: the key runs again.
    Response again = post("/user", key, "{}", {{"X-User-Id", scope}});
    EXPECT_EQ(header(again, "Idempotent-Replayed"), "") << scope;
  }
}

}  // namespace
}  // namespace idem::e2e
