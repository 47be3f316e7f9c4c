package dev.idem.client;

import java.time.Duration;

/** The answer of {@link Idem#acquireLock}. */
public sealed interface LockOutcome permits LockOutcome.Locked, LockOutcome.Busy {
  /** The caller owns the lock; the fence is greater than every fence of this lock before. */
  record Locked(long fence) implements LockOutcome {}

  /** Another owner holds it for up to {@code retryAfter}. */
  record Busy(Duration retryAfter) implements LockOutcome {}
}
