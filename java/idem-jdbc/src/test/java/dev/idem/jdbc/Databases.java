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
}
