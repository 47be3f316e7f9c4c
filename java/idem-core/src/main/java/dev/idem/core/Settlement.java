package dev.idem.core;

/** What becomes of a claim when its work ended ({@link Decisions#settleFor}). */
public enum Settlement {
  /** Complete the record with the result. */
  COMMIT,
  /** Give the claim back: a retry runs again. */
  RELEASE,
  /** Complete the record as uncertain (HOLD). */
  MARK_UNCERTAIN,
  /** Keep it pending until its lease ends; then a repeat runs again (RETRY). */
  LEAVE,
  /** The claim was lost while the work ran: the newer holder is left alone. */
  NONE
}
