package dev.idem.core;

/**
 * The call was not applied: it was never sent, or the store proved that it did nothing (a
 * statement that failed and was rolled back, no connection). Retrying the same call is safe.
 */
public class NotAppliedException extends IdemException {
  private static final long serialVersionUID = 1L;

  public NotAppliedException(String message, Throwable cause) {
    super(message, cause);
  }

  public NotAppliedException(String message) {
    super(message, null);
  }
}
