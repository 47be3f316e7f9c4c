package dev.idem.spring.shop;

import dev.idem.spring.IdempotentListener;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/** Points written to the ledger with the message's claim, in one database transaction. */
@Component
@ConditionalOnProperty(name = {"shop.queue", "shop.ledger"})
public class LedgerListener {
  private final JdbcTemplate jdbc;
  private final ConcurrentHashMap<String, AtomicInteger> attempts = new ConcurrentHashMap<>();

  public LedgerListener(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  @RabbitListener(queues = "${shop.queue}.tx", concurrency = "4")
  @IdempotentListener(scope = "ledger", transactional = true)
  public void credit(PointsListener.OrderPaid m) throws InterruptedException {
    jdbc.update("INSERT INTO shop_ledger (op, amount) VALUES (?, ?)", "msg:" + m.orderNo(), m.points());
    if (m.delayMs() > 0) Thread.sleep(m.delayMs());
    int attempt = attempts.computeIfAbsent(m.orderNo(), x -> new AtomicInteger()).incrementAndGet();
    if (attempt <= m.failTimes()) throw new IllegalStateException("failed after writing (attempt " + attempt + ")");
  }
}
