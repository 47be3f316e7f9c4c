package dev.idem.client;

import java.time.Duration;

/**
 * The answer of {@link Deduplicator#handle}.
 *
 * @param fence processed: the fence the work ran under
 * @param recovered processed: a crashed consumer's claim was taken over
 * @param stored processed: false when the claim was lost while the work ran (or the commit
 *     is still being retried), so a redelivery may run it again
 * @param retryAfter in progress: until the other consumer's lease ends
 */
public record Delivery(Kind kind, long fence, boolean recovered, boolean stored, Duration retryAfter) {
  public enum Kind {
    /** The work ran now and succeeded: ack. */
    PROCESSED,
    /** The work already ran for this message id: ack and do nothing. */
    DUPLICATE,
    /** Another consumer runs it now: requeue, retry later. */
    IN_PROGRESS,
    /** A consumer died mid-message and the policy is hold: park it (dead-letter). */
    UNCERTAIN,
  }

  /** True when the broker should consider the message handled. */
  public boolean ack() {
    return kind == Kind.PROCESSED || kind == Kind.DUPLICATE;
  }
}
