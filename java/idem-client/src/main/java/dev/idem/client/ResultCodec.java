package dev.idem.client;

import java.util.Objects;
import java.util.function.Function;

/**
 * How {@link IdempotentCall} stores a result of type T and gives it back to repeats. The
 * stored form is JSON, so a result survives the gateway byte for byte (numbers exactly).
 *
 * <p>To use Jackson (or any JSON library) without this client depending on it:
 *
 * <pre>{@code
 * ObjectMapper mapper = new ObjectMapper();
 * ResultCodec<Order> codec = ResultCodec.text(
 *     order -> mapper.writeValueAsString(order),     // wrap checked exceptions
 *     json -> mapper.readValue(json, Order.class));
 * }</pre>
 *
 * <p>decode(encode(v)) must give a value equal to v; both must be thread-safe.
 */
public interface ResultCodec<T> {
  JsonValue encode(T value);

  T decode(JsonValue json);

  /** The result is a JsonValue already. */
  static ResultCodec<JsonValue> json() {
    return new ResultCodec<>() {
      @Override
      public JsonValue encode(JsonValue value) {
        return Objects.requireNonNull(value, "result (JsonValue.NULL for JSON null)");
      }

      @Override
      public JsonValue decode(JsonValue json) {
        return json;
      }
    };
  }

  /** A String result, stored as a JSON string (null as JSON null). */
  static ResultCodec<String> string() {
    return new ResultCodec<>() {
      @Override
      public JsonValue encode(String value) {
        return JsonValue.of(value);
      }

      @Override
      public String decode(JsonValue json) {
        return json.isNull() ? null : json.asString();
      }
    };
  }

  /** A Long result (such as a 19-digit id), stored as an exact JSON number. */
  static ResultCodec<Long> longs() {
    return new ResultCodec<>() {
      @Override
      public JsonValue encode(Long value) {
        return value == null ? JsonValue.NULL : JsonValue.of(value);
      }

      @Override
      public Long decode(JsonValue json) {
        return json.isNull() ? null : json.asLong();
      }
    };
  }

  /** Through JSON text: {@code toJson} writes one JSON value, {@code fromJson} reads it. */
  static <T> ResultCodec<T> text(Function<T, String> toJson, Function<String, T> fromJson) {
    Objects.requireNonNull(toJson);
    Objects.requireNonNull(fromJson);
    return new ResultCodec<>() {
      @Override
      public JsonValue encode(T value) {
        return JsonValue.parse(toJson.apply(value));
      }

      @Override
      public T decode(JsonValue json) {
        return fromJson.apply(json.toJson());
      }
    };
  }
}
