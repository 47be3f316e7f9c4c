package dev.idem.client;

import java.time.Duration;

/**
 * 503 {@code store-unavailable}: the gateway's store did nothing. Retry the same call as is,
 * after {@link #retryAfter()} (the answer's {@code Retry-After}).
 */
public class StoreUnavailableException extends NotAppliedException {
  private static final long serialVersionUID = 1L;
  private final Duration retryAfter;

  public StoreUnavailableException(String message, Duration retryAfter) {
    super(message, 503, null);
    this.retryAfter = retryAfter;
  }

  public Duration retryAfter() {
    return retryAfter;
  }
}
