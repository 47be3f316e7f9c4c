package dev.idem.spring.support;

import dev.idem.spring.IdemProblem;
import dev.idem.spring.IdempotencyRefusedException;
import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/**
 * Keys as the gateway takes them (docs/http.md, "What to send"; docs/gateway.md, "Keys built from
 * the request"): a client's key is 1 to 255 visible ASCII characters; a key rendered from a value
 * keeps visible ASCII but '%' and writes every other byte of its UTF-8 as %XX, so two different
 * values never render one key. Pure.
 */
public final class Keys {
  private Keys() {}

  /** The longest key, after encoding. */
  public static final int MAX_KEY = 255;

  private static final Pattern KEY_SPACE = Pattern.compile("[A-Za-z0-9._-]{1,64}");

  /** A key space as the gateway's {@code key_space}: 1 to 64 of A-Z a-z 0-9 . _ - */
  public static boolean validKeySpace(String s) {
    return KEY_SPACE.matcher(s).matches();
  }

  /**
   * A client's key from {@code header}: a Structured Field string ({@code "abc"}) is read as abc.
   *
   * @throws IdempotencyRefusedException key-missing, key-invalid
   */
  public static String fromClient(String header, String value) {
    if (value == null || value.isEmpty())
      throw new IdempotencyRefusedException(IdemProblem.KEY_MISSING, "the " + header + " header is missing");
    if (value.length() >= 2 && value.charAt(0) == '"' && value.charAt(value.length() - 1) == '"')
      value = value.substring(1, value.length() - 1);
    if (value.isEmpty())
      throw new IdempotencyRefusedException(IdemProblem.KEY_INVALID, header + ": key is empty");
    if (value.length() > MAX_KEY)
      throw new IdempotencyRefusedException(IdemProblem.KEY_INVALID, header + ": key is longer than 255 characters");
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x21 || c > 0x7e)
        throw new IdempotencyRefusedException(IdemProblem.KEY_INVALID,
            header + ": key has a character outside visible ASCII (at position " + i + ")");
    }
    return value;
  }

  /**
   * A key rendered from an expression's value: text, a number (every digit: never through a
   * double), a boolean or an enum; anything else is refused rather than written by toString().
   *
   * @throws IdempotencyRefusedException key-missing (null, ""), key-invalid
   */
  public static String fromValue(String expression, Object value) {
    if (value instanceof JsonNode n) value = jsonValue(n);
    if (value == null) throw new IdempotencyRefusedException(IdemProblem.KEY_MISSING, expression + " is null");
    String text = text(expression, value, IdemProblem.KEY_INVALID);
    if (text.isEmpty()) throw new IdempotencyRefusedException(IdemProblem.KEY_MISSING, expression + " is empty");
    String key = encode(text);
    if (key.length() > MAX_KEY)
      throw new IdempotencyRefusedException(IdemProblem.KEY_INVALID, expression + " renders a key longer than 255 characters");
    return key;
  }

  /**
   * A JSON value as the gateway's templates read one: text as it is, a number with every digit
   * (1790000000000000001 never through a double), a boolean; null or absent → null. Objects and
   * arrays stay as they are (and are refused).
   */
  static Object jsonValue(JsonNode n) {
    if (n.isNull() || n.isMissingNode()) return null;
    if (n.isTextual()) return n.textValue();
    if (n.isIntegralNumber()) return n.bigIntegerValue();
    if (n.isNumber()) return n.decimalValue();
    if (n.isBoolean()) return n.booleanValue();
    return n;
  }

  /** A value's text for keys and scopes: text, numbers with every digit, booleans, enums. */
  public static String text(String expression, Object value, IdemProblem refused) {
    if (value instanceof CharSequence s) return s.toString();
    if (value instanceof BigDecimal d) return d.toPlainString();
    if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte
        || value instanceof BigInteger || value instanceof Boolean || value instanceof Character)
      return value.toString();
    if (value instanceof Enum<?> e) return e.name();
    if (value instanceof java.util.UUID u) return u.toString();
    throw new IdempotencyRefusedException(refused, expression + " is a " + value.getClass().getSimpleName()
        + ", not text or a whole number: name the field that identifies the request");
  }

  /** Visible ASCII but '%' as it is, every other UTF-8 byte as %XX. */
  public static String encode(String text) {
    StringBuilder out = null;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c > 0x20 && c < 0x7f && c != '%') {
        if (out != null) out.append(c);
        continue;
      }
      if (out == null) out = new StringBuilder(text.length() + 16).append(text, 0, i);
      int end = i + 1;
      if (Character.isHighSurrogate(c) && end < text.length() && Character.isLowSurrogate(text.charAt(end))) end++;
      for (byte b : text.substring(i, end).getBytes(StandardCharsets.UTF_8)) {
        out.append('%').append(Character.toUpperCase(Character.forDigit((b >> 4) & 0xf, 16)))
            .append(Character.toUpperCase(Character.forDigit(b & 0xf, 16)));
      }
      i = end - 1;
    }
    return out == null ? text : out.toString();
  }
}
