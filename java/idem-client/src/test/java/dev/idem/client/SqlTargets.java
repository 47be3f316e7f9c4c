package dev.idem.client;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.core.IdemStore;
import dev.idem.jdbc.JdbcStore;
import java.net.URI;

/**
 * The SQL stores of {@link StoreInterop}: MariaDB ($IDEM_TEST_MYSQL_URL) and PostgreSQL ($IDEM_TEST_POSTGRES_URL):
 * {@code idem serve} on the store URI, the Java {@link JdbcStore} on a pool of the same database,
 * both on the tables of one prefix.
 */
final class SqlTargets {
  private SqlTargets() {}

  static final String PREFIX = "idem_jinterop_";

  static StoreInterop.Target sql(String env, boolean mysql) {
    String url = System.getenv(env);
    assumeTrue(url != null && !url.isEmpty(), env + " is not set");
    return new StoreInterop.Target() {
      HikariDataSource ds;

      @Override
      public String uri() {
        return url + (url.contains("?") ? "&" : "?") + "table_prefix=" + PREFIX;
      }

      @Override
      public IdemStore open() {
        URI u = URI.create(url);
        String[] user = u.getUserInfo().split(":", 2);
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl((mysql ? "jdbc:mariadb://" : "jdbc:postgresql://") + u.getHost() + ":" + u.getPort() + u.getPath());
        c.setUsername(user[0]);
        c.setPassword(user.length > 1 ? user[1] : "");
        c.setMaximumPoolSize(4);
        c.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
        ds = new HikariDataSource(c);
        JdbcStore.Options o = JdbcStore.Options.defaults().withTablePrefix(PREFIX);
        return mysql ? JdbcStore.mysql(ds, o) : JdbcStore.postgres(ds, o);
      }

      @Override
      public void close() {
        if (ds != null) ds.close();
      }
    };
  }
}
