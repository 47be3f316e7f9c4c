package dev.idem.client;

/**
 * The call was not applied: the gateway could not be reached (the request was never sent)
 * or its store refused it. Retrying the same call is safe.
 */
public class NotAppliedException extends IdemException {
  private static final long serialVersionUID = 1L;

  public NotAppliedException(String message, int status, Throwable cause) {
    super(message, status, cause);
  }
}
