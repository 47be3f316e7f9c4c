package dev.idem.spring.store;

import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.core.CommitOutcome;
import dev.idem.core.NotAppliedException;
import dev.idem.jdbc.JdbcStore;
import dev.idem.jdbc.TransactionalClaims;
import dev.idem.spring.support.TransactionScope;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.NoTransactionException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.interceptor.TransactionAspectSupport;
import org.springframework.transaction.support.ResourceHolderSupport;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The engine's {@link TransactionalClaims} on the connection of the current Spring transaction
 * ({@link DataSourceUtils#getConnection}): the claim's row is written and locked in the
 * application's transaction and commits or rolls back with its writes.
 */
public final class JdbcTransactionScope implements TransactionScope {
  private final JdbcStore store;
  private final TransactionalClaims claims;
  private final DataSource dataSource;
  private final TransactionTemplate template;
  private final boolean primary;
  // The status of the transaction this scope opened, for rollbackOnly().
  private final ThreadLocal<TransactionStatus> opened = new ThreadLocal<>();

  /**
   * @param primary the JDBC store is the application's idem store: every call made inside a
   *     transaction on this DataSource joins it
   */
  public JdbcTransactionScope(JdbcStore store, DataSource dataSource, PlatformTransactionManager transactions,
                              boolean primary) {
    this.store = store;
    this.claims = store.transactional();
    this.dataSource = dataSource;
    this.primary = primary;
    this.template = transactions == null ? null : new TransactionTemplate(transactions);
    if (template != null) {
      template.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
      template.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRED);
    }
  }

  public JdbcStore store() {
    return store;
  }

  @Override
  public boolean active() {
    if (!primary || !inTransactionOnDataSource()) return false;
    try {
      return connection().getTransactionIsolation() == Connection.TRANSACTION_READ_COMMITTED;
    } catch (SQLException e) {
      return false;
    }
  }

  private boolean inTransactionOnDataSource() {
    return TransactionSynchronizationManager.isActualTransactionActive()
        && TransactionSynchronizationManager.hasResource(dataSource);
  }

  private Connection connection() {
    return DataSourceUtils.getConnection(dataSource);
  }

  @Override
  public Object run(Body body) throws Throwable {
    if (inTransactionOnDataSource()) return body.run();
    if (template == null)
      throw new IllegalStateException("idem: a transactional claim needs a PlatformTransactionManager for the DataSource");
    try {
      return template.execute(status -> {
        TransactionStatus outer = opened.get();
        opened.set(status);
        try {
          return body.run();
        } catch (RuntimeException | Error e) {
          throw e;
        } catch (Throwable e) {
          throw new Checked(e);
        } finally {
          if (outer == null) opened.remove();
          else opened.set(outer);
        }
      });
    } catch (Checked e) {
      throw e.getCause();
    }
  }

  /** A checked exception carried out of the transaction callback (which rolled back). */
  private static final class Checked extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Checked(Throwable cause) {
      super(cause);
    }
  }

  @Override
  public BeginOutcome begin(BeginArgs args) {
    Connection c = connection();
    try {
      if (c.getTransactionIsolation() != Connection.TRANSACTION_READ_COMMITTED)
        throw new IllegalStateException("idem: a transactional claim needs READ COMMITTED; the transaction runs at level "
            + c.getTransactionIsolation() + ": @Transactional(isolation = Isolation.READ_COMMITTED), or the pool's "
            + "transaction-isolation (spring.datasource.hikari.transaction-isolation=TRANSACTION_READ_COMMITTED)");
      return claims.begin(c, args);
    } catch (SQLException e) {
      if (e.getErrorCode() == 1205 || "55P03".equals(e.getSQLState())) return new BeginOutcome.InProgress(Duration.ofSeconds(1));
      throw new NotAppliedException("idem: begin in the transaction failed: " + e.getMessage(), e);
    }
  }

  @Override
  public CommitOutcome commit(CommitArgs args) {
    return claims.commit(connection(), args);
  }

  @Override
  public void rollbackOnly() {
    TransactionStatus mine = opened.get();
    if (mine != null) {
      mine.setRollbackOnly();
      return;
    }
    try {
      TransactionAspectSupport.currentTransactionStatus().setRollbackOnly();  // the caller's @Transactional
    } catch (NoTransactionException e) {
      // A transaction begun otherwise (a TransactionTemplate, a listener container's): its connection.
      ((ResourceHolderSupport) TransactionSynchronizationManager.getResource(dataSource)).setRollbackOnly();
    }
  }

  @Override
  public void onRollback(Runnable r) {
    TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
      @Override
      public void afterCompletion(int status) {
        if (status == STATUS_ROLLED_BACK) r.run();
      }
    });
  }
}
