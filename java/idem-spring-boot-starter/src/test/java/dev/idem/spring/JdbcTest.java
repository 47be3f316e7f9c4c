package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdemStore;
import dev.idem.spring.shop.CommonResult;
import dev.idem.spring.shop.Executions;
import dev.idem.spring.shop.LedgerService;
import dev.idem.spring.shop.ShopApplication;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The JDBC store on the application's DataSource (MariaDB), and claims in the application's
 * transactions: 32 threads crediting one operation write one row; a rollback leaves neither row
 * nor record; a business error rolls both back; a call inside the caller's transaction joins it.
 */
@SpringBootTest(classes = ShopApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"idem.store.type=jdbc", "idem.store.jdbc.table-prefix=idem_spring_", "shop.ledger=true",
        "idem.defaults.wait-for=10s",
        "spring.autoconfigure.exclude=org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration,"
            + "org.springframework.boot.autoconfigure.amqp.RabbitAutoConfiguration"})
class JdbcTest {
  @BeforeAll
  static void servers() {
    Servers.assumeMysql();
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    Servers.register(r, Servers.mysqlProperties());
  }

  @LocalServerPort int port;
  @Autowired LedgerService ledger;
  @Autowired Executions executions;
  @Autowired IdemStore store;
  @Autowired PlatformTransactionManager transactions;

  static String op() {
    return "op-" + UUID.randomUUID();
  }

  @Test
  void theStoreIsTheApplicationsDatabase() throws Exception {
    assertThat(store.traits().name()).isEqualTo("mysql");
    Http http = new Http(port);
    String key = op();
    HttpResponse<String> first = http.postJson("/orders", "{\"sku\":\"A\",\"quantity\":1}", "Idempotency-Key", key);
    HttpResponse<String> again = http.postJson("/orders", "{\"sku\":\"A\",\"quantity\":1}", "Idempotency-Key", key);
    assertThat(again.body()).isEqualTo(first.body());
    assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(executions.of("orders::" + key)).isEqualTo(1);
  }

  @Test
  void thirtyTwoCreditsOfOneOperationWriteOneRow() throws Exception {
    String op = op();
    int n = 32;
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<LedgerService.Entry>> answers = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        answers.add(pool.submit(() -> {
          start.await();
          return ledger.credit(op, 10, false);
        }));
      }
      start.countDown();
      Set<Long> ids = ConcurrentHashMap.newKeySet();
      for (Future<LedgerService.Entry> f : answers) ids.add(f.get().id());
      assertThat(ids).hasSize(1);
      assertThat(ledger.rows(op)).isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aRollbackLeavesNeitherRowNorRecordAndTheRetryRuns() throws Exception {
    String op = op();
    assertThatThrownBy(() -> ledger.credit(op, 10, true)).hasMessageContaining("the bank said no");
    assertThat(ledger.rows(op)).isZero();
    assertThat(store.get("", "LedgerService.credit:" + op)).isEmpty();
    LedgerService.Entry e = ledger.credit(op, 10, false);
    assertThat(ledger.credit(op, 10, false)).isEqualTo(e);
    assertThat(ledger.rows(op)).isEqualTo(1);
  }

  @Test
  void aBusinessErrorRollsTheTransactionBack() {
    String op = op();
    CommonResult<Long> refused = ledger.debit(op, 500);
    assertThat(refused.code()).isEqualTo(2001);
    assertThat(ledger.rows(op)).isZero();
    assertThat(store.get("", "LedgerService.debit:" + op)).isEmpty();
    assertThat(ledger.debit(op, 50).code()).isZero();
    assertThat(ledger.debit(op, 50).code()).isZero();
    assertThat(ledger.rows(op)).isEqualTo(1);
  }

  @Test
  void aCallInsideTheCallersTransactionJoinsIt() {
    TransactionTemplate tx = new TransactionTemplate(transactions);
    tx.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
    String rolledBack = op(), committed = op();
    tx.executeWithoutResult(s -> {
      ledger.plain(rolledBack);
      s.setRollbackOnly();
    });
    assertThat(ledger.rows(rolledBack)).isZero();
    assertThat(store.get("", "LedgerService.plain:" + rolledBack)).isEmpty();
    tx.executeWithoutResult(s -> ledger.plain(committed));
    assertThat(store.get("", "LedgerService.plain:" + committed)).isPresent();
    ledger.plain(committed);
    assertThat(ledger.rows(committed)).isEqualTo(1);
  }
}
