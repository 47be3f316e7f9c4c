package dev.idem.spring;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A protected call refused before its method ran (nothing ran; see {@link #problem()}): the key
 * or token is missing or invalid, the subject is missing, the body is too large to fingerprint, or
 * no result can be given. In a Spring MVC request it becomes the problem's {@code ProblemDetail}.
 * The engine's own refusals ({@code InProgressException}, {@code KeyReusedException}, {@code
 * UncertainKeyException}) and store failures ({@code IdemException}) are answered the same way.
 */
public class IdempotencyRefusedException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final IdemProblem problem;
  private final transient Duration retryAfter;

  public IdempotencyRefusedException(IdemProblem problem, String detail) {
    this(problem, detail, null);
  }

  public IdempotencyRefusedException(IdemProblem problem, String detail, Duration retryAfter) {
    super(detail);
    this.problem = Objects.requireNonNull(problem, "problem");
    this.retryAfter = retryAfter;
  }

  public IdemProblem problem() {
    return problem;
  }

  /** When the client may retry, for the problems that say so. */
  public Optional<Duration> retryAfter() {
    return Optional.ofNullable(retryAfter);
  }
}
