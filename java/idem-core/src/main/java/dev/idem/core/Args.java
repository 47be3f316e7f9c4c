package dev.idem.core;

import java.time.Duration;
import java.util.Objects;

/**
 * The checks every store makes of its arguments, once, before anything is sent (the C++ engine's
 * core::validate): each throws {@link IllegalArgumentException} or {@link NullPointerException}
 * with a message that names the argument. Backends call them; so may callers.
 */
public final class Args {
  private Args() {}

  /** The largest fence any store hands out: 2^53 - 1, so every fence is exact in JSON. */
  public static final long MAX_FENCE = (1L << 53) - 1;
  /** The longest record key, in UTF-8 bytes, every store holds ("key space:key" of the gateway). */
  public static final int MAX_KEY_BYTES = 320;
  /** The longest scope, in UTF-8 bytes, every store holds. */
  public static final int MAX_SCOPE_BYTES = 2048;
  /** The longest lock name, in UTF-8 bytes, every store holds. */
  public static final int MAX_LOCK_NAME_BYTES = MAX_SCOPE_BYTES + 1 + MAX_KEY_BYTES;

  /** A scope: any text, "" for none. */
  public static String scope(String scope) {
    return Objects.requireNonNull(scope, "scope (\"\" for none)");
  }

  /** A record key: not empty. */
  public static String key(String key) {
    if (Objects.requireNonNull(key, "key").isEmpty()) throw new IllegalArgumentException("key must not be empty");
    return key;
  }

  /** A non-empty name: an owner, a lock name, a token. */
  public static String nonEmpty(String value, String what) {
    if (Objects.requireNonNull(value, what).isEmpty()) throw new IllegalArgumentException(what + " must not be empty");
    return value;
  }

  /** A duration of at least one microsecond (durations are kept in whole µs, rounded up). */
  public static Duration positive(Duration d, String what) {
    Objects.requireNonNull(d, what);
    if (d.isNegative() || d.isZero()) throw new IllegalArgumentException(what + " must be greater than 0, got " + d);
    if (d.compareTo(MAX_DURATION) > 0)
      throw new IllegalArgumentException(what + " must be at most 3650 days, got " + d);
    return d;
  }

  /** The longest lease, retention or ttl: 3650 days, as the control API allows. */
  public static final Duration MAX_DURATION = Duration.ofDays(3650);

  /** A fence as begin hands them out: 1 to {@link #MAX_FENCE}. */
  public static long fence(long fence) {
    if (fence <= 0 || fence > MAX_FENCE)
      throw new IllegalArgumentException("fence must be between 1 and 2^53 - 1 (a fence from begin), got " + fence);
    return fence;
  }

  /** The duration in whole microseconds, rounded up. */
  public static long micros(Duration d) {
    long s = d.getSeconds();
    int n = d.getNano();
    return Math.addExact(Math.multiplyExact(s, 1_000_000L), (n + 999) / 1000);
  }

  /** Whole milliseconds, rounded up. */
  public static long millis(Duration d) {
    long ms = d.toMillis();
    return d.equals(Duration.ofMillis(ms)) ? ms : ms + 1;
  }

  static byte[] bytes(byte[] b) {
    return b == null ? EMPTY : b;
  }

  static final byte[] EMPTY = new byte[0];
}
