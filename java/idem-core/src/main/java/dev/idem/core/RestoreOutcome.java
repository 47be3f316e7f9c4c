package dev.idem.core;

/** The answer of {@link IdemStore#restoreToken}. INVALID: never issued to this scope, or long forgotten. */
public enum RestoreOutcome {
  RESTORED,
  INVALID
}
