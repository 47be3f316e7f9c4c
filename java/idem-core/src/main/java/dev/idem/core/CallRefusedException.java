package dev.idem.core;

/** {@link IdempotentCall#run} did not run the work and has no first result to give. */
public abstract class CallRefusedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  protected CallRefusedException(String message) {
    super(message);
  }
}
