package dev.idem.jdbc;

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
import dev.idem.core.ReleaseArgs;
import dev.idem.core.ReleaseOutcome;
import dev.idem.core.RestoreOutcome;
import dev.idem.core.StoreConfigurationException;
import dev.idem.core.StoreTraits;
import dev.idem.core.UnlockOutcome;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The engine on MySQL/MariaDB or PostgreSQL over a {@link DataSource} (docs/java.md; docs/design.md,
 * "PostgreSQL in detail", "MySQL in detail"): each operation runs the statements of its
 * protocol/ file on a connection of the pool, in a transaction of its own, judged by the server's
 * clock, on the tables the C++ store uses (so this store and {@code idem serve} share records).
 *
 * <pre>{@code
 * HikariDataSource ds = ...;                                  // READ COMMITTED recommended
 * IdemStore store = JdbcStore.mysql(ds, JdbcStore.Options.defaults());
 * }</pre>
 *
 * <p>{@link #transactional()} runs claims inside the caller's own transaction instead.
 *
 * <p>Failures: no connection, or a statement the server refused and rolled back: {@link
 * NotAppliedException}. A connection lost, or no answer within the timeout, after a statement that
 * commits by itself (PostgreSQL) or during the COMMIT (MySQL): {@link OutcomeUnknownException}.
 * Deadlocks and serialization failures are run again (up to 64 times), as are statements that met
 * a row written after their snapshot. Missing tables (opened with {@code createSchema = false}), a
 * wrong password: {@link StoreConfigurationException}.
 *
 * <p>Thread safety: safe for concurrent use; each call borrows a connection of its own.
 */
public final class JdbcStore implements IdemStore {
  private static final Pattern PREFIX = Pattern.compile("[a-z_][a-z0-9_]{0,39}");
  private static final int MAX_RETRIES = 64;

  /** The dialect of the server behind the DataSource. */
  public enum Dialect {
    MYSQL,
    POSTGRES
  }

  /**
   * Options beside the DataSource.
   *
   * @param tablePrefix the tables are {@code <prefix>records}, {@code tokens}, {@code locks}
   *     (default "idem_"; [a-z_][a-z0-9_]*, at most 40 characters)
   * @param createSchema run protocol/&lt;dialect&gt;/schema.sql at open (default true); false for a
   *     database whose tables a DBA created ({@code idem schema --store URI} prints the DDL)
   * @param timeout a statement not answered within it is an unknown outcome (default 5 s)
   */
  public record Options(String tablePrefix, boolean createSchema, Duration timeout) {
    public Options {
      if (!PREFIX.matcher(Objects.requireNonNull(tablePrefix, "tablePrefix")).matches())
        throw new IllegalArgumentException("tablePrefix must be [a-z_][a-z0-9_]*, at most 40 characters, got \""
            + tablePrefix + "\"");
      Args.positive(timeout, "timeout");
    }

    public static Options defaults() {
      return new Options("idem_", true, Duration.ofSeconds(5));
    }

    public Options withTablePrefix(String p) {
      return new Options(p, createSchema, timeout);
    }

    public Options withCreateSchema(boolean create) {
      return new Options(tablePrefix, create, timeout);
    }
  }

  private final DataSource dataSource;
  private final Dialect dialect;
  private final Ops ops;
  private final StoreTraits traits;
  private final long maxResultBytes;
  private final SecureRandom random = new SecureRandom();

  private JdbcStore(DataSource dataSource, Dialect dialect, Options options) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.dialect = dialect;
    this.ops = dialect == Dialect.MYSQL ? new MySqlOps(options.tablePrefix()) : new PostgresOps(options.tablePrefix());
    this.ops.queryTimeoutSeconds = (int) Math.max(1, (options.timeout().toMillis() + 999) / 1000);
    this.traits = new StoreTraits(dialect == Dialect.MYSQL ? "mysql" : "postgres", false, true, true, true, true);
    if (options.createSchema()) createSchema();
    this.maxResultBytes = dialect == Dialect.MYSQL ? readMaxResult() : ((1L << 30) - 1) - (64L << 10);
    ping();
  }

  /** A store on MySQL ≥ 8.0 or MariaDB ≥ 10.6 (InnoDB). */
  public static JdbcStore mysql(DataSource dataSource, Options options) {
    return new JdbcStore(dataSource, Dialect.MYSQL, options);
  }

  /** A store on PostgreSQL. */
  public static JdbcStore postgres(DataSource dataSource, Options options) {
    return new JdbcStore(dataSource, Dialect.POSTGRES, options);
  }

  public Dialect dialect() {
    return dialect;
  }

  /** Claims inside the caller's transaction, on the caller's connection ({@link TransactionalClaims}). */
  public TransactionalClaims transactional() {
    return new TransactionalClaims(this);
  }

  Ops ops() {
    return ops;
  }

  /** The DDL this store runs at open (protocol/&lt;dialect&gt;/schema.sql, the prefix expanded), for DBAs. */
  public String schemaSql() {
    String d = dialect == Dialect.MYSQL ? "mysql" : "postgres";
    return ProtocolFile.expand(ProtocolFile.body(JdbcStore.class, d + "/schema.sql"), ops.prefix, "", Ops.GRACE_MICROS);
  }

  private void createSchema() {
    try (Connection c = connection()) {
      boolean auto = c.getAutoCommit();
      if (!auto) c.setAutoCommit(true);
      try (Statement st = c.createStatement()) {
        if (dialect == Dialect.POSTGRES) {
          st.execute(schemaSql());  // one script: its own transaction, under an advisory lock
        } else {
          try (PreparedStatement lock = ops.prepare(c, ops.one("schema_lock"), 30L); ResultSet rs = lock.executeQuery()) {
            if (!rs.next() || rs.getInt(1) != 1) throw new NotAppliedException("mysql: the schema lock was not given in 30 s");
          }
          try {
            for (Sql s : Sql.all(schemaSql())) st.execute(s.text());
            widen(c, "records_key_width", Args.MAX_KEY_BYTES, "widen_records_key");
            widen(c, "locks_name_width", Args.MAX_LOCK_NAME_BYTES, "widen_locks_name");
          } finally {
            try (PreparedStatement unlock = ops.prepare(c, ops.one("schema_unlock"))) {
              unlock.execute();
            }
          }
        }
      } finally {
        if (!auto) c.setAutoCommit(false);
      }
    } catch (SQLException e) {
      throw translate(e, "schema", false);
    }
  }

  // Tables an earlier version created hold narrower columns: widened in place.
  private void widen(Connection c, String widthFile, int width, String widenFile) throws SQLException {
    try (PreparedStatement ps = ops.prepare(c, ops.one(widthFile)); ResultSet rs = ps.executeQuery()) {
      if (!rs.next() || rs.getLong(1) >= width) return;
    }
    try (PreparedStatement ps = ops.prepare(c, ops.one(widenFile))) {
      ps.execute();
    }
  }

  private long readMaxResult() {
    try (Connection c = connection(); PreparedStatement ps = ops.prepare(c, ops.one("max_allowed_packet"));
         ResultSet rs = ps.executeQuery()) {
      rs.next();
      return Math.max(0, (rs.getLong(1) - (16 << 10)) / 2);
    } catch (SQLException e) {
      throw translate(e, "max_allowed_packet", false);
    }
  }

  private Connection connection() {
    try {
      return dataSource.getConnection();
    } catch (SQLException e) {
      throw translate(e, "connect", false);
    }
  }

  // ---- running an operation ---------------------------------------------------------------------

  interface Work<T> {
    /** Null: the statement met a row newer than its snapshot; run again. */
    T run(Connection c) throws SQLException;
  }

  /**
   * Runs one operation in a transaction of its own, again when the server rolled it back
   * (deadlock, serialization) or it asks to (null); restores the connection's settings.
   */
  <T> T run(String op, Work<T> work) {
    for (int attempt = 0;; attempt++) {
      Connection c = connection();
      boolean committing = false, explicit = false;
      int isolation = -1;
      boolean auto = true;
      try {
        auto = c.getAutoCommit();
        if (dialect == Dialect.MYSQL) {
          isolation = c.getTransactionIsolation();
          if (isolation != Connection.TRANSACTION_READ_COMMITTED) c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
          if (auto) {
            try (Statement st = c.createStatement()) {
              st.execute("START TRANSACTION");
            }
            explicit = true;
          }
        }
        T out = work.run(c);
        if (out == null) {
          rollback(c, explicit || !auto);
          if (attempt < MAX_RETRIES) continue;
          throw new NotAppliedException(ops.dialect + ": " + op + ": the row kept changing under " + MAX_RETRIES + " tries");
        }
        committing = true;
        if (explicit) {
          try (Statement st = c.createStatement()) {
            st.execute("COMMIT");
          }
        } else if (!auto) {
          c.commit();
        }
        return out;
      } catch (SQLException e) {
        rollback(c, explicit || !auto);
        if (retryable(e) && attempt < MAX_RETRIES) continue;
        // A statement that committed by itself (autocommit), or a COMMIT under way: maybe applied.
        throw translate(e, op, committing || (dialect == Dialect.POSTGRES && auto));
      } finally {
        try {
          if (isolation >= 0 && isolation != Connection.TRANSACTION_READ_COMMITTED) c.setTransactionIsolation(isolation);
        } catch (SQLException ignored) {
          // the pool replaces a broken connection
        }
        try {
          c.close();
        } catch (SQLException ignored) {
          // returned or discarded
        }
      }
    }
  }

  private static void rollback(Connection c, boolean inTransaction) {
    if (!inTransaction) return;
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // the server rolls back a transaction whose connection went
    }
  }

  /** Deadlocks, serialization failures, lock wait timeouts: the server rolled back; run again. */
  static boolean retryable(SQLException e) {
    String state = String.valueOf(e.getSQLState());
    return state.equals("40001") || state.equals("40P01") || e.getErrorCode() == 1213 || e.getErrorCode() == 1205;
  }

  /** What a driver's exception means for the caller. {@code maybeApplied}: the statement could have committed. */
  static RuntimeException translate(SQLException e, String op, boolean maybeApplied) {
    String state = String.valueOf(e.getSQLState());
    String what = op + ": " + e.getMessage() + " (SQLState " + state + ")";
    if (state.startsWith("28") || state.equals("42P01") || state.equals("42S02") || e.getErrorCode() == 1146
        || state.equals("42501") || e.getErrorCode() == 1142)
      return new StoreConfigurationException(what + ": fix the store's configuration (tables, grants, password)", e);
    if (state.startsWith("22")) return new IllegalArgumentException(what, e);
    boolean lost = state.startsWith("08") || e instanceof java.sql.SQLRecoverableException
        || e instanceof java.sql.SQLTransientConnectionException || e instanceof java.sql.SQLNonTransientConnectionException;
    boolean timeout = e instanceof SQLTimeoutException || state.equals("57014") || state.equals("70100");
    if ((lost || timeout) && maybeApplied)
      return new OutcomeUnknownException(what + " (it may have been applied)", e);
    return new NotAppliedException(what, e);
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  // MySQL's keys are VARBINARY of limits.h's widths: refused here rather than by the server.
  private void checkKey(String scope, String key) {
    Args.scope(scope);
    Args.key(key);
    if (dialect != Dialect.MYSQL) return;
    if (b(scope).length > Args.MAX_SCOPE_BYTES)
      throw new IllegalArgumentException("scope is longer than " + Args.MAX_SCOPE_BYTES + " bytes");
    if (b(key).length > Args.MAX_KEY_BYTES) throw new IllegalArgumentException("key is longer than " + Args.MAX_KEY_BYTES + " bytes");
  }

  private void checkName(String name) {
    Args.nonEmpty(name, "lock name");
    if (dialect == Dialect.MYSQL && b(name).length > Args.MAX_LOCK_NAME_BYTES)
      throw new IllegalArgumentException("lock name is longer than " + Args.MAX_LOCK_NAME_BYTES + " bytes");
  }

  void checkBegin(BeginArgs a) {
    checkKey(a.scope(), a.key());
  }

  void checkCommit(CommitArgs a) {
    checkKey(a.scope(), a.key());
    if (a.result().length > maxResultBytes)
      throw new IllegalArgumentException("the result is " + a.result().length + " bytes, more than the " + maxResultBytes
          + " bytes this " + traits.name() + " store can hold");
  }

  // ---- IdemStore ----------------------------------------------------------------------------

  @Override
  public StoreTraits traits() {
    return traits;
  }

  @Override
  public long maxResultBytes() {
    return maxResultBytes;
  }

  @Override
  public BeginOutcome begin(BeginArgs a) {
    checkBegin(a);
    return run("begin", c -> ops.begin(c, a));
  }

  @Override
  public CommitOutcome commit(CommitArgs a) {
    checkCommit(a);
    return run("commit", c -> ops.commit(c, a));
  }

  @Override
  public ReleaseOutcome release(ReleaseArgs a) {
    checkKey(a.scope(), a.key());
    return run("release", c -> ops.release(c, a));
  }

  @Override
  public ReleaseOutcome abandon(String scope, String key, String owner) {
    checkKey(scope, key);
    Args.nonEmpty(owner, "owner");
    return run("abandon", c -> ops.abandon(c, scope, key, owner));
  }

  @Override
  public ExtendOutcome extend(String scope, String key, long fence, Duration lease) {
    checkKey(scope, key);
    long us = Args.micros(Args.positive(lease, "lease"));
    return run("extend", c -> ops.extend(c, scope, key, fence, us));
  }

  @Override
  public Optional<IdemRecord> get(String scope, String key) {
    checkKey(scope, key);
    return run("get", c -> ops.get(c, scope, key));
  }

  @Override
  public boolean delete(String scope, String key) {
    checkKey(scope, key);
    return run("remove", c -> ops.remove(c, scope, key));
  }

  // Newest first by a keyset cursor "<expires µs>.<scope hex>.<key hex>".
  @Override
  public ListPage list(ListArgs a) {
    long at = 0;
    String scope = "", key = "";
    boolean after = !a.cursor().isEmpty();
    if (after) {
      String[] p = a.cursor().split("\\.", -1);
      try {
        if (p.length != 3) throw new IllegalArgumentException();
        at = Long.parseLong(p[0]);
        scope = new String(java.util.HexFormat.of().parseHex(p[1]), StandardCharsets.UTF_8);
        key = new String(java.util.HexFormat.of().parseHex(p[2]), StandardCharsets.UTF_8);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("cursor: not a cursor this store handed out");
      }
    }
    long afterAt = at;
    String afterScope = scope, afterKey = key;
    List<IdemRecord> rows = run("list", c -> ops.list(c, a, afterAt, afterScope, afterKey, after));
    if (rows.size() <= a.limit()) return new ListPage(rows, "");
    List<IdemRecord> page = rows.subList(0, a.limit());
    IdemRecord last = page.get(page.size() - 1);
    java.util.HexFormat hex = java.util.HexFormat.of();
    return new ListPage(page, Ops.micros(last.expiresAt()) + "." + hex.formatHex(b(last.scope())) + "."
        + hex.formatHex(b(last.key())));
  }

  @Override
  public long sweep() {
    long records = 0;
    String[] steps = dialect == Dialect.MYSQL
        ? new String[] {"sweep_records", "sweep_tombstones", "sweep_tokens", "sweep_locks"}
        : new String[] {"sweep_records", "sweep_tokens", "sweep_locks"};
    for (String step : steps) {
      for (int i = 0; i < 1_000_000; i++) {
        long[] r = run(step, c -> ops.sweep(c, step));
        records += r[0];
        if (r[1] < 1000) break;
      }
    }
    return records;
  }

  @Override
  public String issueToken(String scope, Duration ttl) {
    checkKey(scope, "t");
    long us = Args.micros(Args.positive(ttl, "ttl"));
    byte[] bits = new byte[24];
    random.nextBytes(bits);
    String token = Base64.getUrlEncoder().withoutPadding().encodeToString(bits);
    run("issue_token", c -> {
      ops.issueToken(c, scope, token, us);
      return Boolean.TRUE;
    });
    return token;
  }

  @Override
  public ConsumeOutcome consumeToken(String scope, String token) {
    checkKey(scope, "t");
    Args.nonEmpty(token, "token");
    return run("consume_token", c -> ops.consume(c, scope, token));
  }

  @Override
  public RestoreOutcome restoreToken(String scope, String token, Duration ttl) {
    checkKey(scope, "t");
    Args.nonEmpty(token, "token");
    long us = Args.micros(Args.positive(ttl, "ttl"));
    return run("restore_token", c -> ops.restore(c, scope, token, us));
  }

  @Override
  public LockOutcome lock(String name, String owner, Duration ttl) {
    checkName(name);
    Args.nonEmpty(owner, "lock owner");
    long us = Args.micros(Args.positive(ttl, "ttl"));
    return run("lock", c -> ops.lock(c, name, owner, us));
  }

  @Override
  public UnlockOutcome unlock(String name, String owner) {
    checkName(name);
    Args.nonEmpty(owner, "lock owner");
    return run("unlock", c -> ops.unlock(c, name, owner));
  }

  @Override
  public LockExtendOutcome extendLock(String name, String owner, Duration ttl) {
    checkName(name);
    Args.nonEmpty(owner, "lock owner");
    long us = Args.micros(Args.positive(ttl, "ttl"));
    return run("extend_lock", c -> ops.extendLock(c, name, owner, us));
  }

  @Override
  public void ping() {
    run("ping", c -> ops.anyRow(c, ops.one("ping")));
  }
}
