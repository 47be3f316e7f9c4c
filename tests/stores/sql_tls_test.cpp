// The SQL stores over TLS (docs/stores.md, "TLS to the store"): a PostgreSQL and a MariaDB
// of the test's own (tests/e2e/outage_rig.h) serving certificates the test makes
// (testutil/test_certificates.h), reached through the drivers' own parameters in the store
// URI: libpq's sslmode/sslrootcert, and the MySQL store's ssl_mode/ssl_ca/ssl_cert/ssl_key.
// A certificate from the CA given connects (and the session is encrypted); from another CA
// it is refused, failed_precondition, saying why.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "e2e/outage_rig.h"
#include "idem/open.h"
#include "testutil/test_certificates.h"

namespace idem::e2e {
namespace {

using namespace std::chrono_literals;
using testutil::certificates;
using Kind = BeginOutcome::Kind;

// The server's certificate, key and CA in a directory of their own that `user` (the
// server's) owns, the key readable by it alone, as both servers insist.
std::string certificates_for(const char* user) {
  const std::string dir = temp_dir();
  for (const char* name : {"server.crt", "server.key", "ca.crt"}) {
    std::filesystem::copy_file(certificates().file(name), dir + "/" + name);
    give_to(user, dir + "/" + name);
  }
  ::chmod((dir + "/server.key").c_str(), 0600);
  give_to(user, dir);
  return dir;
}

Result<std::unique_ptr<Store>> open(const std::string& uri) {
  StoreOptions options;
  options.op_timeout = 10s;
  return open_store(uri, options);
}

TEST(PostgresTls, VerifyFullWithTheCaConnectsEncryptedAndAnotherCaIsRefused) {
  if (!certificates().ok()) GTEST_SKIP() << "openssl could not make the test's certificates";
  const std::string dir = certificates_for("postgres");
  PostgresServer pg("ssl = on\nssl_cert_file = '" + dir + "/server.crt'\nssl_key_file = '" + dir +
                    "/server.key'");
  if (!pg.started()) GTEST_SKIP() << pg.why_not();
  auto store = open(pg.uri() + "?sslmode=verify-full&sslrootcert=" + certificates().file("ca.crt"));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  EXPECT_EQ((*store)->begin({"s", "k", "fp", 60s, 60s}).value().kind, Kind::acquired);
  // The store's sessions (application_name idem) are encrypted.
  const std::string encrypted = pg.query(
      "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE ssl AND application_name = "
      "$$idem$$");
  EXPECT_TRUE(encrypted != "0" && encrypted.find_first_not_of("0123456789") == std::string::npos)
      << encrypted;
  EXPECT_EQ(pg.query("SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) "
                     "WHERE NOT ssl AND application_name = $$idem$$"),
            "0");

  auto refused = open(pg.uri() + "?sslmode=verify-full&sslrootcert=" + certificates().file("other.crt"));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::failed_precondition) << refused.status().to_string();
  EXPECT_NE(refused.status().message().find("certificate verify failed"), std::string::npos)
      << refused.status().message();
  remove_dir(dir);
}

TEST(MysqlTls, VerifyIdentityWithTheCaConnectsAnotherCaIsRefusedAndAClientCertificateIsSent) {
  if (!certificates().ok()) GTEST_SKIP() << "openssl could not make the test's certificates";
  const std::string dir = certificates_for("mysql");
  MariadbServer db("ssl_cert=" + dir + "/server.crt\nssl_key=" + dir + "/server.key\nssl_ca=" + dir +
                   "/ca.crt");
  if (!db.started()) GTEST_SKIP() << db.why_not();
  const std::string ca = "?ssl_mode=VERIFY_IDENTITY&ssl_ca=" + certificates().file("ca.crt");
  auto store = open(db.uri() + ca);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  EXPECT_EQ((*store)->begin({"s", "k", "fp", 60s, 60s}).value().kind, Kind::acquired);

  auto refused = open(db.uri() + "?ssl_mode=VERIFY_CA&ssl_ca=" + certificates().file("other.crt"));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("certificate"), std::string::npos) << refused.status().message();

  // An account that must show a client certificate signed by the CA.
  std::string out;
  ASSERT_TRUE(db.query("ALTER USER 'idem'@'127.0.0.1' REQUIRE X509", &out)) << out;
  auto without = open(db.uri() + ca);
  ASSERT_FALSE(without.is_ok());
  EXPECT_EQ(without.status().code(), StatusCode::failed_precondition) << without.status().to_string();
  auto with = open(db.uri() + ca + "&ssl_cert=" + certificates().file("client.crt") +
                   "&ssl_key=" + certificates().file("client.key"));
  ASSERT_TRUE(with.is_ok()) << with.status().to_string();
  EXPECT_EQ((*with)->begin({"s", "k", "fp", 60s, 60s}).value().kind, Kind::in_progress);
  remove_dir(dir);
}

}  // namespace
}  // namespace idem::e2e
