package dev.idem.core;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.UncheckedIOException;
import java.util.Objects;

/**
 * A {@link ResultCodec} by Jackson (an optional dependency of idem-core: add jackson-databind to
 * use it). The mapper's own configuration applies; for exact numbers in untyped results enable
 * {@code DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS} and {@code USE_BIG_INTEGER_FOR_INTS}.
 */
public final class JacksonResultCodec<T> implements ResultCodec<T> {
  private final ObjectMapper mapper;
  private final JavaType type;

  private JacksonResultCodec(ObjectMapper mapper, JavaType type) {
    this.mapper = Objects.requireNonNull(mapper, "mapper");
    this.type = Objects.requireNonNull(type, "type");
  }

  /** Results of {@code type}. */
  public static <T> JacksonResultCodec<T> of(ObjectMapper mapper, Class<T> type) {
    return new JacksonResultCodec<>(mapper, mapper.constructType(type));
  }

  /** Results of a generic type (a method's return type, as an aspect sees it). */
  public static <T> JacksonResultCodec<T> of(ObjectMapper mapper, JavaType type) {
    return new JacksonResultCodec<>(mapper, type);
  }

  @Override
  public String toJson(T value) {
    try {
      return mapper.writerFor(type).writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException("cannot write the result as JSON: " + e.getOriginalMessage(), e);
    }
  }

  @Override
  public T fromJson(String json) {
    try {
      return mapper.readValue(json, type);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException("cannot read the stored result as " + type + ": " + e.getOriginalMessage(), e);
    }
  }
}
