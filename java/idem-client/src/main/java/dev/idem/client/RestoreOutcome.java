package dev.idem.client;

/** The answer of {@link Idem#restoreToken}. */
public enum RestoreOutcome {
  /** the token can be consumed again. */
  RESTORED,
  /** the token was never issued to this scope. */
  INVALID,
}
