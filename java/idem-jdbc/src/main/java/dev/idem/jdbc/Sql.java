package dev.idem.jdbc;

import java.util.ArrayList;
import java.util.List;

/**
 * One statement of a protocol file, ready for JDBC: each {@code $n} replaced by {@code ?} (a
 * {@code $n} used twice is bound twice, protocol/README.md, "Placeholders"), and which argument
 * each {@code ?} takes.
 */
record Sql(String text, int[] params) {
  static Sql of(String body) {
    StringBuilder out = new StringBuilder(body.length());
    List<Integer> params = new ArrayList<>();
    boolean quoted = false;
    for (int i = 0; i < body.length(); i++) {
      char c = body.charAt(i);
      if (c == '\'') quoted = !quoted;
      if (!quoted && c == '$' && i + 1 < body.length() && Character.isDigit(body.charAt(i + 1))) {
        int j = i + 1;
        while (j < body.length() && Character.isDigit(body.charAt(j))) j++;
        params.add(Integer.parseInt(body.substring(i + 1, j)));
        out.append('?');
        i = j - 1;
      } else {
        out.append(c);
      }
    }
    return new Sql(out.toString(), params.stream().mapToInt(Integer::intValue).toArray());
  }

  /** The statements of a body holding several, each ended by ';' at the end of a line. */
  static List<Sql> all(String body) {
    List<Sql> out = new ArrayList<>();
    StringBuilder cur = new StringBuilder();
    for (String line : body.split("\n", -1)) {
      cur.append(line).append('\n');
      if (line.stripTrailing().endsWith(";")) {
        String s = cur.toString().strip();
        out.add(of(s.substring(0, s.length() - 1)));
        cur.setLength(0);
      }
    }
    if (!cur.toString().isBlank()) out.add(of(cur.toString().strip()));
    return out;
  }
}
