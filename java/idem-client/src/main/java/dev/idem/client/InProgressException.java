package dev.idem.client;

import java.time.Duration;

/** Another caller still runs the work for this key after the wait: retry after {@link #retryAfter()}. */
public class InProgressException extends CallRefusedException {
  private static final long serialVersionUID = 1L;
  private final Duration retryAfter;

  public InProgressException(Duration retryAfter) {
    super("key in progress: another caller is running it; retry after " + retryAfter.toMillis() + " ms");
    this.retryAfter = retryAfter;
  }

  public Duration retryAfter() {
    return retryAfter;
  }
}
