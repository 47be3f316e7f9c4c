package dev.idem.bench;

import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.redis.RedisKeys;
import dev.idem.redis.RedisStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * begin+commit pairs on Redis ($IDEM_BENCH_REDIS_URL): the Java engine, and the seeds' own recipe
 * (SET NX EX, then an owner-checked delete in Lua) over the same Lettuce, on the same server. One
 * operation is one pair (two round trips each). bench/java/run runs each on 4, 16 and 256 threads.
 */
@State(Scope.Benchmark)
public class RedisBench {
  private static final String PREFIX = "idem-bench:";
  private static final byte[] RESULT = "J\u0011\u0000\u0000\u0000{\"order_id\":4217}".getBytes(StandardCharsets.ISO_8859_1);
  private static final String DELETE_IF_OWNER =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";
  RedisStore store;
  RedisClient client;
  StatefulRedisConnection<String, String> plain;
  final AtomicLong next = new AtomicLong();
  final AtomicLong engineKeys = new AtomicLong();
  final String run = UUID.randomUUID().toString().substring(0, 8);

  @Setup(Level.Trial)
  public void open() {
    String url = System.getenv().getOrDefault("IDEM_BENCH_REDIS_URL", "redis://127.0.0.1:16379");
    store = RedisStore.open(url + "?prefix=" + PREFIX);
    client = RedisClient.create(url);
    plain = client.connect();
  }

  @TearDown(Level.Trial)
  public void close() {
    // A shared server: the records expire by themselves, but each begin leaves a fence key for a
    // day (protocol/README.md); the benchmark's are removed here.
    try (StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE)) {
      List<RedisFuture<Long>> pending = new ArrayList<>();
      List<byte[]> batch = new ArrayList<>();
      for (long n = 1, last = engineKeys.get(); n <= last; n++) {
        RedisKeys.Pair k = RedisKeys.record(PREFIX, "s", "bench-" + run + "-" + n);
        batch.add(k.main());
        batch.add(k.fence());
        if (batch.size() >= 1000 || n == last) {
          pending.add(c.async().unlink(batch.toArray(new byte[0][])));
          batch.clear();
        }
        if (pending.size() >= 64) {
          pending.forEach(f -> f.toCompletableFuture().join());
          pending.clear();
        }
      }
      pending.forEach(f -> f.toCompletableFuture().join());
    }
    plain.close();
    client.shutdown();
    store.close();
  }

  /** The engine: a begin that acquires, then a commit of a small JSON result. */
  @Benchmark
  public Object engineBeginCommit() {
    String key = "bench-" + run + "-" + engineKeys.incrementAndGet();
    BeginOutcome.Acquired a = (BeginOutcome.Acquired) store.begin(
        new BeginArgs("s", key, null, Duration.ofSeconds(30), Duration.ofSeconds(60)));
    return store.commit(new CommitArgs("s", key, a.fence(), RESULT, Duration.ofSeconds(60)));
  }

  /** The blog recipe: SET key owner NX EX, then the owner-checked delete (no fence, no replay). */
  @Benchmark
  public Object recipeSetNxDelete() {
    RedisCommands<String, String> r = plain.sync();
    String key = "idem-bench:recipe-" + run + "-" + next.incrementAndGet();
    String owner = "o";
    r.set(key, owner, SetArgs.Builder.nx().ex(30));
    return r.eval(DELETE_IF_OWNER, ScriptOutputType.INTEGER, new String[] {key}, owner);
  }
}
