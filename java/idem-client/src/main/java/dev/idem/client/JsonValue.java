package dev.idem.client;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A JSON value, exactly as it was written: numbers keep their text, so a 19-digit id read
 * from the gateway is written back digit for digit (a {@code double} would lose it). Values
 * are immutable and compare by content; numbers compare by their decimal value ({@code 1},
 * {@code 1.0} and {@code 1e0} are equal).
 *
 * <p>{@link #parse} reads strict RFC 8259 JSON (see {@link JsonReader} for what it refuses);
 * {@link #toJson} writes compact JSON that {@link #parse} reads back to an equal value.
 */
public sealed interface JsonValue
    permits JsonValue.Null, JsonValue.Bool, JsonValue.Num, JsonValue.Str, JsonValue.Arr, JsonValue.Obj {

  /** Reads one JSON text; throws {@link JsonException} naming the offset of the first problem. */
  static JsonValue parse(String text) {
    return JsonReader.parse(text);
  }

  /** This value as compact JSON text. */
  default String toJson() {
    return JsonWriter.write(this);
  }

  Null NULL = new Null();
  Bool TRUE = new Bool(true);
  Bool FALSE = new Bool(false);

  static JsonValue of(String s) {
    return s == null ? NULL : new Str(s);
  }

  static JsonValue of(long n) {
    return new Num(Long.toString(n));
  }

  static JsonValue of(boolean b) {
    return b ? TRUE : FALSE;
  }

  static JsonValue of(BigDecimal n) {
    return n == null ? NULL : new Num(n.toString());
  }

  static JsonValue of(BigInteger n) {
    return n == null ? NULL : new Num(n.toString());
  }

  /** An object with these fields in this order (name, value, name, value, ...). */
  static Obj object(Object... namesAndValues) {
    if (namesAndValues.length % 2 != 0) throw new IllegalArgumentException("object: names and values in pairs");
    Map<String, JsonValue> m = new LinkedHashMap<>();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      String name = (String) namesAndValues[i];
      Object v = namesAndValues[i + 1];
      if (v == null) continue;  // an absent optional field
      m.put(name, from(v));
    }
    return new Obj(m);
  }

  /** A Java value as JSON: JsonValue as is, String, Long/Integer, Boolean, BigDecimal, BigInteger. */
  static JsonValue from(Object v) {
    if (v == null) return NULL;
    if (v instanceof JsonValue j) return j;
    if (v instanceof String s) return new Str(s);
    if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte)
      return new Num(v.toString());
    if (v instanceof Boolean b) return of(b);
    if (v instanceof BigDecimal d) return of(d);
    if (v instanceof BigInteger i) return of(i);
    throw new IllegalArgumentException("not a JSON value: " + v.getClass().getName());
  }

  // ---- typed access: each throws JsonException when the value is of another kind ----

  default Obj asObject() {
    if (this instanceof Obj o) return o;
    throw new JsonException("expected an object, got " + kind());
  }

  default Arr asArray() {
    if (this instanceof Arr a) return a;
    throw new JsonException("expected an array, got " + kind());
  }

  default String asString() {
    if (this instanceof Str s) return s.value();
    throw new JsonException("expected a string, got " + kind());
  }

  default boolean asBoolean() {
    if (this instanceof Bool b) return b.value();
    throw new JsonException("expected true or false, got " + kind());
  }

  /** The number as a long; throws when it is not an integer or does not fit. */
  default long asLong() {
    if (this instanceof Num n) return n.longValueExact();
    throw new JsonException("expected a number, got " + kind());
  }

  default BigDecimal asBigDecimal() {
    if (this instanceof Num n) return n.decimal();
    throw new JsonException("expected a number, got " + kind());
  }

  default boolean isNull() {
    return this instanceof Null;
  }

  /** "null", "boolean", "number", "string", "array" or "object". */
  default String kind() {
    if (this instanceof Null) return "null";
    if (this instanceof Bool) return "boolean";
    if (this instanceof Num) return "number";
    if (this instanceof Str) return "string";
    if (this instanceof Arr) return "array";
    return "object";
  }

  record Null() implements JsonValue {
    @Override
    public String toString() {
      return "null";
    }
  }

  record Bool(boolean value) implements JsonValue {
    @Override
    public String toString() {
      return Boolean.toString(value);
    }
  }

  /** A number, as its JSON text (validated: {@code -?int frac? exp?}). */
  record Num(String text) implements JsonValue {
    public Num {
      Objects.requireNonNull(text);
      if (!JsonReader.isNumber(text)) throw new JsonException("not a JSON number: " + text);
    }

    public BigDecimal decimal() {
      return new BigDecimal(text);
    }

    public long longValueExact() {
      try {
        return decimal().longValueExact();
      } catch (ArithmeticException e) {
        throw new JsonException("not a 64-bit integer: " + text);
      }
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Num n && decimal().compareTo(n.decimal()) == 0;
    }

    @Override
    public int hashCode() {
      BigDecimal d = decimal();
      return d.signum() == 0 ? 0 : d.stripTrailingZeros().hashCode();
    }

    @Override
    public String toString() {
      return text;
    }
  }

  record Str(String value) implements JsonValue {
    public Str {
      Objects.requireNonNull(value);
    }

    @Override
    public String toString() {
      return toJson();
    }
  }

  record Arr(List<JsonValue> items) implements JsonValue {
    public Arr {
      items = Collections.unmodifiableList(new ArrayList<>(items));
    }

    public JsonValue get(int i) {
      return items.get(i);
    }

    public int size() {
      return items.size();
    }

    @Override
    public String toString() {
      return toJson();
    }
  }

  /** An object; fields keep their order. */
  record Obj(Map<String, JsonValue> fields) implements JsonValue {
    public Obj {
      fields = Collections.unmodifiableMap(new LinkedHashMap<>(fields));
    }

    /** The field, or empty when absent. */
    public Optional<JsonValue> get(String name) {
      return Optional.ofNullable(fields.get(name));
    }

    /** The field; throws JsonException naming it when absent. */
    public JsonValue require(String name) {
      JsonValue v = fields.get(name);
      if (v == null) throw new JsonException("missing field \"" + name + "\"");
      return v;
    }

    public boolean has(String name) {
      return fields.containsKey(name);
    }

    @Override
    public String toString() {
      return toJson();
    }
  }
}
