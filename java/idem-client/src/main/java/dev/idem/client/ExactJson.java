package dev.idem.client;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Objects;

/**
 * The client's JSON, by Jackson, with exact numbers: what the control API reads and writes, and
 * what a caller can use for its own results.
 *
 * <ul>
 *   <li><b>Numbers are never doubles.</b> Integers are read as {@code int}, {@code long} or
 *       {@code BigInteger} nodes by their size, so a 19-digit id keeps every digit; numbers with a
 *       fraction or an exponent as {@code BigDecimal} ({@code USE_BIG_DECIMAL_FOR_FLOATS}), kept
 *       as written ({@code 88.00} stays {@code 88.00}: no trailing zeros are stripped).
 *   <li><b>Strict JSON</b> (RFC 8259): one value and nothing after it, no repeated member names
 *       (the gateway refuses them too), no comments, no NaN; Jackson's limits on nesting (1000)
 *       and number length (1000 digits) bound the work any input costs.
 * </ul>
 *
 * <pre>{@code
 * JsonNode order = ExactJson.parse("{\"id\": 1790000000000000001, \"amount\": 88.00}");
 * long id = order.get("id").longValue();                  // exact
 * BigDecimal amount = order.get("amount").decimalValue(); // 88.00, not 88.0
 * }</pre>
 *
 * <p>Thread safety: every method is safe for concurrent use.
 */
public final class ExactJson {
  private static final ObjectMapper MAPPER = JsonMapper.builder()
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .disable(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES)
      .build();
  // Reads one value inside a document (the document's end is checked by the caller).
  private static final ObjectReader INNER = MAPPER.reader().without(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private ExactJson() {}

  /**
   * A mapper configured as this class reads and writes (a copy: configure it further as you like),
   * for {@code JacksonResultCodec.of(ExactJson.mapper(), Order.class)} and the like.
   */
  public static ObjectMapper mapper() {
    return MAPPER.copy();
  }

  /**
   * Reads one JSON text.
   *
   * @throws IllegalArgumentException it is not one strict JSON value (the message says where)
   */
  public static JsonNode parse(String text) {
    Objects.requireNonNull(text, "text");
    JsonNode v;
    try {
      v = MAPPER.readTree(text);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("invalid JSON: " + e.getOriginalMessage(), e);
    } catch (RuntimeException e) {  // Jackson lets some number errors through as they are
      throw new IllegalArgumentException("invalid JSON: " + e.getMessage(), e);
    }
    if (v == null || v.isMissingNode()) throw new IllegalArgumentException("invalid JSON: no value");
    return v;
  }

  /** The compact JSON text of {@code node}; numbers are written exactly as the nodes hold them. */
  public static String write(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(Objects.requireNonNull(node, "node"));
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The UTF-8 bytes of {@link #write}: a lone surrogate is written escaped, never replaced by '?'. */
  static byte[] writeBytes(JsonNode node) {
    try {
      return MAPPER.writeValueAsBytes(node);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  /**
   * An object, and the text of one of its members exactly as written (the gateway splices a
   * committed result into its answers byte for byte, so this is the result as committed).
   *
   * @param raw the member's JSON text, or null when the object has no such member
   */
  record WithRaw(ObjectNode object, String raw) {}

  /**
   * Reads a document that is one object, keeping the text of its member {@code rawMember}.
   *
   * @throws IllegalArgumentException it is not one strict JSON object
   */
  static WithRaw parseObject(String text, String rawMember) {
    try (JsonParser p = MAPPER.createParser(text)) {
      if (p.nextToken() != JsonToken.START_OBJECT) throw new IllegalArgumentException("invalid JSON: not an object");
      WithRaw o = readObject(p, text, rawMember);
      if (p.nextToken() != null) throw new IllegalArgumentException("invalid JSON: more after the object");
      return o;
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("invalid JSON: " + e.getOriginalMessage(), e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);  // a String cannot fail to be read
    } catch (IllegalArgumentException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("invalid JSON: " + e.getMessage(), e);
    }
  }

  /**
   * Reads the object at the parser (on its START_OBJECT) up to its END_OBJECT, keeping the text
   * of {@code rawMember}: from the first character of its value to the start of the next token,
   * less the whitespace and the comma between them.
   */
  static WithRaw readObject(JsonParser p, String text, String rawMember) throws IOException {
    ObjectNode o = MAPPER.createObjectNode();
    String raw = null;
    long rawStart = -1;
    for (JsonToken t = p.nextToken(); ; t = p.nextToken()) {
      if (rawStart >= 0) {
        raw = span(text, rawStart, p.currentTokenLocation().getCharOffset());
        rawStart = -1;
      }
      if (t == JsonToken.END_OBJECT) return new WithRaw(o, raw);
      if (t != JsonToken.FIELD_NAME) throw new IllegalArgumentException("invalid JSON: a member name expected");
      String name = p.currentName();
      p.nextToken();
      if (name.equals(rawMember)) rawStart = p.currentTokenLocation().getCharOffset();
      o.set(name, INNER.readTree(p));
    }
  }

  private static String span(String text, long from, long to) {
    String s = text.substring((int) from, (int) to).strip();
    if (s.endsWith(",")) s = s.substring(0, s.length() - 1).strip();
    return s;
  }

  /** Reads the value at the parser (on its first token) as a tree. */
  static JsonNode readValue(JsonParser p) throws IOException {
    return INNER.readTree(p);
  }

  static JsonParser parser(String text) throws IOException {
    return MAPPER.createParser(text);
  }
}
