package dev.idem.client;

/**
 * An answer this client does not understand (an unexpected status, a body that is not the
 * control API's JSON, a 403/404/415 from a misconfigured gateway address). Nothing to retry.
 */
public class ProtocolException extends IdemException {
  private static final long serialVersionUID = 1L;

  public ProtocolException(String message, int status, Throwable cause) {
    super(message, status, cause);
  }
}
