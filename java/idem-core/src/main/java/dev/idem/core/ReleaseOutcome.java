package dev.idem.core;

/** The answer of {@link IdemStore#release} and {@link IdemStore#abandon}. FENCED: no such claim; nothing changed. */
public enum ReleaseOutcome {
  RELEASED,
  FENCED
}
