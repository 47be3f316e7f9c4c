package dev.idem.core;

/** The answer of {@link IdemStore#commit}. FENCED: the claim is not this fence's (lost, taken over, removed, expired); nothing changed. */
public enum CommitOutcome {
  COMMITTED,
  FENCED
}
