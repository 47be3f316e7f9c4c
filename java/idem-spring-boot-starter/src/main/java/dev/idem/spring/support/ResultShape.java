package dev.idem.spring.support;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import dev.idem.core.StoredResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * How a method's result is stored and given back to repeats: in the gateway's stored forms
 * (docs/http.md; {@link StoredResult}), written by the application's ObjectMapper, so a Long id
 * keeps every digit and a replay is what the first call returned. {@link #json} for a value;
 * the web part's for a {@code ResponseEntity} (status, headers and body).
 */
public interface ResultShape {
  /** The stored form of {@code value}. @throws RuntimeException it cannot be written */
  byte[] encode(Object value);

  /** The value a repeat gets from a stored {@link StoredResult.Json} or {@link StoredResult.Response}. */
  Object decode(StoredResult stored);

  /** True when the value itself says the call failed (an HTTP status that releases): the key is released. */
  default boolean releases(Object value) {
    return false;
  }

  /** Values of {@code type}, stored as JSON; an HTTP response stored for the same key gives its body. */
  static ResultShape json(ObjectMapper mapper, JavaType type) {
    return new ResultShape() {
      private final ObjectWriter writer = mapper.writerFor(type);

      @Override
      public byte[] encode(Object value) {
        try {
          return StoredResult.encode(new StoredResult.Json(writer.writeValueAsString(value)));
        } catch (IOException e) {
          throw new IllegalStateException("idem: cannot write the result as JSON: " + e.getMessage(), e);
        }
      }

      @Override
      public Object decode(StoredResult stored) {
        String text = stored instanceof StoredResult.Json j ? j.text()
            : new String(((StoredResult.Response) stored).body(), StandardCharsets.UTF_8);
        return read(mapper, type, text);
      }
    };
  }

  /** {@code text} as {@code type}; "" and "null" as null. */
  static Object read(ObjectMapper mapper, JavaType type, String text) {
    if (text.isEmpty() || text.equals("null")) return null;
    try {
      return mapper.readValue(text, type);
    } catch (IOException e) {
      throw new IllegalStateException("idem: cannot read the stored result as " + type + ": " + e.getMessage(), e);
    }
  }
}
