package dev.idem.core;

import java.time.Duration;

/**
 * How one delivery of a message was handled by the {@link Deduplicator}.
 *
 * @param fence PROCESSED: the fence the work ran under
 * @param recovered PROCESSED: a crashed consumer's claim was taken over
 * @param stored PROCESSED: false when the claim was lost while the work ran (or the store could not be told yet)
 * @param retryAfter IN_PROGRESS: until the other consumer's lease ends
 */
public record Delivery(Kind kind, long fence, boolean recovered, boolean stored, Duration retryAfter) {
  public enum Kind {
    /** The work ran now: ack. */
    PROCESSED,
    /** The work ran before for this message id: ack and do nothing. */
    DUPLICATE,
    /** Another consumer runs it now: requeue, retry later. */
    IN_PROGRESS,
    /** A consumer died mid-message and the policy is HOLD: park it (dead-letter). */
    UNCERTAIN
  }

  /** True when the broker should consider the message handled. */
  public boolean ack() {
    return kind == Kind.PROCESSED || kind == Kind.DUPLICATE;
  }
}
