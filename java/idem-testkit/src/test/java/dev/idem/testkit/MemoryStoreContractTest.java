package dev.idem.testkit;

import dev.idem.core.IdemStore;
import dev.idem.core.MemoryStore;

/** The contract on the in-process reference store. */
class MemoryStoreContractTest extends StoreContract {
  private static final MemoryStore STORE = new MemoryStore(java.time.Clock.systemUTC(), 4L << 20);

  @Override
  protected IdemStore store() {
    return STORE;
  }
}
