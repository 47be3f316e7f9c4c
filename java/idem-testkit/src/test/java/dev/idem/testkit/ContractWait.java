package dev.idem.testkit;

import java.time.Duration;

/** Waits out a lease or a ttl: time passing is the event (the store's clock decides). */
final class ContractWait {
  private ContractWait() {}

  static void past(Duration d) {
    try {
      Thread.sleep(d.toMillis() + 100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
