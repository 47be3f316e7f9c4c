// The tokens endpoint against the idem process (docs/http.md, "One-time tokens"): served
// only where a route takes tokens, under its configured path, and bounded per client and
// in live tokens. Issue 29 found it always on, unauthenticated and unlimited: 27k tokens/s
// on one connection, +70 MB of SQLite per 100k, a noeviction Redis filled until every
// route answered 503; and it shadowed an upstream's own path of that name. The floods here
// print their figures (tokens issued before the first 429, requests/s, RSS, store size).
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "e2e/e2e_fixture.h"
#include "e2e/raw_socket.h"

namespace idem::e2e {
namespace {

using Clock = std::chrono::steady_clock;

// A test upstream and `idem serve` with a token route and `extra` config (top-level keys),
// on `store`.
class TokenGateway {
 public:
  TokenGateway(const std::string& extra, const std::string& store = "memory:")
      : dir_(temp_dir()), upstream_({IDEM_TEST_UPSTREAM}, dir_ + "/upstream.log", true) {
    port_ = free_port();
    admin_ = free_port();
    const std::string s = store == "sqlite" ? "sqlite:" + dir_ + "/idem.db" : store;
    write_file(dir_ + "/idem.yaml", config_head(port_, upstream_.port(), admin_, s) + extra + R"(
routes:
  - name: form
    match: { method: POST, path: "/forms/*" }
    key: token
  - name: orders
    match: { method: POST, path: /orders }
)");
    idem_.emplace(std::vector<std::string>{IDEM_BIN, "serve", "--config", dir_ + "/idem.yaml"},
                  dir_ + "/idem.log");
    started_ = wait_healthy(admin_, 10000);
  }
  ~TokenGateway() {
    idem_.reset();
    remove_dir(dir_);
  }
  bool started() const { return started_; }
  unsigned short port() const { return port_; }
  int pid() const { return idem_->pid(); }
  const std::string& dir() const { return dir_; }
  std::string log() const { return read_text(dir_ + "/idem.log"); }

 private:
  std::string dir_;
  Process upstream_;
  std::optional<Process> idem_;
  unsigned short port_ = 0, admin_ = 0;
  bool started_ = false;
};

// One answer read off a keep-alive connection: its status, head and body.
struct Reply {
  unsigned status = 0;
  std::string head, body;
};

// Reads the next answer (framed by Content-Length, as the gateway's own answers are) from
// `c`, `pending` holding what arrived beyond the previous one. Status 0: none came.
Reply next_answer(Raw& c, std::string& pending) {
  if (!c.read_until(pending, "\r\n\r\n")) return {};
  const std::size_t head_end = pending.find("\r\n\r\n") + 4;
  Reply a;
  a.head = pending.substr(0, head_end);
  a.status = static_cast<unsigned>(std::stoul(a.head.substr(9, 3)));
  std::size_t length = 0;
  if (const auto at = a.head.find("Content-Length: "); at != std::string::npos)
    length = std::stoul(a.head.substr(at + 16));
  while (pending.size() < head_end + length)
    if (!c.read_some(pending)) return {};
  a.body = pending.substr(head_end, length);
  pending.erase(0, head_end + length);
  return a;
}

std::string field(const std::string& head, std::string_view name) {
  const auto at = head.find("\r\n" + std::string(name) + ": ");
  if (at == std::string::npos) return "";
  const auto from = at + name.size() + 4;
  return head.substr(from, head.find("\r\n", from) - from);
}

long file_kib(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_size / 1024) : 0;
}

// What a flood of token requests on one keep-alive connection got: the tokens issued
// before the first 429, and that 429.
struct Flood {
  std::size_t sent = 0, issued_before_429 = 0, issued = 0, refused = 0;
  Reply first_refusal;
  double seconds = 0;
  long rss_before = 0, rss_after = 0;
};

// Sends `total` token requests in batches of 100 (pipelined); `extra_fields(i)` adds
// fields to the i-th.
template <class Fields>
Flood flood(const TokenGateway& g, std::size_t total, const std::string& path, Fields extra_fields) {
  Flood f;
  f.rss_before = rss_kib(g.pid());
  Raw c(g.port(), 20000);
  std::string pending;
  const auto t0 = Clock::now();
  while (f.sent < total) {
    std::string batch;
    const std::size_t n = std::min<std::size_t>(100, total - f.sent);
    for (std::size_t i = 0; i < n; ++i)
      batch += "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + extra_fields(f.sent + i) +
               "Content-Length: 0\r\n\r\n";
    if (!c.send(batch)) break;
    for (std::size_t i = 0; i < n; ++i) {
      Reply a = next_answer(c, pending);
      if (a.status == 201) {
        ++f.issued;
        if (f.refused == 0) ++f.issued_before_429;
      } else if (a.status == 429) {
        if (f.refused++ == 0) f.first_refusal = a;
      } else {
        ADD_FAILURE() << "answer " << f.sent + i << ": " << a.head << a.body;
        return f;
      }
    }
    f.sent += n;
  }
  f.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  f.rss_after = rss_kib(g.pid());
  return f;
}

void expect_too_many_tokens(const Reply& a) {
  EXPECT_EQ(a.status, 429u) << a.head;
  EXPECT_NE(a.body.find("\"type\":\"urn:idem:problem:too-many-tokens\""), std::string::npos) << a.body;
  EXPECT_EQ(field(a.head, "Content-Type"), "application/problem+json");
  const std::string retry = field(a.head, "Retry-After");
  ASSERT_FALSE(retry.empty()) << a.head;
  EXPECT_GE(std::stol(retry), 1);
}

void print(const std::string& what, const Flood& f, const TokenGateway& g) {
  std::printf(
      "%s: %zu token requests on one connection in %.2f s (%.0f/s): %zu issued before the first 429, %zu "
      "issued, %zu refused; idem RSS %ld -> %ld KiB; SQLite file %ld KiB, WAL %ld KiB\n",
      what.c_str(), f.sent, f.seconds, static_cast<double>(f.sent) / f.seconds, f.issued_before_429, f.issued,
      f.refused, f.rss_before, f.rss_after, file_kib(g.dir() + "/idem.db"),
      file_kib(g.dir() + "/idem.db-wal"));
}

// Without a route that takes tokens there is no tokens endpoint: the path is the upstream's.
TEST(TokensE2E, WithoutATokenRouteThePathIsTheUpstreams) {
  const std::string dir = temp_dir();
  Process upstream({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true);
  const unsigned short port = free_port(), admin = free_port();
  write_file(dir + "/idem.yaml", config_head(port, upstream.port(), admin, "memory:") + R"(routes:
  - name: orders
    match: { method: POST, path: /orders }
)");
  Process idem({IDEM_BIN, "serve", "--config", dir + "/idem.yaml"}, dir + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000)) << read_text(dir + "/idem.log");
  Response r = request(port, verb::post, "/_idem/tokens", {}, "");
  EXPECT_EQ(r.result_int(), 201u) << r.body();
  EXPECT_EQ(header(r, "X-Upstream"), "test") << "answered by the upstream: " << r.body();
  EXPECT_EQ(body_json(r).count("token"), 0u) << r.body();
  remove_dir(dir);
}

// tokens.path moves the endpoint; the default path is then the upstream's again.
TEST(TokensE2E, ServedUnderTheConfiguredPath) {
  TokenGateway g("tokens:\n  path: /api/form-token\n");
  ASSERT_TRUE(g.started()) << g.log();
  Response issued = request(g.port(), verb::post, "/api/form-token", {}, "");
  ASSERT_EQ(issued.result_int(), 201u) << issued.body();
  const std::string token(body_json(issued).at("token").as_string());
  Response used = request(g.port(), verb::post, "/forms/contact", {{"Idempotency-Token", token}}, "name=Li");
  EXPECT_EQ(used.result_int(), 201u) << used.body();
  Response other = request(g.port(), verb::post, "/_idem/tokens", {}, "");
  EXPECT_EQ(header(other, "X-Upstream"), "test") << other.body();
  // GET is not the endpoint: it reaches the upstream.
  EXPECT_EQ(header(request(g.port(), verb::get, "/api/form-token"), "X-Upstream"), "test");
}

TEST(TokensE2E, TheEndpointReadsNoLargeBody) {
  TokenGateway g("");
  ASSERT_TRUE(g.started()) << g.log();
  const std::string out =
      raw_exchange(g.port(), "POST /_idem/tokens HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                                 std::string(5000, 'a'));
  EXPECT_TRUE(out.starts_with("HTTP/1.1 413")) << out.substr(0, 200);
}

// One client (one address) gets tokens.per_client tokens, then 429 with Retry-After; the
// store stops growing. On SQLite, the default store, and in memory.
TEST(TokensE2E, AFloodFromOneClientIsRefusedPastPerClient) {
  for (const char* store : {"sqlite", "memory:"}) {
    TokenGateway g("", store);  // the defaults: per_client 60, max_live 100000
    ASSERT_TRUE(g.started()) << g.log();
    const Flood f = flood(g, 20'000, "/_idem/tokens", [](std::size_t) { return std::string(); });
    print(std::string("one client, ") + store, f, g);
    EXPECT_EQ(f.sent, 20'000u);
    EXPECT_EQ(f.issued_before_429, 60u) << store;
    EXPECT_LE(f.issued, 61u + static_cast<std::size_t>(f.seconds)) << store << ": one more a second";
    expect_too_many_tokens(f.first_refusal);
    EXPECT_NE(f.first_refusal.body.find("this client"), std::string::npos) << f.first_refusal.body;
    EXPECT_LT(f.rss_after - f.rss_before, kMemoryFactor * 16 * 1024) << store;
    // Other clients and routes are served meanwhile.
    EXPECT_EQ(
        request(g.port(), verb::post, "/orders", {{"Idempotency-Key", "after-flood"}}, "{}").result_int(),
        201u);
  }
}

// Many clients behind a trusted proxy, each named by X-Forwarded-For (or a botnet): each
// stays under per_client, and tokens.max_live stops them all, so the store holds at most
// that many unexpired tokens of this gateway.
TEST(TokensE2E, AFloodFromManyClientsStopsAtMaxLive) {
  TokenGateway g("trusted_proxies: [127.0.0.1]\ntokens:\n  max_live: 3000\n", "sqlite");
  ASSERT_TRUE(g.started()) << g.log();
  const Flood f = flood(g, 10'000, "/_idem/tokens", [&](std::size_t i) {
    return "X-Forwarded-For: 10." + std::to_string(i / 65536 % 256) + "." + std::to_string(i / 256 % 256) +
           "." + std::to_string(i % 256) + "\r\n";
  });
  print("many clients, sqlite, max_live 3000", f, g);
  EXPECT_EQ(f.issued_before_429, 3000u);
  EXPECT_EQ(f.issued, 3000u);
  expect_too_many_tokens(f.first_refusal);
  EXPECT_NE(f.first_refusal.body.find("unexpired"), std::string::npos) << f.first_refusal.body;
  const long retry = std::stol(field(f.first_refusal.head, "Retry-After"));
  EXPECT_GT(retry, 500) << "the first tokens expire after ttl (10m)";
  EXPECT_LE(retry, 620);
  EXPECT_EQ(request(g.port(), verb::post, "/orders", {{"Idempotency-Key", "after-flood"}}, "{}").result_int(),
            201u);
}

}  // namespace
}  // namespace idem::e2e
