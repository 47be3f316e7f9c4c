package dev.idem.examples;

import dev.idem.core.ClaimRunner;
import dev.idem.core.Deduplicator;
import dev.idem.core.Delivery;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A consumer of "order created" events that grants loyalty points, de-duplicated by message
 * id with the engine's {@link Deduplicator} (docs/java.md). The broker is at-least-once (RabbitMQ,
 * RocketMQ and Kafka all redeliver a message whose acknowledgement was lost), so the same
 * event can arrive twice; the points must be granted once.
 *
 * <p>{@link #onMessage} is what a listener calls; its answer is what the listener tells
 * the broker. With RabbitMQ's Java client, for instance:
 *
 * <pre>{@code
 * channel.basicConsume("order-events", false, (tag, delivery) -> {
 *   long t = delivery.getEnvelope().getDeliveryTag();
 *   switch (consumer.onMessage(delivery.getProperties().getMessageId(), body(delivery))) {
 *     case ACK -> channel.basicAck(t, false);
 *     case REQUEUE -> channel.basicNack(t, false, true);
 *     case DEAD_LETTER -> channel.basicReject(t, false);
 *   }
 * }, tag -> {});
 * }</pre>
 */
public final class LoyaltyPointsConsumer {
  /** What to tell the broker. */
  public enum Verdict {
    ACK,
    REQUEUE,
    DEAD_LETTER
  }

  /** Where points are kept; a database in a real service. */
  public interface Ledger {
    void grant(String user, long points, long fence);
  }

  private final Deduplicator dedup;
  private final Ledger ledger;

  /** {@code runner}: the service's claim runner, on any store (Redis, a database, the control API). */
  public LoyaltyPointsConsumer(ClaimRunner runner, String consumerGroup, Ledger ledger) {
    this.dedup = Deduplicator.builder(runner, consumerGroup).build();
    this.ledger = ledger;
  }

  /** Handles one delivery of an event {@code user:points}. */
  public Verdict onMessage(String messageId, String event) {
    String[] parts = event.split(":", 2);
    if (parts.length != 2) return Verdict.DEAD_LETTER;  // a poison message: never retried
    long points;
    try {
      points = Long.parseLong(parts[1]);
    } catch (NumberFormatException e) {
      return Verdict.DEAD_LETTER;
    }
    try {
      Delivery d = dedup.handleWithAttempt(messageId, a -> ledger.grant(parts[0], points, a.fence()));
      if (d.ack()) return Verdict.ACK;
      return d.kind() == Delivery.Kind.IN_PROGRESS ? Verdict.REQUEUE : Verdict.DEAD_LETTER;
    } catch (RuntimeException e) {
      // The ledger (or idem) failed: the claim was given back; the redelivery runs it again.
      return Verdict.REQUEUE;
    }
  }

  /** An in-memory ledger for the demonstration and the tests. */
  public static final class MemoryLedger implements Ledger {
    private final Map<String, Long> points = new ConcurrentHashMap<>();

    @Override
    public void grant(String user, long n, long fence) {
      points.merge(user, n, Long::sum);
    }

    public long points(String user) {
      return points.getOrDefault(user, 0L);
    }
  }
}
