// The Redis store over TLS (rediss://, docs/configuration.md "Stores"), against a
// redis-server with a TLS port that the test starts, with certificates the test makes
// (the openssl command): a CA, a server certificate for localhost and 127.0.0.1 that it
// signs, a client certificate, and a second CA that signs nothing of the server's.
//   - the server's certificate checked against tls_ca and the host connected to: the
//     store connects and works; another CA, or a name the certificate does not carry
//     (tls_server_name), is refused at once, failed_precondition, naming OpenSSL's verdict;
//   - a server that asks for a client certificate takes tls_cert/tls_key and refuses a
//     client without one, saying so.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "idem/open.h"
#include "testutil/eventually.h"
#include "testutil/redis_sentinel.h"
#include "testutil/redis_server.h"
#include "testutil/test_certificates.h"

namespace idem::testutil {
namespace {

using namespace std::chrono_literals;
using Kind = BeginOutcome::Kind;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A loopback port nothing listens on now.
std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at);
  socklen_t size = sizeof at;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &size);
  ::close(fd);
  return ntohs(at.sin_port);
}

// A redis-server with a TLS port (its plain port is for RedisServer's own checks).
struct TlsRedis {
  // `more`: further arguments (a cluster's).
  explicit TlsRedis(bool client_certificates = false, std::vector<std::string> more = {})
      : tls_port(free_port()), server(arguments(tls_port, client_certificates, std::move(more))) {}
  static std::vector<std::string> arguments(std::uint16_t port, bool client_certificates,
                                            std::vector<std::string> more) {
    std::vector<std::string> args{"--tls-port",         std::to_string(port),
                                  "--tls-cert-file",    certificates().file("server.crt"),
                                  "--tls-key-file",     certificates().file("server.key"),
                                  "--tls-ca-cert-file", certificates().file("ca.crt"),
                                  "--tls-auth-clients", client_certificates ? "yes" : "no"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  std::uint16_t tls_port;
  RedisServer server;
};

#define REQUIRE_TLS_SERVER(tls)                                                               \
  if (!certificates().ok()) GTEST_SKIP() << "openssl could not make the test's certificates"; \
  if (!(tls).server.started()) GTEST_SKIP() << "redis-server is not installed or did not start with TLS"

Result<std::unique_ptr<Store>> open(const std::string& uri, Duration op_timeout = 10s) {
  StoreOptions options;
  options.op_timeout = op_timeout;
  return open_store(uri, options);
}

TEST(RedisTls, AServerCertificateFromTheCaConnectsByAddressAndByName) {
  TlsRedis tls;
  REQUIRE_TLS_SERVER(tls);
  const std::string ca = "?tls_ca=" + certificates().file("ca.crt");
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    SCOPED_TRACE(host);
    auto store = open("rediss://" + host + ":" + std::to_string(tls.tls_port) + ca + "&prefix=" + host + ":");
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto begun = (*store)->begin({"s", "k", "fp", 60s, 60s});
    ASSERT_TRUE(begun.is_ok()) << begun.status().to_string();
    ASSERT_EQ(begun->kind, Kind::acquired);
    EXPECT_EQ((*store)->commit({"s", "k", begun->fence, "result", 60s}).value(), CommitOutcome::committed);
    EXPECT_EQ((*store)->begin({"s", "k", "fp", 60s, 60s}).value().result, "result");
  }
  // The records are on the server (read through its plain port): a record and its fence
  // key for each of the two stores.
  EXPECT_EQ(tls.server.command({"DBSIZE"}), "4");
}

TEST(RedisTls, ACertificateFromAnotherCaIsRefusedAtOnceNamingTheVerdict) {
  TlsRedis tls;
  REQUIRE_TLS_SERVER(tls);
  const auto t0 = std::chrono::steady_clock::now();
  auto store = open("rediss://127.0.0.1:" + std::to_string(tls.tls_port) +
                    "?tls_ca=" + certificates().file("other.crt"));
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::failed_precondition) << store.status().to_string();
  // OpenSSL's verdict follows (here "self-signed certificate in certificate chain").
  EXPECT_TRUE(contains(store.status().message(), "TLS handshake: the server's certificate was refused: "))
      << store.status().message();
  EXPECT_TRUE(contains(store.status().message(), "127.0.0.1:" + std::to_string(tls.tls_port)))
      << store.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << "op_timeout is 10 s";
}

TEST(RedisTls, ANameTheCertificateDoesNotCarryIsRefused) {
  TlsRedis tls;
  REQUIRE_TLS_SERVER(tls);
  const std::string ca = "&tls_ca=" + certificates().file("ca.crt");
  auto store =
      open("rediss://127.0.0.1:" + std::to_string(tls.tls_port) + "?tls_server_name=redis.example" + ca);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::failed_precondition) << store.status().to_string();
  EXPECT_TRUE(contains(store.status().message(), "the server's certificate was refused: hostname mismatch"))
      << store.status().message();
  // The name it does carry, given as tls_server_name, is accepted.
  auto named = open("rediss://127.0.0.1:" + std::to_string(tls.tls_port) + "?tls_server_name=localhost" + ca);
  EXPECT_TRUE(named.is_ok()) << named.status().to_string();
}

TEST(RedisTls, AServerThatAsksForAClientCertificateGetsTlsCertAndRefusesAClientWithout) {
  TlsRedis tls(/*client_certificates=*/true);
  REQUIRE_TLS_SERVER(tls);
  const std::string base =
      "rediss://127.0.0.1:" + std::to_string(tls.tls_port) + "?tls_ca=" + certificates().file("ca.crt");
  auto without = open(base);
  ASSERT_FALSE(without.is_ok());
  EXPECT_EQ(without.status().code(), StatusCode::failed_precondition) << without.status().to_string();
  EXPECT_TRUE(contains(without.status().message(), "the server refused the TLS session"))
      << without.status().message();
  auto with = open(base + "&tls_cert=" + certificates().file("client.crt") +
                   "&tls_key=" + certificates().file("client.key"));
  ASSERT_TRUE(with.is_ok()) << with.status().to_string();
  EXPECT_EQ((*with)->begin({"s", "mutual", "fp", 60s, 60s}).value().kind, Kind::acquired);
}

// rediss-cluster://: the seed and the masters CLUSTER SLOTS names (their TLS ports, as the
// cluster speaks TLS) are all reached over TLS. One node holds every slot.
TEST(RedisTls, AClusterIsReachedOverTlsAtEveryNodeItNames) {
  TlsRedis tls(false,
               {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--tls-cluster", "yes"});
  REQUIRE_TLS_SERVER(tls);
  tls.server.command({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
  ASSERT_TRUE(eventually([&] {
    return contains(tls.server.command({"CLUSTER", "INFO"}), "cluster_state:ok");
  }));
  auto store = open("rediss-cluster://127.0.0.1:" + std::to_string(tls.tls_port) +
                    "?tls_ca=" + certificates().file("ca.crt"));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  for (const std::string key : {"a", "b", "c", "d"}) {
    auto begun = (*store)->begin({"s", key, "fp", 60s, 60s});
    ASSERT_TRUE(begun.is_ok()) << key << ": " << begun.status().to_string();
    EXPECT_EQ(begun->kind, Kind::acquired) << key;
  }
}

// rediss+sentinel://: the sentinels, and the master they name, are reached over TLS (the
// group's servers and sentinels speak TLS to each other too), through a failover.
TEST(RedisTls, SentinelsAndTheirMasterAreReachedOverTlsThroughAFailover) {
  if (!certificates().ok()) GTEST_SKIP() << "openssl could not make the test's certificates";
  SentinelGroup group(1, {},
                      SentinelTls{certificates().file("server.crt"), certificates().file("server.key"),
                                  certificates().file("ca.crt")});
  if (!group.started()) GTEST_SKIP() << group.why_not();
  auto store = open("rediss+sentinel://" + group.sentinels() + "/" + SentinelGroup::kMaster +
                    "?tls_ca=" + certificates().file("ca.crt"));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  ASSERT_EQ((*store)->begin({"s", "before", "fp", 60s, 60s}).value().kind, Kind::acquired);
  ASSERT_EQ(group.sentinel(0).command({"SENTINEL", "FAILOVER", SentinelGroup::kMaster}), "OK");
  ASSERT_TRUE(group.all_name(group.announced(1), 30s)) << "the sentinels did not promote the replica";
  ASSERT_TRUE(eventually([&] { return (*store)->begin({"s", "after", "fp", 60s, 60s}).is_ok(); }, 30s));
  EXPECT_NE(group.server(1).command({"INFO", "replication"}).find("role:master"), std::string::npos);
  EXPECT_EQ((*store)->begin({"s", "before", "fp", 60s, 60s}).value().kind, Kind::in_progress);
  // Without TLS the sentinels' TLS ports answer nothing a store can use.
  auto plain = open("redis+sentinel://" + group.sentinels() + "/" + SentinelGroup::kMaster, 1s);
  EXPECT_FALSE(plain.is_ok());
}

TEST(RedisTls, FilesThatCannotBeReadAreNamed) {
  auto store = open("rediss://127.0.0.1:1?tls_ca=/nonexistent/ca.pem");
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::failed_precondition) << store.status().to_string();
  EXPECT_TRUE(contains(store.status().message(), "tls_ca=/nonexistent/ca.pem")) << store.status().message();
}

}  // namespace
}  // namespace idem::testutil
