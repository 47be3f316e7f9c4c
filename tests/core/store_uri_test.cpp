#include "idem/store_uri.h"

#include <string>

#include <gtest/gtest.h>

namespace idem {
namespace {

TEST(RedactUri, UrisWithoutSecretsAreUnchanged) {
  for (const char* uri : {"memory:", "sqlite:./idem.db", "sqlite:/var/lib/idem.db?sync=full",
                          "redis://127.0.0.1:6379", "redis://127.0.0.1:6379/2?prefix=shop:",
                          "redis-cluster://h1:7000,h2:7001", "postgres://idem@db.internal:5432/idem",
                          "postgresql://db/idem?table_prefix=gw_&sslmode=require", "no scheme at all"})
    EXPECT_EQ(redact_uri(uri), uri);
}

TEST(RedactUri, PasswordsInTheUserInformation) {
  EXPECT_EQ(redact_uri("redis://:s3cret@127.0.0.1:6379"), "redis://:***@127.0.0.1:6379");
  EXPECT_EQ(redact_uri("redis://default:s3cret@h:6379/1"), "redis://default:***@h:6379/1");
  EXPECT_EQ(redact_uri("redis://s3cret@h"), "redis://***@h");  // `pass@` alone is a password
  EXPECT_EQ(redact_uri("redis-cluster://u:s3cret@h1:7000,h2:7001?prefix=p"),
            "redis-cluster://u:***@h1:7000,h2:7001?prefix=p");
  EXPECT_EQ(redact_uri("postgres://u:s3cret@127.0.0.1:5432/db"), "postgres://u:***@127.0.0.1:5432/db");
  EXPECT_EQ(redact_uri("postgresql://u@h/db"), "postgresql://u@h/db");  // a user name, no secret
  EXPECT_EQ(redact_uri("mysql://u:s3cret@h/db"), "mysql://u:***@h/db");
  EXPECT_EQ(redact_uri("redsi://s3cret@h"), "redsi://***@h");  // a typo of a scheme hides it too
}

TEST(RedactUri, WithoutSchemeSeparatorTheUserInformationStartsTheUri) {
  EXPECT_EQ(redact_uri("s3cret@127.0.0.1:6379"), "***@127.0.0.1:6379");
  EXPECT_EQ(redact_uri("u:s3cret@h/db"), "u:***@h/db");
  EXPECT_EQ(redact_uri("redis:/:s3cret@h"), "redis:***@h");
  EXPECT_EQ(redact_uri("postgres:u@h/db"), "postgres:***@h/db");
  // A file name holding '@' is no password.
  EXPECT_EQ(redact_uri("sqlite:./backup@2024.db"), "sqlite:./backup@2024.db");
  EXPECT_EQ(redact_uri("SQLite:./a:b@c.db"), "SQLite:./a:b@c.db");
}

TEST(RedactUri, PercentEncodedAndSubstitutedPasswords) {
  EXPECT_EQ(redact_uri("postgres://u:p%40ss%2Fw0rd@h/db"), "postgres://u:***@h/db");
  // ${NAME} is replaced before the URI is used; written out, it is hidden all the same.
  EXPECT_EQ(redact_uri("postgres://u:${PG_PASSWORD}@h/db"), "postgres://u:***@h/db");
}

TEST(RedactUri, PasswordsHoldingDelimitersAreHiddenWhole) {
  // The user information ends at the last '@', however a driver would split it.
  EXPECT_EQ(redact_uri("redis://:a@b/c?d@h:6379"), "redis://:***@h:6379");
  EXPECT_EQ(redact_uri("postgres://u:pa:ss@h/db"), "postgres://u:***@h/db");
}

TEST(RedactUri, PasswordQueryParameters) {
  EXPECT_EQ(redact_uri("postgres://u@h/db?password=s3cret"), "postgres://u@h/db?password=***");
  EXPECT_EQ(redact_uri("postgres://h/db?sslmode=require&Password=s3cret&table_prefix=p"),
            "postgres://h/db?sslmode=require&Password=***&table_prefix=p");
  EXPECT_EQ(redact_uri("postgres://h/db?sslpassword=k3y&pass%77ord=s3cret"),
            "postgres://h/db?sslpassword=***&pass%77ord=***");
  EXPECT_EQ(redact_uri("postgres://u:s3cret@h/db?password=other"), "postgres://u:***@h/db?password=***");
  EXPECT_EQ(redact_uri("postgres://h/db?password="), "postgres://h/db?password=");
  // A '@' in the query makes the scan take more than the user information: never less.
  const std::string odd = redact_uri("postgres://h/db?password=s3cret&application_name=a@b");
  EXPECT_EQ(odd.find("s3cret"), std::string::npos) << odd;
}

TEST(RedactSecrets, DriverMessagesLoseEverySpellingOfThePassword) {
  const std::string uri = "postgres://u:p%40ss@h/db?sslpassword=k%33y";
  EXPECT_EQ(redact_secrets("invalid percent-encoded token: \"p%40ss\"", uri),
            "invalid percent-encoded token: \"***\"");
  EXPECT_EQ(redact_secrets("auth failed for p@ss and k3y", uri), "auth failed for *** and ***");
  EXPECT_EQ(redact_secrets("cannot parse '" + uri + "'", uri), "cannot parse '" + redact_uri(uri) + "'");
  EXPECT_EQ(redact_secrets("nothing secret here", "redis://h:6379"), "nothing secret here");
}

TEST(CheckUriUserinfo, CharactersThatDriversWouldSplitMustBePercentEncoded) {
  for (const char* uri : {"memory:", "sqlite:./x.db", "redis://:s3cret@h", "redis://u:a!$&'()*+,;=:~-._@h",
                          "postgres://u:p%40ss@h/db", "postgres://h/db?password=a%40b"})
    EXPECT_TRUE(check_uri_userinfo(uri).is_ok()) << uri;
  for (const char* uri : {"redis://:ab?cd@h", "postgres://u:ab/cd@h/db", "redis://:a#b@h", "redis://:a b@h",
                          "postgres://u:100%@h/db", "postgres://u:a[b]@h/db", "postgres://u:p@ss@h/db",
                          "postgres://h/db?application_name=a@b"}) {
    Status s = check_uri_userinfo(uri);
    EXPECT_EQ(s.code(), StatusCode::invalid_argument) << uri;
    EXPECT_NE(s.message().find("percent-encoded"), std::string::npos) << s.message();
  }
  const Status s = check_uri_userinfo("redis://:s3cret?x@h");
  EXPECT_EQ(s.message().find("s3cret"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace idem
