// Config drift against live records (gateway/model/record_drift.h): what `idem check --store`
// recognises in a record, and what it cannot.
#include "gateway/model/record_drift.h"
#include "gateway/model/principal.h"

#include <gtest/gtest.h>

#include "gateway/model/principal.h"
#include "gateway/model/request_fingerprint.h"
#include "gateway/model/request_identity.h"

namespace idem::gateway {
namespace {

Route route(std::string key_space, Subject::Kind subject = Subject::Kind::none,
            FingerprintRule::Kind fingerprint = FingerprintRule::Kind::body, Mode mode = Mode::replay) {
  Route r;
  r.name = key_space;
  r.key_space = std::move(key_space);
  r.policy.subject = {subject, subject == Subject::Kind::none ? "" : "Authorization"};
  r.policy.fingerprint = {fingerprint, {}};
  r.mode = mode;
  return r;
}

const std::string kHashed(16, 'h');  // what body, json and templates store: 16 bytes

Record record(std::string scope, std::string key, std::string fingerprint = kHashed) {
  Record r;
  r.scope = std::move(scope);
  r.key = std::move(key);
  r.fingerprint = std::move(fingerprint);
  return r;
}

// "drift key_space count example-key" per finding.
std::vector<std::string> drift(const std::vector<Route>& routes, const std::vector<Record>& records) {
  std::vector<std::string> out;
  for (const DriftFinding& f : find_drift(routes, records)) {
    EXPECT_FALSE(describe(f).empty());
    out.push_back(std::to_string(static_cast<int>(f.drift)) + " " + f.key_space + " " +
                  std::to_string(f.count) + " " + f.example.key);
  }
  return out;
}

std::string line(Drift d, const std::string& ks, int n, const std::string& key) {
  return std::to_string(static_cast<int>(d)) + " " + ks + " " + std::to_string(n) + " " + key;
}

TEST(RecordDrift, RecordsTheConfigReadsAsWrittenAreNotReported) {
  const std::string user = hash_subject("Bearer u1");
  std::vector<Route> routes{route("orders"), route("users", Subject::Kind::header_hash),
                            route("raw", Subject::Kind::header, FingerprintRule::Kind::none),
                            route("legacy", Subject::Kind::none, FingerprintRule::Kind::none)};
  EXPECT_TRUE(drift(routes, {record("", "orders:k-1"), record(user, "users:k-1"),
                             record("tenant-a", "raw:k", none_fingerprint()), record("", "legacy:k", ""),
                             record("", "legacy:k2", none_fingerprint())})
                  .empty());
}

TEST(RecordDrift, ARouteRenamedOrRekeyedOrphansItsRecords) {
  std::vector<Route> routes{route("orders-v2"),
                            route("stock", Subject::Kind::none, FingerprintRule::Kind::body, Mode::lock)};
  EXPECT_EQ(drift(routes, {record("", "orders:a"), record("", "orders:b"), record("", "stock:s"),
                           record("", "bare-key"), record("", "orders-v2:c")}),
            (std::vector<std::string>{line(Drift::key_space_unrouted, "orders", 2, "orders:a"),
                                      line(Drift::key_space_unrouted, "stock", 1, "stock:s"),
                                      line(Drift::no_key_space, "", 1, "bare-key")}));
}

TEST(RecordDrift, ASubjectGainedOrLostIsAScopeOfTheWrongShape) {
  const std::string user = hash_subject("Bearer u1");
  // Gained: records written without a subject have the empty scope.
  EXPECT_EQ(drift({route("orders", Subject::Kind::header_hash)}, {record("", "orders:k")}),
            (std::vector<std::string>{line(Drift::scope_shape, "orders", 1, "orders:k")}));
  EXPECT_EQ(drift({route("orders", Subject::Kind::header)}, {record("", "orders:k")}),
            (std::vector<std::string>{line(Drift::scope_shape, "orders", 1, "orders:k")}));
  // Lost: a scoped record under a route without a subject.
  EXPECT_EQ(drift({route("orders")}, {record(user, "orders:k")}),
            (std::vector<std::string>{line(Drift::scope_shape, "orders", 1, "orders:k")}));
  // header → header-hash: a raw value is not a hash.
  EXPECT_EQ(drift({route("orders", Subject::Kind::header_hash)}, {record("Bearer u1", "orders:k")}),
            (std::vector<std::string>{line(Drift::scope_shape, "orders", 1, "orders:k")}));
  // Not detectable: header-hash → header (a hash is a possible header value).
  EXPECT_TRUE(drift({route("orders", Subject::Kind::header)}, {record(user, "orders:k")}).empty());
  // Two routes share the key space: a record either would write is fine.
  EXPECT_TRUE(drift({route("orders"), route("orders", Subject::Kind::header_hash)},
                    {record(user, "orders:k"), record("", "orders:j")})
                  .empty());
}

TEST(RecordDrift, AFingerprintModeChangedIsReported) {
  // body → none: the hashed records would answer 422 to every repeat.
  EXPECT_EQ(
      drift({route("orders", Subject::Kind::none, FingerprintRule::Kind::none)}, {record("", "orders:k")}),
      (std::vector<std::string>{line(Drift::fingerprint_mode, "orders", 1, "orders:k")}));
  // none → json: the same.
  EXPECT_EQ(drift({route("orders", Subject::Kind::none, FingerprintRule::Kind::json)},
                  {record("", "orders:k", none_fingerprint())}),
            (std::vector<std::string>{line(Drift::fingerprint_mode, "orders", 1, "orders:k")}));
  // An earlier release's `none` record (empty fingerprint) under a fingerprinting route:
  // replayed to any body.
  EXPECT_EQ(drift({route("orders", Subject::Kind::none, FingerprintRule::Kind::fields)},
                  {record("", "orders:k", ""), record("", "orders:j", "")}),
            (std::vector<std::string>{line(Drift::fingerprint_any_body, "orders", 2, "orders:k")}));
  // A `none` record bound to its principal is still a `none` record (principal.h).
  EXPECT_TRUE(drift({route("orders", Subject::Kind::none, FingerprintRule::Kind::none)},
                    {record("", "orders:k", PrincipalBinder("s").bind(none_fingerprint(), "Bearer a"))})
                  .empty());
  // Not detectable: body → json (both hash 16 bytes).
  EXPECT_TRUE(
      drift({route("orders", Subject::Kind::none, FingerprintRule::Kind::json)}, {record("", "orders:k")})
          .empty());
}

TEST(RecordDrift, DescribesCountAndExample) {
  DriftFinding f{Drift::scope_shape, "orders", 3, record(std::string("a\"\x01", 3), "orders:k")};
  const std::string d = describe(f);
  EXPECT_EQ(d.rfind("3 records in key space 'orders'", 0), 0u) << d;
  EXPECT_NE(d.find("scope \"a\\x22\\x01\" key \"orders:k\""), std::string::npos) << d;
}

}  // namespace
}  // namespace idem::gateway
