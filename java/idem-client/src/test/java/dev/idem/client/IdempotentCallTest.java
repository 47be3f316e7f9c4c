package dev.idem.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

/** {@link IdempotentCall} against a real {@code idem serve}. */
class IdempotentCallTest extends GatewayTest {
  static String fresh() {
    return "k-" + UUID.randomUUID();
  }

  // A begin whose answer is lost may have claimed the key: the call gives the claim back
  // by its owner before it throws, so a retry runs the work at once, not after the lease as
  // a "recovered" key that HOLD would mark uncertain although nothing ran.
  @Test
  void aBeginWhoseAnswerIsLostLeavesNoClaimBehind() throws Exception {
    String key = fresh();
    try (AnswerDroppingProxy proxy = new AnswerDroppingProxy(gateway.adminUri().getPort())) {
      Idem lossy = Idem.builder().baseUri(proxy.uri()).token(GatewayProcess.TOKEN)
          .requestTimeout(Duration.ofSeconds(10)).build();
      try (IdempotentCall<Long> call = IdempotentCall.builder(lossy, ResultCodec.longs()).lease(Duration.ofMinutes(5)).build()) {
        proxy.dropBegins(1);
        AtomicInteger runs = new AtomicInteger();
        assertThrows(OutcomeUnknownException.class, () -> call.run("orders", key, "fp", () -> (long) runs.incrementAndGet()));
        assertEquals(0, runs.get());
        assertTrue(idem.getRecord("orders", key).isEmpty(), "the lost begin's claim was given back");
        CallOutcome<Long> again = call.execute("orders", key, "fp", a -> (long) runs.incrementAndGet() + 41);
        assertInstanceOf(CallOutcome.Executed.class, again);
        CallOutcome.Executed<Long> e = (CallOutcome.Executed<Long>) again;
        assertFalse(e.recovered());
        assertEquals(42L, e.value());
        assertEquals(1, runs.get());
      }
    }
  }

  // The commit cannot land for longer than the lease: the call keeps the result and the
  // claim. A repeat through the same object is replayed the result without the gateway;
  // another caller finds the key in progress (the lease was extended), never an expired
  // claim to run again; once commits land the record holds the first result
  // (docs/gateway.md, "When the store fails").
  @Test
  void aCommitThatCannotLandKeepsItsResultAndItsClaim() throws Exception {
    String key = fresh();
    try (AnswerDroppingProxy proxy = new AnswerDroppingProxy(gateway.adminUri().getPort())) {
      Idem lossy = Idem.builder().baseUri(proxy.uri()).token(GatewayProcess.TOKEN)
          .requestTimeout(Duration.ofSeconds(10)).build();
      Duration lease = Duration.ofMillis(300);
      try (IdempotentCall<Long> call = IdempotentCall.builder(lossy, ResultCodec.longs()).lease(lease).build();
          IdempotentCall<Long> other = IdempotentCall.builder(idem, ResultCodec.longs()).lease(lease)
              .onUncertain(OnUncertain.RETRY).wait(Duration.ZERO).build()) {
        AtomicInteger runs = new AtomicInteger();
        proxy.refuseCommits(true);
        CallOutcome<Long> first = call.execute("orders", key, "fp", a -> (long) runs.incrementAndGet() + 41);
        assertFalse(assertInstanceOf(CallOutcome.Executed.class, first).stored());
        sleep(1000);  // three leases without a commit: the outage outlasting the lease is the subject
        assertInstanceOf(CallOutcome.InProgress.class, other.execute("orders", key, "fp", a -> (long) runs.incrementAndGet()),
            "another caller did not take the key over");
        assertInstanceOf(CallOutcome.KeyReused.class, call.execute("orders", key, "another", a -> (long) runs.incrementAndGet()),
            "another request with the key never gets the held result");
        CallOutcome<Long> repeat = call.execute("orders", key, "fp", a -> (long) runs.incrementAndGet());
        assertEquals(42L, assertInstanceOf(CallOutcome.Replayed.class, repeat).value(), "replayed from memory");
        proxy.refuseCommits(false);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (idem.getRecord("orders", key).map(r -> !r.state().equals("done")).orElse(true) && System.nanoTime() < until) sleep(20);
        assertEquals(42L, assertInstanceOf(CallOutcome.Replayed.class,
            other.execute("orders", key, "fp", a -> (long) runs.incrementAndGet())).value());
        assertEquals(1, runs.get());
      }
    }
  }

  @Test
  void thirtyTwoCallersOnOneKeyRunItOnceAndAllGetItsResult() throws Exception {
    final int callers = 32;
    String key = fresh();
    AtomicInteger executions = new AtomicInteger();
    AtomicLong nextId = new AtomicLong(1790000000000000001L);
    CountDownLatch ready = new CountDownLatch(callers);
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(callers);
    try (IdempotentCall<Long> call = IdempotentCall.builder(idem, ResultCodec.longs()).wait(Duration.ofSeconds(20)).build()) {
      List<Future<Long>> results = new ArrayList<>();
      for (int n = 0; n < callers; n++) {
        results.add(pool.submit(() -> {
          ready.countDown();
          go.await();
          return call.run("orders", key, "fp", () -> {
            executions.incrementAndGet();
            // Long enough that every other caller finds the key in progress and waits.
            try {
              Thread.sleep(300);
            } catch (InterruptedException e) {
              throw new IllegalStateException(e);
            }
            return nextId.getAndIncrement();
          });
        }));
      }
      assertTrue(ready.await(10, TimeUnit.SECONDS));
      go.countDown();
      for (Future<Long> f : results) assertEquals(1790000000000000001L, f.get(30, TimeUnit.SECONDS));
    } finally {
      pool.shutdownNow();
    }
    assertEquals(1, executions.get());
    // And a caller long after still gets it.
    try (IdempotentCall<Long> call = IdempotentCall.builder(idem, ResultCodec.longs()).build()) {
      assertEquals(1790000000000000001L, call.run("orders", key, "fp", () -> 0L));
    }
  }

  @Test
  void executeTellsExecutedFromReplayed() {
    String key = fresh();
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).build()) {
      CallOutcome.Executed<String> e = executed(
          call.execute("s", key, "fp", a -> "first under " + a.fence()));
      assertTrue(e.stored());
      assertFalse(e.claimLost());
      assertTrue(e.fence() > 0);
      CallOutcome.Replayed<String> r = replayed(
          call.execute("s", key, "fp", a -> "second"));
      assertEquals("first under " + e.fence(), r.value());
      // A null result is a result too.
      String other = fresh();
      assertEquals(null, call.run("s", other, "", () -> null));
      assertEquals(null, call.run("s", other, "", () -> "not run"));
    }
  }

  @Test
  void aThrowingSupplierReleasesSoTheNextCallRuns() {
    String key = fresh();
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).build()) {
      IllegalStateException boom = new IllegalStateException("payment provider down");
      IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> call.run("s", key, "fp", () -> {
        throw boom;
      }));
      assertSame(boom, thrown);
      assertTrue(idem.getRecord("s", key).isEmpty(), "released: nothing stored");
      assertEquals("second try", call.run("s", key, "fp", () -> "second try"));
      assertEquals("second try", call.run("s", key, "fp", () -> "third"));
    }
  }

  @Test
  void aDifferentFingerprintIsKeyReused() {
    String key = fresh();
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).build()) {
      call.run("s", key, "body-1", () -> "ok");
      AtomicInteger ran = new AtomicInteger();
      assertThrows(KeyReusedException.class, () -> call.run("s", key, "body-2", () -> "x" + ran.incrementAndGet()));
      assertEquals(0, ran.get());
    }
  }

  @Test
  void aRepeatWaitsAtMostItsWaitThenIsInProgress() {
    String key = fresh();
    long fence = ((BeginOutcome.Acquired) idem.begin("s", key, "fp", Duration.ofSeconds(30), null)).fence();
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).wait(Duration.ofMillis(300)).build()) {
      long t0 = System.nanoTime();
      InProgressException e = assertThrows(InProgressException.class, () -> call.run("s", key, "fp", () -> "never"));
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(ms >= 250 && ms < 5000, ms + " ms");
      assertTrue(e.retryAfter().toMillis() > 20_000, e.retryAfter().toString());
      CallOutcome<String> r = call.execute("s", key, "fp", a -> "never");
      assertInstanceOf(CallOutcome.InProgress.class, r);
    }
    // The first finishes: repeats replay it (its result, written through the same envelope).
    idem.commit("s", key, fence, IdempotentCall.envelope(JsonValue.of("first")));
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).build()) {
      assertEquals("first", call.run("s", key, "fp", () -> "never"));
    }
  }

  @Test
  void theLeaseIsRenewedWhileTheWorkRuns() {
    String key = fresh();
    // Renewed every 200 ms: a renewal may run late by up to 400 ms on a loaded machine.
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).lease(Duration.ofMillis(600)).build()) {
      String r = call.run("s", key, "fp", () -> {
        // Well past the lease: without renewal the key could be taken over by now.
        for (int n = 0; n < 4; n++) {
          sleep(400);
          assertInstanceOf(BeginOutcome.InProgress.class, idem.begin("s", key, "fp"), "still held after " + (n + 1) * 400 + " ms");
        }
        return "slow but held";
      });
      assertEquals("slow but held", r);
      assertEquals("slow but held", call.run("s", key, "fp", () -> "never"));
    }
  }

  @Test
  void aClaimLostWhileTheWorkRunsIsReportedNotCommittedOver() {
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).lease(Duration.ofMillis(300)).build()) {
      // The renewal finds the claim gone (an operator removed it; another caller took it).
      String key = fresh();
      AtomicLong takeover = new AtomicLong();
      LeaseLostException e = assertThrows(LeaseLostException.class, () -> call.run("s", key, "fp", () -> {
        assertTrue(idem.deleteRecord("s", key));
        takeover.set(((BeginOutcome.Acquired) idem.begin("s", key, "fp", Duration.ofSeconds(30), null)).fence());
        sleep(500);  // past lease/3: a renewal answers fenced
        return "late";
      }));
      assertEquals("late", e.value());
      StoredRecord r = idem.getRecord("s", key).orElseThrow();
      assertTrue(r.pending(), "the newer holder's claim is left alone");
      assertEquals(takeover.get(), r.fence());

      // Without renewal, the commit answers fenced: the same report.
      try (IdempotentCall<String> noRenew = IdempotentCall.builder(idem, ResultCodec.string()).renew(false).build()) {
        String key2 = fresh();
        CallOutcome.Executed<String> x = executed(noRenew.execute("s", key2, "", a -> {
          idem.deleteRecord("s", key2);
          return "late";
        }));
        assertTrue(x.claimLost());
        assertFalse(x.stored());
        assertTrue(idem.getRecord("s", key2).isEmpty(), "nothing committed over");
      }
    }
  }

  @Test
  void anExpiredClaimUnderHoldIsUncertainForEveryone() {
    String key = fresh();
    // A holder that crashed: its claim runs out.
    idem.begin("s", key, "fp", Duration.ofMillis(100), null);
    sleep(250);
    AtomicInteger ran = new AtomicInteger();
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).build()) {
      assertThrows(UncertainKeyException.class, () -> call.run("s", key, "fp", () -> "x" + ran.incrementAndGet()));
      assertThrows(UncertainKeyException.class, () -> call.run("s", key, "fp", () -> "x" + ran.incrementAndGet()));
      assertInstanceOf(CallOutcome.Uncertain.class, call.execute("s", key, "fp", a -> "x" + ran.incrementAndGet()));
    }
    assertEquals(0, ran.get());
    StoredRecord r = idem.getRecord("s", key).orElseThrow();
    assertTrue(r.done());
    assertEquals(IdempotentCall.UNCERTAIN, r.value().orElseThrow());
    // An operator decides: the record is removed, and the next call runs.
    idem.deleteRecord("s", key);
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).build()) {
      assertEquals("ran", call.run("s", key, "fp", () -> "ran"));
    }
  }

  @Test
  void anExpiredClaimUnderRetryRunsAgainWithAGreaterFence() {
    String key = fresh();
    long lostFence = ((BeginOutcome.Acquired) idem.begin("s", key, "fp", Duration.ofMillis(100), null)).fence();
    sleep(250);
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).onUncertain(OnUncertain.RETRY).build()) {
      String r = call.runWithAttempt("s", key, "fp", a -> {
        assertTrue(a.recovered());
        assertTrue(a.fence() > lostFence);
        return "again";
      });
      assertEquals("again", r);
    }
    assertEquals(OnUncertain.HOLD, OnUncertain.fromPolicyName("hold"));
    assertEquals("retry", OnUncertain.RETRY.policyName());
    assertThrows(IllegalArgumentException.class, () -> OnUncertain.fromPolicyName("Hold"));
  }

  @Test
  void resultsComeBackExactlyWhateverTheirNumbers() {
    // The gateway reads numbers into 64-bit integers or doubles; results travel as text.
    JsonValue odd = JsonValue.parse("{\"id\":1790000000000000001,\"big\":123456789012345678901234567890.000000000000000001,"
        + "\"huge\":1e400,\"tiny\":-1E-400,\"zero\":-0,\"s\":\"\\u0000\u00e9\"}");
    String key = fresh();
    try (IdempotentCall<JsonValue> call = IdempotentCall.builder(idem, ResultCodec.json()).build()) {
      call.run("s", key, "", () -> odd);
      JsonValue back = call.run("s", key, "", () -> JsonValue.NULL);
      assertEquals(odd.toJson(), back.toJson());
    }
  }

  @Test
  void aKeyWrittenByOtherCodeIsAProtocolError() {
    String key = fresh();
    long fence = ((BeginOutcome.Acquired) idem.begin("s", key, null)).fence();
    idem.commit("s", key, fence, JsonValue.of(42));
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, ResultCodec.string()).build()) {
      ProtocolException e = assertThrows(ProtocolException.class, () -> call.run("s", key, null, () -> "x"));
      assertNotNull(e.getMessage());
    }
  }

  @Test
  void aCodecThroughJsonTextKeepsStructuredResults() {
    record Order(long id, String sku) {}
    ResultCodec<Order> codec = ResultCodec.text(
        o -> JsonValue.object("id", o.id(), "sku", o.sku()).toJson(),
        text -> {
          JsonValue.Obj o = JsonValue.parse(text).asObject();
          return new Order(o.require("id").asLong(), o.require("sku").asString());
        });
    String key = fresh();
    try (IdempotentCall<Order> call = IdempotentCall.builder(idem, codec).build()) {
      Order first = call.run("s", key, "fp", () -> new Order(1790000000000000777L, "A-1"));
      assertEquals(first, call.run("s", key, "fp", () -> new Order(1, "other")));
    }
  }

  @Test
  void aResultTheCodecCannotEncodeIsAnUnknownOutcome() {
    ResultCodec<String> broken = ResultCodec.text(v -> "{not json", t -> t);
    AtomicInteger ran = new AtomicInteger();
    String held = fresh();
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, broken).build()) {
      assertThrows(JsonException.class, () -> call.run("s", held, "", () -> "r" + ran.incrementAndGet()));
      // The work took effect, so under hold it never runs again.
      assertThrows(UncertainKeyException.class, () -> call.run("s", held, "", () -> "r" + ran.incrementAndGet()));
    }
    assertEquals(1, ran.get());
    String left = fresh();
    try (IdempotentCall<String> call = IdempotentCall.builder(idem, broken).onUncertain(OnUncertain.RETRY).build()) {
      assertThrows(JsonException.class, () -> call.run("s", left, "", () -> "r"));
    }
    // Under retry the claim is left to expire (then a repeat runs again).
    assertTrue(idem.getRecord("s", left).orElseThrow().pending());
  }

  @Test
  void optionsAreChecked() {
    assertThrows(IllegalArgumentException.class, () -> IdempotentCall.builder(idem, ResultCodec.json()).lease(Duration.ofMillis(50)));
    assertThrows(IllegalArgumentException.class, () -> IdempotentCall.builder(idem, ResultCodec.json()).wait(Duration.ofSeconds(-1)));
    assertThrows(IllegalArgumentException.class, () -> IdempotentCall.builder(idem, ResultCodec.json()).retention(Duration.ZERO));
    assertThrows(NullPointerException.class, () -> IdempotentCall.builder(null, ResultCodec.json()));
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
