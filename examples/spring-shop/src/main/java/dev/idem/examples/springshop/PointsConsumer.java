package dev.idem.examples.springshop;

import dev.idem.spring.IdempotentListener;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.stereotype.Component;

/**
 * Loyalty points for each order.paid message, once. RabbitMQ delivers at least once; two
 * defences make the grant happen once (examples/shop/consumer.cpp): the message's claim, written
 * in the same database transaction as the grant ({@code transactional = true}: the claim, the
 * ledger row and the balance commit together, or none does), keyed by the message id, or by the
 * order number when a publisher sent none; and the ledger t_points, keyed by order_no, as the last
 * line.
 */
@Component
@ConditionalOnExpression("'${shop.role:all}' != 'web'")
public class PointsConsumer {
  private final Db db;
  private final CrashBeforeAck crash;

  public PointsConsumer(Db db, CrashBeforeAck crash) {
    this.db = db;
    this.crash = crash;
  }

  /** The body of order.paid. */
  public record OrderPaid(String order_no, String user_id, long points) {}

  @RabbitListener(queues = "${shop.queue:order.paid}")
  @IdempotentListener(scope = "points-consumer", lease = "3s", transactional = true,
      key = "#message.messageProperties.messageId ?: 'order.paid:' + #payload.order_no")
  public void grant(OrderPaid m) {
    if (m.order_no() == null || m.user_id() == null || m.points() < 0) {
      db.count("consumer.poison");  // never handled: acked, not retried
      return;
    }
    // A plain INSERT whose duplicate is caught (the connection counts rows found, not changed, as
    // idem's JDBC store needs; a failed statement leaves a MySQL transaction usable).
    boolean inserted;
    try {
      inserted = db.jdbc.update("INSERT INTO t_points (order_no, user_id, points, created_at) VALUES (?, ?, ?, ?)",
          m.order_no(), m.user_id(), m.points(), Db.nowMicros()) == 1;
    } catch (org.springframework.dao.DuplicateKeyException e) {
      inserted = false;
    }
    if (inserted) {
      db.jdbc.update("INSERT INTO t_user_points (user_id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = balance + ?",
          m.user_id(), m.points(), m.points());
      db.count("consumer.processed");
      crash.processed();
    } else {
      db.count("consumer.ledger_unique");  // the last line: granted before, its claim not recorded
    }
  }
}
