package dev.idem.spring;

import dev.idem.core.OnUncertain;

/** {@link OnUncertain} with a DEFAULT that means the {@code idem.defaults.on-uncertain} property. */
public enum UncertainPolicy {
  DEFAULT,
  /** At most once: the record is held as uncertain; repeats get {@code 409 outcome-uncertain}. */
  HOLD,
  /** At least once: a repeat runs again under a greater fence after the lost claim's lease. */
  RETRY;

  OnUncertain or(OnUncertain fallback) {
    return switch (this) {
      case DEFAULT -> fallback;
      case HOLD -> OnUncertain.HOLD;
      case RETRY -> OnUncertain.RETRY;
    };
  }
}
