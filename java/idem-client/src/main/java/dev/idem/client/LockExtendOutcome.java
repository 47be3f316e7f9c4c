package dev.idem.client;

/** The answer of {@link Idem#extendLock}. */
public enum LockExtendOutcome {
  /** the lock is held for the new ttl from now. */
  EXTENDED,
  /** the caller does not own the lock (it expired, or another owner holds it). */
  NOT_OWNER,
}
