package dev.idem.examples.springshop;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * @param role {@code all}, {@code web} (the HTTP API and the outbox relay) or {@code consumer}
 *     (the points consumer)
 * @param queue the queue of order.paid messages
 * @param secret the payment platform's HMAC key
 * @param slowPercent this share of orders and deductions ...
 * @param slowMs ... sleeps this long after its transaction committed, before answering
 * @param crashBeforeAck the consumer kills itself (SIGKILL) after handling its N-th message, before the ack (0: never)
 * @param seed SKUs created (or reset) at start, {@code SKU=STOCK[@PRICE]} (price in cents, default 1999)
 */
@ConfigurationProperties("shop")
public record ShopProperties(@DefaultValue("all") String role, @DefaultValue("order.paid") String queue,
                             @DefaultValue("shop-demo-secret") String secret, @DefaultValue("0") int slowPercent,
                             @DefaultValue("0") int slowMs, @DefaultValue("0") int crashBeforeAck,
                             java.util.List<String> seed) {
  public boolean web() {
    return !role.equals("consumer");
  }

  public boolean consumer() {
    return !role.equals("web");
  }
}
