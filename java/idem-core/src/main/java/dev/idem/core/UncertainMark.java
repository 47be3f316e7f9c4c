package dev.idem.core;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The mark of an uncertain record (the C++ engine's engine/uncertain_mark.h): when the work under
 * a claim may or may not have taken effect and the policy is HOLD, the claim runner completes the
 * record with the face's marker followed by {@code fence=<F>;instance=<I>;at=<ms>}: the attempt
 * the service may have received, who marked it, and when. The marker alone (fence 0) when nothing
 * is known.
 *
 * @param fence the fence the service received; 0 when not known
 * @param instance the process that marked it (cut at the first ';')
 * @param atMillis when, in ms since the Unix epoch by that process's clock; 0 when not known
 */
public record UncertainMark(long fence, String instance, long atMillis) {
  public UncertainMark {
    instance = instance == null ? "" : instance;
    int semi = instance.indexOf(';');
    if (semi >= 0) instance = instance.substring(0, semi);
  }

  /** The bytes every mark naming {@code fence} starts with: the commit's overUncertain. */
  public static byte[] prefix(byte[] marker, long fence) {
    return concat(marker, "fence=" + fence + ";");
  }

  /** {@code marker} followed by this mark; the marker alone when the fence is 0. */
  public byte[] encode(byte[] marker) {
    if (fence == 0) return marker.clone();
    return concat(marker, "fence=" + fence + ";instance=" + instance + ";at=" + atMillis);
  }

  /** The mark a stored result holds: empty when it does not start with {@code marker}. */
  public static Optional<UncertainMark> read(byte[] result, byte[] marker) {
    if (marker.length == 0 || !Bytes.startsWith(result, marker)) return Optional.empty();
    String text = new String(result, marker.length, result.length - marker.length, StandardCharsets.UTF_8);
    return Optional.of(new UncertainMark(number(field(text, "fence")), field(text, "instance"),
        number(field(text, "at"))));
  }

  private static String field(String text, String name) {
    for (String item : text.split(";", -1)) {
      if (item.length() > name.length() && item.startsWith(name) && item.charAt(name.length()) == '=')
        return item.substring(name.length() + 1);
    }
    return "";
  }

  private static long number(String s) {
    try {
      return s.isEmpty() ? 0 : Long.parseUnsignedLong(s);
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static byte[] concat(byte[] a, String tail) {
    byte[] t = tail.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[a.length + t.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(t, 0, out, a.length, t.length);
    return out;
  }
}
