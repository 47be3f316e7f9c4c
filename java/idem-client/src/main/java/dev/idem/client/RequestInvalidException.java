package dev.idem.client;

/** 400 {@code request-invalid}: the gateway refused the arguments; the message says which. */
public class RequestInvalidException extends IdemException {
  private static final long serialVersionUID = 1L;

  public RequestInvalidException(String message) {
    super(message, 400, null);
  }
}
