package dev.idem.client;

/**
 * What happens when the outcome of an earlier attempt is unknown (its holder's lease ran out
 * mid-run): the same two choices, by the same names, as the gateway's {@code on_uncertain}
 * and the C++ Guard and Deduplicator.
 */
public enum OnUncertain {
  /**
   * At most once: the record is completed as uncertain, and every repeat is told so
   * ({@link UncertainKeyException}) until an operator removes the record or its retention
   * passes. Nothing runs twice.
   */
  HOLD,
  /**
   * At least once: the work runs again under a greater fence ({@link Attempt#recovered()}
   * tells it so), which it can check against its own writes.
   */
  RETRY;

  /** "hold" or "retry", as in idem.yaml. */
  public String policyName() {
    return this == HOLD ? "hold" : "retry";
  }

  /** From "hold" or "retry". */
  public static OnUncertain fromPolicyName(String name) {
    return switch (name) {
      case "hold" -> HOLD;
      case "retry" -> RETRY;
      default -> throw new IllegalArgumentException("on_uncertain: hold or retry, got \"" + name + "\"");
    };
  }
}
