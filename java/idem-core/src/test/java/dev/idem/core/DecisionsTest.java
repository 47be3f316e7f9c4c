package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The claim runner's two tables, row by row (docs/design.md, "One claim runner"). */
class DecisionsTest {
  private static final byte[] U = StoredResult.UNCERTAIN_MARKER;

  private static BeginStep after(BeginOutcome b, OnUncertain p) {
    return Decisions.afterBegin(b, null, p, U);
  }

  @Test
  void afterBegin() {
    for (OnUncertain p : OnUncertain.values()) {
      assertThat(after(new BeginOutcome.Acquired(5, false, 0), p)).isEqualTo(BeginStep.RUN);
      assertThat(after(new BeginOutcome.Replay(5, new byte[] {'J', 0, 0, 0, 0}, Duration.ZERO), p)).isEqualTo(BeginStep.REPLAY);
      assertThat(after(new BeginOutcome.Replay(5, "Ufence=1;instance=x;at=2".getBytes(), Duration.ZERO), p))
          .isEqualTo(BeginStep.UNCERTAIN);
      assertThat(after(new BeginOutcome.InProgress(Duration.ofSeconds(1)), p)).isEqualTo(BeginStep.BUSY);
      assertThat(after(new BeginOutcome.Mismatch(), p)).isEqualTo(BeginStep.MISMATCH);
      assertThat(Decisions.afterBegin(null, new NotAppliedException("down"), p, U)).isEqualTo(BeginStep.NOT_APPLIED);
      assertThat(Decisions.afterBegin(null, new StoreUnavailableException("503", Duration.ofSeconds(1), null), p, U))
          .isEqualTo(BeginStep.NOT_APPLIED);
      assertThat(Decisions.afterBegin(null, new OutcomeUnknownException("lost"), p, U)).isEqualTo(BeginStep.UNKNOWN);
    }
    assertThat(after(new BeginOutcome.Acquired(5, true, 4), OnUncertain.HOLD)).isEqualTo(BeginStep.HOLD_UNCERTAIN);
    assertThat(after(new BeginOutcome.Acquired(5, true, 4), OnUncertain.RETRY)).isEqualTo(BeginStep.RUN);
    // An empty marker never matches.
    assertThat(Decisions.afterBegin(new BeginOutcome.Replay(1, U, Duration.ZERO), null, OnUncertain.HOLD, new byte[0]))
        .isEqualTo(BeginStep.REPLAY);
  }

  @Test
  void settleFor() {
    for (OnUncertain p : OnUncertain.values()) {
      assertThat(Decisions.settleFor(WorkEnd.SUCCEEDED, p, false)).isEqualTo(Settlement.COMMIT);
      assertThat(Decisions.settleFor(WorkEnd.FAILED, p, false)).isEqualTo(Settlement.RELEASE);
      for (WorkEnd e : WorkEnd.values()) assertThat(Decisions.settleFor(e, p, true)).isEqualTo(Settlement.NONE);
    }
    assertThat(Decisions.settleFor(WorkEnd.UNKNOWN, OnUncertain.HOLD, false)).isEqualTo(Settlement.MARK_UNCERTAIN);
    assertThat(Decisions.settleFor(WorkEnd.UNKNOWN, OnUncertain.RETRY, false)).isEqualTo(Settlement.LEAVE);
  }
}
