package dev.idem.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.core.IdemStore;
import dev.idem.testkit.StoreContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The store contract on a real MariaDB ($IDEM_TEST_MYSQL_URL). */
class MySqlStoreContractTest extends StoreContract {
  static HikariDataSource ds;
  static JdbcStore store;

  @BeforeAll
  static void open() {
    ds = Databases.mysql();
    store = JdbcStore.mysql(ds, JdbcStore.Options.defaults().withTablePrefix(Databases.PREFIX));
  }

  @AfterAll
  static void close() {
    if (ds != null) ds.close();
  }

  @Override
  protected IdemStore store() {
    return store;
  }
}
