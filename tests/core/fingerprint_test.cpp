#include "idem/fingerprint.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

using namespace std::string_literals;

std::string fp(const std::vector<std::string>& fields) {
  Fingerprinter f;
  for (const std::string& field : fields) f.add(field);
  return f.finish();
}

// The 8-byte little-endian length of the encoding.
std::string le64(std::uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>(n >> (8 * i));
  return out;
}

TEST(Hash128, KnownXxh3Vectors) {
  // XXH3-128 (seed 0) of the empty input, as xxhsum -H2 prints it.
  EXPECT_EQ(to_hex(hash128("")), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(hash128("").size(), 16u);
  EXPECT_EQ(hash128("abc").size(), 16u);
}

TEST(Hash128, DeterministicAndSensitive) {
  EXPECT_EQ(hash128("hello"), hash128("hello"));
  EXPECT_NE(hash128("hello"), hash128("hellp"));
  EXPECT_NE(hash128("hello"), hash128("hello "));
  std::string with_nul = "a\0b"s;
  EXPECT_NE(hash128(with_nul), hash128("a"));
}

// The encoding is stored durably, so it is pinned here: for each field its length as
// 8 bytes little-endian, then its bytes; absent is length 2^64-1 with no bytes.
TEST(Fingerprinter, EncodingIsPinned) {
  EXPECT_EQ(Fingerprinter().finish(), hash128(""));
  EXPECT_EQ(fp({"abc"}), hash128(le64(3) + "abc"));
  EXPECT_EQ(fp({"POST", "/orders"}), hash128(le64(4) + "POST" + le64(7) + "/orders"));
  EXPECT_EQ(fp({""}), hash128(le64(0)));
  Fingerprinter f;
  f.add("x").add_absent();
  EXPECT_EQ(f.finish(), hash128(le64(1) + "x" + "\xff\xff\xff\xff\xff\xff\xff\xff"s));
}

TEST(Fingerprinter, Deterministic) {
  EXPECT_EQ(fp({"POST", "/orders", "application/json", "{\"a\":1}"}),
            fp({"POST", "/orders", "application/json", "{\"a\":1}"}));
  EXPECT_EQ(fp({}), fp({}));
}

TEST(Fingerprinter, DigestIs16Bytes) {
  EXPECT_EQ(fp({}).size(), 16u);
  EXPECT_EQ(fp({"a", "b", std::string(100000, 'z')}).size(), 16u);
}

TEST(Fingerprinter, FieldBoundariesMatter) {
  EXPECT_NE(fp({"ab", "c"}), fp({"a", "bc"}));
  EXPECT_NE(fp({"abc"}), fp({"ab", "c"}));
  EXPECT_NE(fp({"abc", ""}), fp({"abc"}));
  EXPECT_NE(fp({"", ""}), fp({""}));
  EXPECT_NE(fp({""}), fp({}));
  // A field that looks like an encoded length cannot fake a boundary.
  std::string fake = std::string("a").append(le64(1)).append("b");
  EXPECT_NE(fp({fake}), fp({"a", "b"}));
}

TEST(Fingerprinter, OrderMatters) {
  EXPECT_NE(fp({"a", "b"}), fp({"b", "a"}));
  EXPECT_NE(fp({"POST", "/x"}), fp({"/x", "POST"}));
}

TEST(Fingerprinter, AbsentDiffersFromEveryValue) {
  auto with_absent = [] {
    Fingerprinter f;
    f.add("GET").add_absent();
    return f.finish();
  };
  EXPECT_EQ(with_absent(), with_absent());
  EXPECT_NE(with_absent(), fp({"GET", ""}));
  EXPECT_NE(with_absent(), fp({"GET"}));
  EXPECT_NE(with_absent(), fp({"GET", "null"}));
  EXPECT_NE(with_absent(), fp({"GET", "\xff\xff\xff\xff\xff\xff\xff\xff"s}));
  EXPECT_NE(with_absent(), fp({"GET", le64(~std::uint64_t{0})}));

  Fingerprinter one, two;
  one.add_absent();
  two.add_absent().add_absent();
  EXPECT_NE(one.finish(), two.finish());
}

TEST(Fingerprinter, AbsentPositionMatters) {
  Fingerprinter a, b;
  a.add_absent().add("x");
  b.add("x").add_absent();
  EXPECT_NE(a.finish(), b.finish());
}

TEST(Fingerprinter, DistinctInputsGiveDistinctDigests) {
  std::set<std::string> seen;
  for (int i = 0; i < 10000; ++i) seen.insert(fp({"POST", "/orders/" + std::to_string(i)}));
  EXPECT_EQ(seen.size(), 10000u);
}

TEST(Fingerprinter, BinaryFieldsAreHashedWhole) {
  EXPECT_NE(fp({"a\0b"s}), fp({"a\0c"s}));
  EXPECT_NE(fp({"a\0"s}), fp({"a"}));
}

TEST(ToHex, LowercasePairs) {
  EXPECT_EQ(to_hex(""), "");
  EXPECT_EQ(to_hex("\x00\x01\x7f\x80\xab\xff"s), "00017f80abff");
  EXPECT_EQ(to_hex("AZ"), "415a");
  std::string digest = fp({"x"});
  std::string hex = to_hex(digest);
  EXPECT_EQ(hex.size(), 32u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace idem
