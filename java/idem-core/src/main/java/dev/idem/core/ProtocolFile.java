package dev.idem.core;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The store protocol's files (the repository's protocol/ folder, protocol/README.md), as the
 * backends' jars package them under {@code dev/idem/protocol/}: the Redis scripts and the SQL
 * every idem sends, never a copy in Java strings. A file is a header of comment lines ended by the
 * first empty line, and a body; {@link #body} is the body with the whitespace at both ends
 * removed, which is what is sent. Each file is read once.
 */
public final class ProtocolFile {
  private ProtocolFile() {}

  private static final ConcurrentHashMap<String, String> BODIES = new ConcurrentHashMap<>();

  /**
   * The body of {@code protocol/<path>} (e.g. "redis/begin.lua"), from the class path of {@code
   * owner}'s jar.
   *
   * @throws IllegalStateException the file is not on the class path (a jar built without protocol/)
   */
  public static String body(Class<?> owner, String path) {
    return BODIES.computeIfAbsent(path, p -> bodyOf(read(owner, p)));
  }

  /** The whole text of {@code protocol/<path>}. */
  public static String read(Class<?> owner, String path) {
    String resource = "/dev/idem/protocol/" + path;
    try (InputStream in = owner.getResourceAsStream(resource)) {
      if (in == null) throw new IllegalStateException("protocol file " + resource + " is not on the class path");
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read protocol file " + resource, e);
    }
  }

  /** The body of a protocol file's text: everything after the header's first empty line, stripped. */
  public static String bodyOf(String text) {
    String t = text.replace("\r\n", "\n");
    int at = 0;
    while (at < t.length()) {
      int end = t.indexOf('\n', at);
      if (end < 0) end = t.length();
      String line = t.substring(at, end);
      if (line.isBlank()) return t.substring(Math.min(end + 1, t.length())).strip();
      if (!line.startsWith("--")) return t.substring(at).strip();  // no header
      at = end + 1;
    }
    return "";
  }

  /**
   * Replaces the placeholders of a SQL body in one pass, left to right (text put in is never read
   * again): {@code {p}} the table prefix, {@code {now}} the store's clock expression, {@code
   * {grace}} the tombstones' grace in µs; {@code $n} is left as it is.
   */
  public static String expand(String sql, String prefix, String now, long graceMicros) {
    StringBuilder out = new StringBuilder(sql.length() * 2);
    for (int i = 0; i < sql.length();) {
      if (sql.startsWith("{p}", i)) {
        out.append(prefix);
        i += 3;
      } else if (sql.startsWith("{now}", i)) {
        out.append(now);
        i += 5;
      } else if (sql.startsWith("{grace}", i)) {
        out.append(graceMicros);
        i += 7;
      } else {
        out.append(sql.charAt(i++));
      }
    }
    return out.toString();
  }
}
