package dev.idem.core;

/**
 * The claim runner's two decision tables (docs/design.md, "One claim runner"), as pure functions
 * over values, tested row by row without a store; the same tables as the C++ engine's
 * {@code after_begin} and {@code settle_for}.
 */
public final class Decisions {
  private Decisions() {}

  /**
   * What a begin's answer means.
   *
   * @param begun the answer, or null when the call failed with {@code failure}
   * @param failure the exception of a begin that failed, or null
   * @param uncertainMarker what an uncertain record's result starts with (empty: never)
   */
  public static BeginStep afterBegin(BeginOutcome begun, RuntimeException failure, OnUncertain onUncertain,
                                     byte[] uncertainMarker) {
    if (begun == null) return failure instanceof NotAppliedException ? BeginStep.NOT_APPLIED : BeginStep.UNKNOWN;
    if (begun instanceof BeginOutcome.Acquired a)
      return a.recovered() && onUncertain == OnUncertain.HOLD ? BeginStep.HOLD_UNCERTAIN : BeginStep.RUN;
    if (begun instanceof BeginOutcome.Replay r)
      return uncertainMarker.length > 0 && Bytes.startsWith(r.result(), uncertainMarker) ? BeginStep.UNCERTAIN
          : BeginStep.REPLAY;
    if (begun instanceof BeginOutcome.Mismatch) return BeginStep.MISMATCH;
    return BeginStep.BUSY;
  }

  /** What the end of the work means for its claim. */
  public static Settlement settleFor(WorkEnd end, OnUncertain onUncertain, boolean claimLost) {
    if (claimLost) return Settlement.NONE;
    return switch (end) {
      case SUCCEEDED -> Settlement.COMMIT;
      case FAILED -> Settlement.RELEASE;
      case UNKNOWN -> onUncertain == OnUncertain.HOLD ? Settlement.MARK_UNCERTAIN : Settlement.LEAVE;
    };
  }
}
