package dev.idem.spring.shop;

import dev.idem.spring.IdempotentListener;
import dev.idem.spring.UncertainPolicy;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.stereotype.Component;

/** Loyalty points for paid orders, once per message. */
@Component
@ConditionalOnProperty(name = "shop.queue")
public class PointsListener {
  private final Executions executions;
  private final ConcurrentHashMap<String, AtomicInteger> attempts = new ConcurrentHashMap<>();

  public PointsListener(Executions executions) {
    this.executions = executions;
  }

  /** @param failTimes how many first attempts throw */
  public record OrderPaid(String orderNo, long points, long delayMs, int failTimes) {}

  private void work(String name, OrderPaid m) throws InterruptedException {
    int attempt = attempts.computeIfAbsent(name, x -> new AtomicInteger()).incrementAndGet();
    if (m.delayMs() > 0) Thread.sleep(m.delayMs());
    if (attempt <= m.failTimes()) throw new IllegalStateException("the ledger is locked (attempt " + attempt + ")");
    executions.add(name);
  }

  @RabbitListener(queues = "${shop.queue}", concurrency = "2")
  @IdempotentListener(scope = "points")
  public void grant(OrderPaid m) throws InterruptedException {
    work("points-msg:" + m.orderNo(), m);
  }

  @RabbitListener(queues = "${shop.queue}.by-order")
  @IdempotentListener(scope = "points-by-order", key = "#payload.orderNo")
  public void grantByOrder(OrderPaid m) throws InterruptedException {
    work("points-order:" + m.orderNo(), m);
  }

  @RabbitListener(queues = "${shop.queue}.hold")
  @IdempotentListener(scope = "points-hold", onUncertain = UncertainPolicy.HOLD)
  public void grantHold(OrderPaid m) throws InterruptedException {
    work("points-hold:" + m.orderNo(), m);
  }
}
