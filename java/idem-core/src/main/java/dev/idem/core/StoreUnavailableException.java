package dev.idem.core;

import java.time.Duration;
import java.util.Objects;

/**
 * The store (or the gateway in front of it) answered that it applied nothing and is
 * unavailable for now: retry the same call after {@link #retryAfter()}.
 */
public class StoreUnavailableException extends NotAppliedException {
  private static final long serialVersionUID = 1L;
  private final Duration retryAfter;

  public StoreUnavailableException(String message, Duration retryAfter, Throwable cause) {
    super(message, cause);
    this.retryAfter = Objects.requireNonNull(retryAfter, "retryAfter");
  }

  /** How long to wait before retrying. */
  public Duration retryAfter() {
    return retryAfter;
  }
}
