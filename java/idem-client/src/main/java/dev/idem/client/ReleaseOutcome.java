package dev.idem.client;

/** The answer of {@link Idem#release}. */
public enum ReleaseOutcome {
  /** the claim is given back; a retry acquires with a greater fence. */
  RELEASED,
  /** the fence is stale or the record is gone; nothing changed. */
  FENCED,
}
