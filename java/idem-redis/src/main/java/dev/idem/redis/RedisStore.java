package dev.idem.redis;

import dev.idem.core.Args;
import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.core.CommitOutcome;
import dev.idem.core.ConsumeOutcome;
import dev.idem.core.ExtendOutcome;
import dev.idem.core.IdemRecord;
import dev.idem.core.IdemStore;
import dev.idem.core.ListArgs;
import dev.idem.core.ListPage;
import dev.idem.core.LockExtendOutcome;
import dev.idem.core.LockOutcome;
import dev.idem.core.NotAppliedException;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.ProtocolFile;
import dev.idem.core.RecordState;
import dev.idem.core.ReleaseArgs;
import dev.idem.core.ReleaseOutcome;
import dev.idem.core.RestoreOutcome;
import dev.idem.core.StoreConfigurationException;
import dev.idem.core.StoreProtocolException;
import dev.idem.core.StoreTraits;
import dev.idem.core.TokenRestore;
import dev.idem.core.UnlockOutcome;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandInterruptedException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.api.sync.RedisKeyCommands;
import io.lettuce.core.api.sync.RedisServerCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.NettyCustomizer;
import io.netty.channel.Channel;
import io.netty.handler.flush.FlushConsolidationHandler;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The engine on Redis or a Redis Cluster, through Lettuce (docs/java.md; docs/design.md, "Redis in
 * detail"): each operation is one of the protocol/redis scripts, sent with EVALSHA (EVAL once
 * after NOSCRIPT), judged by the server's clock; keys are named as the C++ store names them
 * ({@link RedisKeys}), so this store and {@code idem serve} share records.
 *
 * <pre>{@code
 * IdemStore store = RedisStore.open("redis://127.0.0.1:6379?prefix=idem:");
 * IdemStore cluster = RedisStore.open("redis-cluster://10.0.0.1:7000,10.0.0.2:7000");
 * }</pre>
 *
 * <p>Failures: a call that cannot be sent (no connection) throws {@link NotAppliedException}; one
 * sent and not answered within the timeout, or whose connection was lost after sending, throws
 * {@link OutcomeUnknownException}. Commands are never re-sent by the driver after a reconnect
 * (Lettuce's replay is turned off for the stores this class opens), since a begin sent twice could
 * find its own claim in progress. At open, a server whose {@code maxmemory-policy} is not {@code
 * noeviction} is refused ({@link StoreConfigurationException}) unless {@code allow_eviction=true}:
 * an evicted record is a duplicate execution.
 *
 * <p>Thread safety: safe for concurrent use; one multiplexed connection carries every caller's
 * commands, pipelined.
 */
public final class RedisStore implements IdemStore {
  private static final StoreTraits STANDALONE = new StoreTraits("redis", true, false, false, true, true);
  private static final StoreTraits CLUSTER = new StoreTraits("redis-cluster", true, false, false, true, true);
  private static final long DEFAULT_MAX_BULK = 512L << 20;
  private static final String[] SCRIPTS = {"begin", "commit", "release", "abandon", "extend", "get", "remove",
      "issue_token", "consume_token", "restore_token", "lock", "unlock", "extend_lock"};

  private record Script(String name, byte[] text, String sha) {}

  private final Map<String, Script> scripts = new ConcurrentHashMap<>();
  private final String prefix;
  private final boolean cluster;
  private final RedisScriptingAsyncCommands<byte[], byte[]> async;
  private final StatefulRedisConnection<byte[], byte[]> standalone;
  private final StatefulRedisClusterConnection<byte[], byte[]> clustered;
  private final AutoCloseable owned;
  private final SecureRandom random = new SecureRandom();
  private long maxResultBytes = DEFAULT_MAX_BULK;

  /**
   * Options beside the connection.
   *
   * @param prefix every key starts with it (default "idem:"), so applications can share a Redis
   * @param timeout a call not answered within it is an unknown outcome (default 5 s)
   * @param allowEviction accept a server whose maxmemory-policy may evict records
   */
  public record Options(String prefix, Duration timeout, boolean allowEviction) {
    public Options {
      Objects.requireNonNull(prefix, "prefix");
      Args.positive(timeout, "timeout");
    }

    public static Options defaults() {
      return new Options("idem:", Duration.ofSeconds(5), false);
    }

    public Options withPrefix(String p) {
      return new Options(p, timeout, allowEviction);
    }
  }

  private RedisStore(String prefix, StatefulRedisConnection<byte[], byte[]> standalone,
                     StatefulRedisClusterConnection<byte[], byte[]> clustered, AutoCloseable owned) {
    this.prefix = prefix;
    this.standalone = standalone;
    this.clustered = clustered;
    this.cluster = clustered != null;
    this.async = cluster ? clustered.async() : standalone.async();
    this.owned = owned;
    for (String name : SCRIPTS) {
      byte[] text = (ProtocolFile.body(RedisStore.class, "redis/prelude.lua") + "\n"
          + ProtocolFile.body(RedisStore.class, "redis/" + name + ".lua")).getBytes(StandardCharsets.UTF_8);
      scripts.put(name, new Script(name, text, sha1(text)));
    }
  }

  private static String sha1(byte[] text) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(text));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Opens a store from an idem store URI: {@code redis://[user:pass@]host:port[/db][?prefix=P]} or
   * {@code redis-cluster://host:port[,host:port...][?prefix=P]}; also {@code allow_eviction=true}
   * and {@code timeout_ms=N}. The store owns the client it makes: {@link #close()} shuts it down.
   *
   * @throws IllegalArgumentException a malformed URI
   * @throws NotAppliedException the server cannot be reached
   * @throws StoreConfigurationException the server may evict records
   */
  public static RedisStore open(String uri) {
    Objects.requireNonNull(uri, "uri");
    boolean isCluster;
    String rest;
    if (uri.startsWith("redis://")) {
      isCluster = false;
      rest = uri.substring("redis://".length());
    } else if (uri.startsWith("redis-cluster://")) {
      isCluster = true;
      rest = uri.substring("redis-cluster://".length());
    } else {
      throw new IllegalArgumentException("redis: the URI must start with redis:// or redis-cluster://, got " + uri);
    }
    Options options = Options.defaults();
    int q = rest.indexOf('?');
    if (q >= 0) {
      for (String kv : rest.substring(q + 1).split("&")) {
        if (kv.isEmpty()) continue;
        int eq = kv.indexOf('=');
        String k = eq < 0 ? kv : kv.substring(0, eq), v = eq < 0 ? "" : URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8);
        switch (k) {
          case "prefix" -> options = new Options(v, options.timeout(), options.allowEviction());
          case "allow_eviction" -> options = new Options(options.prefix(), options.timeout(), parseBool(k, v));
          case "timeout_ms" -> options = new Options(options.prefix(), Duration.ofMillis(parseLong(k, v)), options.allowEviction());
          default -> throw new IllegalArgumentException("redis: unknown URI parameter " + k);
        }
      }
      rest = rest.substring(0, q);
    }
    String userInfo = null;
    int at = rest.lastIndexOf('@');
    if (at >= 0) {
      userInfo = rest.substring(0, at);
      rest = rest.substring(at + 1);
    }
    int db = 0;
    int slash = rest.indexOf('/');
    if (slash >= 0) {
      String d = rest.substring(slash + 1);
      if (!d.isEmpty()) db = (int) parseLong("db", d);
      rest = rest.substring(0, slash);
    }
    List<RedisURI> nodes = new ArrayList<>();
    for (String hostPort : rest.split(",")) {
      int colon = hostPort.lastIndexOf(':');
      if (colon <= 0) throw new IllegalArgumentException("redis: host:port expected, got \"" + hostPort + "\"");
      RedisURI.Builder b = RedisURI.builder().withHost(hostPort.substring(0, colon))
          .withPort((int) parseLong("port", hostPort.substring(colon + 1))).withTimeout(options.timeout());
      if (!isCluster) b.withDatabase(db);
      if (userInfo != null) {
        int c = userInfo.indexOf(':');
        String user = c < 0 ? "" : URLDecoder.decode(userInfo.substring(0, c), StandardCharsets.UTF_8);
        String pass = URLDecoder.decode(c < 0 ? userInfo : userInfo.substring(c + 1), StandardCharsets.UTF_8);
        if (user.isEmpty()) b.withPassword(pass.toCharArray());
        else b.withAuthentication(user, pass);
      }
      nodes.add(b.build());
    }
    if (!isCluster && nodes.size() != 1) throw new IllegalArgumentException("redis: one host:port, got " + rest);
    return isCluster ? cluster(nodes, options) : standalone(nodes.get(0), options);
  }

  private static boolean parseBool(String k, String v) {
    if (v.equals("true")) return true;
    if (v.equals("false")) return false;
    throw new IllegalArgumentException("redis: " + k + " must be true or false, got " + v);
  }

  private static long parseLong(String k, String v) {
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("redis: " + k + " must be a number, got " + v);
    }
  }

  /**
   * The client options every store needs, set on {@code b} (for a client of your own, {@link
   * #of}): the driver never re-sends a command after a reconnect (at most once: a begin sent twice
   * could find its own claim in progress), and commands made while disconnected fail at once (not
   * applied). A call's deadline is its wait for the answer (the connection's timeout), so commands
   * get no timer of their own ({@code timeoutCommands(false)}): one costs a timer task per command
   * on the driver's threads.
   */
  public static <B extends ClientOptions.Builder> B atMostOnce(B b) {
    b.autoReconnect(true).replayFilter(command -> true)
        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
        .timeoutOptions(TimeoutOptions.builder().timeoutCommands(false).build());
    return b;
  }

  /**
   * What the stores {@link #open} makes add to each channel, for a client of your own ({@code
   * ClientResources.builder().nettyCustomizer(RedisStore.flushConsolidation())}): its flushes are
   * consolidated (Netty's {@link FlushConsolidationHandler}), so that the commands many callers
   * send at once leave in one write, not one system call (and one read by the server) each. A
   * flush is put off only until the event loop has written what it was given; none is lost.
   */
  public static NettyCustomizer flushConsolidation() {
    return new NettyCustomizer() {
      @Override
      public void afterChannelInitialized(Channel channel) {
        channel.pipeline().addFirst("idem-flush-consolidation", new FlushConsolidationHandler(
            FlushConsolidationHandler.DEFAULT_EXPLICIT_FLUSH_AFTER_FLUSHES, true));
      }
    };
  }

  private static ClientResources resources() {
    return ClientResources.builder().nettyCustomizer(flushConsolidation()).build();
  }

  private static RedisStore standalone(RedisURI uri, Options options) {
    ClientResources resources = resources();
    RedisClient client = RedisClient.create(resources, uri);
    client.setOptions(atMostOnce(ClientOptions.builder()).build());
    AutoCloseable owned = () -> {
      client.shutdown();
      resources.shutdown();
    };
    try {
      StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
      return opened(new RedisStore(options.prefix(), c, null, owned), options);
    } catch (RuntimeException e) {
      closeQuietly(owned);
      throw translate(e, "connect");
    }
  }

  private static RedisStore cluster(List<RedisURI> nodes, Options options) {
    ClientResources resources = resources();
    RedisClusterClient client = RedisClusterClient.create(resources, nodes);
    client.setOptions(atMostOnce(ClusterClientOptions.builder()).build());
    AutoCloseable owned = () -> {
      client.shutdown();
      resources.shutdown();
    };
    try {
      StatefulRedisClusterConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
      return opened(new RedisStore(options.prefix(), null, c, owned), options);
    } catch (RuntimeException e) {
      closeQuietly(owned);
      throw translate(e, "connect");
    }
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      // closing after a failure: the failure is what to tell
    }
  }

  /**
   * A store on a connection the caller made (and keeps: {@link #close()} leaves it open). The
   * connection must use {@link ByteArrayCodec}; configure its client as {@link #open} does: {@link
   * #atMostOnce} on its options (required), {@link #flushConsolidation()} on its resources (for
   * throughput).
   */
  public static RedisStore of(StatefulRedisConnection<byte[], byte[]> connection, Options options) {
    return opened(new RedisStore(options.prefix(), connection, null, null), options);
  }

  /** The same on a Redis Cluster connection. */
  public static RedisStore of(StatefulRedisClusterConnection<byte[], byte[]> connection, Options options) {
    return opened(new RedisStore(options.prefix(), null, connection, null), options);
  }

  private static RedisStore opened(RedisStore s, Options options) {
    try {
      if (s.cluster) s.clustered.setTimeout(options.timeout());
      else s.standalone.setTimeout(options.timeout());
      s.ping();
      if (!options.allowEviction()) s.refuseEviction();
      s.readMaxBulk();
      return s;
    } catch (RuntimeException e) {
      s.close();
      throw e;
    }
  }

  private List<RedisServerCommands<byte[], byte[]>> masters() {
    if (!cluster) return List.of(standalone.sync());
    List<RedisServerCommands<byte[], byte[]>> out = new ArrayList<>();
    for (RedisClusterNode n : clustered.getPartitions()) {
      if (n.is(RedisClusterNode.NodeFlag.UPSTREAM)) out.add(clustered.getConnection(n.getNodeId()).sync());
    }
    return out;
  }

  private void refuseEviction() {
    for (RedisServerCommands<byte[], byte[]> m : masters()) {
      String info;
      try {
        info = m.info("memory");
      } catch (RuntimeException e) {
        throw translate(e, "INFO");
      }
      String policy = "";
      for (String line : info.split("\r?\n")) if (line.startsWith("maxmemory_policy:")) policy = line.substring(17).trim();
      if (!policy.equals("noeviction"))
        throw new StoreConfigurationException((cluster ? "redis-cluster" : "redis") + ": maxmemory-policy is "
            + (policy.isEmpty() ? "unknown" : policy) + ", so Redis may evict idempotency records under memory pressure, "
            + "and an evicted record is a duplicate execution. Set maxmemory-policy to noeviction, or accept the risk "
            + "with allow_eviction=true");
    }
  }

  private void readMaxBulk() {
    long least = DEFAULT_MAX_BULK;
    for (RedisServerCommands<byte[], byte[]> m : masters()) {
      try {
        Map<String, String> v = m.configGet("proto-max-bulk-len");
        String n = v.get("proto-max-bulk-len");
        if (n != null) least = Math.min(least, Long.parseLong(n));
      } catch (RuntimeException e) {
        // CONFIG forbidden (managed services): Redis's default.
      }
    }
    maxResultBytes = least;
  }

  @Override
  public StoreTraits traits() {
    return cluster ? CLUSTER : STANDALONE;
  }

  @Override
  public long maxResultBytes() {
    return maxResultBytes;
  }

  // ---- the scripts --------------------------------------------------------------------------

  // One script, awaited for at most the connection's timeout: the driver's own synchronous API
  // does the same through a reflective proxy; this is the call without it. A timeout cancels the
  // command and throws RedisCommandTimeoutException, as the synchronous API does.
  private Object eval(String name, ScriptOutputType type, byte[][] keys, byte[]... args) {
    Script s = scripts.get(name);
    try {
      try {
        return await(async.evalsha(s.sha(), type, keys, args));
      } catch (RedisNoScriptException e) {
        return await(async.eval(s.text(), type, keys, args));  // a restart or SCRIPT FLUSH: once with the text
      }
    } catch (RuntimeException e) {
      throw translate(e, name);
    }
  }

  private Object await(RedisFuture<Object> f) {
    Duration timeout = cluster ? clustered.getTimeout() : standalone.getTimeout();
    return LettuceFutures.awaitOrCancel(f, timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** What a driver's exception means for the caller (docs/design.md, "Calling a store"). */
  static RuntimeException translate(RuntimeException e, String op) {
    String what = "redis: " + op + ": " + e.getMessage();
    if (e instanceof RedisCommandTimeoutException || e instanceof RedisCommandInterruptedException)
      return new OutcomeUnknownException(what + " (no answer: it may have been applied)", e);
    if (e instanceof RedisConnectionException) return new NotAppliedException(what, e);
    if (e instanceof RedisCommandExecutionException) {
      String m = String.valueOf(e.getMessage());
      for (String p : new String[] {"NOAUTH", "NOPERM", "WRONGPASS"})
        if (m.startsWith(p)) return new StoreConfigurationException(what, e);
      for (String p : new String[] {"OOM", "CLUSTERDOWN", "TRYAGAIN", "LOADING", "BUSY", "MASTERDOWN", "READONLY", "NOREPLICAS"})
        if (m.startsWith(p)) return new NotAppliedException(what, e);
      return new StoreProtocolException(what, e);
    }
    if (e instanceof RedisException) {
      String m = String.valueOf(e.getMessage());
      if (m.contains("not connected") || m.contains("Connection closed") && !m.contains("after")) {
        return m.contains("not connected") ? new NotAppliedException(what, e)
            : new OutcomeUnknownException(what + " (the connection was lost: it may have been applied)", e);
      }
      return new OutcomeUnknownException(what + " (it may have been applied)", e);
    }
    return e;
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] num(long v) {
    return Long.toString(v).getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[][] keys(byte[]... k) {
    return k;
  }

  private static long flag(Object reply, String op) {
    if (reply instanceof Long l) return l;
    throw new StoreProtocolException("redis: unexpected reply to " + op + ": " + reply);
  }

  private static Duration us(long micros) {
    return Duration.ofNanos(Math.multiplyExact(Math.max(micros, 1), 1000L));
  }

  // ---- records ------------------------------------------------------------------------------

  @Override
  public BeginOutcome begin(BeginArgs a) {
    RedisKeys.Pair k = RedisKeys.record(prefix, a.scope(), a.key());
    Object reply = eval("begin", ScriptOutputType.MULTI, keys(k.main(), k.fence()), a.fingerprint(),
        num(Args.micros(a.lease())), num(Args.micros(a.retention())), bytes(a.owner()));
    if (reply instanceof List<?> r && !r.isEmpty() && r.get(0) instanceof Long kind) {
      try {
        switch (kind.intValue()) {
          case 0:
            return new BeginOutcome.Acquired((Long) r.get(1), (Long) r.get(2) != 0, (Long) r.get(3));
          case 1:
            return new BeginOutcome.Replay((Long) r.get(1), (byte[]) r.get(2), us((Long) r.get(3)));
          case 2:
            return new BeginOutcome.InProgress(us((Long) r.get(1)));
          case 3:
            return new BeginOutcome.Mismatch();
          default:
            break;
        }
      } catch (ClassCastException | IndexOutOfBoundsException e) {
        throw new StoreProtocolException("redis: unexpected reply to begin: " + r, e);
      }
    }
    throw new StoreProtocolException("redis: unexpected reply to begin: " + reply);
  }

  @Override
  public CommitOutcome commit(CommitArgs a) {
    if (a.result().length > maxResultBytes)
      throw new IllegalArgumentException("the result is " + a.result().length + " bytes, more than the " + maxResultBytes
          + " bytes this " + traits().name() + " store can hold");
    RedisKeys.Pair k = RedisKeys.record(prefix, a.scope(), a.key());
    Object r = eval("commit", ScriptOutputType.INTEGER, keys(k.main(), k.fence()), num(a.fence()), a.result(),
        num(Args.micros(a.retention())), a.overUncertain());
    return flag(r, "commit") == 1 ? CommitOutcome.COMMITTED : CommitOutcome.FENCED;
  }

  @Override
  public ReleaseOutcome release(ReleaseArgs a) {
    RedisKeys.Pair k = RedisKeys.record(prefix, a.scope(), a.key());
    Object r;
    if (a.restoreToken().isEmpty()) {
      r = eval("release", ScriptOutputType.INTEGER, keys(k.main()), num(a.fence()));
    } else {
      TokenRestore t = a.restoreToken().get();
      if (cluster && !RedisKeys.sameSlot(a.scope(), a.key(), t.token()))
        throw new IllegalArgumentException("redis-cluster: a release can restore a token only when the record's key is"
            + " the token or ends in ':' and the token (they then share a slot)");
      r = eval("release", ScriptOutputType.INTEGER, keys(k.main(), RedisKeys.token(prefix, a.scope(), t.token())),
          num(a.fence()), num(Args.micros(t.ttl())));
    }
    return flag(r, "release") == 1 ? ReleaseOutcome.RELEASED : ReleaseOutcome.FENCED;
  }

  @Override
  public ReleaseOutcome abandon(String scope, String key, String owner) {
    Args.scope(scope);
    Args.key(key);
    Args.nonEmpty(owner, "owner");
    Object r = eval("abandon", ScriptOutputType.INTEGER, keys(RedisKeys.record(prefix, scope, key).main()), bytes(owner));
    return flag(r, "abandon") == 1 ? ReleaseOutcome.RELEASED : ReleaseOutcome.FENCED;
  }

  @Override
  public ExtendOutcome extend(String scope, String key, long fence, Duration lease) {
    Args.scope(scope);
    Args.key(key);
    Args.positive(lease, "lease");
    RedisKeys.Pair k = RedisKeys.record(prefix, scope, key);
    Object r = eval("extend", ScriptOutputType.INTEGER, keys(k.main(), k.fence()), num(fence), num(Args.micros(lease)));
    return flag(r, "extend") == 1 ? ExtendOutcome.EXTENDED : ExtendOutcome.FENCED;
  }

  @Override
  public Optional<IdemRecord> get(String scope, String key) {
    Args.scope(scope);
    Args.key(key);
    return read(RedisKeys.record(prefix, scope, key).main(), scope, key);
  }

  private Optional<IdemRecord> read(byte[] redisKey, String scope, String key) {
    Object reply = eval("get", ScriptOutputType.MULTI, keys(redisKey));
    // A nil reply (absent or expired) comes as null, an empty list or a list of one null.
    if (reply == null || reply instanceof List<?> l && (l.isEmpty() || l.size() == 1 && l.get(0) == null))
      return Optional.empty();
    if (!(reply instanceof List<?> r) || r.size() < 7) throw new StoreProtocolException("redis: unexpected reply to get: " + reply);
    try {
      RecordState state = "d".equals(text(r.get(0))) ? RecordState.DONE : RecordState.PENDING;
      Optional<Instant> lease = state == RecordState.PENDING ? Optional.of(instant(Long.parseLong(text(r.get(3)))))
          : Optional.empty();
      return Optional.of(new IdemRecord(scope, key, state, Long.parseLong(text(r.get(1))), (byte[]) r.get(2), lease,
          instant(Long.parseLong(text(r.get(4)))), (byte[]) r.get(5), text(r.get(6))));
    } catch (RuntimeException e) {
      throw new StoreProtocolException("redis: unexpected reply to get: " + reply, e);
    }
  }

  private static String text(Object o) {
    return new String((byte[]) o, StandardCharsets.UTF_8);
  }

  private static Instant instant(long micros) {
    return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000L);
  }

  @Override
  public boolean delete(String scope, String key) {
    Args.scope(scope);
    Args.key(key);
    return flag(eval("remove", ScriptOutputType.INTEGER, keys(RedisKeys.record(prefix, scope, key).main())), "remove") == 1;
  }

  // SCAN with MATCH over record keys, unordered; a cluster's masters one after another, in the
  // order of their first slots. The cursor: "s<slot>.<scan cursor>.<skip>", as the C++ store's.
  private static final int SCAN_COUNT = 1000, MAX_SCAN_STEPS = 8;

  @Override
  public ListPage list(ListArgs a) {
    int slot = 0;
    String scan = "0";
    long skip = 0;
    TreeMap<Integer, String> masters = new TreeMap<>();  // first slot → node id
    if (cluster) {
      for (RedisClusterNode n : clustered.getPartitions()) {
        if (!n.is(RedisClusterNode.NodeFlag.UPSTREAM) || n.getSlots().isEmpty()) continue;
        masters.put(n.getSlots().stream().min(Integer::compare).orElseThrow(), n.getNodeId());
      }
      if (masters.isEmpty()) return new ListPage(List.of(), "");
      slot = masters.firstKey();
    }
    if (!a.cursor().isEmpty()) {
      String[] p = a.cursor().startsWith("s") ? a.cursor().substring(1).split("\\.", -1) : new String[0];
      try {
        if (p.length != 3) throw new NumberFormatException();
        slot = Integer.parseInt(p[0]);
        scan = Long.toUnsignedString(Long.parseUnsignedLong(p[1]));
        skip = Long.parseLong(p[2]);
        if (slot < 0 || slot >= 16384 || skip < 0) throw new NumberFormatException();
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("cursor: not a cursor this store handed out");
      }
    }
    byte[] pattern = RedisKeys.recordPattern(prefix, a.scope().orElse(null), a.keyPrefix());
    List<IdemRecord> page = new ArrayList<>();
    for (int steps = 0; steps < MAX_SCAN_STEPS; steps++) {
      RedisKeyCommands<byte[], byte[]> node;
      if (cluster) {
        Map.Entry<Integer, String> m = masters.floorEntry(slot);
        if (m == null) m = masters.firstEntry();
        node = clustered.getConnection(m.getValue()).sync();
      } else {
        node = standalone.sync();
      }
      KeyScanCursor<byte[]> step;
      try {
        step = node.scan(ScanCursor.of(scan), ScanArgs.Builder.matches(pattern).limit(SCAN_COUNT));
      } catch (RuntimeException e) {
        throw translate(e, "SCAN");
      }
      List<byte[]> found = step.getKeys();
      long at = skip;
      for (; at < found.size() && page.size() < a.limit(); at++) {
        String[] id = RedisKeys.parseRecord(prefix, found.get((int) at));
        if (id == null) continue;
        read(found.get((int) at), id[0], id[1]).filter(a::matches).ifPresent(page::add);
      }
      if (at < found.size()) return new ListPage(page, "s" + slot + "." + scan + "." + at);  // the page is full
      skip = 0;
      if (!step.isFinished()) {
        scan = step.getCursor();
      } else {
        scan = "0";
        Integer next = cluster ? masters.higherKey(slot) : null;
        if (next == null) return new ListPage(page, "");
        slot = next;
      }
      if (page.size() >= a.limit()) break;
    }
    return new ListPage(page, "s" + slot + "." + scan + ".0");
  }

  /** Redis expires keys by itself: nothing to sweep. */
  @Override
  public long sweep() {
    return 0;
  }

  // ---- tokens -------------------------------------------------------------------------------

  @Override
  public String issueToken(String scope, Duration ttl) {
    Args.scope(scope);
    Args.positive(ttl, "ttl");
    byte[] bits = new byte[24];
    random.nextBytes(bits);
    String token = Base64.getUrlEncoder().withoutPadding().encodeToString(bits);
    flag(eval("issue_token", ScriptOutputType.INTEGER, keys(RedisKeys.token(prefix, scope, token)), num(Args.micros(ttl))),
        "issue_token");
    return token;
  }

  @Override
  public ConsumeOutcome consumeToken(String scope, String token) {
    Args.scope(scope);
    Args.nonEmpty(token, "token");
    Object r = eval("consume_token", ScriptOutputType.INTEGER, keys(RedisKeys.token(prefix, scope, token)));
    return flag(r, "consume_token") == 1 ? ConsumeOutcome.CONSUMED : ConsumeOutcome.INVALID;
  }

  @Override
  public RestoreOutcome restoreToken(String scope, String token, Duration ttl) {
    Args.scope(scope);
    Args.nonEmpty(token, "token");
    Args.positive(ttl, "ttl");
    Object r = eval("restore_token", ScriptOutputType.INTEGER, keys(RedisKeys.token(prefix, scope, token)),
        num(Args.micros(ttl)));
    return flag(r, "restore_token") == 1 ? RestoreOutcome.RESTORED : RestoreOutcome.INVALID;
  }

  // ---- locks --------------------------------------------------------------------------------

  @Override
  public LockOutcome lock(String name, String owner, Duration ttl) {
    Args.nonEmpty(name, "lock name");
    Args.nonEmpty(owner, "lock owner");
    Args.positive(ttl, "ttl");
    RedisKeys.Pair k = RedisKeys.lock(prefix, name);
    Object reply = eval("lock", ScriptOutputType.MULTI, keys(k.main(), k.fence()), bytes(owner), num(Args.micros(ttl)));
    if (reply instanceof List<?> r && r.size() == 2 && r.get(0) instanceof Long kind && r.get(1) instanceof Long v)
      return kind == 0 ? new LockOutcome.Locked(v) : new LockOutcome.Busy(us(v));
    throw new StoreProtocolException("redis: unexpected reply to lock: " + reply);
  }

  @Override
  public UnlockOutcome unlock(String name, String owner) {
    Args.nonEmpty(name, "lock name");
    Args.nonEmpty(owner, "lock owner");
    Object r = eval("unlock", ScriptOutputType.INTEGER, keys(RedisKeys.lock(prefix, name).main()), bytes(owner));
    return flag(r, "unlock") == 1 ? UnlockOutcome.RELEASED : UnlockOutcome.NOT_OWNER;
  }

  @Override
  public LockExtendOutcome extendLock(String name, String owner, Duration ttl) {
    Args.nonEmpty(name, "lock name");
    Args.nonEmpty(owner, "lock owner");
    Args.positive(ttl, "ttl");
    RedisKeys.Pair k = RedisKeys.lock(prefix, name);
    Object r = eval("extend_lock", ScriptOutputType.INTEGER, keys(k.main(), k.fence()), bytes(owner), num(Args.micros(ttl)));
    return flag(r, "extend_lock") == 1 ? LockExtendOutcome.EXTENDED : LockExtendOutcome.NOT_OWNER;
  }

  @Override
  public void ping() {
    try {
      if (cluster) clustered.sync().ping();
      else standalone.sync().ping();
    } catch (RuntimeException e) {
      throw translate(e, "PING");
    }
  }

  @Override
  public void close() {
    if (owned == null) return;
    try {
      if (cluster) clustered.close();
      else standalone.close();
      owned.close();
    } catch (Exception e) {
      // closing: nothing to tell
    }
  }
}
