package dev.idem.client;

import java.time.Duration;
import java.util.Optional;

/** The answer of {@link IdempotentCall#execute}: how one call of a key ended. */
public sealed interface CallOutcome<T>
    permits CallOutcome.Executed, CallOutcome.Replayed, CallOutcome.InProgress, CallOutcome.KeyReused,
        CallOutcome.Uncertain {

  /**
   * The work ran now and returned {@code value}.
   *
   * @param stored the result was committed, so repeats replay it
   * @param claimLost the claim was taken over or removed while the work ran (a renewal or
   *     the commit answered fenced): nothing was committed over the newer holder, and a
   *     repeat may run the work again
   * @param storeError when not stored and the claim was not lost: why the commit failed
   *     (it is retried in the background meanwhile; repeats wait or are told in progress)
   */
  record Executed<T>(T value, long fence, boolean recovered, boolean stored, boolean claimLost,
                     Optional<IdemException> storeError) implements CallOutcome<T> {}

  /** The first call's result; the work did not run. */
  record Replayed<T>(T value) implements CallOutcome<T> {}

  /** Another caller still runs the work after the wait; retry after {@code retryAfter}. */
  record InProgress<T>(Duration retryAfter) implements CallOutcome<T> {}

  /** The key was used with a different fingerprint; nothing ran. */
  record KeyReused<T>() implements CallOutcome<T> {}

  /** An earlier attempt's outcome is unknown and the policy is hold; nothing ran. */
  record Uncertain<T>() implements CallOutcome<T> {}
}
