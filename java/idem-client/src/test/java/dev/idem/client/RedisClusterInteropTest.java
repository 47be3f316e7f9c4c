package dev.idem.client;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idem.core.IdemStore;
import dev.idem.redis.RedisStore;
import org.junit.jupiter.api.BeforeAll;

/** {@link StoreInterop} on a Redis Cluster ($IDEM_TEST_REDIS_CLUSTER_URL): every key of a record in one slot, as both name them. */
class RedisClusterInteropTest extends StoreInterop {
  @BeforeAll
  static void open() throws Exception {
    String url = System.getenv("IDEM_TEST_REDIS_CLUSTER_URL");
    assumeTrue(url != null && !url.isEmpty(), "IDEM_TEST_REDIS_CLUSTER_URL is not set");
    String uri = url + "?prefix=idem-java-interop-cluster:";
    start(new Target() {
      @Override
      public String uri() {
        return uri;
      }

      @Override
      public IdemStore open() {
        return RedisStore.open(uri);
      }
    });
  }
}
