package dev.idem.redis;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idem.core.IdemStore;
import dev.idem.testkit.StoreContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The store contract on a real Redis Cluster ($IDEM_TEST_REDIS_CLUSTER_URL; skipped without it). */
class RedisClusterContractTest extends StoreContract {
  static RedisStore store;

  @BeforeAll
  static void open() {
    String url = System.getenv("IDEM_TEST_REDIS_CLUSTER_URL");
    assumeTrue(url != null && !url.isEmpty(), "IDEM_TEST_REDIS_CLUSTER_URL is not set");
    store = RedisStore.open(url + (url.contains("?") ? "&" : "?") + "prefix=idem-java-test:");
  }

  @AfterAll
  static void close() {
    if (store != null) store.close();
  }

  @Override
  protected IdemStore store() {
    return store;
  }
}
