package dev.idem.examples;

/**
 * Snowflake-style 64-bit ids: milliseconds since 2010-11-04 (41 bits), a worker number
 * (10 bits) and a sequence within the millisecond (12 bits). Today they have 19 digits, more
 * than a JavaScript number or a double holds exactly, which is why they make a good test of
 * a client that must not round them.
 */
public final class SnowflakeIds {
  private static final long EPOCH_MS = 1288834974657L;

  private final long worker;
  private long lastMs = -1;
  private long sequence;

  public SnowflakeIds(int worker) {
    if (worker < 0 || worker >= 1024) throw new IllegalArgumentException("worker: 0 to 1023");
    this.worker = worker;
  }

  public synchronized long next() {
    long now = Math.max(System.currentTimeMillis(), lastMs);  // never backwards
    if (now == lastMs) {
      sequence = (sequence + 1) & 0xfff;
      if (sequence == 0) now = ++lastMs;  // 4096 ids in this millisecond: borrow the next one
    } else {
      sequence = 0;
    }
    lastMs = now;
    return ((now - EPOCH_MS) << 22) | (worker << 12) | sequence;
  }
}
