package dev.idem.spring.store;

import dev.idem.core.StoreConfigurationException;
import dev.idem.jdbc.JdbcStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Locale;
import javax.sql.DataSource;

/** A {@link JdbcStore} on the application's DataSource, its dialect read from the server. */
public final class JdbcStores {
  private JdbcStores() {}

  public static JdbcStore open(DataSource dataSource, JdbcStore.Options options) {
    String product;
    try (Connection c = dataSource.getConnection()) {
      product = c.getMetaData().getDatabaseProductName();
    } catch (SQLException e) {
      throw new StoreConfigurationException("idem: cannot read the DataSource's database product: " + e.getMessage(), e);
    }
    String p = product == null ? "" : product.toLowerCase(Locale.ROOT);
    if (p.contains("mysql") || p.contains("mariadb")) return JdbcStore.mysql(dataSource, options);
    if (p.contains("postgres")) return JdbcStore.postgres(dataSource, options);
    throw new StoreConfigurationException("idem: the JDBC store runs on MySQL, MariaDB or PostgreSQL; the DataSource is "
        + product + ": set idem.store.type (redis, control-api, memory) or idem.store.uri", null);
  }
}
