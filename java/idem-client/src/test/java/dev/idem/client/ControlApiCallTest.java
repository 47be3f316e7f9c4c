package dev.idem.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.idem.core.BeginArgs;
import dev.idem.core.CallOutcome;
import dev.idem.core.ClaimRunner;
import dev.idem.core.ForwardingStore;
import dev.idem.core.IdemStore;
import dev.idem.core.IdempotentCall;
import dev.idem.core.InProgressException;
import dev.idem.core.JacksonResultCodec;
import dev.idem.core.KeyReusedException;
import dev.idem.core.LeaseLostException;
import dev.idem.core.OnUncertain;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.ResultCodec;
import dev.idem.core.UncertainKeyException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The engine's {@link IdempotentCall} on the control API ({@link ControlApiStore}) of a real
 * {@code idem serve}: the one claim runner of the Java engine, with the gateway as its store.
 */
class ControlApiCallTest extends GatewayTest {
  static String fresh() {
    return "k-" + UUID.randomUUID();
  }

  /** A runner on the control API at {@code client}, telling {@code settled} and {@code conflicts}. */
  static ClaimRunner runner(Idem client, CountDownLatch settled, CountDownLatch conflicts) {
    return runner(new ControlApiStore(client), settled, conflicts);
  }

  static ClaimRunner runner(IdemStore store, CountDownLatch settled, CountDownLatch conflicts) {
    return new ClaimRunner(store, ClaimRunner.Limits.defaults(),
        new ClaimRunner.Hooks((s, k) -> settled.countDown(), conflicts::countDown));
  }

  static ClaimRunner runner(Idem client) {
    return new ClaimRunner(new ControlApiStore(client));
  }

  // A begin whose answer is lost may have claimed the key: the runner gives that claim back by
  // the owner the begin named, so a retry runs the work at once, not after the lease as a
  // "recovered" key that HOLD would mark uncertain although nothing ran.
  @Test
  void aBeginWhoseAnswerIsLostLeavesNoClaimBehind() throws Exception {
    String key = fresh();
    CountDownLatch settled = new CountDownLatch(1);
    try (AnswerDroppingProxy proxy = new AnswerDroppingProxy(gateway.adminUri().getPort());
        ClaimRunner runner = runner(Idem.builder().baseUri(proxy.uri()).token(GatewayProcess.TOKEN).build(), settled,
            new CountDownLatch(1))) {
      IdempotentCall<Long> call = IdempotentCall.builder(runner, ResultCodec.longs()).lease(Duration.ofMinutes(5)).build();
      proxy.dropBegins(1);
      AtomicInteger runs = new AtomicInteger();
      assertThatThrownBy(() -> call.run("orders", key, "fp", () -> (long) runs.incrementAndGet()))
          .isInstanceOf(OutcomeUnknownException.class);
      assertThat(runs.get()).isZero();
      assertThat(settled.await(20, TimeUnit.SECONDS)).as("the claim was given back").isTrue();
      assertThat(idem.getRecord("orders", key)).as("the lost begin's claim was given back").isEmpty();
      CallOutcome.Executed<Long> e = executed(call.execute("orders", key, "fp", a -> (long) runs.incrementAndGet() + 41));
      assertThat(e.recovered()).isFalse();
      assertThat(e.value()).isEqualTo(42L);
      assertThat(runs.get()).isEqualTo(1);
    }
  }

  // The commit cannot land for longer than the lease: the runner keeps the result and the claim.
  // A repeat through the same runner is replayed the result without the gateway; another caller
  // finds the key in progress (the lease was extended), never an expired claim to run again; once
  // commits land the record holds the first result (docs/java.md, "Failure behaviour").
  @Test
  void aCommitThatCannotLandKeepsItsResultAndItsClaim() throws Exception {
    String key = fresh();
    Duration lease = Duration.ofMillis(300);
    CountDownLatch settled = new CountDownLatch(1);
    try (AnswerDroppingProxy proxy = new AnswerDroppingProxy(gateway.adminUri().getPort());
        ClaimRunner lossy = runner(Idem.builder().baseUri(proxy.uri()).token(GatewayProcess.TOKEN).build(), settled,
            new CountDownLatch(1));
        ClaimRunner direct = runner(idem)) {
      IdempotentCall<Long> call = IdempotentCall.builder(lossy, ResultCodec.longs()).lease(lease).build();
      IdempotentCall<Long> other = IdempotentCall.builder(direct, ResultCodec.longs()).lease(lease)
          .onUncertain(OnUncertain.RETRY).wait(Duration.ZERO).build();
      AtomicInteger runs = new AtomicInteger();
      proxy.refuseCommits(true);
      CallOutcome.Executed<Long> first = executed(call.execute("orders", key, "fp", a -> (long) runs.incrementAndGet() + 41));
      assertThat(first.stored()).isFalse();
      assertThat(first.storeError()).get().isInstanceOf(OutcomeUnknownException.class);
      Thread.sleep(1000);  // three leases without a commit: the outage outlasting the lease is the subject
      assertThat(other.execute("orders", key, "fp", a -> (long) runs.incrementAndGet()))
          .as("another caller did not take the key over").isInstanceOf(CallOutcome.InProgress.class);
      assertThat(call.execute("orders", key, "another", a -> (long) runs.incrementAndGet()))
          .as("another request with the key never gets the held result").isInstanceOf(CallOutcome.KeyReused.class);
      assertThat(replayed(call.execute("orders", key, "fp", a -> (long) runs.incrementAndGet())).value())
          .as("replayed from memory").isEqualTo(42L);
      proxy.refuseCommits(false);
      assertThat(settled.await(20, TimeUnit.SECONDS)).as("the commit landed").isTrue();
      assertThat(replayed(other.execute("orders", key, "fp", a -> (long) runs.incrementAndGet())).value()).isEqualTo(42L);
      assertThat(runs.get()).isEqualTo(1);
    }
  }

  @Test
  void thirtyTwoCallersOnOneKeyRunItOnceAndAllGetItsResult() throws Exception {
    final int callers = 32;
    String key = fresh();
    AtomicInteger executions = new AtomicInteger();
    AtomicLong nextId = new AtomicLong(1790000000000000001L);
    // Counts the callers the gateway answered in progress: the work ends once every other caller
    // found the key held, so every one of them waits for the result rather than racing to begin.
    AtomicInteger busy = new AtomicInteger();
    CountDownLatch allWaiting = new CountDownLatch(callers - 1);
    java.util.Set<Long> waiting = java.util.concurrent.ConcurrentHashMap.newKeySet();
    IdemStore counting = new ForwardingStore(new ControlApiStore(idem)) {
      @Override
      public dev.idem.core.BeginOutcome begin(BeginArgs args) {
        dev.idem.core.BeginOutcome b = super.begin(args);
        if (b instanceof dev.idem.core.BeginOutcome.InProgress && waiting.add(Thread.currentThread().getId())) {
          busy.incrementAndGet();
          allWaiting.countDown();
        }
        return b;
      }
    };
    CountDownLatch ready = new CountDownLatch(callers);
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(callers);
    try (ClaimRunner runner = new ClaimRunner(counting)) {
      IdempotentCall<Long> call = IdempotentCall.builder(runner, ResultCodec.longs()).wait(Duration.ofSeconds(30)).build();
      List<Future<Long>> results = new ArrayList<>();
      for (int n = 0; n < callers; n++) {
        results.add(pool.submit(() -> {
          ready.countDown();
          go.await();
          return call.run("orders", key, "fp", () -> {
            executions.incrementAndGet();
            try {
              if (!allWaiting.await(30, TimeUnit.SECONDS)) throw new IllegalStateException("not every caller waited");
            } catch (InterruptedException e) {
              throw new IllegalStateException(e);
            }
            return nextId.getAndIncrement();
          });
        }));
      }
      assertThat(ready.await(10, TimeUnit.SECONDS)).isTrue();
      go.countDown();
      for (Future<Long> f : results) assertThat(f.get(60, TimeUnit.SECONDS)).isEqualTo(1790000000000000001L);
    } finally {
      pool.shutdownNow();
    }
    assertThat(executions.get()).isEqualTo(1);
    assertThat(busy.get()).isEqualTo(callers - 1);
    // And a caller long after, through another runner, still gets it.
    try (ClaimRunner runner = runner(idem)) {
      assertThat(IdempotentCall.builder(runner, ResultCodec.longs()).build().run("orders", key, "fp", () -> 0L))
          .isEqualTo(1790000000000000001L);
    }
  }

  @Test
  void executeTellsExecutedFromReplayedAndThrowingWorkReleases() {
    try (ClaimRunner runner = runner(idem)) {
      IdempotentCall<String> call = IdempotentCall.builder(runner, ResultCodec.strings()).build();
      String key = fresh();
      CallOutcome.Executed<String> e = executed(call.execute("s", key, "fp", a -> "first under " + a.fence()));
      assertThat(e.stored()).isTrue();
      assertThat(e.claimLost()).isFalse();
      assertThat(e.fence()).isPositive();
      assertThat(replayed(call.execute("s", key, "fp", a -> "second")).value()).isEqualTo("first under " + e.fence());
      // A null result is a result too.
      String other = fresh();
      assertThat(call.run("s", other, "", () -> null)).isNull();
      assertThat(call.run("s", other, "", () -> "not run")).isNull();
      // Another fingerprint: refused, nothing runs.
      assertThatThrownBy(() -> call.run("s", key, "body-2", () -> "x")).isInstanceOf(KeyReusedException.class);
      // Work that throws: released, nothing stored, the next call runs.
      String thrown = fresh();
      IllegalStateException boom = new IllegalStateException("payment provider down");
      assertThatThrownBy(() -> call.run("s", thrown, "fp", () -> {
        throw boom;
      })).isSameAs(boom);
      assertThat(idem.getRecord("s", thrown)).as("released: nothing stored").isEmpty();
      assertThat(call.run("s", thrown, "fp", () -> "second try")).isEqualTo("second try");
      assertThat(call.run("s", thrown, "fp", () -> "third")).isEqualTo("second try");
    }
  }

  @Test
  void aRepeatWaitsAtMostItsWaitThenTheGatewaysCommitIsReplayed() {
    String key = fresh();
    long fence = ((BeginOutcome.Acquired) idem.begin("s", key, "fp", Duration.ofSeconds(30), null)).fence();
    try (ClaimRunner runner = runner(idem)) {
      IdempotentCall<String> call = IdempotentCall.builder(runner, ResultCodec.strings()).wait(Duration.ofMillis(300)).build();
      long t0 = System.nanoTime();
      InProgressException e = (InProgressException) org.assertj.core.api.Assertions.catchThrowable(
          () -> call.run("s", key, "fp", () -> "never"));
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertThat(ms).isBetween(250L, 5000L);
      assertThat(e.retryAfter()).isGreaterThan(Duration.ofSeconds(20));
      assertThat(call.execute("s", key, "fp", a -> "never")).isInstanceOf(CallOutcome.InProgress.class);
      // The first finishes through the raw client: repeats replay its JSON.
      idem.commit("s", key, fence, TextNode.valueOf("first"));
      assertThat(call.run("s", key, "fp", () -> "never")).isEqualTo("first");
    }
  }

  @Test
  void theLeaseIsRenewedWhileTheWorkRuns() {
    String key = fresh();
    try (ClaimRunner runner = runner(idem)) {
      // Renewed every 200 ms: a renewal may run late by up to 400 ms on a loaded machine.
      IdempotentCall<String> call = IdempotentCall.builder(runner, ResultCodec.strings()).lease(Duration.ofMillis(600)).build();
      String r = call.run("s", key, "fp", () -> {
        // Well past the lease (the passing time is the subject): without renewal the key could be taken over by now.
        for (int n = 0; n < 4; n++) {
          sleep(400);
          assertThat(idem.begin("s", key, "fp")).as("still held after " + (n + 1) * 400 + " ms")
              .isInstanceOf(BeginOutcome.InProgress.class);
        }
        return "slow but held";
      });
      assertThat(r).isEqualTo("slow but held");
      assertThat(call.run("s", key, "fp", () -> "never")).isEqualTo("slow but held");
    }
  }

  @Test
  void aClaimLostWhileTheWorkRunsIsReportedNotCommittedOver() throws Exception {
    CountDownLatch conflict = new CountDownLatch(1);
    try (ClaimRunner runner = runner(idem, new CountDownLatch(1), conflict)) {
      IdempotentCall<String> call = IdempotentCall.builder(runner, ResultCodec.strings()).lease(Duration.ofMillis(300)).build();
      // The renewal finds the claim gone (an operator removed it; another caller took it).
      String key = fresh();
      AtomicLong takeover = new AtomicLong();
      LeaseLostException e = (LeaseLostException) org.assertj.core.api.Assertions.catchThrowable(
          () -> call.run("s", key, "fp", () -> {
            assertThat(idem.deleteRecord("s", key)).isTrue();
            takeover.set(((BeginOutcome.Acquired) idem.begin("s", key, "fp", Duration.ofSeconds(30), null)).fence());
            try {
              assertThat(conflict.await(20, TimeUnit.SECONDS)).as("a renewal answered fenced").isTrue();
            } catch (InterruptedException x) {
              throw new IllegalStateException(x);
            }
            return "late";
          }));
      assertThat((String) e.value()).isEqualTo("late");
      StoredRecord r = idem.getRecord("s", key).orElseThrow();
      assertThat(r.pending()).as("the newer holder's claim is left alone").isTrue();
      assertThat(r.fence()).isEqualTo(takeover.get());

      // Without renewal, the commit answers fenced: the same report.
      IdempotentCall<String> noRenew = IdempotentCall.builder(runner, ResultCodec.strings()).renew(false).build();
      String key2 = fresh();
      CallOutcome.Executed<String> x = executed(noRenew.execute("s", key2, "", a -> {
        idem.deleteRecord("s", key2);
        return "late";
      }));
      assertThat(x.claimLost()).isTrue();
      assertThat(x.stored()).isFalse();
      assertThat(idem.getRecord("s", key2)).as("nothing committed over").isEmpty();
    }
  }

  @Test
  void anExpiredClaimUnderHoldIsUncertainForEveryoneAndUnderRetryRunsAgain() {
    String key = fresh();
    String again = fresh();
    // Holders that crashed: their claims run out (the time passing is the subject).
    long lost = ((BeginOutcome.Acquired) idem.begin("s", key, "fp", Duration.ofMillis(100), null)).fence();
    long lostToo = ((BeginOutcome.Acquired) idem.begin("s", again, "fp", Duration.ofMillis(100), null)).fence();
    sleep(250);
    AtomicInteger ran = new AtomicInteger();
    try (ClaimRunner runner = runner(idem)) {
      IdempotentCall<String> hold = IdempotentCall.builder(runner, ResultCodec.strings()).build();
      UncertainKeyException u = (UncertainKeyException) org.assertj.core.api.Assertions.catchThrowable(
          () -> hold.run("s", key, "fp", () -> "x" + ran.incrementAndGet()));
      assertThat(u.mark().fence()).as("the attempt the service may have received").isEqualTo(lost);
      assertThatThrownBy(() -> hold.run("s", key, "fp", () -> "x" + ran.incrementAndGet()))
          .isInstanceOf(UncertainKeyException.class);
      assertThat(hold.execute("s", key, "fp", a -> "x" + ran.incrementAndGet())).isInstanceOf(CallOutcome.Uncertain.class);
      assertThat(ran.get()).isZero();
      // The gateway holds the mark as the control API can write it: a JSON result naming the fence.
      StoredRecord r = idem.getRecord("s", key).orElseThrow();
      assertThat(r.done()).isTrue();
      assertThat(r.value().orElseThrow().get("idem_uncertain").textValue()).startsWith("fence=" + lost + ";");
      // An operator decides: the record is removed, and the next call runs.
      idem.deleteRecord("s", key);
      assertThat(hold.run("s", key, "fp", () -> "ran")).isEqualTo("ran");

      IdempotentCall<String> retry = IdempotentCall.builder(runner, ResultCodec.strings()).onUncertain(OnUncertain.RETRY).build();
      assertThat(retry.runWithAttempt("s", again, "fp", a -> {
        assertThat(a.recovered()).isTrue();
        assertThat(a.fence()).isGreaterThan(lostToo);
        return "again";
      })).isEqualTo("again");
    }
  }

  record Order(long id, String sku, java.math.BigDecimal amount) {}

  @Test
  void resultsComeBackExactlyWhateverTheirNumbers() {
    try (ClaimRunner runner = runner(idem)) {
      // Through Jackson with exact numbers: a tree, and a type of the service's own.
      JsonNode odd = ExactJson.parse("{\"id\":1790000000000000001,\"big\":123456789012345678901234567890.000000000000000001,"
          + "\"huge\":1e400,\"tiny\":-1E-400,\"amount\":88.00,\"s\":\"\\u0000\u00e9\"}");
      IdempotentCall<JsonNode> tree = IdempotentCall.builder(runner, JacksonResultCodec.of(ExactJson.mapper(), JsonNode.class)).build();
      String key = fresh();
      tree.run("s", key, "", () -> odd);
      assertThat(ExactJson.write(tree.run("s", key, "", () -> null))).isEqualTo(ExactJson.write(odd));
      IdempotentCall<Order> orders = IdempotentCall.builder(runner, JacksonResultCodec.of(ExactJson.mapper(), Order.class)).build();
      String orderKey = fresh();
      Order first = orders.run("s", orderKey, "fp", () -> new Order(1790000000000000777L, "A-1", new java.math.BigDecimal("88.00")));
      assertThat(orders.run("s", orderKey, "fp", () -> new Order(1, "other", java.math.BigDecimal.ONE))).isEqualTo(first);
      // JSON text is stored and replayed byte for byte, whatever its spelling.
      IdempotentCall<String> text = IdempotentCall.builder(runner, ResultCodec.jsonText()).build();
      String textKey = fresh();
      String spelled = "{\"n\": -0, \"e\": 1e400 ,\"f\":1.50}";
      text.run("s", textKey, "", () -> spelled);
      assertThat(text.run("s", textKey, "", () -> "null")).isEqualTo(spelled.strip());
      assertThat(idem.getRecord("s", textKey).orElseThrow().valueJson()).contains(spelled);
    }
  }

  @Test
  void aResultTheGatewayCannotTakeIsSettledAsAnUnknownOutcome() {
    ResultCodec<String> broken = ResultCodec.of(v -> "{not json", t -> t);
    AtomicInteger ran = new AtomicInteger();
    String held = fresh();
    try (ClaimRunner runner = runner(idem)) {
      IdempotentCall<String> call = IdempotentCall.builder(runner, broken).build();
      CallOutcome.Executed<String> e = executed(call.execute("s", held, "", a -> "r" + ran.incrementAndGet()));
      assertThat(e.stored()).isFalse();
      assertThat(e.storeError()).get().isInstanceOf(IllegalArgumentException.class);
      // The work took effect, so under HOLD it never runs again.
      assertThatThrownBy(() -> call.run("s", held, "", () -> "r" + ran.incrementAndGet())).isInstanceOf(UncertainKeyException.class);
      assertThat(ran.get()).isEqualTo(1);
      // Under RETRY the claim is left to expire (then a repeat runs again).
      String left = fresh();
      IdempotentCall<String> retry = IdempotentCall.builder(runner, broken).onUncertain(OnUncertain.RETRY).build();
      assertThat(executed(retry.execute("s", left, "", a -> "r")).stored()).isFalse();
      assertThat(idem.getRecord("s", left).orElseThrow().pending()).isTrue();
    }
  }

  static <T> CallOutcome.Executed<T> executed(CallOutcome<T> o) {
    if (o instanceof CallOutcome.Executed<T> e) return e;
    throw new AssertionError("expected Executed, got " + o);
  }

  static <T> CallOutcome.Replayed<T> replayed(CallOutcome<T> o) {
    if (o instanceof CallOutcome.Replayed<T> r) return r;
    throw new AssertionError("expected Replayed, got " + o);
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }
}
