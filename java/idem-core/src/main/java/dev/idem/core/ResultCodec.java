package dev.idem.core;

import java.util.Objects;
import java.util.function.Function;

/**
 * How {@link IdempotentCall} stores a result of type T as JSON text and gives it back to repeats.
 * The text is stored byte for byte ({@link StoredResult.Json}), so numbers of any size come back
 * exactly, and {@code idem serve} shows it as the value of a JSON result. {@code
 * fromJson(toJson(v))} must equal v; both must be thread-safe. Jackson: {@link
 * JacksonResultCodec}.
 */
public interface ResultCodec<T> {
  /** One JSON value's text. */
  String toJson(T value);

  T fromJson(String json);

  /** A result that is JSON text already, stored as it is. */
  static ResultCodec<String> jsonText() {
    return of(s -> Objects.requireNonNull(s, "result (\"null\" for JSON null)"), s -> s);
  }

  /** A String, stored as a JSON string (null as JSON null). */
  static ResultCodec<String> strings() {
    return of(s -> s == null ? "null" : Json.quote(s), s -> "null".equals(s) ? null : Json.unquote(s));
  }

  /** A Long (such as a 19-digit id), stored as an exact JSON number (null as JSON null). */
  static ResultCodec<Long> longs() {
    return of(v -> v == null ? "null" : Long.toString(v), s -> "null".equals(s) ? null : Long.parseLong(s.trim()));
  }

  /** No result: stored as JSON null. */
  static ResultCodec<Void> none() {
    return of(v -> "null", s -> null);
  }

  /** From two functions. */
  static <T> ResultCodec<T> of(Function<T, String> toJson, Function<String, T> fromJson) {
    Objects.requireNonNull(toJson, "toJson");
    Objects.requireNonNull(fromJson, "fromJson");
    return new ResultCodec<>() {
      @Override
      public String toJson(T value) {
        return toJson.apply(value);
      }

      @Override
      public T fromJson(String json) {
        return fromJson.apply(json);
      }
    };
  }
}
