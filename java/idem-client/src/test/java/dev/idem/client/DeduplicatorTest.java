package dev.idem.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import org.junit.jupiter.api.Test;

/** {@link Deduplicator} against a real {@code idem serve}. */
class DeduplicatorTest extends GatewayTest {
  @Test
  void aRedeliveredMessageIsADuplicate() {
    String group = "billing-" + UUID.randomUUID();
    AtomicInteger granted = new AtomicInteger();
    try (Deduplicator dedup = Deduplicator.builder(idem, group).build()) {
      Delivery first = dedup.handle("msg-1", granted::incrementAndGet);
      assertEquals(Delivery.Kind.PROCESSED, first.kind());
      assertTrue(first.ack());
      assertTrue(first.stored());
      assertTrue(first.fence() > 0);
      Delivery again = dedup.handle("msg-1", granted::incrementAndGet);
      assertEquals(Delivery.Kind.DUPLICATE, again.kind());
      assertTrue(again.ack());
      assertEquals(Delivery.Kind.PROCESSED, dedup.handle("msg-2", granted::incrementAndGet).kind());
      assertEquals(2, granted.get());
    }
    // Another consumer group is another scope: it handles the message itself.
    try (Deduplicator other = Deduplicator.builder(idem, group + "-audit").build()) {
      assertEquals(Delivery.Kind.PROCESSED, other.handle("msg-1", granted::incrementAndGet).kind());
    }
  }

  @Test
  void aFailedHandlingIsReleasedSoTheRedeliveryRunsIt() {
    try (Deduplicator dedup = Deduplicator.builder(idem, "g-" + UUID.randomUUID()).build()) {
      assertThrows(IllegalStateException.class, () -> dedup.handle("m", () -> {
        throw new IllegalStateException("database down");
      }));
      AtomicInteger ran = new AtomicInteger();
      assertEquals(Delivery.Kind.PROCESSED, dedup.handle("m", ran::incrementAndGet).kind());
      assertEquals(1, ran.get());
    }
  }

  @Test
  void aMessageAnotherConsumerIsHandlingIsInProgress() throws Exception {
    try (Deduplicator dedup = Deduplicator.builder(idem, "g-" + UUID.randomUUID()).build()) {
      CountDownLatch started = new CountDownLatch(1), release = new CountDownLatch(1);
      ExecutorService pool = Executors.newSingleThreadExecutor();
      try {
        Future<Delivery> slow = pool.submit(() -> dedup.handle("m", () -> {
          started.countDown();
          try {
            release.await(10, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
        }));
        assertTrue(started.await(10, TimeUnit.SECONDS));
        Delivery busy = dedup.handle("m", () -> {
          throw new AssertionError("must not run");
        });
        assertEquals(Delivery.Kind.IN_PROGRESS, busy.kind());
        assertFalse(busy.ack());
        assertTrue(busy.retryAfter().toMillis() > 0);
        release.countDown();
        assertEquals(Delivery.Kind.PROCESSED, slow.get(10, TimeUnit.SECONDS).kind());
      } finally {
        pool.shutdownNow();
      }
      assertEquals(Delivery.Kind.DUPLICATE, dedup.handle("m", () -> {}).kind());
    }
  }

  @Test
  void aCrashedConsumersMessageRunsAgainUnderRetryAndIsParkedUnderHold() {
    String group = "g-" + UUID.randomUUID();
    // Consumers that died mid-message: their claims run out.
    idem.begin(group, "m-retry", "", Duration.ofMillis(100), null);
    idem.begin(group, "m-hold", "", Duration.ofMillis(100), null);
    IdempotentCallTest.sleep(250);
    try (Deduplicator retry = Deduplicator.builder(idem, group).build()) {
      Delivery d = retry.handle("m-retry", () -> {});
      assertEquals(Delivery.Kind.PROCESSED, d.kind());
      assertTrue(d.recovered());
    }
    try (Deduplicator hold = Deduplicator.builder(idem, group).onUncertain(OnUncertain.HOLD).build()) {
      AtomicInteger ran = new AtomicInteger();
      assertEquals(Delivery.Kind.UNCERTAIN, hold.handle("m-hold", ran::incrementAndGet).kind());
      assertEquals(Delivery.Kind.UNCERTAIN, hold.handle("m-hold", ran::incrementAndGet).kind());
      assertEquals(0, ran.get());
    }
  }

  @Test
  void manyConsumersOfOneRedeliveredMessageRunItOnce() throws Exception {
    final int consumers = 16;
    AtomicInteger ran = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(consumers);
    CountDownLatch go = new CountDownLatch(1);
    try (Deduplicator dedup = Deduplicator.builder(idem, "g-" + UUID.randomUUID()).build()) {
      List<Future<Delivery>> all = new ArrayList<>();
      for (int n = 0; n < consumers; n++) all.add(pool.submit(() -> {
        go.await();
        return dedup.handle("same-message", ran::incrementAndGet);
      }));
      go.countDown();
      int processed = 0;
      for (Future<Delivery> f : all) {
        Delivery d = f.get(20, TimeUnit.SECONDS);
        if (d.kind() == Delivery.Kind.PROCESSED) processed++;
        // The others either saw it running (requeue) or done (ack).
        assertTrue(d.kind() != Delivery.Kind.UNCERTAIN, d.toString());
      }
      assertEquals(1, processed);
    } finally {
      pool.shutdownNow();
    }
    assertEquals(1, ran.get());
  }

  @Test
  void emptyMessageIdsAreRefused() {
    try (Deduplicator dedup = Deduplicator.builder(idem, "g").build()) {
      assertThrows(IllegalArgumentException.class, () -> dedup.handle("", () -> {}));
      assertThrows(NullPointerException.class, () -> dedup.handle(null, () -> {}));
    }
  }
}
