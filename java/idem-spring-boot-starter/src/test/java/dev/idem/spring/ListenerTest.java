package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.IdemStore;
import dev.idem.spring.shop.Executions;
import dev.idem.spring.shop.PointsListener.OrderPaid;
import dev.idem.spring.shop.RabbitShop;
import dev.idem.spring.shop.ShopApplication;
import java.time.Duration;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code @IdempotentListener} on a real RabbitMQ with the records on a real Redis: redeliveries
 * and re-publications run once, a consumer dying before its ack or mid-run, a message another
 * consumer is handling waits (never requeued hot), no message id is dead-lettered.
 */
@SpringBootTest(classes = ShopApplication.class, webEnvironment = SpringBootTest.WebEnvironment.NONE,
    properties = {"idem.listener.in-progress-wait=700ms",
        "spring.autoconfigure.exclude=org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
class ListenerTest {
  static final String QUEUE = "idem-spring-test-" + UUID.randomUUID();

  @BeforeAll
  static void servers() {
    Servers.assumeRedis();
    Servers.assumeAmqp();
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    Servers.register(r, Servers.redisProperties());
    Servers.register(r, Servers.amqpProperties());
    r.add("shop.queue", () -> QUEUE);
  }

  @Autowired RabbitTemplate rabbit;
  @Autowired CachingConnectionFactory connections;
  @Autowired Executions executions;
  @Autowired IdemStore store;

  @org.junit.jupiter.api.AfterAll
  static void dropQueues(@Autowired org.springframework.amqp.core.AmqpAdmin admin) {
    for (String q : new String[] {"", ".by-order", ".hold", ".tx"}) {
      admin.deleteQueue(QUEUE + q);
      admin.deleteQueue(QUEUE + q + ".dlq");
    }
  }

  static String id() {
    return "m-" + UUID.randomUUID();
  }

  void send(String queue, OrderPaid m, String messageId, boolean crashBeforeAck) {
    rabbit.convertAndSend("", queue, m, (Message msg) -> {
      if (messageId != null) msg.getMessageProperties().setMessageId(messageId);
      if (crashBeforeAck) msg.getMessageProperties().setHeader("x-crash-before-ack", true);
      return msg;
    });
  }

  static void await(BooleanSupplier done, Duration max) throws InterruptedException {
    long until = System.nanoTime() + max.toNanos();
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > until) throw new AssertionError("not within " + max);
      Thread.sleep(20);
    }
  }

  @Test
  void aMessagePublishedTwiceRunsOnce() throws Exception {
    String id = id(), order = "O-" + id;
    send(QUEUE, new OrderPaid(order, 10, 0, 0), id, false);
    send(QUEUE, new OrderPaid(order, 10, 0, 0), id, false);
    await(() -> RabbitShop.deliveries(id) == 2 && executions.of("points-msg:" + order) == 1, Duration.ofSeconds(10));
    Thread.sleep(300);
    assertThat(executions.of("points-msg:" + order)).isEqualTo(1);
  }

  @Test
  void theKeyFromThePayloadDeduplicatesMessagesWithDifferentIds() throws Exception {
    String order = "O-" + UUID.randomUUID(), a = id(), b = id();
    send(QUEUE + ".by-order", new OrderPaid(order, 10, 0, 0), a, false);
    send(QUEUE + ".by-order", new OrderPaid(order, 10, 0, 0), b, false);
    await(() -> RabbitShop.deliveries(a) == 1 && RabbitShop.deliveries(b) == 1
        && executions.of("points-order:" + order) == 1, Duration.ofSeconds(10));
    Thread.sleep(300);
    assertThat(executions.of("points-order:" + order)).isEqualTo(1);
  }

  @Test
  void aMessageWithoutAnIdIsDeadLetteredNotRequeuedForever() throws Exception {
    String order = "O-" + UUID.randomUUID();
    send(QUEUE, new OrderPaid(order, 10, 0, 0), null, false);
    Message dead = rabbit.receive(QUEUE + ".dlq", 10_000);
    assertThat(dead).isNotNull();
    assertThat(new String(dead.getBody(), java.nio.charset.StandardCharsets.UTF_8)).contains(order);
    assertThat(executions.of("points-msg:" + order)).isZero();
  }

  @Test
  void aConsumerThatDiesBeforeItsAckIsRedeliveredAndNotRunAgain() throws Exception {
    String id = id(), order = "O-" + id;
    send(QUEUE, new OrderPaid(order, 10, 0, 0), id, true);
    await(() -> RabbitShop.deliveries(id) == 2 && executions.of("points-msg:" + order) == 1, Duration.ofSeconds(10));
    Thread.sleep(300);
    assertThat(executions.of("points-msg:" + order)).isEqualTo(1);
  }

  @Test
  void aConnectionLostMidWorkRedeliversToTheOtherConsumerWhichWaitsAndDoesNotRunIt() throws Exception {
    String id = id(), order = "O-" + id;
    send(QUEUE, new OrderPaid(order, 10, 1500, 0), id, false);
    await(() -> RabbitShop.deliveries(id) == 1, Duration.ofSeconds(10));
    Thread.sleep(200);
    connections.resetConnection();  // the broker requeues the unacked message at once
    await(() -> executions.of("points-msg:" + order) == 1, Duration.ofSeconds(10));
    await(() -> RabbitShop.deliveries(id) >= 2, Duration.ofSeconds(15));
    Thread.sleep(1000);
    assertThat(executions.of("points-msg:" + order)).isEqualTo(1);
    // Waited in-progress-wait (700 ms) per delivery while the first ran: a handful, not a hot loop.
    assertThat(RabbitShop.deliveries(id)).isLessThanOrEqualTo(6);
  }

  @Test
  void aConsumerThatDiedMidRunIsTakenOverAfterItsLeaseWithoutAHotRequeue() throws Exception {
    String id = id(), order = "O-" + id;
    BeginOutcome dead = store.begin(new BeginArgs("points", id, null, Duration.ofSeconds(2), Duration.ofMinutes(5),
        "a-consumer-that-died"));
    assertThat(dead).isInstanceOf(BeginOutcome.Acquired.class);
    long t0 = System.nanoTime();
    send(QUEUE, new OrderPaid(order, 10, 0, 0), id, false);
    await(() -> executions.of("points-msg:" + order) == 1, Duration.ofSeconds(15));
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isGreaterThan(Duration.ofMillis(1500));
    assertThat(RabbitShop.deliveries(id)).isBetween(1, 5);
  }

  @Test
  void underHoldAConsumerThatDiedMidRunLeavesTheMessageDeadLettered() throws Exception {
    String id = id(), order = "O-" + id;
    store.begin(new BeginArgs("points-hold", id, null, Duration.ofMillis(300), Duration.ofMinutes(5), "died"));
    send(QUEUE + ".hold", new OrderPaid(order, 10, 0, 0), id, false);
    Message dead = rabbit.receive(QUEUE + ".hold.dlq", 10_000);
    assertThat(dead).isNotNull();
    assertThat(dead.getMessageProperties().getMessageId()).isEqualTo(id);
    assertThat(executions.of("points-hold:" + order)).isZero();
  }

  @Test
  void aListenerThatThrowsReleasesTheKeyAndTheRedeliveryRunsIt() throws Exception {
    String id = id(), order = "O-" + id;
    send(QUEUE, new OrderPaid(order, 10, 0, 1), id, false);
    await(() -> executions.of("points-msg:" + order) == 1, Duration.ofSeconds(10));
    assertThat(RabbitShop.deliveries(id)).isEqualTo(2);
  }
}
