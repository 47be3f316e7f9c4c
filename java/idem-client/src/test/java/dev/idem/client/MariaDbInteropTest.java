package dev.idem.client;

import org.junit.jupiter.api.BeforeAll;

/** {@link StoreInterop} on MariaDB ($IDEM_TEST_MYSQL_URL): idem serve and the Java JdbcStore on the tables of one prefix. */
class MariaDbInteropTest extends StoreInterop {
  @BeforeAll
  static void open() throws Exception {
    start(SqlTargets.sql("IDEM_TEST_MYSQL_URL", true));
  }
}
