package dev.idem.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.util.Optional;

/**
 * Typed reading of an answer's members: each throws {@link Malformed} naming the member when it
 * is absent or of another kind ({@link Exchange#parse} makes that a {@link ProtocolException}).
 */
final class Fields {
  private Fields() {}

  /** An answer that is JSON, but not the control API's. */
  static final class Malformed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Malformed(String message) {
      super(message);
    }
  }

  static JsonNode require(JsonNode o, String name) {
    JsonNode v = o.get(name);
    if (v == null) throw new Malformed("missing field \"" + name + "\"");
    return v;
  }

  static Optional<JsonNode> optional(JsonNode o, String name) {
    JsonNode v = o.get(name);
    return v == null || v.isNull() ? Optional.empty() : Optional.of(v);
  }

  static String text(JsonNode o, String name) {
    return asText(require(o, name), name);
  }

  /** The value {@code v} of member {@code name} as a string. */
  static String asText(JsonNode v, String name) {
    if (!v.isTextual()) throw new Malformed("field \"" + name + "\": expected a string, got " + kind(v));
    return v.textValue();
  }

  static boolean bool(JsonNode o, String name, boolean absent) {
    JsonNode v = o.get(name);
    if (v == null) return absent;
    if (!v.isBoolean()) throw new Malformed("field \"" + name + "\": expected true or false, got " + kind(v));
    return v.booleanValue();
  }

  /** An integer that fits a long, whatever its spelling ({@code 2}, {@code 2.0}); never a rounded value. */
  static long longValue(JsonNode o, String name) {
    return asLong(require(o, name), name);
  }

  /** The value {@code v} of member {@code name} as a long. */
  static long asLong(JsonNode v, String name) {
    if (!v.isNumber()) throw new Malformed("field \"" + name + "\": expected a number, got " + kind(v));
    try {
      if (v.isIntegralNumber()) return v.bigIntegerValue().longValueExact();
      BigDecimal d = v.decimalValue();  // exact: floats are read as BigDecimal (ExactJson)
      return d.longValueExact();
    } catch (ArithmeticException e) {
      throw new Malformed("field \"" + name + "\": not a 64-bit integer: " + v);
    }
  }

  static String kind(JsonNode v) {
    return switch (v.getNodeType()) {
      case NULL, MISSING -> "null";
      case BOOLEAN -> "boolean";
      case NUMBER -> "number";
      case STRING -> "string";
      case ARRAY -> "array";
      case OBJECT, POJO -> "object";
      case BINARY -> "binary";
    };
  }
}
