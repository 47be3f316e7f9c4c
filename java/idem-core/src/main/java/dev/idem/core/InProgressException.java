package dev.idem.core;

import java.time.Duration;

/** Another caller still runs the work for this key after the wait: retry after {@link #retryAfter()} (HTTP: 409 with Retry-After). */
public class InProgressException extends CallRefusedException {
  private static final long serialVersionUID = 1L;
  private final Duration retryAfter;

  public InProgressException(Duration retryAfter) {
    super("the key is in progress: another caller runs the work; retry after " + retryAfter);
    this.retryAfter = retryAfter;
  }

  public Duration retryAfter() {
    return retryAfter;
  }
}
