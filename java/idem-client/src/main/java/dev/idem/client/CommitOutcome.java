package dev.idem.client;

/** The answer of {@link Idem#commit}. */
public enum CommitOutcome {
  /** the record is done with this result (also when it already was, with this fence). */
  COMMITTED,
  /** the fence is stale or the record is gone; nothing changed. */
  FENCED,
}
