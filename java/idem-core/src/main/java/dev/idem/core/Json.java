package dev.idem.core;

/** The little JSON the core needs without a JSON library: strings. */
final class Json {
  private Json() {}

  static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
          else b.append(c);
        }
      }
    }
    return b.append('"').toString();
  }

  static String unquote(String json) {
    String s = json.trim();
    if (s.length() < 2 || s.charAt(0) != '"' || s.charAt(s.length() - 1) != '"')
      throw new IllegalArgumentException("not a JSON string: " + (s.length() > 40 ? s.substring(0, 40) + "…" : s));
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 1; i < s.length() - 1; i++) {
      char c = s.charAt(i);
      if (c != '\\') {
        b.append(c);
        continue;
      }
      char e = s.charAt(++i);
      switch (e) {
        case '"', '\\', '/' -> b.append(e);
        case 'b' -> b.append('\b');
        case 'f' -> b.append('\f');
        case 'n' -> b.append('\n');
        case 'r' -> b.append('\r');
        case 't' -> b.append('\t');
        case 'u' -> {
          b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
          i += 4;
        }
        default -> throw new IllegalArgumentException("bad JSON escape \\" + e);
      }
    }
    return b.toString();
  }
}
