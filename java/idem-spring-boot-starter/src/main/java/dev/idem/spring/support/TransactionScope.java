package dev.idem.spring.support;

import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.core.CommitOutcome;

/**
 * Claims inside the application's database transaction ("the key in my transaction", the
 * engine's {@code TransactionalClaims}), for the JDBC store on the application's DataSource. The
 * implementation lives with the JDBC part; without it, {@code transactional = true} is refused.
 */
public interface TransactionScope {
  /**
   * True when every call's claim should join the current transaction: the store is the JDBC
   * store, and this thread is in a transaction on its DataSource at READ COMMITTED.
   */
  boolean active();

  /** Runs {@code body} in the current transaction, or in a new one (REQUIRED, READ COMMITTED). */
  Object run(Body body) throws Throwable;

  /**
   * The store's begin on the transaction's connection: the record's row stays locked until the
   * transaction ends. A lock wait that timed out answers {@link BeginOutcome.InProgress}.
   */
  BeginOutcome begin(BeginArgs args);

  /** The store's commit on the transaction's connection. */
  CommitOutcome commit(CommitArgs args);

  /** Marks the current transaction rollback-only: a released outcome takes the record and the writes back. */
  void rollbackOnly();

  /** Runs {@code r} when the current transaction rolls back. */
  void onRollback(Runnable r);

  /** The body of a transaction. */
  @FunctionalInterface
  interface Body {
    Object run() throws Throwable;
  }
}
