package dev.idem.jdbc;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.net.URI;

/** The test servers from $IDEM_TEST_MYSQL_URL and $IDEM_TEST_POSTGRES_URL (scripts/services); skipped when unset. */
final class Databases {
  private Databases() {}

  static final String PREFIX = "idem_java_";

  static HikariDataSource mysql() {
    return pool("IDEM_TEST_MYSQL_URL", "jdbc:mariadb://");
  }

  static HikariDataSource postgres() {
    return pool("IDEM_TEST_POSTGRES_URL", "jdbc:postgresql://");
  }

  private static HikariDataSource pool(String env, String scheme) {
    String url = System.getenv(env);
    assumeTrue(url != null && !url.isEmpty(), env + " is not set");
    URI u = URI.create(url);
    String[] user = u.getUserInfo().split(":", 2);
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(scheme + u.getHost() + ":" + u.getPort() + u.getPath());
    c.setUsername(user[0]);
    c.setPassword(user.length > 1 ? user[1] : "");
    c.setMaximumPoolSize(40);
    c.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    c.setPoolName("idem-java-test");
    return new HikariDataSource(c);
  }

  /** The tables of the current database (MySQL) or schema (PostgreSQL) whose names start with {@code prefix}. */
  static java.util.List<String> tables(javax.sql.DataSource ds, String prefix) throws java.sql.SQLException {
    java.util.List<String> out = new java.util.ArrayList<>();
    try (java.sql.Connection c = ds.getConnection()) {
      boolean mysql = c.getMetaData().getDatabaseProductName().toLowerCase(java.util.Locale.ROOT).matches(".*(mysql|mariadb).*");
      String sql = mysql ? "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
          : "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()";
      try (java.sql.Statement st = c.createStatement(); java.sql.ResultSet rs = st.executeQuery(sql)) {
        while (rs.next()) if (rs.getString(1).startsWith(prefix)) out.add(rs.getString(1));  // LIKE would read '_' as any
      }
    }
    return out;
  }

  /** Drops every table whose name starts with {@code prefix} (a vector's tables), and checks none is left. */
  static void dropTables(javax.sql.DataSource ds, String prefix) throws java.sql.SQLException {
    if (!prefix.matches("[a-z_][a-z0-9_]*")) throw new IllegalArgumentException("prefix: " + prefix);
    try (java.sql.Connection c = ds.getConnection(); java.sql.Statement st = c.createStatement()) {
      for (String t : tables(ds, prefix)) st.execute("DROP TABLE IF EXISTS " + t);
    }
    java.util.List<String> left = tables(ds, prefix);
    if (!left.isEmpty()) throw new AssertionError("tables left behind: " + left);
  }
}
