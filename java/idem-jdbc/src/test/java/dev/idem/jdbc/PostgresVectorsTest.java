package dev.idem.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.core.IdemStore;
import dev.idem.testkit.StoreVectors;
import org.junit.jupiter.api.AfterAll;

/**
 * The shared vectors on a real server, each vector on tables of its own (a fresh table prefix),
 * dropped once it ran.
 */
class PostgresVectorsTest extends StoreVectors {
  static HikariDataSource ds;

  @AfterAll
  static void close() {
    if (ds != null) ds.close();
  }

  @Override
  protected String storeName() {
    return "postgres";
  }

  @Override
  protected IdemStore freshStore(String id) {
    synchronized (PostgresVectorsTest.class) {
      if (ds == null) ds = Databases.postgres();
    }
    return JdbcStore.postgres(ds, JdbcStore.Options.defaults().withTablePrefix(prefix(id)));
  }

  private static String prefix(String id) {
    return "idem_jv_" + id + "_";
  }

  @Override
  protected void dropStore(String id) throws Exception {
    Databases.dropTables(ds, prefix(id));
  }
}
