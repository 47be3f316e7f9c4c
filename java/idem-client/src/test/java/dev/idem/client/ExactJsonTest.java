package dev.idem.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The client's JSON: Jackson, configured for exact numbers and strict JSON. */
class ExactJsonTest {
  @ParameterizedTest
  @ValueSource(strings = {
      "null", "true", "false", "0", "1790000000000000001", "-9223372036854775808", "18446744073709551615",
      "123456789012345678901234567890", "0.1", "88.00", "1e300", "1E+2", "-2.5E-3", "1e400", "-1E-400", "\"\"",
      "\"a\\\"b\\\\c\\n\"", "[]", "{}", "[1,[2,[3]],{\"a\":{}}]", "{\"a\":1,\"b\":[true,null],\"c\":\"\\u00e9\\ud83d\\ude00\"}",
      " \t\r\n{ \"x\" : [ 1 , 2 ] } \n"})
  void readsAndWritesBackEqualValues(String text) {
    JsonNode v = ExactJson.parse(text);
    JsonNode again = ExactJson.parse(ExactJson.write(v));
    assertThat(again).isEqualTo(v);
    assertThat(ExactJson.write(again)).isEqualTo(ExactJson.write(v));
    assertThat(numbers(v)).allSatisfy(n -> assertThat(n.isDouble() || n.isFloat()).as("a double: " + n).isFalse());
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "", " ", "nul", "True", "NaN", "Infinity", "-Infinity", "01", "-01", "1.", ".5", "1e", "1e+", "+1",
      "0x10", "'a'", "\"a", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"tab\there\"", "[1,]", "[,1]", "{\"a\":1,}",
      "{a:1}", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "[1 2]", "{\"a\":1,\"a\":2}", "1e2147483648", "[0.1e-2147483649]",
      "1 2", "[] x", "// c\n1", "/* c */1", "[1]]", "{\"a\":}", "\u00a01"})
  void refusesWhatIsNotStrictJson(String text) {
    assertThatThrownBy(() -> ExactJson.parse(text)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("invalid JSON");
  }

  @Test
  void nineteenDigitNumbersAndDecimalsKeepEveryDigit() throws Exception {
    JsonNode v = ExactJson.parse("{\"id\":1790000000000000001,\"next\":1790000000000000002,\"amount\":88.00,"
        + "\"big\":123456789012345678901234567890.000000000000000001}");
    assertThat(v.get("id").longValue()).isEqualTo(1790000000000000001L);
    assertThat(v.get("id")).isNotEqualTo(v.get("next"));
    assertThat(v.get("amount").decimalValue()).isEqualTo(new BigDecimal("88.00"));  // scale kept
    assertThat(v.get("big").decimalValue()).isEqualTo(new BigDecimal("123456789012345678901234567890.000000000000000001"));
    assertThat(ExactJson.write(v)).isEqualTo("{\"id\":1790000000000000001,\"next\":1790000000000000002,\"amount\":88.00,"
        + "\"big\":123456789012345678901234567890.000000000000000001}");
    assertThat(ExactJson.parse("18446744073709551615").bigIntegerValue()).isEqualTo(new BigInteger("18446744073709551615"));
    // The mapper handed out reads the same way, and is a copy.
    assertThat(ExactJson.mapper().readTree("0.1").isBigDecimal()).isTrue();
    assertThat(ExactJson.mapper()).isNotSameAs(ExactJson.mapper());
  }

  @Test
  void boundsTheWorkOfHostileInput() throws Exception {
    // Deep nesting and long numbers are refused at once, without a StackOverflowError.
    assertThatThrownBy(() -> ExactJson.parse("[".repeat(1_000_000))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ExactJson.parse("{\"a\":".repeat(100_000))).isInstanceOf(IllegalArgumentException.class);
    long t0 = System.nanoTime();
    assertThatThrownBy(() -> ExactJson.parse("[1" + "0".repeat(1_000_000) + "]")).isInstanceOf(IllegalArgumentException.class);
    assertThat(System.nanoTime() - t0).isLessThan(2_000_000_000L);
    // Absurd exponents that fit are read exactly.
    assertThat(ExactJson.parse("1e999999999").decimalValue()).isEqualByComparingTo(new BigDecimal("10e999999998"));
  }

  @Test
  void aLoneSurrogateIsNeverSentAsAQuestionMark() {
    byte[] sent = ExactJson.writeBytes(com.fasterxml.jackson.databind.node.TextNode.valueOf("a\ud800b"));
    assertThat(new String(sent, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("\"a\\uD800b\"");
  }

  @Test
  void aMembersTextIsKeptAsWritten() {
    String text = "{\"outcome\":\"replay\" , \"result\" :  {\"n\": 1.50, \"s\":\"x,}\"} ,\"fence\":3}";
    ExactJson.WithRaw r = ExactJson.parseObject(text, "result");
    assertThat(r.raw()).isEqualTo("{\"n\": 1.50, \"s\":\"x,}\"}");
    assertThat(r.object().get("fence").longValue()).isEqualTo(3);
    assertThat(ExactJson.parseObject("{\"result\":-0}", "result").raw()).isEqualTo("-0");
    assertThat(ExactJson.parseObject("{\"result\":\"a\"\n}", "result").raw()).isEqualTo("\"a\"");
    assertThat(ExactJson.parseObject("{\"result\":null}", "result").object().get("result").isNull()).isTrue();
    assertThat(ExactJson.parseObject("{\"outcome\":\"x\"}", "result").raw()).isNull();
    for (String bad : new String[] {"[]", "{} x", "{\"a\":1,\"a\":2}", "{\"a\":1e2147483648}", "{"})
      assertThatThrownBy(() -> ExactJson.parseObject(bad, "a")).as(bad).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void randomInputNeverCrashesTheReaderAndKeptTextIsTheValue() {
    Random random = new Random(42);
    String alphabet = "{}[]\":,.-+eE0123456789tfnrulsa\\u \t\n\ud83d\ude00x";
    int read = 0;
    for (int n = 0; n < 20_000; n++) {
      StringBuilder s = new StringBuilder();
      int len = random.nextInt(40);
      for (int k = 0; k < len; k++) s.append(alphabet.charAt(random.nextInt(alphabet.length())));
      String text = s.toString();
      JsonNode v;
      try {
        v = ExactJson.parse(text);
      } catch (IllegalArgumentException expected) {
        continue;  // refused with a message: fine
      }
      read++;
      assertThat(ExactJson.parse(ExactJson.write(v))).as(text).isEqualTo(v);
      // The same value as the member of an object: its kept text reads back to it.
      ExactJson.WithRaw r = ExactJson.parseObject("{\"v\":" + text + ",\"w\":1}", "v");
      assertThat(ExactJson.parse(r.raw())).as(text).isEqualTo(v);
    }
    assertThat(read).isPositive();
  }

  private static Iterable<JsonNode> numbers(JsonNode root) {
    java.util.List<JsonNode> out = new java.util.ArrayList<>();
    Deque<JsonNode> todo = new ArrayDeque<>();
    todo.push(root);
    while (!todo.isEmpty()) {
      JsonNode n = todo.pop();
      if (n.getNodeType() == JsonNodeType.NUMBER) out.add(n);
      n.forEach(todo::push);
    }
    return out;
  }
}
