package dev.idem.core;

/**
 * The store could not give an operation's answer. The subclass says what the caller should do:
 * {@link NotAppliedException} (nothing happened: retry the same call as is), {@link
 * OutcomeUnknownException} (the call may have taken effect: read the record before retrying),
 * {@link StoreConfigurationException} (the store or its configuration must be fixed first),
 * {@link StoreProtocolException} (an answer this engine cannot read: check versions).
 */
public abstract class IdemException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  protected IdemException(String message, Throwable cause) {
    super(message, cause);
  }
}
