package dev.idem.jdbc;

import dev.idem.core.Args;
import dev.idem.core.Attempt;
import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CallOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.core.CommitOutcome;
import dev.idem.core.IdempotentCall;
import dev.idem.core.NotAppliedException;
import dev.idem.core.OnUncertain;
import dev.idem.core.ResultCodec;
import dev.idem.core.StoreProtocolException;
import dev.idem.core.StoredResult;
import dev.idem.core.UncertainMark;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;

/**
 * Claims written through the caller's JDBC connection, inside the caller's transaction ("the key
 * in my transaction", docs/java.md): the record commits or rolls back with the business write, so
 * there is no outcome-uncertain state on this path. The begin takes the record's row lock and
 * holds it until the caller's transaction ends: a concurrent duplicate waits on that lock, then
 * replays the committed result (or, after a rollback, acquires the key itself). Nothing is ever
 * visible to others as pending.
 *
 * <pre>{@code
 * try (Connection c = dataSource.getConnection()) {
 *   c.setAutoCommit(false);
 *   c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
 *   CallOutcome<Long> o = claims.execute(c, userId, idempotencyKey, fingerprint, ResultCodec.longs(),
 *       attempt -> orders.insert(c, request));          // the business write, on the same connection
 *   c.commit();                                          // the order and the record, or neither
 * }
 * }</pre>
 *
 * <p>Needs: the connection in a transaction (auto-commit off) at READ COMMITTED (under REPEATABLE
 * READ a waiting duplicate would read its old snapshot; MySQL would also take gap locks). A
 * duplicate waits as long as the first transaction runs, bounded by the server's lock timeout
 * ({@code innodb_lock_wait_timeout}, PostgreSQL's {@code lock_timeout}): set it above your longest
 * such transaction. A duplicate whose wait timed out answers {@link CallOutcome.InProgress}; on
 * PostgreSQL its transaction is then aborted and must be rolled back.
 *
 * <p>Thread safety: safe for concurrent use; each call uses only the connection it is given.
 */
public final class TransactionalClaims {
  private final JdbcStore store;
  private final Duration lease, retention;
  private final OnUncertain onUncertain;

  TransactionalClaims(JdbcStore store) {
    this(store, Duration.ofMinutes(10), Duration.ofHours(24), OnUncertain.HOLD);
  }

  private TransactionalClaims(JdbcStore store, Duration lease, Duration retention, OnUncertain onUncertain) {
    this.store = store;
    this.lease = lease;
    this.retention = retention;
    this.onUncertain = onUncertain;
  }

  /** How long a result is replayed (default 24 h). */
  public TransactionalClaims withRetention(Duration d) {
    return new TransactionalClaims(store, lease, Args.positive(d, "retention"), onUncertain);
  }

  /**
   * The lease a claim carries (default 10 min). Others never see a claim of this path pending, but
   * a record left pending by a non-transactional claimer of the same key is taken over once it ends.
   */
  public TransactionalClaims withLease(Duration d) {
    return new TransactionalClaims(store, Args.positive(d, "lease"), retention, onUncertain);
  }

  /** What a takeover of an expired non-transactional claim does (default HOLD). */
  public TransactionalClaims withOnUncertain(OnUncertain p) {
    return new TransactionalClaims(store, lease, retention, Objects.requireNonNull(p, "onUncertain"));
  }

  /**
   * Runs {@code work} at most once per (scope, key), in the caller's transaction on {@code c}: the
   * begin, the work (which should write through {@code c}) and the commit of the record. The caller
   * commits the transaction (then the result is stored and replayed to every repeat) or rolls it
   * back (then nothing is left: a retry runs the work again). The work's exceptions propagate
   * unchanged; roll back then.
   *
   * @throws IllegalStateException {@code c} is in auto-commit mode or not at READ COMMITTED
   * @throws NotAppliedException a statement failed (the caller's transaction should be rolled back)
   */
  public <T> CallOutcome<T> execute(Connection c, String scope, String key, String fingerprint, ResultCodec<T> codec,
                                    Function<Attempt, T> work) {
    Objects.requireNonNull(c, "connection");
    Objects.requireNonNull(codec, "codec");
    Objects.requireNonNull(work, "work");
    BeginArgs args = new BeginArgs(scope, key, fingerprint == null ? null : fingerprint.getBytes(StandardCharsets.UTF_8),
        lease, retention, "tx");
    store.checkBegin(args);
    try {
      if (c.getAutoCommit())
        throw new IllegalStateException("a transactional claim runs inside the caller's transaction: "
            + "call setAutoCommit(false) on the connection first");
      if (c.getTransactionIsolation() != Connection.TRANSACTION_READ_COMMITTED)
        throw new IllegalStateException("a transactional claim needs READ COMMITTED: "
            + "setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED) before the transaction starts");
    } catch (SQLException e) {
      throw JdbcStore.translate(e, "transactional claim", false);
    }
    BeginOutcome begun;
    try {
      begun = begin(c, args);
    } catch (SQLException e) {
      if (lockTimeout(e)) return new CallOutcome.InProgress<>(Duration.ofSeconds(1));
      throw JdbcStore.translate(e, "begin", false);
    }
    if (begun instanceof BeginOutcome.Acquired a) {
      if (a.recovered() && onUncertain == OnUncertain.HOLD) {
        UncertainMark mark = new UncertainMark(a.previousFence(), "transactional", System.currentTimeMillis());
        commit(c, new CommitArgs(scope, key, a.fence(), StoredResult.encode(new StoredResult.Uncertain(mark)), retention));
        return new CallOutcome.Uncertain<>(mark);
      }
      T value = work.apply(new Attempt(scope, key, a.fence(), a.recovered()));
      byte[] stored = StoredResult.encode(new StoredResult.Json(codec.toJson(value)));
      CommitOutcome out = commit(c, new CommitArgs(scope, key, a.fence(), stored, retention));
      return new CallOutcome.Executed<>(value, a.fence(), a.recovered(), out == CommitOutcome.COMMITTED,
          out == CommitOutcome.FENCED, java.util.Optional.empty());
    }
    if (begun instanceof BeginOutcome.Replay r) {
      StoredResult s;
      try {
        s = StoredResult.decode(r.result());
      } catch (IllegalArgumentException e) {
        throw new StoreProtocolException("the key holds a result that is not idem's stored form", e);
      }
      if (s instanceof StoredResult.Json j) return new CallOutcome.Replayed<>(codec.fromJson(j.text()), r.fence());
      if (s instanceof StoredResult.Uncertain u) return new CallOutcome.Uncertain<>(u.mark());
      return new CallOutcome.Uncertain<>(new UncertainMark(0, "", 0));
    }
    if (begun instanceof BeginOutcome.InProgress p) return new CallOutcome.InProgress<>(p.retryAfter());
    return new CallOutcome.KeyReused<>();
  }

  /** {@link #execute} that answers the result or throws as {@link IdempotentCall#run} does. */
  public <T> T run(Connection c, String scope, String key, String fingerprint, ResultCodec<T> codec,
                   Function<Attempt, T> work) {
    return IdempotentCall.valueOf(execute(c, scope, key, fingerprint, codec, work));
  }

  /** The store's begin on {@code c}, in its transaction (not committed): the row stays locked until it ends. */
  public BeginOutcome begin(Connection c, BeginArgs a) throws SQLException {
    store.checkBegin(a);
    for (int i = 0; i < 64; i++) {
      BeginOutcome o = store.ops().begin(c, a);
      if (o != null) return o;
    }
    throw new NotAppliedException("begin: the row kept changing under 64 tries");
  }

  /** The store's commit on {@code c}, in its transaction (not committed). */
  public CommitOutcome commit(Connection c, CommitArgs a) {
    store.checkCommit(a);
    try {
      for (int i = 0; i < 64; i++) {
        CommitOutcome o = store.ops().commit(c, a);
        if (o != null) return o;
      }
    } catch (SQLException e) {
      throw JdbcStore.translate(e, "commit", false);
    }
    throw new NotAppliedException("commit: the row kept changing under 64 tries");
  }

  private static boolean lockTimeout(SQLException e) {
    return e.getErrorCode() == 1205 || "55P03".equals(e.getSQLState());
  }
}
