package dev.idem.core;

/** The answer of {@link IdemStore#extend}. FENCED: the claim was lost; nothing changed. */
public enum ExtendOutcome {
  EXTENDED,
  FENCED
}
