package dev.idem.core;

/**
 * The store cannot serve this engine as configured (the C++ engine's failed_precondition): a
 * Redis that may evict keys, missing tables, a wrong password, a binary log format that refuses
 * the statements. Nothing was applied; fix the configuration, then retry.
 */
public class StoreConfigurationException extends IdemException {
  private static final long serialVersionUID = 1L;

  public StoreConfigurationException(String message, Throwable cause) {
    super(message, cause);
  }

  public StoreConfigurationException(String message) {
    super(message, null);
  }
}
