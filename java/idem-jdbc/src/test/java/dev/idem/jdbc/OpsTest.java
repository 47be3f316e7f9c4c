package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The statements a store's operations load on first use, by any number of threads at once. */
class OpsTest {
  static final String[] FILES = {"begin", "commit", "release", "abandon", "extend", "get", "remove", "list",
      "issue_token", "consume_token", "restore_token", "lock", "unlock", "extend_lock", "ping"};

  // A store's first calls come from many threads at once (the vectors' races): each must get
  // its statements, and none may see the cache being filled by another.
  @Test
  void aFreshStoresStatementsAreLoadedByManyThreadsAtOnce() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      for (int round = 0; round < 200; round++) {
        Ops ops = round % 2 == 0 ? new MySqlOps("idem_ops_") : new PostgresOps("idem_ops_");
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Integer>> all = new ArrayList<>();
        for (int t = 0; t < 16; t++) {
          int first = t;
          all.add(pool.submit(() -> {
            go.await();
            int n = 0;
            for (int i = 0; i < FILES.length; i++) n += ops.sql(FILES[(first + i) % FILES.length]).size();
            return n;
          }));
        }
        go.countDown();
        Integer expected = null;
        for (Future<Integer> f : all) {
          int n = f.get(30, TimeUnit.SECONDS);
          if (expected == null) expected = n;
          assertThat(n).isEqualTo(expected).isPositive();
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
