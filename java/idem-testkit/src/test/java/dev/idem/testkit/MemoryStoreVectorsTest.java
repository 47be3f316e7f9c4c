package dev.idem.testkit;

import dev.idem.core.IdemStore;
import dev.idem.core.MemoryStore;

/** The shared vectors on the reference store. */
class MemoryStoreVectorsTest extends StoreVectors {
  @Override
  protected String storeName() {
    return "memory";
  }

  @Override
  protected IdemStore freshStore(String id) {
    return new MemoryStore(java.time.Clock.systemUTC(), 64L << 20);
  }
}
