package dev.idem.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Handles each message once on a {@code @RabbitListener} method (docs/spring.md, "Consumers"):
 * RabbitMQ delivers at least once, and a redelivered or re-published message runs the method
 * again unless the consumer remembers it.
 *
 * <pre>{@code
 * @RabbitListener(queues = "order.paid")
 * @IdempotentListener(scope = "points", key = "#payload.orderNo")
 * public void grantPoints(OrderPaid payload) { ... }
 * }</pre>
 *
 * <p>By the store's answer for the message's key: the first delivery runs the method and its
 * result is committed when it returns (then the container acks); a delivery of a message that was
 * handled before returns that result without running (acked); a delivery of a message another
 * consumer is handling waits for it (the holder's {@code retryAfter}, up to {@code
 * idem.listener.in-progress-wait}), never requeued hot; a message whose earlier consumer died
 * mid-run runs again after that claim's lease ({@code RETRY}, the default) or is rejected without
 * requeue, to the dead-letter exchange ({@code HOLD}). A method that throws releases the key and
 * the exception goes to the container (its retry and requeue settings decide).
 *
 * <p>A message without a key (Spring AMQP sends none unless the message converter creates ids):
 * {@code idem.listener.missing-key}: {@code reject} (the default: rejected without requeue, to
 * the dead-letter exchange, logged) or {@code process} (run unprotected, counted).
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface IdempotentListener {

  /** The consumer group whose records these are (two queues carrying the same ids use two). Empty: {@code Class.method}. */
  String scope() default "";

  /**
   * The key: a SpEL expression over {@code #payload} (the converted first argument, or the
   * method's arguments by name), {@code #message} (the AMQP Message), {@code #headers}. Empty: the
   * message's {@code message_id} property.
   */
  String key() default "";

  /** How long one consumer holds a message unless renewed; renewed every lease/3 while the method runs. */
  String lease() default "";

  /** How long a handled message is remembered: longer than a message can stay queued or dead-lettered. */
  String retention() default "";

  /** What a message whose earlier consumer died mid-run means; by default {@code idem.listener.on-uncertain} (RETRY). */
  UncertainPolicy onUncertain() default UncertainPolicy.DEFAULT;

  /** The same as {@link Idempotent#transactional()}: the claim in the listener's database transaction. */
  boolean transactional() default false;
}
