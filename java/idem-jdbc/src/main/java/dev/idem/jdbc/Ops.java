package dev.idem.jdbc;

import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.core.CommitOutcome;
import dev.idem.core.ConsumeOutcome;
import dev.idem.core.ExtendOutcome;
import dev.idem.core.IdemRecord;
import dev.idem.core.ListArgs;
import dev.idem.core.LockExtendOutcome;
import dev.idem.core.LockOutcome;
import dev.idem.core.ProtocolFile;
import dev.idem.core.RecordState;
import dev.idem.core.ReleaseArgs;
import dev.idem.core.ReleaseOutcome;
import dev.idem.core.RestoreOutcome;
import dev.idem.core.StoreProtocolException;
import dev.idem.core.UnlockOutcome;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The operations of one SQL dialect on a connection, as the protocol files say, without
 * committing: {@link JdbcStore} runs each in a transaction of its own, {@link TransactionalClaims}
 * in the caller's. Values are bound as parameters (protocol/README.md allows it for JDBC).
 */
abstract class Ops {
  static final long GRACE_MICROS = 3_600_000_000L;
  final String prefix;
  final String dialect;
  // Filled lazily by every thread that runs an operation: concurrent.
  private final Map<String, List<Sql>> files = new ConcurrentHashMap<>();
  int queryTimeoutSeconds;

  Ops(String dialect, String prefix) {
    this.dialect = dialect;
    this.prefix = prefix;
  }

  /** The statements of protocol/{dialect}/{name}.sql, placeholders expanded. */
  List<Sql> sql(String name) {
    return files.computeIfAbsent(name, n -> {
      String now = ProtocolFile.body(Ops.class, dialect + "/now.sql");
      return Sql.all(ProtocolFile.expand(ProtocolFile.body(Ops.class, dialect + "/" + n + ".sql"), prefix, now,
          GRACE_MICROS));
    });
  }

  Sql one(String name) {
    return sql(name).get(0);
  }

  PreparedStatement prepare(Connection c, Sql sql, Object... args) throws SQLException {
    PreparedStatement ps = c.prepareStatement(sql.text());
    if (queryTimeoutSeconds > 0) ps.setQueryTimeout(queryTimeoutSeconds);
    int i = 1;
    for (int p : sql.params()) {
      Object v = args[p - 1];
      if (v instanceof byte[] b) ps.setBytes(i, b);
      else if (v instanceof Long l) ps.setLong(i, l);
      else if (v instanceof Integer n) ps.setInt(i, n);
      else ps.setString(i, (String) v);
      i++;
    }
    return ps;
  }

  int update(Connection c, Sql sql, Object... args) throws SQLException {
    try (PreparedStatement ps = prepare(c, sql, args)) {
      return ps.executeUpdate();
    }
  }

  /** Runs a statement that may answer rows; true when it answered one. */
  boolean anyRow(Connection c, Sql sql, Object... args) throws SQLException {
    try (PreparedStatement ps = prepare(c, sql, args); ResultSet rs = ps.executeQuery()) {
      return rs.next();
    }
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String text(byte[] b) {
    return b == null ? "" : new String(b, StandardCharsets.UTF_8);
  }

  static Duration us(long micros) {
    return Duration.ofNanos(Math.multiplyExact(Math.max(micros, 1), 1000L));
  }

  static Instant instant(long micros) {
    return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000L);
  }

  static long micros(Instant i) {
    return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
  }

  /** A row of get's and list's: scope, key, state, fence, fingerprint, lease_until, expires_at, result, owner. */
  static IdemRecord record(ResultSet rs) throws SQLException {
    String state = rs.getString(3);
    long lease = rs.getLong(6);
    boolean noLease = rs.wasNull();
    RecordState s = "done".equals(state) ? RecordState.DONE : RecordState.PENDING;
    return new IdemRecord(text(rs.getBytes(1)), text(rs.getBytes(2)), s, rs.getLong(4), rs.getBytes(5),
        s == RecordState.PENDING && !noLease ? Optional.of(instant(lease)) : Optional.empty(), instant(rs.getLong(7)),
        rs.getBytes(8), text(rs.getBytes(9)));
  }

  static BeginOutcome beginRow(ResultSet rs) throws SQLException {
    if (!rs.next()) return null;
    String kind = rs.getString(1);
    return switch (kind) {
      case "a" -> new BeginOutcome.Acquired(rs.getLong(2), false, 0);
      case "r" -> new BeginOutcome.Acquired(rs.getLong(2), true, rs.getLong(5));
      case "d" -> new BeginOutcome.Replay(rs.getLong(2), rs.getBytes(3), us(rs.getLong(4)));
      case "i" -> new BeginOutcome.InProgress(us(rs.getLong(4)));
      case "m" -> new BeginOutcome.Mismatch();
      case "x" -> null;
      default -> throw new StoreProtocolException(kindError("begin", kind));
    };
  }

  static String kindError(String op, String kind) {
    return "unexpected answer to " + op + ": " + kind;
  }

  // ---- the operations -------------------------------------------------------------------------

  /** Null: run again. */
  abstract BeginOutcome begin(Connection c, BeginArgs a) throws SQLException;

  /** Null: run again. */
  abstract CommitOutcome commit(Connection c, CommitArgs a) throws SQLException;

  abstract ReleaseOutcome release(Connection c, ReleaseArgs a) throws SQLException;

  abstract boolean changed(Connection c, String op, Object... args) throws SQLException;

  ReleaseOutcome abandon(Connection c, String scope, String key, String owner) throws SQLException {
    return changed(c, "abandon", b(scope), b(key), b(owner)) ? ReleaseOutcome.RELEASED : ReleaseOutcome.FENCED;
  }

  ExtendOutcome extend(Connection c, String scope, String key, long fence, long leaseUs) throws SQLException {
    return changed(c, "extend", b(scope), b(key), fence, leaseUs) ? ExtendOutcome.EXTENDED : ExtendOutcome.FENCED;
  }

  Optional<IdemRecord> get(Connection c, String scope, String key) throws SQLException {
    try (PreparedStatement ps = prepare(c, one("get"), b(scope), b(key)); ResultSet rs = ps.executeQuery()) {
      return rs.next() ? Optional.of(record(rs)) : Optional.empty();
    }
  }

  boolean remove(Connection c, String scope, String key) throws SQLException {
    return changed(c, "remove", b(scope), b(key));
  }

  /** At most limit + 1 records, newest first, after the cursor's position. */
  List<IdemRecord> list(Connection c, ListArgs a, long afterAt, String afterScope, String afterKey, boolean after)
      throws SQLException {
    long flags = 0;
    if (a.scope().isPresent()) flags |= 1;
    if (a.state().isPresent()) flags |= 2;
    byte[] keyEnd = keyEnd(b(a.keyPrefix()));
    if (keyEnd != null) flags |= 4;
    if (after) flags |= 8;
    List<IdemRecord> out = new ArrayList<>();
    try (PreparedStatement ps = prepare(c, one("list"), flags, b(a.scope().orElse("")),
        a.state().map(RecordState::wireName).orElse("pending"), b(a.keyPrefix()), keyEnd == null ? new byte[0] : keyEnd,
        afterAt, b(afterScope), b(afterKey), (long) a.limit() + 1);
         ResultSet rs = ps.executeQuery()) {
      while (rs.next()) out.add(record(rs));
    }
    return out;
  }

  /** The least byte string greater than every string starting with {@code prefix}; null when none (or no prefix). */
  static byte[] keyEnd(byte[] prefix) {
    int n = prefix.length;
    while (n > 0 && prefix[n - 1] == (byte) 0xff) n--;
    if (n == 0) return null;
    byte[] end = java.util.Arrays.copyOf(prefix, n);
    end[n - 1]++;
    return end;
  }

  void issueToken(Connection c, String scope, String token, long ttlUs) throws SQLException {
    Sql s = one("issue_token");
    if (dialect.equals("postgres")) anyRow(c, s, b(scope), b(token), ttlUs);
    else update(c, s, b(scope), b(token), ttlUs);
  }

  ConsumeOutcome consume(Connection c, String scope, String token) throws SQLException {
    return changed(c, "consume_token", b(scope), b(token)) ? ConsumeOutcome.CONSUMED : ConsumeOutcome.INVALID;
  }

  RestoreOutcome restore(Connection c, String scope, String token, long ttlUs) throws SQLException {
    return changed(c, "restore_token", b(scope), b(token), ttlUs) ? RestoreOutcome.RESTORED : RestoreOutcome.INVALID;
  }

  /** Null: run again. */
  abstract LockOutcome lock(Connection c, String name, String owner, long ttlUs) throws SQLException;

  UnlockOutcome unlock(Connection c, String name, String owner) throws SQLException {
    return changed(c, "unlock", b(name), b(owner)) ? UnlockOutcome.RELEASED : UnlockOutcome.NOT_OWNER;
  }

  LockExtendOutcome extendLock(Connection c, String name, String owner, long ttlUs) throws SQLException {
    return changed(c, "extend_lock", b(name), b(owner), ttlUs) ? LockExtendOutcome.EXTENDED : LockExtendOutcome.NOT_OWNER;
  }

  /** One sweep step; how many records (not tombstones) went, or -1 when nothing more to do. */
  abstract long[] sweep(Connection c, String step) throws SQLException;
}
