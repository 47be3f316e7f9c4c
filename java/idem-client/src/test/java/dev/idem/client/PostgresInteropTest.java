package dev.idem.client;

import org.junit.jupiter.api.BeforeAll;

/** {@link StoreInterop} on PostgreSQL ($IDEM_TEST_POSTGRES_URL): idem serve and the Java JdbcStore on the tables of one prefix. */
class PostgresInteropTest extends StoreInterop {
  @BeforeAll
  static void open() throws Exception {
    start(SqlTargets.sql("IDEM_TEST_POSTGRES_URL", false));
  }
}
