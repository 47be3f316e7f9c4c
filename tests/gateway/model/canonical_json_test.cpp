#include "gateway/model/canonical_json.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace idem {
namespace {

// Passes when `part` occurs in `text`, and shows `text` otherwise.
::testing::AssertionResult Contains(const std::string& text, std::string_view part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// The canonical form of `json`, or the error text prefixed with "error: ".
std::string canon(std::string_view json) {
  Result<std::string> r = canonical_json(json);
  return r ? *r : "error: " + r.status().message();
}

double from_bits(std::uint64_t bits) { return std::bit_cast<double>(bits); }

// RFC 8785 §3.2.2: the example of the whole transformation.
TEST(CanonicalJson, Rfc8785Example) {
  const char* input = R"({
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  })";
  EXPECT_EQ(canon(input),
            "{\"literals\":[null,true,false],"
            "\"numbers\":[333333333.33333329,1e30,4.5,0.002,1e-27],"
            "\"string\":\"\xE2\x82\xAC$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

// RFC 8785 §3.2.3: members sorted by UTF-16 code units.
TEST(CanonicalJson, Rfc8785SortingExample) {
  const char* input = R"({
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  })";
  EXPECT_EQ(canon(input),
            "{\"\\r\":\"Carriage Return\","
            "\"1\":\"One\","
            "\"\xC2\x80\":\"Control\","
            "\"\xC3\xB6\":\"Latin Small Letter O With Diaeresis\","
            "\"\xE2\x82\xAC\":\"Euro Sign\","
            "\"\xF0\x9F\x98\x80\":\"Emoji: Grinning Face\","
            "\"\xEF\xAC\xB3\":\"Hebrew Letter Dalet With Dagesh\"}");
}

// Code point order (and UTF-8 byte order) would put U+E000 first; UTF-16 puts the
// surrogate pair of U+10000 (0xD800 0xDC00) first.
TEST(CanonicalJson, NonBmpSortsBeforeHighBmpAsInUtf16) {
  EXPECT_EQ(canon(R"({"\ue000":1,"\ud800\udc00":2})"), "{\"\xF0\x90\x80\x80\":2,\"\xEE\x80\x80\":1}");
  EXPECT_EQ(canon(R"({"\ud800\udc00":2,"\ue000":1})"), "{\"\xF0\x90\x80\x80\":2,\"\xEE\x80\x80\":1}");
}

TEST(CanonicalJson, SortsMembersByCodeUnitNotLength) {
  EXPECT_EQ(canon(R"({"b":1,"a":2,"ab":3,"":4,"B":5})"), R"({"":4,"B":5,"a":2,"ab":3,"b":1})");
}

// RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
TEST(CanonicalNumber, Rfc8785AppendixB) {
  struct Case {
    std::uint64_t bits;
    const char* text;
  };
  const Case cases[] = {
      {0x0000000000000000, "0"},
      {0x8000000000000000, "0"},
      {0x0000000000000001, "5e-324"},
      {0x8000000000000001, "-5e-324"},
      {0x7fefffffffffffff, "1.7976931348623157e308"},
      {0xffefffffffffffff, "-1.7976931348623157e308"},
      {0x4340000000000000, "9007199254740992"},
      {0xc340000000000000, "-9007199254740992"},
      {0x4430000000000000, "295147905179352830000"},
      {0x44b52d02c7e14af5, "9.999999999999997e22"},
      {0x44b52d02c7e14af6, "1e23"},
      {0x44b52d02c7e14af7, "1.0000000000000001e23"},
      {0x444b1ae4d6e2ef4e, "999999999999999700000"},
      {0x444b1ae4d6e2ef4f, "999999999999999900000"},
      {0x444b1ae4d6e2ef50, "1e21"},
      {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
      {0x3eb0c6f7a0b5ed8d, "0.000001"},
      {0x41b3de4355555553, "333333333.3333332"},
      {0x41b3de4355555554, "333333333.33333325"},
      {0x41b3de4355555555, "333333333.3333333"},
      {0x41b3de4355555556, "333333333.3333334"},
      {0x41b3de4355555557, "333333333.33333343"},
      {0xbecbf647612f3696, "-0.0000033333333333333333"},
      {0x43143ff3c1cb0959, "1424953923781206.2"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(canonical_number(from_bits(c.bits)), c.text) << std::hex << c.bits;
    // The same value written as JSON text canonicalizes to the same form.
    EXPECT_EQ(canon(c.text), c.text);
  }
}

TEST(CanonicalNumber, ChoosesNotationByExponent) {
  EXPECT_EQ(canonical_number(1), "1");
  EXPECT_EQ(canonical_number(-1.5), "-1.5");
  EXPECT_EQ(canonical_number(0.5), "0.5");
  EXPECT_EQ(canonical_number(123456789), "123456789");
  EXPECT_EQ(canonical_number(1e20), "100000000000000000000");
  EXPECT_EQ(canonical_number(1e21), "1e21");
  EXPECT_EQ(canonical_number(1.5e21), "1.5e21");
  EXPECT_EQ(canonical_number(1e-6), "0.000001");
  EXPECT_EQ(canonical_number(1.5e-6), "0.0000015");
  EXPECT_EQ(canonical_number(1e-7), "1e-7");
  EXPECT_EQ(canonical_number(-1.25e-7), "-1.25e-7");
  EXPECT_EQ(canonical_number(0.1), "0.1");
  EXPECT_EQ(canonical_number(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(canonical_number(-0.0), "0");
}

TEST(CanonicalNumber, NonFiniteAsEcmaScriptWritesThem) {
  EXPECT_EQ(canonical_number(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(canonical_number(std::numeric_limits<double>::infinity()), "Infinity");
  EXPECT_EQ(canonical_number(-std::numeric_limits<double>::infinity()), "-Infinity");
}

TEST(CanonicalJson, NumberSpellingDoesNotMatter) {
  for (const char* one : {"1", "1.0", "1.00000", "1e0", "1E0", "10e-1", "0.1e1", "100e-2", "1e+0"}) {
    EXPECT_EQ(canon(one), "1") << one;
  }
  EXPECT_EQ(canon("-0"), "0");
  EXPECT_EQ(canon("-0.0e5"), "0");
  EXPECT_EQ(canon("4.50"), "4.5");
  EXPECT_EQ(canon("2e-3"), "0.002");
  EXPECT_EQ(canon("1E30"), "1e30");
  EXPECT_EQ(canon("100000000000000000000"), "100000000000000000000");
  EXPECT_EQ(canon("1000000000000000000000"), "1e21");
  EXPECT_EQ(canon("[0, -0, 0.0, -0e7, 0e-99999]"), "[0,0,0,0,0]");
  EXPECT_EQ(canon("[12.50e+3, 1250000e-2, 0.0125e6]"), "[12500,12500,12500]");
}

TEST(CanonicalDecimal, LayoutByExponent) {
  EXPECT_EQ(canonical_decimal("-1.5").value(), "-1.5");
  EXPECT_EQ(canonical_decimal("0.000001").value(), "0.000001");
  EXPECT_EQ(canonical_decimal("1e-7").value(), "1e-7");
  EXPECT_EQ(canonical_decimal("123.456e-10").value(), "1.23456e-8");
  EXPECT_EQ(canonical_decimal("1790000000000000001e999999999").value(), "1.790000000000000001e1000000017");
  EXPECT_FALSE(canonical_decimal("01"));
  EXPECT_FALSE(canonical_decimal("1."));
  EXPECT_FALSE(canonical_decimal("+1"));
  EXPECT_FALSE(canonical_decimal("1e"));
  EXPECT_FALSE(canonical_decimal(""));
}

// Numbers keep their exact value: a Java Long (a Snowflake id) is not a double.
TEST(CanonicalJson, NumbersKeepEveryDigit) {
  EXPECT_EQ(canon("1790000000000000001"), "1790000000000000001");
  EXPECT_NE(canon("{\"n\":1790000000000000001}"), canon("{\"n\":1790000000000000002}"));
  EXPECT_EQ(canon("9007199254740993"), "9007199254740993");
  EXPECT_EQ(canon("-9223372036854775808"), "-9223372036854775808");
  EXPECT_EQ(canon("18446744073709551617"), "18446744073709551617");
  EXPECT_EQ(canon("123456789012345678901234567890"), "1.2345678901234567890123456789e29");
  EXPECT_EQ(canon("0.1000000000000000000001"), "0.1000000000000000000001");
  EXPECT_EQ(canon("100.10"), "100.1");
}

// A double's shortest form, read back as JSON, keeps its canonical form; the canonical form
// reads back as the same double.
TEST(CanonicalJson, DoublesRoundTrip) {
  EXPECT_EQ(canon("333333333.33333329"), "333333333.33333329");  // exact, not the double's
  EXPECT_EQ(canon("1.7976931348623157e308"), "1.7976931348623157e308");
  EXPECT_EQ(canon("5e-324"), "5e-324");

  std::mt19937_64 random(20240601);
  for (int i = 0; i < 200000; ++i) {
    double d = from_bits(random());
    if (!std::isfinite(d)) continue;
    char text[64];
    auto end = std::to_chars(text, text + sizeof text, d, std::chars_format::scientific).ptr;
    std::string expected = canonical_number(d);
    ASSERT_EQ(canon(std::string_view(text, end - text)), expected) << std::string_view(text, end - text);
    double back = 0;
    std::from_chars(expected.data(), expected.data() + expected.size(), back);
    ASSERT_EQ(back, d) << expected;
  }
}

// No magnitude is beyond reach, and none costs more than its text: the exponent is never
// expanded into digits.
TEST(CanonicalJson, AbsurdExponentsAreBounded) {
  EXPECT_EQ(canon("1e400"), "1e400");
  EXPECT_EQ(canon("-1e-400"), "-1e-400");
  EXPECT_EQ(canon("[2e-324]"), "[2e-324]");
  EXPECT_EQ(canon("1e999999999"), "1e999999999");
  EXPECT_EQ(canon("1e-999999999"), "1e-999999999");
  EXPECT_EQ(canon("10e2147483646"), "1e2147483647");
  EXPECT_EQ(canon("1e0000000000000000000000000001"), "10");  // leading zeros do not count
  // The parser reads exponents up to 2^31; beyond, the text is refused.
  EXPECT_TRUE(Contains(canon("1e1000000000000000000"), "exponent"));
  EXPECT_TRUE(Contains(canon("[1e-99999999999999999999]"), "exponent"));
  Result<std::string> r = canonical_json("1e1000000000000000000");
  EXPECT_EQ(r.status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(canonical_decimal("10e999999999999999999").value(), "1e1000000000000000000");
  EXPECT_FALSE(canonical_decimal("1e1000000000000000000"));
  // A 100,000-digit mantissa is kept, digit for digit, and no larger.
  const std::string big = "7" + std::string(99998, '0') + "1";
  const std::string digits = "7." + std::string(99998, '0') + "1";
  EXPECT_TRUE(canon(big) == digits + "e99999");
  EXPECT_TRUE(canon(big + "e-99999") == digits);
  EXPECT_EQ(canon("0." + std::string(99999, '0') + "1e99999999"), "1e99899999");
}

TEST(CanonicalJson, StringsUseMinimalEscapes) {
  EXPECT_EQ(canon(R"("\u20ac")"), "\"\xE2\x82\xAC\"");
  EXPECT_EQ(canon(R"("\u000f")"), R"("\u000f")");
  EXPECT_EQ(canon(R"("\u001F\u0000")"), R"("\u001f\u0000")");
  EXPECT_EQ(canon(R"("\b\f\n\r\t")"), R"("\b\f\n\r\t")");
  EXPECT_EQ(canon(R"("\u0008\u000C\u000A\u000D\u0009")"), R"("\b\f\n\r\t")");
  EXPECT_EQ(canon(R"("\"\\\/")"), R"("\"\\/")");
  EXPECT_EQ(canon(R"("\u007f")"), "\"\x7f\"");
  EXPECT_EQ(canon(R"("\u0041\u00e9")"), "\"A\xC3\xA9\"");
  EXPECT_EQ(canon("\"\xF0\x9F\x98\x80\""), "\"\xF0\x9F\x98\x80\"");
  EXPECT_EQ(canon(R"("\uD83D\uDE00")"), "\"\xF0\x9F\x98\x80\"");
  EXPECT_EQ(canon(R"("<>&'")"), R"("<>&'")");
}

TEST(CanonicalJson, NestedValues) {
  EXPECT_EQ(
      canon(
          R"( { "z" : [ 1 , { "y" : [ ] , "x" : { } } , [ [ null ] ] ] , "a" : { "c" : true , "b" : false } } )"),
      R"({"a":{"b":false,"c":true},"z":[1,{"x":{},"y":[]},[[null]]]})");
  EXPECT_EQ(canon("[]"), "[]");
  EXPECT_EQ(canon("{}"), "{}");
  EXPECT_EQ(canon("\"\""), "\"\"");
  EXPECT_EQ(canon("null"), "null");
  EXPECT_EQ(canon(" true "), "true");
  EXPECT_EQ(canon("[3,1,2]"), "[3,1,2]");  // arrays keep their order
}

TEST(CanonicalJson, SameValueSameBytes) {
  const std::string a = R"({"amount": 10.50, "currency": "EUR", "items": [{"sku": "x", "qty": 2}]})";
  const std::string b =
      "{\n\t\"items\" : [ { \"qty\" : 2.0 , \"sku\" : \"\\u0078\" } ],\r\n"
      "  \"currency\":\"\\u0045UR\", \"amount\":1050e-2 }";
  EXPECT_EQ(canon(a), canon(b));
  EXPECT_EQ(canon(a), R"({"amount":10.5,"currency":"EUR","items":[{"qty":2,"sku":"x"}]})");
  EXPECT_NE(canon(a), canon(R"({"amount": "10.50", "currency": "EUR", "items": [{"sku": "x", "qty": 2}]})"));
}

TEST(CanonicalJson, IsIdempotent) {
  for (const char* input : {R"({"b":[1.0,2e3,"\u00e9"],"a":{"\n":-0}})", "[1e21,1e-7,0.1]", R"("\u0001")"}) {
    std::string once = canon(input);
    EXPECT_EQ(canon(once), once) << input;
  }
}

TEST(CanonicalJson, RejectsWhatIsNotOneJsonText) {
  const char* bad[] = {
      "",        " ",     "{",       "}",         "[1,]",   "{\"a\":1,}", "{'a':1}", "nul",
      "1 2",     "01",    "NaN",     "Infinity",  "+1",     ".5",         "1.",      "1e",
      "\"\\x\"", "[1] x", "/*c*/ 1", "{\"a\" 1}", "\"\t\"", "{1:2}",      "[\"a\"",  "\"abc",
  };
  for (const char* input : bad) {
    Result<std::string> r = canonical_json(input);
    ASSERT_FALSE(r) << input << " gave " << *r;
    EXPECT_EQ(r.status().code(), StatusCode::invalid_argument) << input;
    EXPECT_TRUE(Contains(r.status().message(), "not JSON: ")) << input;
  }
}

TEST(CanonicalJson, ErrorsNameTheReason) {
  EXPECT_TRUE(Contains(canon("[1,]"), "syntax error"));
  EXPECT_TRUE(Contains(canon("[1] x"), "extra data"));
  EXPECT_TRUE(Contains(canon("[1] x"), "(at byte 4)"));
  EXPECT_TRUE(Contains(canon("[1"), "incomplete"));
  EXPECT_TRUE(Contains(canon(R"({"a":1,"b":2,"a":3})"), "duplicate member name \"a\" (at byte 18)"));
}

TEST(CanonicalJson, RejectsDuplicateNamesAtAnyDepth) {
  EXPECT_TRUE(Contains(canon(R"([{"x":{"k":1,"k":1}}])"), "duplicate"));
  // The same name in different objects is fine.
  EXPECT_EQ(canon(R"({"k":{"k":{"k":1}}})"), R"({"k":{"k":{"k":1}}})");
  // Escapes are decoded before names are compared.
  EXPECT_TRUE(Contains(canon(R"({"a":1,"\u0061":2})"), "duplicate"));
}

TEST(CanonicalJson, RejectsInvalidUnicode) {
  EXPECT_FALSE(canonical_json("\"\xFF\""));
  EXPECT_FALSE(canonical_json("\"\xC0\xAF\""));      // overlong '/'
  EXPECT_FALSE(canonical_json("\"\xED\xA0\x80\""));  // an encoded surrogate
  EXPECT_FALSE(canonical_json(R"("\ud800")"));
  EXPECT_FALSE(canonical_json(R"("\udc00x")"));
}

TEST(CanonicalJson, LimitsNesting) {
  EXPECT_TRUE(canonical_json(std::string(64, '[') + std::string(64, ']')));
  EXPECT_TRUE(Contains(canon(std::string(65, '[') + std::string(65, ']')), "nested deeper than 64 levels"));
}

TEST(CanonicalJson, LongStringsAndNamesSurviveIntact) {
  std::string big(100000, 'x');
  EXPECT_EQ(canon("{\"" + big + "\":\"" + big + "\"}"), "{\"" + big + "\":\"" + big + "\"}");
}

TEST(ExactJson, NumbersAreReadThroughTheDocument) {
  Result<ExactJson> doc = parse_exact_json(R"({"id": 1790000000000000001, "a": [1.0, "1", 1e999999999]})");
  ASSERT_TRUE(doc.is_ok());
  const boost::json::value& id = doc->root().at("id");
  ASSERT_TRUE(ExactJson::is_number(id));
  EXPECT_EQ(doc->number(id), "1790000000000000001");
  const boost::json::array& a = doc->root().at("a").as_array();
  EXPECT_EQ(doc->number(a[0]), "1");
  EXPECT_FALSE(ExactJson::is_number(a[1]));
  EXPECT_EQ(doc->number(a[2]), "1e999999999");
  EXPECT_EQ(canonical_json(*doc, doc->root().at("a")), R"([1,"1",1e999999999])");
  EXPECT_EQ(canonical_json(*doc), canon(R"({"a":[1,"1",1e999999999],"id":1790000000000000001})"));
  EXPECT_EQ(canonical_json(ExactJson()), "null");
}

// A document parsed once and canonicalized agrees with canonical_json of its text, in what
// it accepts, what it refuses (and why) and the bytes it gives, so that key templates and
// json fingerprints, which read the parsed request body, agree with the canonical forms.
TEST(ExactJson, ParsedThenCanonicalAgreesWithTheText) {
  std::string deep_ok = std::string(64, '[') + std::string(64, ']');
  std::string too_deep = std::string(65, '[') + std::string(65, ']');
  for (const std::string& text : std::vector<std::string>{"{}",
                                                          "[]",
                                                          "0",
                                                          "-0",
                                                          "1.0",
                                                          "1e21",
                                                          "0.1",
                                                          "0.30000000000000004",
                                                          "123456789012345678901234567890",
                                                          "1e-400",
                                                          "1e999999999",
                                                          "1e9999999999999999999",
                                                          "\"caf\\u00e9\"",
                                                          R"({"b":1,"a":[true,false,null,"x"]})",
                                                          " {\"a\" : 1 } ",
                                                          "",
                                                          "nope",
                                                          "{\"a\":1,\"a\":2}",
                                                          "1e400",
                                                          "-1e400",
                                                          "[1,]",
                                                          "{} {}",
                                                          "\"\\ud800\"",
                                                          "\"\xFF\"",
                                                          "// c\n1",
                                                          deep_ok,
                                                          too_deep}) {
    Result<ExactJson> parsed = parse_exact_json(text);
    Result<std::string> canonical = canonical_json(text);
    ASSERT_EQ(parsed.is_ok(), canonical.is_ok()) << text;
    if (parsed) {
      EXPECT_EQ(canonical_json(*parsed), *canonical) << text;
    } else {
      EXPECT_EQ(parsed.status().message(), canonical.status().message()) << text;
    }
  }
}

TEST(ExactJson, NumbersKeepTheirExactValue) {
  Result<ExactJson> v = parse_exact_json("[0.1, 0.30000000000000004, 5e-324, 1.0, 18446744073709551617, -0]");
  ASSERT_TRUE(v.is_ok());
  const boost::json::array& a = v->root().as_array();
  EXPECT_EQ(v->number(a[0]), "0.1");
  EXPECT_EQ(v->number(a[1]), "0.30000000000000004");
  EXPECT_EQ(v->number(a[2]), "5e-324");
  EXPECT_EQ(v->number(a[3]), "1");
  EXPECT_EQ(v->number(a[4]), "18446744073709551617");
  EXPECT_EQ(v->number(a[5]), "0");
}

TEST(ExactJson, StringsAlone) {
  EXPECT_EQ(canonical_json_string("caf\xC3\xA9 \"q\"\n"), "\"caf\xC3\xA9 \\\"q\\\"\\n\"");
}

}  // namespace
}  // namespace idem
