package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.RepeatedTest;

/**
 * The statements are loaded lazily by whichever thread first runs an operation: many threads
 * doing so at once on a fresh store must all get them (a HashMap here threw
 * ConcurrentModificationException under the Spring shop's storm). No database needed.
 */
class OpsConcurrencyTest {
  static final String[] NAMES = {"begin", "commit", "release", "abandon", "extend", "get", "remove",
      "issue_token", "consume_token", "restore_token", "lock", "unlock", "extend_lock"};

  @RepeatedTest(5)
  void threadsLoadingTheStatementsAtOnceAllGetThem() throws Exception {
    for (Ops ops : new Ops[] {new MySqlOps("idem_"), new PostgresOps("idem_")}) {
      int n = 32;
      CountDownLatch start = new CountDownLatch(1);
      ExecutorService pool = Executors.newFixedThreadPool(n);
      try {
        List<Future<Integer>> loaded = new ArrayList<>();
        for (int t = 0; t < n; t++) {
          int first = t;
          loaded.add(pool.submit(() -> {
            start.await();
            int statements = 0;
            for (int i = 0; i < NAMES.length; i++) statements += ops.sql(NAMES[(first + i) % NAMES.length]).size();
            return statements;
          }));
        }
        start.countDown();
        int expected = -1;
        for (Future<Integer> f : loaded) {
          int got = f.get();
          if (expected < 0) expected = got;
          assertThat(got).isEqualTo(expected).isPositive();
        }
      } finally {
        pool.shutdownNow();
      }
    }
  }
}
