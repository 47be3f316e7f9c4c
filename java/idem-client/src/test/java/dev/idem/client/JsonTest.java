package dev.idem.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The JSON reader and writer. */
class JsonTest {
  @ParameterizedTest
  @ValueSource(strings = {
      "null", "true", "false", "0", "-0", "1790000000000000001", "-9223372036854775808",
      "123456789012345678901234567890", "0.1", "1e300", "-2.5E-3", "1E+2", "\"\"", "\"a\\\"b\\\\c\\n\"",
      "[]", "{}", "[1,[2,[3]],{\"a\":{}}]", "{\"a\":1,\"b\":[true,null],\"c\":\"\\u00e9\\ud83d\\ude00\"}",
      " \t\r\n{ \"x\" : [ 1 , 2 ] } \n"})
  void readsAndWritesBackEqualValues(String text) {
    JsonValue v = JsonValue.parse(text);
    JsonValue again = JsonValue.parse(v.toJson());
    assertEquals(v, again);
    assertEquals(v.toJson(), again.toJson());
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "", " ", "nul", "True", "NaN", "Infinity", "-Infinity", "01", "-01", "1.", ".5", "1e", "1e+", "+1",
      "0x10", "'a'", "\"a", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\ud800\"", "\"\\udc00\"",
      "\"\\ud800\\u0041\"", "\"tab\there\"", "[1,]", "[,1]", "{\"a\":1,}", "{a:1}", "{\"a\" 1}", "{\"a\":1 \"b\":2}",
      "[1 2]", "{\"a\":1,\"a\":2}", "1e2147483648", "[0.1e-2147483649]", "1 2", "[] x", "// c\n1", "/* c */1", "[1]]", "{\"a\":}", "\u00a01"})
  void refusesWhatIsNotStrictJson(String text) {
    JsonException e = assertThrows(JsonException.class, () -> JsonValue.parse(text));
    assertTrue(e.getMessage().startsWith("invalid JSON at offset"), e.getMessage());
  }

  @Test
  void nineteenDigitNumbersKeepEveryDigit() {
    JsonValue v = JsonValue.parse("{\"id\":1790000000000000001,\"next\":1790000000000000002}");
    assertEquals(1790000000000000001L, v.asObject().require("id").asLong());
    assertNotEquals(v.asObject().require("id"), v.asObject().require("next"));
    assertEquals("{\"id\":1790000000000000001,\"next\":1790000000000000002}", v.toJson());
    assertEquals("9223372036854775807", JsonValue.of(Long.MAX_VALUE).toJson());
    assertThrows(JsonException.class, () -> JsonValue.parse("9223372036854775808").asLong());
    assertThrows(JsonException.class, () -> JsonValue.parse("1.5").asLong());
    assertEquals(2L, JsonValue.parse("2.0").asLong());  // an integer value, whatever its spelling
    assertEquals(new BigDecimal("123456789012345678901234567890.5"),
        JsonValue.parse("123456789012345678901234567890.5").asBigDecimal());
  }

  @Test
  void numbersCompareByValue() {
    assertEquals(JsonValue.parse("1"), JsonValue.parse("1.0"));
    assertEquals(JsonValue.parse("1"), JsonValue.parse("1e0"));
    assertEquals(JsonValue.parse("1").hashCode(), JsonValue.parse("1.00").hashCode());
    assertEquals(JsonValue.parse("0").hashCode(), JsonValue.parse("-0.0").hashCode());
    assertNotEquals(JsonValue.parse("1"), JsonValue.parse("\"1\""));
    assertThrows(JsonException.class, () -> new JsonValue.Num("1e"));
    assertThrows(JsonException.class, () -> new JsonValue.Num("1e2147483648"));
    // Absurd exponents that fit cost bounded work.
    JsonValue huge = JsonValue.parse("1e999999999");
    assertEquals(huge, JsonValue.parse("10e999999998"));
    assertEquals(huge.hashCode(), JsonValue.parse("10e999999998").hashCode());
    assertThrows(JsonException.class, huge::asLong);
    // Long numbers are refused at once rather than read in quadratic time.
    JsonValue.parse("1" + "0".repeat(JsonReader.MAX_NUMBER_LENGTH - 1));
    long t0 = System.nanoTime();
    assertThrows(JsonException.class, () -> JsonValue.parse("[1" + "0".repeat(1_000_000) + "]"));
    assertTrue(System.nanoTime() - t0 < 2_000_000_000L);
  }

  @Test
  void stringsAreEscapedSoAnyTextRoundTrips() {
    String nasty = "quote\" backslash\\ nl\n cr\r tab\t nul\0 bell\u0007 del\u007f ls\u2028 ps\u2029 é 订单 😀";
    String json = JsonValue.of(nasty).toJson();
    assertTrue(json.contains("\\u0000") && json.contains("\\u2028"), json);
    assertEquals(nasty, JsonValue.parse(json).asString());
    assertThrows(JsonException.class, () -> JsonValue.of("lone \ud800 surrogate").toJson());
    assertEquals("a/b", JsonValue.parse("\"a\\/b\"").asString());
  }

  @Test
  void nestingIsBounded() {
    String deep = "[".repeat(JsonReader.MAX_DEPTH) + "]".repeat(JsonReader.MAX_DEPTH);
    JsonValue.parse(deep);
    String tooDeep = "[".repeat(JsonReader.MAX_DEPTH + 1) + "]".repeat(JsonReader.MAX_DEPTH + 1);
    assertTrue(assertThrows(JsonException.class, () -> JsonValue.parse(tooDeep)).getMessage().contains("deeper"));
    // Very deep input fails cleanly, without a StackOverflowError.
    assertThrows(JsonException.class, () -> JsonValue.parse("[".repeat(1_000_000)));
    assertThrows(JsonException.class, () -> JsonValue.parse("{\"a\":".repeat(100_000)));
  }

  @Test
  void typedAccessSaysWhatItFound() {
    JsonValue.Obj o = JsonValue.parse("{\"a\":\"x\",\"b\":null}").asObject();
    assertEquals("expected a number, got string", assertThrows(JsonException.class, () -> o.require("a").asLong()).getMessage());
    assertEquals("missing field \"c\"", assertThrows(JsonException.class, () -> o.require("c")).getMessage());
    assertTrue(o.require("b").isNull());
    assertThrows(JsonException.class, () -> JsonValue.parse("[]").asObject());
    assertEquals("{\"a\":1,\"c\":\"x\"}", JsonValue.object("a", 1L, "b", null, "c", "x").toJson());
    assertThrows(IllegalArgumentException.class, () -> JsonValue.object("a"));
    assertThrows(IllegalArgumentException.class, () -> JsonValue.from(1.5));  // a double is not exact: refused
  }

  @Test
  void randomBytesNeverCrashTheReader() {
    Random random = new Random(42);
    String alphabet = "{}[]\":,.-+eE0123456789tfnrulsa\\u \t\n\ud83d\ude00x";
    for (int n = 0; n < 20_000; n++) {
      StringBuilder s = new StringBuilder();
      int len = random.nextInt(40);
      for (int k = 0; k < len; k++) s.append(alphabet.charAt(random.nextInt(alphabet.length())));
      try {
        JsonValue v = JsonValue.parse(s.toString());
        assertEquals(v, JsonValue.parse(v.toJson()), s.toString());
      } catch (JsonException expected) {
        // refused with a message: fine
      }
    }
  }
}
