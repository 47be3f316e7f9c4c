package dev.idem.client;

/** {@link IdempotentCall#run} did not run the work and has no result to give; subclasses say why. */
public class CallRefusedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public CallRefusedException(String message) {
    super(message);
  }
}
