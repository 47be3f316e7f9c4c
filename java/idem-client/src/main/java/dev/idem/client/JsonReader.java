package dev.idem.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict RFC 8259 reader. Refused, with the offset of the first problem: comments,
 * single quotes, trailing commas, leading zeros, {@code NaN}/{@code Infinity}, control
 * characters in strings, unknown escapes, unpaired surrogate escapes, duplicate names in
 * one object (two readers could disagree on which one counts), anything after the value,
 * nesting deeper than {@link #MAX_DEPTH}, numbers longer than {@link #MAX_NUMBER_LENGTH}
 * characters (RFC 8259 lets a reader limit precision; 64-bit ids have 20 at most) and
 * numbers whose exponent passes 32 bits (beyond what {@link java.math.BigDecimal} holds). Numbers are kept as their text.
 */
final class JsonReader {
  static final int MAX_DEPTH = 512;
  static final int MAX_NUMBER_LENGTH = 1024;

  private final String s;
  private int i;
  private int depth;

  private JsonReader(String s) {
    this.s = s;
  }

  static JsonValue parse(String text) {
    if (text == null) throw new JsonException("no JSON text (null)");
    JsonReader r = new JsonReader(text);
    r.skipWhitespace();
    JsonValue v = r.value();
    r.skipWhitespace();
    if (r.i != text.length()) throw r.error("unexpected text after the JSON value");
    return v;
  }

  /** Whether text is exactly one JSON number. */
  static boolean isNumber(String text) {
    JsonReader r = new JsonReader(text);
    try {
      r.number();
    } catch (JsonException e) {
      return false;
    }
    return r.i == text.length();
  }

  private JsonException error(String what) {
    return new JsonException("invalid JSON at offset " + i + ": " + what);
  }

  private void skipWhitespace() {
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      i++;
    }
  }

  private JsonValue value() {
    if (i >= s.length()) throw error("unexpected end of input");
    char c = s.charAt(i);
    switch (c) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return new JsonValue.Str(string());
      case 't':
        literal("true");
        return JsonValue.TRUE;
      case 'f':
        literal("false");
        return JsonValue.FALSE;
      case 'n':
        literal("null");
        return JsonValue.NULL;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return new JsonValue.Num(number());
        throw error("unexpected character '" + printable(c) + "'");
    }
  }

  private void literal(String word) {
    if (!s.startsWith(word, i)) throw error("expected " + word);
    i += word.length();
  }

  private void enter() {
    if (++depth > MAX_DEPTH) throw error("nested deeper than " + MAX_DEPTH);
  }

  private JsonValue object() {
    enter();
    i++;  // {
    Map<String, JsonValue> fields = new LinkedHashMap<>();
    skipWhitespace();
    if (peek() == '}') {
      i++;
      depth--;
      return new JsonValue.Obj(fields);
    }
    for (;;) {
      skipWhitespace();
      if (peek() != '"') throw error("expected a field name in double quotes");
      final int at = i;
      String name = string();
      skipWhitespace();
      if (peek() != ':') throw error("expected ':' after a field name");
      i++;
      skipWhitespace();
      JsonValue v = value();
      if (fields.putIfAbsent(name, v) != null) {
        i = at;
        throw error("duplicate field \"" + name + "\"");
      }
      skipWhitespace();
      char c = peek();
      i++;
      if (c == ',') continue;
      if (c == '}') break;
      i--;
      throw error("expected ',' or '}' in an object");
    }
    depth--;
    return new JsonValue.Obj(fields);
  }

  private JsonValue array() {
    enter();
    i++;  // [
    List<JsonValue> items = new ArrayList<>();
    skipWhitespace();
    if (peek() == ']') {
      i++;
      depth--;
      return new JsonValue.Arr(items);
    }
    for (;;) {
      skipWhitespace();
      items.add(value());
      skipWhitespace();
      char c = peek();
      i++;
      if (c == ',') continue;
      if (c == ']') break;
      i--;
      throw error("expected ',' or ']' in an array");
    }
    depth--;
    return new JsonValue.Arr(items);
  }

  // The character at i, or 0 at the end (never a valid character where it is asked for).
  private char peek() {
    return i < s.length() ? s.charAt(i) : '\0';
  }

  private String string() {
    i++;  // "
    StringBuilder out = new StringBuilder();
    for (;;) {
      if (i >= s.length()) throw error("unterminated string");
      char c = s.charAt(i);
      if (c == '"') {
        i++;
        return out.toString();
      }
      if (c < 0x20) throw error("control character in a string (write it as \\u" + hex4(c) + ")");
      if (Character.isSurrogate(c)) {
        // Only well-formed pairs: a lone surrogate is not text.
        if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          out.append(c).append(s.charAt(i + 1));
          i += 2;
          continue;
        }
        throw error("unpaired surrogate in a string");
      }
      if (c != '\\') {
        out.append(c);
        i++;
        continue;
      }
      i++;
      if (i >= s.length()) throw error("unterminated escape");
      char e = s.charAt(i++);
      switch (e) {
        case '"' -> out.append('"');
        case '\\' -> out.append('\\');
        case '/' -> out.append('/');
        case 'b' -> out.append('\b');
        case 'f' -> out.append('\f');
        case 'n' -> out.append('\n');
        case 'r' -> out.append('\r');
        case 't' -> out.append('\t');
        case 'u' -> {
          char u = unicodeEscape();
          if (Character.isHighSurrogate(u)) {
            if (!s.startsWith("\\u", i)) throw error("unpaired surrogate escape");
            i += 2;
            char low = unicodeEscape();
            if (!Character.isLowSurrogate(low)) throw error("unpaired surrogate escape");
            out.append(u).append(low);
          } else if (Character.isLowSurrogate(u)) {
            throw error("unpaired surrogate escape");
          } else {
            out.append(u);
          }
        }
        default -> {
          i--;
          throw error("unknown escape \\" + printable(e));
        }
      }
    }
  }

  private char unicodeEscape() {
    if (i + 4 > s.length()) throw error("truncated \\u escape");
    int v = 0;
    for (int k = 0; k < 4; k++) {
      int d = Character.digit(s.charAt(i + k), 16);
      if (d < 0 || s.charAt(i + k) > 'f') throw error("\\u takes four hex digits");
      v = v * 16 + d;
    }
    i += 4;
    return (char) v;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  private String number() {
    final int start = i;
    if (peek() == '-') i++;
    if (peek() == '0') {
      i++;
      if (isDigit(peek())) throw error("leading zero in a number");
    } else if (isDigit(peek())) {
      while (isDigit(peek())) i++;
    } else {
      throw error("expected a digit");
    }
    if (peek() == '.') {
      i++;
      if (!isDigit(peek())) throw error("expected a digit after '.'");
      while (isDigit(peek())) i++;
    }
    if (peek() == 'e' || peek() == 'E') {
      i++;
      if (peek() == '+' || peek() == '-') i++;
      if (!isDigit(peek())) throw error("expected a digit in the exponent");
      while (isDigit(peek())) i++;
    }
    if (i - start > MAX_NUMBER_LENGTH) {
      i = start;
      // BigDecimal reads digits in quadratic time: 100,000 of them would take seconds.
      throw error("number longer than " + MAX_NUMBER_LENGTH + " characters");
    }
    String text = s.substring(start, i);
    if (!fitsBigDecimal(text)) {
      i = start;
      throw error("number out of range (its exponent passes 32 bits)");
    }
    return text;
  }

  static boolean fitsBigDecimal(String number) {
    try {
      new java.math.BigDecimal(number);
      return true;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  static String hex4(char c) {
    return String.format("%04x", (int) c);
  }

  private static String printable(char c) {
    return c < 0x20 || c >= 0x7f ? "\\u" + hex4(c) : String.valueOf(c);
  }
}
