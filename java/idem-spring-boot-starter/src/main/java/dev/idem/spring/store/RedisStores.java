package dev.idem.spring.store;

import dev.idem.core.ForwardingStore;
import dev.idem.core.IdemStore;
import dev.idem.redis.RedisStore;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;

/**
 * A {@link RedisStore} on the application's Redis: the server, credentials and database its
 * {@code RedisConnectionFactory} was made from ({@link RedisConnectionDetails}), and its Lettuce
 * {@link ClientResources} (event loops) when it has them; but a connection of idem's own,
 * configured at most once: the application's connections re-send unanswered commands after a
 * reconnect (Lettuce's default), and a begin sent twice could find its own claim in progress.
 * Its commands get no timer each ({@link RedisStore#atMostOnce}): the store waits for each answer
 * for at most the timeout itself.
 */
public final class RedisStores {
  private RedisStores() {}

  public static IdemStore open(RedisConnectionDetails details, boolean ssl, ClientResources resources,
                               RedisStore.Options options) {
    if (details.getCluster() != null) return cluster(details, ssl, resources, options);
    if (details.getSentinel() != null) {
      RedisConnectionDetails.Sentinel s = details.getSentinel();
      RedisURI.Builder b = null;
      for (RedisConnectionDetails.Node n : s.getNodes()) {
        if (b == null) b = RedisURI.Builder.sentinel(n.host(), n.port(), s.getMaster());
        else b.withSentinel(n.host(), n.port());
      }
      if (b == null) throw new IllegalStateException("idem: the application's Redis Sentinel configuration names no node");
      b.withDatabase(s.getDatabase());
      return standalone(credentials(b, details, ssl, options.timeout()).build(), resources, options);
    }
    RedisConnectionDetails.Standalone s = details.getStandalone();
    RedisURI.Builder b = RedisURI.builder().withHost(s.getHost()).withPort(s.getPort()).withDatabase(s.getDatabase());
    return standalone(credentials(b, details, ssl, options.timeout()).build(), resources, options);
  }

  private static RedisURI.Builder credentials(RedisURI.Builder b, RedisConnectionDetails d, boolean ssl, Duration timeout) {
    if (d.getPassword() != null) {
      if (d.getUsername() != null) b.withAuthentication(d.getUsername(), d.getPassword().toCharArray());
      else b.withPassword(d.getPassword().toCharArray());
    }
    return b.withSsl(ssl).withTimeout(timeout).withClientName("idem");
  }

  private static IdemStore standalone(RedisURI uri, ClientResources resources, RedisStore.Options options) {
    RedisClient client = resources == null ? RedisClient.create(uri) : RedisClient.create(resources, uri);
    client.setOptions(RedisStore.atMostOnce(ClientOptions.builder()).build());
    try {
      StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
      return owning(RedisStore.of(c, options), () -> {
        c.close();
        client.shutdown();
      });
    } catch (RuntimeException e) {
      client.shutdown();
      throw e;
    }
  }

  private static IdemStore cluster(RedisConnectionDetails details, boolean ssl, ClientResources resources,
                                   RedisStore.Options options) {
    List<RedisURI> nodes = new ArrayList<>();
    for (RedisConnectionDetails.Node n : details.getCluster().getNodes())
      nodes.add(credentials(RedisURI.builder().withHost(n.host()).withPort(n.port()), details, ssl, options.timeout()).build());
    RedisClusterClient client = resources == null ? RedisClusterClient.create(nodes) : RedisClusterClient.create(resources, nodes);
    client.setOptions(RedisStore.atMostOnce(ClusterClientOptions.builder()).build());
    try {
      StatefulRedisClusterConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
      return owning(RedisStore.of(c, options), () -> {
        c.close();
        client.shutdown();
      });
    } catch (RuntimeException e) {
      client.shutdown();
      throw e;
    }
  }

  /** The store, which closes the connection and client made for it. */
  private static IdemStore owning(IdemStore store, Runnable closer) {
    return new ForwardingStore(store) {
      @Override
      public void close() {
        try {
          inner.close();
        } finally {
          closer.run();
        }
      }
    };
  }
}
