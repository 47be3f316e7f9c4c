package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CallOutcome;
import dev.idem.core.ClaimRunner;
import dev.idem.core.Deduplicator;
import dev.idem.core.Delivery;
import dev.idem.core.IdemStore;
import dev.idem.core.IdempotentCall;
import dev.idem.core.KeyReusedException;
import dev.idem.core.LeaseLostException;
import dev.idem.core.MemoryStore;
import dev.idem.core.NotAppliedException;
import dev.idem.core.OnUncertain;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.RecordState;
import dev.idem.core.ResultCodec;
import dev.idem.core.StoredResult;
import dev.idem.core.UncertainKeyException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The claim runner and IdempotentCall on the reference store, with faults injected by {@link
 * FaultyStore}: every rule of docs/design.md, "One claim runner", has a case that fails if the rule
 * is broken. The same rules run against the real servers in each backend's ClaimOn*Test.
 */
class ClaimRunnerTest {
  private final MemoryStore memory = new MemoryStore(Clock.systemUTC(), 1 << 20);
  private final FaultyStore store = new FaultyStore(memory);
  private final CountDownLatch settledInBackground = new CountDownLatch(1);
  private final CountDownLatch conflict = new CountDownLatch(1);
  private final ClaimRunner runner = new ClaimRunner(store, ClaimRunner.Limits.defaults(),
      new ClaimRunner.Hooks((s, k) -> settledInBackground.countDown(), conflict::countDown));

  @AfterEach
  void close() {
    runner.close();
  }

  private IdempotentCall.Builder<String> call() {
    return IdempotentCall.builder(runner, ResultCodec.strings());
  }

  @Test
  void theWorkRunsOnceAndEveryRepeatGetsTheFirstResult() {
    IdempotentCall<String> c = call().build();
    AtomicInteger runs = new AtomicInteger();
    assertThat(c.run("u", "k", "fp", () -> "order-" + runs.incrementAndGet())).isEqualTo("order-1");
    assertThat(c.run("u", "k", "fp", () -> "order-" + runs.incrementAndGet())).isEqualTo("order-1");
    assertThat(runs.get()).isEqualTo(1);
    assertThatThrownBy(() -> c.run("u", "k", "other", () -> "x")).isInstanceOf(KeyReusedException.class);
    // Stored in the gateway's form: a JSON result.
    byte[] stored = memory.get("u", "k").orElseThrow().result();
    assertThat(StoredResult.decode(stored)).isEqualTo(new StoredResult.Json("\"order-1\""));
  }

  @Test
  void workThatThrowsReleasesTheClaimAndARetryRunsAgain() {
    IdempotentCall<String> c = call().build();
    assertThatThrownBy(() -> c.run("u", "k", "fp", () -> {
      throw new IllegalStateException("payment declined");
    })).hasMessage("payment declined");
    assertThat(memory.get("u", "k")).isEmpty();
    assertThat(c.run("u", "k", "fp", () -> "second")).isEqualTo("second");
  }

  @Test
  void thirtyTwoThreadsOnOneKeyRunTheWorkOnce() throws Exception {
    IdempotentCall<String> c = call().wait(Duration.ofSeconds(10)).build();
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(32);
    List<Future<CallOutcome<String>>> fs = new ArrayList<>();
    try {
      for (int i = 0; i < 32; i++) {
        fs.add(pool.submit(() -> {
          start.await();
          return c.execute("u", "race", "fp", a -> {
            runs.incrementAndGet();
            try {
              Thread.sleep(50);  // the work takes a while: the others must wait for it
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            return "once";
          });
        }));
      }
      start.countDown();
      int executed = 0, replayed = 0;
      for (Future<CallOutcome<String>> f : fs) {
        CallOutcome<String> o = f.get(30, TimeUnit.SECONDS);
        if (o instanceof CallOutcome.Executed<String>) executed++;
        if (o instanceof CallOutcome.Replayed<String> r && r.value().equals("once")) replayed++;
      }
      assertThat(runs.get()).isEqualTo(1);
      assertThat(executed).isEqualTo(1);
      assertThat(replayed).isEqualTo(31);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aCommitThatCannotLandKeepsItsResultItsClaimAndAnswersRepeatsFromMemory() throws Exception {
    IdempotentCall<String> c = call().lease(Duration.ofMillis(300)).build();
    store.set("commit", FaultyStore.Mode.DOWN);
    CallOutcome<String> first = c.execute("u", "k", "fp", a -> "result");
    assertThat(first).isInstanceOf(CallOutcome.Executed.class);
    CallOutcome.Executed<String> e = (CallOutcome.Executed<String>) first;
    assertThat(e.stored()).isFalse();
    assertThat(e.claimLost()).isFalse();
    assertThat(e.storeError()).get().isInstanceOf(NotAppliedException.class);
    // A repeat through this runner is replayed the result without asking the store.
    int begins = store.calls("begin");
    assertThat(c.run("u", "k", "fp", () -> "second run")).isEqualTo("result");
    assertThat(store.calls("begin")).isEqualTo(begins);
    // Elsewhere (straight on the store), the key stays in progress past the lease: the retries keep it.
    ContractWait.past(Duration.ofMillis(450));
    assertThat(memory.begin(new BeginArgs("u", "k", null, Duration.ofSeconds(5), Duration.ofHours(1))))
        .isInstanceOf(BeginOutcome.InProgress.class);
    // The store comes back: the pending commit lands.
    store.heal();
    runner.storeAnswered();
    assertThat(settledInBackground.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(memory.get("u", "k").orElseThrow().state()).isEqualTo(RecordState.DONE);
    assertThat(runner.settling()).isFalse();
  }

  @Test
  void afterAStoreOutageTheWorkNeverRunsASecondTime() throws Exception {
    // The whole store goes away after the work ran: the commit cannot land, the record stays held
    // until its lease ends; then a repeat elsewhere takes over and, under HOLD, runs nothing.
    IdempotentCall<String> c = call().lease(Duration.ofMillis(300)).build();
    AtomicInteger runs = new AtomicInteger();
    CallOutcome<String> first = c.execute("u", "k", "fp", a -> {
      runs.incrementAndGet();
      store.set("*", FaultyStore.Mode.DOWN);
      return "done";
    });
    assertThat(((CallOutcome.Executed<String>) first).stored()).isFalse();
    ContractWait.past(Duration.ofMillis(300));
    try (ClaimRunner elsewhere = new ClaimRunner(memory)) {
      IdempotentCall<String> other = IdempotentCall.builder(elsewhere, ResultCodec.strings()).build();
      assertThatThrownBy(() -> other.run("u", "k", "fp", () -> "again-" + runs.incrementAndGet()))
          .isInstanceOf(UncertainKeyException.class);
      assertThatThrownBy(() -> other.run("u", "k", "fp", () -> "again-" + runs.incrementAndGet()))
          .isInstanceOf(UncertainKeyException.class);
    }
    assertThat(runs.get()).isEqualTo(1);
    // The late commit of the known result replaces the mark the takeover wrote for its claim.
    store.heal();
    runner.storeAnswered();
    assertThat(settledInBackground.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(c.run("u", "k", "fp", () -> "never")).isEqualTo("done");
  }

  @Test
  void aBeginWhoseAnswerWasLostGivesItsClaimBackSoARetryFindsTheKeyFree() throws Exception {
    IdempotentCall<String> c = call().build();
    store.set("begin", FaultyStore.Mode.LOSE_ANSWER);
    assertThatThrownBy(() -> c.run("u", "k", "fp", () -> "x")).isInstanceOf(OutcomeUnknownException.class);
    assertThat(memory.get("u", "k")).isPresent();  // the begin did land
    store.heal();
    runner.storeAnswered();
    assertThat(settledInBackground.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(memory.get("u", "k")).isEmpty();
    CallOutcome<String> retry = c.execute("u", "k", "fp", a -> "ran");
    assertThat(((CallOutcome.Executed<String>) retry).recovered()).isFalse();
  }

  @Test
  void aBeginThatWasNotAppliedThrowsAndNothingRuns() {
    IdempotentCall<String> c = call().build();
    store.set("begin", FaultyStore.Mode.DOWN);
    AtomicInteger runs = new AtomicInteger();
    assertThatThrownBy(() -> c.run("u", "k", "fp", () -> "x" + runs.incrementAndGet()))
        .isInstanceOf(NotAppliedException.class);
    assertThat(runs.get()).isZero();
  }

  @Test
  void theLeaseIsRenewedWhileTheWorkRuns() {
    IdempotentCall<String> c = call().lease(Duration.ofMillis(300)).build();
    String r = c.run("u", "k", "fp", () -> {
      ContractWait.past(Duration.ofMillis(700));
      assertThat(memory.begin(new BeginArgs("u", "k", null, Duration.ofSeconds(5), Duration.ofHours(1))))
          .isInstanceOf(BeginOutcome.InProgress.class);
      return "slow";
    });
    assertThat(r).isEqualTo("slow");
    assertThat(store.calls("extend")).isGreaterThanOrEqualTo(2);
  }

  @Test
  void aShortLeaseIsRenewedWhileALongerOneRunsToo() throws Exception {
    // One timer renews every claim: armed for a long lease's first extend (20 s away), it must
    // be brought forward for a short lease's.
    IdempotentCall<String> slow = call().lease(Duration.ofSeconds(60)).build();
    CountDownLatch running = new CountDownLatch(1), done = new CountDownLatch(1);
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<String> first = pool.submit(() -> slow.run("u", "long", "fp", () -> {
        running.countDown();
        try {
          done.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          throw new AssertionError(e);
        }
        return "long";
      }));
      assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
      String r = call().lease(Duration.ofMillis(300)).build().run("u", "short", "fp", () -> {
        ContractWait.past(Duration.ofMillis(700));
        assertThat(memory.begin(new BeginArgs("u", "short", null, Duration.ofSeconds(5), Duration.ofHours(1))))
            .isInstanceOf(BeginOutcome.InProgress.class);
        return "short";
      });
      assertThat(r).isEqualTo("short");
      done.countDown();
      assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo("long");
    } finally {
      done.countDown();
      pool.shutdownNow();
    }
  }

  @Test
  void withoutRenewalALostClaimIsReportedNeverCommittedOver() {
    IdempotentCall<String> c = call().lease(Duration.ofMillis(200)).renew(false).onUncertain(OnUncertain.RETRY).build();
    assertThatThrownBy(() -> c.run("u", "k", "fp", () -> {
      ContractWait.past(Duration.ofMillis(200));
      // Another caller takes the key over meanwhile and completes it.
      BeginOutcome.Acquired a = (BeginOutcome.Acquired) memory.begin(
          new BeginArgs("u", "k", null, Duration.ofSeconds(5), Duration.ofHours(1)));
      memory.commit(new dev.idem.core.CommitArgs("u", "k", a.fence(),
          StoredResult.encode(new StoredResult.Json("\"theirs\"")), Duration.ofHours(1)));
      return "mine";
    })).isInstanceOf(LeaseLostException.class).satisfies(e -> assertThat(((LeaseLostException) e).value()).isEqualTo("mine"));
    assertThat(c.run("u", "k", "fp", () -> "x")).isEqualTo("theirs");
  }

  @Test
  void aRenewalAnsweredFencedMarksTheClaimLost() throws Exception {
    IdempotentCall<String> c = call().lease(Duration.ofMillis(300)).build();
    CallOutcome<String> o = c.execute("u", "k", "fp", a -> {
      memory.delete("u", "k");  // an operator removes the record mid-run
      try {
        assertThat(conflict.await(10, TimeUnit.SECONDS)).isTrue();  // the next renewal finds out
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      return "r";
    });
    CallOutcome.Executed<String> e = (CallOutcome.Executed<String>) o;
    assertThat(e.claimLost()).isTrue();
    assertThat(e.stored()).isFalse();
    assertThat(memory.get("u", "k")).isEmpty();
  }

  @Test
  void underHoldATakeoverOfAnExpiredClaimMarksItUncertainAndRunsNothing() {
    BeginOutcome.Acquired dead = (BeginOutcome.Acquired) memory.begin(
        new BeginArgs("u", "k", null, Duration.ofMillis(100), Duration.ofHours(1)));
    ContractWait.past(Duration.ofMillis(100));
    IdempotentCall<String> c = call().build();
    AtomicInteger runs = new AtomicInteger();
    CallOutcome<String> o = c.execute("u", "k", "fp", a -> "x" + runs.incrementAndGet());
    assertThat(o).isInstanceOf(CallOutcome.Uncertain.class);
    assertThat(runs.get()).isZero();
    StoredResult.Uncertain u = (StoredResult.Uncertain) StoredResult.decode(memory.get("u", "k").orElseThrow().result());
    assertThat(u.mark().fence()).isEqualTo(dead.fence());
    assertThatThrownBy(() -> c.run("u", "k", "fp", () -> "y")).isInstanceOf(UncertainKeyException.class)
        .satisfies(e -> assertThat(((UncertainKeyException) e).mark().fence()).isEqualTo(dead.fence()));
  }

  @Test
  void underRetryATakeoverRunsTheWorkAgainUnderAGreaterFence() {
    BeginOutcome.Acquired dead = (BeginOutcome.Acquired) memory.begin(
        new BeginArgs("u", "k", null, Duration.ofMillis(100), Duration.ofHours(1)));
    ContractWait.past(Duration.ofMillis(100));
    IdempotentCall<String> c = call().onUncertain(OnUncertain.RETRY).build();
    CallOutcome<String> o = c.execute("u", "k", "fp", a -> a.recovered() + ":" + (a.fence() > dead.fence()));
    assertThat(((CallOutcome.Executed<String>) o).value()).isEqualTo("true:true");
  }

  @Test
  void aResultTooLargeForTheStoreIsSettledAsUnknown() {
    IdempotentCall<String> c = call().build();
    String big = "x".repeat(2 << 20);
    CallOutcome<String> o = c.execute("u", "k", "fp", a -> big);
    CallOutcome.Executed<String> e = (CallOutcome.Executed<String>) o;
    assertThat(e.stored()).isFalse();
    assertThat(e.storeError()).get().isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> c.run("u", "k", "fp", () -> "y")).isInstanceOf(UncertainKeyException.class);
  }

  @Test
  void pendingSettlesAreBounded() {
    try (ClaimRunner small = new ClaimRunner(store, new ClaimRunner.Limits(2, 1 << 20, 1), ClaimRunner.Hooks.none())) {
      IdempotentCall<String> c = IdempotentCall.builder(small, ResultCodec.strings()).build();
      store.set("commit", FaultyStore.Mode.DOWN);
      for (int i = 0; i < 3; i++) c.execute("u", "k" + i, "fp", a -> "r");
      assertThat(small.pendingSettles()).isEqualTo(2);
      // The third claim was left to its lease: still pending in the store, not held by the runner.
      assertThat(memory.get("u", "k2").orElseThrow().state()).isEqualTo(RecordState.PENDING);
    }
  }

  @Test
  void theDeduplicatorHandlesAMessageOnce() {
    Deduplicator d = Deduplicator.builder(runner, "consumers").build();
    AtomicInteger runs = new AtomicInteger();
    assertThat(d.handle("m-1", runs::incrementAndGet).kind()).isEqualTo(Delivery.Kind.PROCESSED);
    assertThat(d.handle("m-1", runs::incrementAndGet).kind()).isEqualTo(Delivery.Kind.DUPLICATE);
    assertThat(runs.get()).isEqualTo(1);
    memory.begin(new BeginArgs("consumers", "m-2", null, Duration.ofSeconds(30), Duration.ofHours(1)));
    Delivery busy = d.handle("m-2", runs::incrementAndGet);
    assertThat(busy.kind()).isEqualTo(Delivery.Kind.IN_PROGRESS);
    assertThat(busy.ack()).isFalse();
    assertThat(runs.get()).isEqualTo(1);
  }

  @Test
  void aClaimClosedBeforeItsWorkStartedIsGivenBack() throws Exception {
    ClaimRunner.Acquired a = runner.acquire("u", "k", null, call().build().policy(), null);
    try (var claim = a.claim().orElseThrow()) {
      assertThat(memory.get("u", "k").orElseThrow().fence()).isEqualTo(claim.fence());
    }
    assertThat(settledInBackground.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(memory.get("u", "k")).isEmpty();
  }

  static Optional<IdemStore> unused() {
    return Optional.empty();
  }
}
