package dev.idem.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class PostgresTransactionalClaimsTest extends TransactionalClaimsContract {
  static HikariDataSource ds;
  static JdbcStore store;

  @BeforeAll
  static void open() {
    ds = Databases.postgres();
    store = JdbcStore.postgres(ds, JdbcStore.Options.defaults().withTablePrefix(Databases.PREFIX));
  }

  @AfterAll
  static void close() {
    if (ds != null) ds.close();
  }

  @Override
  HikariDataSource dataSource() {
    return ds;
  }

  @Override
  JdbcStore store() {
    return store;
  }

  @Override
  String createOrders(String table) {
    return "CREATE TABLE IF NOT EXISTS " + table + " (id BIGSERIAL PRIMARY KEY, idem_key TEXT NOT NULL)";
  }

  @Override
  long sessionId(Connection c) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Override
  void kill(Connection other, long id) throws SQLException {
    try (Statement st = other.createStatement()) {
      st.execute("SELECT pg_terminate_backend(" + id + ")");
    }
  }
}
