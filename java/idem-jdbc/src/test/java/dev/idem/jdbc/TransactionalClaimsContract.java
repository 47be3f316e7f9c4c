package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.core.CallOutcome;
import dev.idem.core.ResultCodec;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The key in the caller's transaction, on a real server: the record commits or rolls back with the
 * business write, a concurrent duplicate waits on the row lock and then replays, and a transaction
 * that dies leaves nothing behind.
 */
abstract class TransactionalClaimsContract {
  abstract HikariDataSource dataSource();

  abstract JdbcStore store();

  /** The business table: one row per order. */
  abstract String createOrders(String table);

  /** Ends the transaction of the connection whose server-side id {@code id} is, from another connection. */
  abstract void kill(Connection other, long id) throws SQLException;

  abstract long sessionId(Connection c) throws SQLException;

  private final String run = UUID.randomUUID().toString().substring(0, 8);

  private String orders() throws SQLException {
    String table = "idem_java_orders";
    try (Connection c = dataSource().getConnection(); Statement st = c.createStatement()) {
      st.execute(createOrders(table));
    }
    return table;
  }

  private static long insertOrder(Connection c, String table, String key) {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " (idem_key) VALUES (?)")) {
      ps.setString(1, key);
      ps.executeUpdate();
      return 1;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private long countOrders(String table, String key) throws SQLException {
    try (Connection c = dataSource().getConnection();
         PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + table + " WHERE idem_key = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  @Test
  void thirtyTwoThreadsOnOneKeyExecuteOnceAndReplayThirtyOneTimes() throws Exception {
    String table = orders();
    String key = "tx-race-" + run;
    TransactionalClaims claims = store().transactional();
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(32);
    List<Future<CallOutcome<String>>> fs = new ArrayList<>();
    try {
      for (int i = 0; i < 32; i++) {
        fs.add(pool.submit(() -> {
          start.await();
          try (Connection c = dataSource().getConnection()) {
            c.setAutoCommit(false);
            CallOutcome<String> o = claims.execute(c, "u", key, "fp", ResultCodec.strings(), a -> {
              runs.incrementAndGet();
              insertOrder(c, table, key);
              try {
                Thread.sleep(100);  // the others arrive meanwhile and wait on the row lock
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              return "order-" + a.fence();
            });
            c.commit();
            return o;
          }
        }));
      }
      start.countDown();
      int executed = 0, replayed = 0;
      String first = null;
      for (Future<CallOutcome<String>> f : fs) {
        CallOutcome<String> o = f.get(60, TimeUnit.SECONDS);
        if (o instanceof CallOutcome.Executed<String> e) {
          executed++;
          first = e.value();
        } else if (o instanceof CallOutcome.Replayed<String>) {
          replayed++;
        }
      }
      assertThat(executed).isEqualTo(1);
      assertThat(replayed).isEqualTo(31);
      assertThat(runs.get()).isEqualTo(1);
      assertThat(countOrders(table, key)).isEqualTo(1);
      for (Future<CallOutcome<String>> f : fs) {
        if (f.get() instanceof CallOutcome.Replayed<String> r) assertThat(r.value()).isEqualTo(first);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aRollbackLeavesNothingBehind() throws Exception {
    String table = orders();
    String key = "tx-rollback-" + run;
    TransactionalClaims claims = store().transactional();
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      CallOutcome<String> o = claims.execute(c, "u", key, "fp", ResultCodec.strings(), a -> {
        insertOrder(c, table, key);
        return "never stored";
      });
      assertThat(o).isInstanceOf(CallOutcome.Executed.class);
      c.rollback();
    }
    assertThat(store().get("u", key)).isEmpty();
    assertThat(countOrders(table, key)).isZero();
    // A retry runs the work again, as a fresh claim.
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      CallOutcome<String> o = claims.execute(c, "u", key, "fp", ResultCodec.strings(), a -> "second");
      assertThat(((CallOutcome.Executed<String>) o).recovered()).isFalse();
      c.commit();
    }
    assertThat(store().get("u", key)).isPresent();
  }

  @Test
  void workThatThrowsPropagatesAndTheRollbackLeavesNothing() throws Exception {
    String key = "tx-throw-" + run;
    TransactionalClaims claims = store().transactional();
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      assertThatThrownBy(() -> claims.execute(c, "u", key, "fp", ResultCodec.strings(), a -> {
        throw new IllegalStateException("declined");
      })).hasMessage("declined");
      c.rollback();
    }
    assertThat(store().get("u", key)).isEmpty();
  }

  @Test
  void aTransactionWhoseConnectionDiesLeavesNothingAndTheWaiterTakesTheKey() throws Exception {
    String table = orders();
    String key = "tx-crash-" + run;
    TransactionalClaims claims = store().transactional();
    CountDownLatch claimed = new CountDownLatch(1), killed = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      java.util.concurrent.CompletableFuture<Long> victim = new java.util.concurrent.CompletableFuture<>();
      pool.submit(() -> {
        Connection c = dataSource().getConnection();
        c.setAutoCommit(false);
        long id = sessionId(c);
        victim.complete(id);
        claims.execute(c, "u", key, "fp", ResultCodec.strings(), a -> {
          insertOrder(c, table, key);
          claimed.countDown();
          try {
            killed.await(30, TimeUnit.SECONDS);  // the process "crashes" here, mid-transaction
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return "lost";
        });
        return id;
      });
      assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();
      // A duplicate arrives while the first holds the row: it waits on the row lock.
      Future<CallOutcome<String>> duplicate = pool.submit(() -> {
        try (Connection c = dataSource().getConnection()) {
          c.setAutoCommit(false);
          CallOutcome<String> o = claims.execute(c, "u", key, "fp", ResultCodec.strings(), a -> "survivor");
          c.commit();
          return o;
        }
      });
      long id = victim.get(30, TimeUnit.SECONDS);
      assertThat(duplicate.isDone()).isFalse();  // waiting on the row lock (it would be replayed or fail otherwise)
      try (Connection admin = dataSource().getConnection()) {
        kill(admin, id);
      }
      killed.countDown();
      CallOutcome<String> o = duplicate.get(30, TimeUnit.SECONDS);
      assertThat(o).isInstanceOf(CallOutcome.Executed.class);
      assertThat(((CallOutcome.Executed<String>) o).recovered()).isFalse();
      assertThat(countOrders(table, key)).isZero();
    } finally {
      killed.countDown();
      pool.shutdownNow();
    }
  }

  @Test
  void aConnectionInAutoCommitOrAboveReadCommittedIsRefused() throws Exception {
    TransactionalClaims claims = store().transactional();
    try (Connection c = dataSource().getConnection()) {
      assertThatThrownBy(() -> claims.execute(c, "u", "k-" + run, "fp", ResultCodec.strings(), a -> "x"))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("setAutoCommit(false)");
      c.setAutoCommit(false);
      c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      assertThatThrownBy(() -> claims.execute(c, "u", "k-" + run, "fp", ResultCodec.strings(), a -> "x"))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("READ COMMITTED");
      c.rollback();
      c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
    }
  }
}
