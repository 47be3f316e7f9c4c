package dev.idem.redis;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idem.core.IdemStore;
import dev.idem.testkit.StoreVectors;

/** The shared vectors on a real server ($IDEM_TEST_REDIS_URL), each vector under a key prefix of its own. */
class RedisStoreVectorsTest extends StoreVectors {
  @Override
  protected String storeName() {
    return "redis";
  }

  @Override
  protected IdemStore freshStore(String id) {
    String url = System.getenv("IDEM_TEST_REDIS_URL");
    assumeTrue(url != null && !url.isEmpty(), "IDEM_TEST_REDIS_URL is not set");
    return RedisStore.open(url + "?prefix=idem-java-vec-" + id + ":");
  }
}
