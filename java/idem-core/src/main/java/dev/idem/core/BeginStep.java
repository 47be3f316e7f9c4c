package dev.idem.core;

/** What one begin's answer means for the claim runner ({@link Decisions#afterBegin}). */
public enum BeginStep {
  /** Acquired: do the work under this claim. */
  RUN,
  /** Acquired over an expired claim, under HOLD: complete the record as uncertain and run nothing. */
  HOLD_UNCERTAIN,
  /** Done: answer the stored result. */
  REPLAY,
  /** Done as uncertain: answer "outcome unknown"; nothing runs. */
  UNCERTAIN,
  /** The key was used with another fingerprint: nothing runs. */
  MISMATCH,
  /** Another caller holds the key: wait and begin again, or answer "in progress". */
  BUSY,
  /** The store failed and did nothing: answer the failure. */
  NOT_APPLIED,
  /** The store may have applied it: the claim, if any, is given back by owner; answer the failure. */
  UNKNOWN
}
