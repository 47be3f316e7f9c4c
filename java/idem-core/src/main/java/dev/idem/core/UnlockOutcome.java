package dev.idem.core;

/** The answer of {@link IdemStore#unlock}. NOT_OWNER: not held by this owner (or lapsed); another owner's lock is never touched. */
public enum UnlockOutcome {
  RELEASED,
  NOT_OWNER
}
