package dev.idem.core;

/**
 * An answer this engine cannot read (a reply of an unexpected shape, a result in an unknown
 * format): a bug, or a store written by an incompatible version. Whether the call took effect is
 * unknown.
 */
public class StoreProtocolException extends IdemException {
  private static final long serialVersionUID = 1L;

  public StoreProtocolException(String message, Throwable cause) {
    super(message, cause);
  }

  public StoreProtocolException(String message) {
    super(message, null);
  }
}
