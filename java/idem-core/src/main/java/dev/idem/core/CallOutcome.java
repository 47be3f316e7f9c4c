package dev.idem.core;

import java.time.Duration;
import java.util.Optional;

/** How one call of {@link IdempotentCall#execute} ended. */
public sealed interface CallOutcome<T>
    permits CallOutcome.Executed, CallOutcome.Replayed, CallOutcome.InProgress, CallOutcome.KeyReused,
        CallOutcome.Uncertain {

  /**
   * The work ran now and returned {@code value}.
   *
   * @param stored the result was committed, so repeats replay it
   * @param claimLost the claim was taken over or removed while the work ran (a renewal or the
   *     commit answered fenced): nothing was committed over the newer holder
   * @param storeError when neither stored nor lost: why (the commit is retried in the background
   *     meanwhile and repeats through the same object are replayed the result; or the store refused
   *     the result as too large, and the outcome was settled as unknown)
   */
  record Executed<T>(T value, long fence, boolean recovered, boolean stored, boolean claimLost,
                     Optional<RuntimeException> storeError) implements CallOutcome<T> {}

  /** The first call's result; the work did not run. {@code fence}: the committing claim's (0 when unknown). */
  record Replayed<T>(T value, long fence) implements CallOutcome<T> {}

  /** Another caller still runs the work after the wait; retry after {@code retryAfter}. */
  record InProgress<T>(Duration retryAfter) implements CallOutcome<T> {}

  /** The key was used with a different fingerprint; nothing ran. */
  record KeyReused<T>() implements CallOutcome<T> {}

  /** An earlier attempt's outcome is unknown and the policy is HOLD; nothing ran. {@code mark} names that attempt. */
  record Uncertain<T>(UncertainMark mark) implements CallOutcome<T> {}
}
