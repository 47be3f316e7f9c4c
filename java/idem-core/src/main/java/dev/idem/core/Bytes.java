package dev.idem.core;

import java.nio.charset.StandardCharsets;

/** Helpers for the byte strings of the API (fingerprints, results). */
public final class Bytes {
  private Bytes() {}

  /** The UTF-8 bytes of {@code s}. */
  public static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** True when {@code data} starts with {@code prefix}. */
  public static boolean startsWith(byte[] data, byte[] prefix) {
    if (prefix.length > data.length) return false;
    for (int i = 0; i < prefix.length; i++) if (data[i] != prefix[i]) return false;
    return true;
  }

  /** Lower-case hex. */
  public static String hex(byte[] b) {
    char[] out = new char[b.length * 2];
    for (int i = 0; i < b.length; i++) {
      out[2 * i] = Character.forDigit((b[i] >> 4) & 15, 16);
      out[2 * i + 1] = Character.forDigit(b[i] & 15, 16);
    }
    return new String(out);
  }

  /** For toString: short byte strings as text when printable, else their size and hex start. */
  static String describe(byte[] b) {
    if (b.length <= 64) {
      boolean printable = true;
      for (byte c : b) printable &= c >= 0x20 && c < 0x7f;
      if (printable) return "\"" + new String(b, StandardCharsets.US_ASCII) + "\"";
    }
    return b.length + " bytes " + hex(java.util.Arrays.copyOf(b, Math.min(b.length, 16))) + (b.length > 16 ? "…" : "");
  }
}
