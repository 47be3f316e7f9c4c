package dev.idem.client;

/** The answer of {@link Idem#extend}. */
public enum ExtendOutcome {
  /** the lease runs for the new duration from now. */
  EXTENDED,
  /** the fence is stale or the record is gone: the claim was lost. */
  FENCED,
}
