package dev.idem.spring;

import dev.idem.core.IdemException;
import dev.idem.core.InProgressException;
import dev.idem.core.KeyReusedException;
import dev.idem.core.StoreUnavailableException;
import dev.idem.core.UncertainKeyException;
import java.time.Duration;
import java.util.Optional;

/**
 * The one table from what a protected call threw to the problem an HTTP client gets (docs/spring.md,
 * "What clients see"). Pure: tested row by row.
 */
public final class IdemProblems {
  private IdemProblems() {}

  /** How long a client waits after a store failure that names no time of its own. */
  public static final Duration STORE_RETRY_AFTER = Duration.ofSeconds(1);

  /** A problem, its detail and when to retry (for in-progress and store-unavailable). */
  public record Answer(IdemProblem problem, String detail, Optional<Duration> retryAfter) {}

  /** The answer for {@code e}, or empty when it is not idem's (the application's own exception). */
  public static Optional<Answer> of(Throwable e) {
    if (e instanceof IdempotencyRefusedException r) return Optional.of(new Answer(r.problem(), r.getMessage(), r.retryAfter()));
    if (e instanceof InProgressException p)
      return Optional.of(new Answer(IdemProblem.IN_PROGRESS, "a request with this key is in progress",
          Optional.of(p.retryAfter())));
    if (e instanceof KeyReusedException)
      return Optional.of(new Answer(IdemProblem.KEY_REUSED, "this key was used with a different request", Optional.empty()));
    if (e instanceof UncertainKeyException)
      return Optional.of(new Answer(IdemProblem.OUTCOME_UNCERTAIN,
          "the outcome of the first request with this key is unknown; an operator must decide", Optional.empty()));
    if (e instanceof StoreUnavailableException s)
      return Optional.of(new Answer(IdemProblem.STORE_UNAVAILABLE, "the idempotency store is unavailable",
          Optional.of(s.retryAfter())));
    if (e instanceof IdemException)
      return Optional.of(new Answer(IdemProblem.STORE_UNAVAILABLE, "the idempotency store is unavailable",
          Optional.of(STORE_RETRY_AFTER)));
    return Optional.empty();
  }

  /** Retry-After's value: whole seconds, rounded up, at least 1. */
  public static long retryAfterSeconds(Duration d) {
    long s = d.getSeconds() + (d.getNano() > 0 ? 1 : 0);
    return Math.max(1, s);
  }
}
