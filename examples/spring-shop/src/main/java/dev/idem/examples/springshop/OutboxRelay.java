package dev.idem.examples.springshop;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageDeliveryMode;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * The transactional outbox: a payment's order.paid message is a row written with the payment;
 * this relay publishes unsent rows in order (message id = the row's id, order.paid:&lt;order_no&gt;),
 * waits for the broker's confirm, then marks them sent. A crash between the publish and the mark
 * publishes one twice: the consumer's idempotency absorbs it.
 */
@Component
@ConditionalOnExpression("'${shop.role:all}' != 'consumer'")
public class OutboxRelay {
  private static final Log LOG = LogFactory.getLog(OutboxRelay.class);
  private final Db db;
  private final RabbitTemplate rabbit;
  private final ShopProperties props;
  private final Object wake = new Object();
  private String lastError = "";

  public OutboxRelay(Db db, RabbitTemplate rabbit, ShopProperties props, Payments payments) {
    this.db = db;
    this.rabbit = rabbit;
    this.props = props;
    payments.onPaid(() -> {
      synchronized (wake) {
        wake.notifyAll();
      }
    });
  }

  @Bean
  static Queue orderPaidQueue(ShopProperties props) {
    return new Queue(props.queue(), true);
  }

  @Scheduled(fixedDelay = 50)
  void relay() throws InterruptedException {
    int sent;
    try {
      sent = relayBatch();
      if (!lastError.isEmpty()) LOG.info("outbox relay: working again");
      lastError = "";
    } catch (RuntimeException e) {
      if (!e.toString().equals(lastError)) LOG.warn("outbox relay: " + e);
      lastError = e.toString();
      Thread.sleep(500);
      return;
    }
    if (sent == 0) {
      synchronized (wake) {
        wake.wait(1000);
      }
    }
  }

  private int relayBatch() {
    List<String[]> rows = db.jdbc.query(
        "SELECT id, payload FROM t_outbox WHERE sent_at IS NULL ORDER BY created_at, id LIMIT 64",
        (r, i) -> new String[] {r.getString(1), r.getString(2)});
    for (String[] row : rows) {
      MessageProperties p = new MessageProperties();
      p.setMessageId(row[0]);
      p.setContentType(MessageProperties.CONTENT_TYPE_JSON);
      p.setDeliveryMode(MessageDeliveryMode.PERSISTENT);
      Message m = new Message(row[1].getBytes(StandardCharsets.UTF_8), p);
      rabbit.invoke(ops -> {
        ops.send("", props.queue(), m);
        ops.waitForConfirmsOrDie(5000);
        return null;
      });
      db.inTransaction(() -> {
        if (db.jdbc.update("UPDATE t_outbox SET sent_at = ? WHERE id = ? AND sent_at IS NULL", Db.nowMicros(), row[0]) == 1)
          db.count("outbox.published");
        return null;
      });
    }
    return rows.size();
  }
}
