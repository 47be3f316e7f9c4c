package dev.idem.core;

import java.time.Duration;
import java.util.Objects;

/** The answer of {@link IdemStore#lock}. */
public sealed interface LockOutcome permits LockOutcome.Locked, LockOutcome.Busy {
  /**
   * The caller holds the lock. {@code fence} is greater than every fence handed out for the
   * name before; the same owner asking again keeps its fence.
   */
  record Locked(long fence) implements LockOutcome {}

  /** Another owner holds it for {@code retryAfter} more. */
  record Busy(Duration retryAfter) implements LockOutcome {
    public Busy {
      Objects.requireNonNull(retryAfter, "retryAfter");
    }
  }
}
