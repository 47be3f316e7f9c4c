package dev.idem.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.ClaimRunner;
import dev.idem.core.Deduplicator;
import dev.idem.core.Delivery;
import dev.idem.core.OnUncertain;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The engine's {@link Deduplicator} on the control API of a real {@code idem serve}. */
class ControlApiDeduplicatorTest extends GatewayTest {
  ClaimRunner runner;

  @BeforeEach
  void open() {
    runner = new ClaimRunner(new ControlApiStore(idem));
  }

  @AfterEach
  void close() {
    runner.close();
  }

  @Test
  void aRedeliveredMessageIsADuplicate() {
    String group = "billing-" + UUID.randomUUID();
    AtomicInteger granted = new AtomicInteger();
    Deduplicator dedup = Deduplicator.builder(runner, group).build();
    Delivery first = dedup.handle("msg-1", granted::incrementAndGet);
    assertThat(first.kind()).isEqualTo(Delivery.Kind.PROCESSED);
    assertThat(first.ack()).isTrue();
    assertThat(first.stored()).isTrue();
    assertThat(first.fence()).isPositive();
    Delivery again = dedup.handle("msg-1", granted::incrementAndGet);
    assertThat(again.kind()).isEqualTo(Delivery.Kind.DUPLICATE);
    assertThat(again.ack()).isTrue();
    assertThat(dedup.handle("msg-2", granted::incrementAndGet).kind()).isEqualTo(Delivery.Kind.PROCESSED);
    assertThat(granted.get()).isEqualTo(2);
    // Another consumer group is another scope: it handles the message itself.
    assertThat(Deduplicator.builder(runner, group + "-audit").build().handle("msg-1", granted::incrementAndGet).kind())
        .isEqualTo(Delivery.Kind.PROCESSED);
  }

  @Test
  void aFailedHandlingIsReleasedSoTheRedeliveryRunsIt() {
    Deduplicator dedup = Deduplicator.builder(runner, "g-" + UUID.randomUUID()).build();
    assertThatThrownBy(() -> dedup.handle("m", () -> {
      throw new IllegalStateException("database down");
    })).isInstanceOf(IllegalStateException.class);
    AtomicInteger ran = new AtomicInteger();
    assertThat(dedup.handle("m", ran::incrementAndGet).kind()).isEqualTo(Delivery.Kind.PROCESSED);
    assertThat(ran.get()).isEqualTo(1);
  }

  @Test
  void aMessageAnotherConsumerIsHandlingIsInProgress() throws Exception {
    Deduplicator dedup = Deduplicator.builder(runner, "g-" + UUID.randomUUID()).build();
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
      assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
      Delivery busy = dedup.handle("m", () -> {
        throw new AssertionError("must not run");
      });
      assertThat(busy.kind()).isEqualTo(Delivery.Kind.IN_PROGRESS);
      assertThat(busy.ack()).isFalse();
      assertThat(busy.retryAfter()).isPositive();
      release.countDown();
      assertThat(slow.get(10, TimeUnit.SECONDS).kind()).isEqualTo(Delivery.Kind.PROCESSED);
    } finally {
      pool.shutdownNow();
    }
    assertThat(dedup.handle("m", () -> {}).kind()).isEqualTo(Delivery.Kind.DUPLICATE);
  }

  @Test
  void aCrashedConsumersMessageRunsAgainUnderRetryAndIsParkedUnderHold() throws Exception {
    String group = "g-" + UUID.randomUUID();
    // Consumers that died mid-message: their claims run out (the time passing is the subject).
    idem.begin(group, "m-retry", "", Duration.ofMillis(100), null);
    idem.begin(group, "m-hold", "", Duration.ofMillis(100), null);
    Thread.sleep(250);
    Delivery d = Deduplicator.builder(runner, group).build().handle("m-retry", () -> {});
    assertThat(d.kind()).isEqualTo(Delivery.Kind.PROCESSED);
    assertThat(d.recovered()).isTrue();
    Deduplicator hold = Deduplicator.builder(runner, group).onUncertain(OnUncertain.HOLD).build();
    AtomicInteger ran = new AtomicInteger();
    assertThat(hold.handle("m-hold", ran::incrementAndGet).kind()).isEqualTo(Delivery.Kind.UNCERTAIN);
    assertThat(hold.handle("m-hold", ran::incrementAndGet).kind()).isEqualTo(Delivery.Kind.UNCERTAIN);
    assertThat(ran.get()).isZero();
  }

  @Test
  void manyConsumersOfOneRedeliveredMessageRunItOnce() throws Exception {
    final int consumers = 16;
    AtomicInteger ran = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(consumers);
    CountDownLatch go = new CountDownLatch(1);
    Deduplicator dedup = Deduplicator.builder(runner, "g-" + UUID.randomUUID()).build();
    try {
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
        assertThat(d.kind()).as(d.toString()).isNotEqualTo(Delivery.Kind.UNCERTAIN);
      }
      assertThat(processed).isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
    assertThat(ran.get()).isEqualTo(1);
  }

  @Test
  void emptyMessageIdsAreRefused() {
    Deduplicator dedup = Deduplicator.builder(runner, "g").build();
    assertThatThrownBy(() -> dedup.handle("", () -> {})).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> dedup.handle(null, () -> {})).isInstanceOf(NullPointerException.class);
  }
}
