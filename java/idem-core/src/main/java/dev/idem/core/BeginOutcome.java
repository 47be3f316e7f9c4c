package dev.idem.core;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;

/**
 * The answer of {@link IdemStore#begin} (docs/design.md, "One record, two states"), in this order
 * of precedence: {@link Mismatch} (a differing, non-empty fingerprint; changes nothing), {@link
 * Replay} (done), {@link InProgress} (pending, lease live), {@link Acquired} (absent, expired, or a
 * takeover of an expired lease, flagged {@code recovered}).
 */
public sealed interface BeginOutcome
    permits BeginOutcome.Acquired, BeginOutcome.Replay, BeginOutcome.InProgress, BeginOutcome.Mismatch {

  /**
   * The caller holds the key: run the side effect, then commit or release with {@code fence}.
   *
   * @param fence greater than every fence handed out for this key before
   * @param recovered the claim was taken over from a holder whose lease ran out mid-run: its
   *     outcome is unknown
   * @param previousFence when recovered: the fence of the claim taken over (its holder's work
   *     carried it); 0 otherwise
   */
  record Acquired(long fence, boolean recovered, long previousFence) implements BeginOutcome {
    public Acquired {
      if (!recovered) previousFence = 0;
    }
  }

  /**
   * The key is done: {@code result} is the first commit's result, byte for byte.
   *
   * @param fence the fence of the commit (0 when the store does not say: the control API)
   * @param expiresIn how long the record still lives, by the store's clock when it answered
   *     (zero when the store does not say)
   */
  record Replay(long fence, byte[] result, Duration expiresIn) implements BeginOutcome {
    public Replay {
      Objects.requireNonNull(result, "result");
      Objects.requireNonNull(expiresIn, "expiresIn");
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Replay r && fence == r.fence && Arrays.equals(result, r.result) && expiresIn.equals(r.expiresIn);
    }

    @Override
    public int hashCode() {
      return Objects.hash(fence, Arrays.hashCode(result), expiresIn);
    }

    @Override
    public String toString() {
      return "Replay[fence=" + fence + ", result=" + Bytes.describe(result) + ", expiresIn=" + expiresIn + "]";
    }
  }

  /** Another holder's lease is live; it ends within {@code retryAfter} (at least 1 µs). */
  record InProgress(Duration retryAfter) implements BeginOutcome {
    public InProgress {
      Objects.requireNonNull(retryAfter, "retryAfter");
    }
  }

  /** The record's fingerprint differs: the key was used for another request. Nothing changed. */
  record Mismatch() implements BeginOutcome {}
}
