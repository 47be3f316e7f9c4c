package dev.idem.client;

/** The answer of {@link Idem#releaseLock}. */
public enum UnlockOutcome {
  /** the lock is free. */
  RELEASED,
  /** the caller does not own the lock (it expired, or another owner holds it). */
  NOT_OWNER,
}
