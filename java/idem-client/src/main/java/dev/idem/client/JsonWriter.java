package dev.idem.client;

import java.util.Iterator;
import java.util.Map;

/** Compact JSON text of a {@link JsonValue}: numbers as their text, strings escaped. */
final class JsonWriter {
  private JsonWriter() {}

  static String write(JsonValue v) {
    StringBuilder out = new StringBuilder();
    write(v, out);
    return out.toString();
  }

  private static void write(JsonValue v, StringBuilder out) {
    if (v instanceof JsonValue.Null) {
      out.append("null");
    } else if (v instanceof JsonValue.Bool b) {
      out.append(b.value());
    } else if (v instanceof JsonValue.Num n) {
      out.append(n.text());
    } else if (v instanceof JsonValue.Str s) {
      string(s.value(), out);
    } else if (v instanceof JsonValue.Arr a) {
      out.append('[');
      for (int k = 0; k < a.items().size(); k++) {
        if (k > 0) out.append(',');
        write(a.items().get(k), out);
      }
      out.append(']');
    } else if (v instanceof JsonValue.Obj o) {
      out.append('{');
      Iterator<Map.Entry<String, JsonValue>> it = o.fields().entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<String, JsonValue> e = it.next();
        string(e.getKey(), out);
        out.append(':');
        write(e.getValue(), out);
        if (it.hasNext()) out.append(',');
      }
      out.append('}');
    }
  }

  // Control characters, quote and backslash escaped; a lone surrogate (not text) is refused
  // rather than written as JSON no strict reader accepts.
  static void string(String s, StringBuilder out) {
    out.append('"');
    for (int k = 0; k < s.length(); k++) {
      char c = s.charAt(k);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c < 0x20 || c == 0x2028 || c == 0x2029) {
            out.append("\\u").append(JsonReader.hex4(c));
          } else if (Character.isHighSurrogate(c) && k + 1 < s.length() && Character.isLowSurrogate(s.charAt(k + 1))) {
            out.append(c).append(s.charAt(++k));
          } else if (Character.isSurrogate(c)) {
            throw new JsonException("string holds an unpaired surrogate at index " + k);
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
