package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdemStore;
import dev.idem.spring.shop.LedgerService;
import dev.idem.spring.shop.PointsListener.OrderPaid;
import dev.idem.spring.shop.ShopApplication;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A listener whose claim is written in its own database transaction on MariaDB (the JDBC store):
 * the same message delivered four times at once writes one row; a listener that fails after
 * writing leaves neither row nor claim, and the redelivery writes it once.
 */
@SpringBootTest(classes = ShopApplication.class, webEnvironment = SpringBootTest.WebEnvironment.NONE,
    properties = {"idem.store.type=jdbc", "idem.store.jdbc.table-prefix=idem_spring_", "shop.ledger=true",
        "spring.autoconfigure.exclude=org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration"})
class JdbcListenerTest {
  static final String QUEUE = "idem-spring-tx-" + UUID.randomUUID();

  @BeforeAll
  static void servers() {
    Servers.assumeMysql();
    Servers.assumeAmqp();
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    Servers.register(r, Servers.mysqlProperties());
    Servers.register(r, Servers.amqpProperties());
    r.add("shop.queue", () -> QUEUE);
  }

  @AfterAll
  static void dropQueues(@Autowired AmqpAdmin admin) {
    for (String q : new String[] {"", ".by-order", ".hold", ".tx"}) {
      admin.deleteQueue(QUEUE + q);
      admin.deleteQueue(QUEUE + q + ".dlq");
    }
  }

  @Autowired RabbitTemplate rabbit;
  @Autowired LedgerService ledger;
  @Autowired IdemStore store;

  void send(OrderPaid m, String id) {
    rabbit.convertAndSend("", QUEUE + ".tx", m, (Message msg) -> {
      msg.getMessageProperties().setMessageId(id);
      return msg;
    });
  }

  static void await(java.util.function.BooleanSupplier done, Duration max) throws InterruptedException {
    long until = System.nanoTime() + max.toNanos();
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > until) throw new AssertionError("not within " + max);
      Thread.sleep(20);
    }
  }

  @Test
  void fourDeliveriesAtOnceWriteOneRow() throws Exception {
    String id = "m-" + UUID.randomUUID(), order = "O-" + id;
    for (int i = 0; i < 4; i++) send(new OrderPaid(order, 7, 300, 0), id);
    await(() -> store.get("ledger", id).isPresent(), Duration.ofSeconds(10));
    Thread.sleep(1500);
    assertThat(ledger.rows("msg:" + order)).isEqualTo(1);
  }

  @Test
  void aListenerFailingAfterItsWriteRollsBothBackAndTheRedeliveryWritesOnce() throws Exception {
    String id = "m-" + UUID.randomUUID(), order = "O-" + id;
    send(new OrderPaid(order, 7, 0, 1), id);
    await(() -> store.get("ledger", id).isPresent(), Duration.ofSeconds(10));
    Thread.sleep(300);
    assertThat(ledger.rows("msg:" + order)).isEqualTo(1);
  }
}
