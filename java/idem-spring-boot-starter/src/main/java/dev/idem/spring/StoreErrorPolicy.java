package dev.idem.spring;

/** What a protected call does when the store cannot be reached (the gateway's {@code on_store_error}). */
public enum StoreErrorPolicy {
  /** The {@code idem.defaults.on-store-error} property. */
  DEFAULT,
  /** Refuse: {@code 503 store-unavailable} with {@code Retry-After} (the store's exception for other callers). */
  REJECT,
  /** Run the method unprotected (a repeat may run twice): {@code Idempotency-Status: unprotected}, counted. */
  PASS;

  StoreErrorPolicy or(StoreErrorPolicy fallback) {
    return this == DEFAULT ? fallback : this;
  }
}
