package dev.idem.core;

/**
 * What happens when the outcome of an earlier attempt is unknown: its holder's lease ran out
 * mid-run, or the store could not be told how the work ended. The same two choices, by the same
 * names, as the gateway's {@code on_uncertain} and the C++ Guard's options.
 */
public enum OnUncertain {
  /**
   * At most once: the record is completed as uncertain; every repeat is told so until an
   * operator removes it or its retention passes. Nothing runs twice.
   */
  HOLD,
  /**
   * At least once: the claim is left to expire; then a repeat runs the work again under a greater
   * fence, which the work can check.
   */
  RETRY;

  /** "hold" or "retry". */
  public String wireName() {
    return this == HOLD ? "hold" : "retry";
  }
}
