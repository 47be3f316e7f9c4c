package dev.idem.client;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Effectively-once message handling for consumers of an at-least-once broker (RabbitMQ,
 * RocketMQ, Kafka): messages are de-duplicated by message id within a scope fixed at
 * construction, typically the consumer group (docs/java.md).
 *
 * <pre>{@code
 * Deduplicator dedup = Deduplicator.builder(idem, "billing-consumers").build();
 * // in the listener:
 * try {
 *   Delivery d = dedup.handle(message.getMessageId(), () -> grantPoints(message));
 *   if (d.ack()) channel.basicAck(tag, false);
 *   else if (d.kind() == Delivery.Kind.IN_PROGRESS) channel.basicNack(tag, false, true);
 *   else channel.basicReject(tag, false);            // UNCERTAIN: to the dead-letter queue
 * } catch (RuntimeException e) {
 *   channel.basicNack(tag, false, true);             // released: the redelivery runs it again
 * }
 * }</pre>
 *
 * <p>The work runs at most once per message id among consumers that see the message
 * concurrently or later within the retention. It is an {@link IdempotentCall} with an empty
 * fingerprint and no waiting (a consumer that finds the message in progress hands it back to
 * the broker rather than holding a delivery slot). When the work throws, the claim is
 * released and the exception propagates, so the broker's redelivery runs it again. A consumer
 * that crashed mid-message leaves a pending claim; once its lease expires the redelivery
 * takes it over: by default ({@link OnUncertain#RETRY}) the work runs again, since the broker
 * only redelivers messages that were never acknowledged; {@link OnUncertain#HOLD} reports
 * them as UNCERTAIN instead.
 *
 * <p>Thread safety: safe for concurrent use from any number of listener threads.
 */
public final class Deduplicator implements AutoCloseable {
  private final String scope;
  private final IdempotentCall<JsonValue> call;

  private Deduplicator(Builder b) {
    this.scope = b.scope;
    this.call = IdempotentCall.builder(b.idem, ResultCodec.json())
        .lease(b.lease).retention(b.retention).wait(Duration.ZERO).renew(b.renew).onUncertain(b.onUncertain)
        .build();
  }

  public static Builder builder(Idem idem, String scope) {
    return new Builder(idem, scope);
  }

  public static final class Builder {
    private final Idem idem;
    private final String scope;
    private Duration lease = Duration.ofSeconds(60);
    private Duration retention = Duration.ofHours(24);
    private boolean renew = true;
    private OnUncertain onUncertain = OnUncertain.RETRY;

    private Builder(Idem idem, String scope) {
      this.idem = Objects.requireNonNull(idem, "idem");
      this.scope = Objects.requireNonNull(scope, "scope");
    }

    /** How long one consumer holds a message unless renewed (default 60 s). */
    public Builder lease(Duration d) {
      this.lease = d;
      return this;
    }

    /** At least as long as the broker may redeliver (default 24 h). */
    public Builder retention(Duration d) {
      this.retention = d;
      return this;
    }

    public Builder renew(boolean r) {
      this.renew = r;
      return this;
    }

    /** Default {@link OnUncertain#RETRY}. */
    public Builder onUncertain(OnUncertain p) {
      this.onUncertain = p;
      return this;
    }

    public Deduplicator build() {
      return new Deduplicator(this);
    }
  }

  public String scope() {
    return scope;
  }

  /** Handles one delivery of {@code messageId}: runs {@code work} unless it ran before. */
  public Delivery handle(String messageId, Runnable work) {
    Objects.requireNonNull(work, "work");
    return handleWithAttempt(messageId, a -> work.run());
  }

  /** The same, for work that wants its fence. */
  public Delivery handleWithAttempt(String messageId, Consumer<Attempt> work) {
    Objects.requireNonNull(work, "work");
    if (Objects.requireNonNull(messageId, "messageId").isEmpty())
      throw new IllegalArgumentException("messageId must not be empty");
    CallOutcome<JsonValue> r = call.execute(scope, messageId, "", a -> {
      work.accept(a);
      return JsonValue.NULL;
    });
    if (r instanceof CallOutcome.Executed<JsonValue> e)
      return new Delivery(Delivery.Kind.PROCESSED, e.fence(), e.recovered(), e.stored(), Duration.ZERO);
    if (r instanceof CallOutcome.Replayed<JsonValue>)
      return new Delivery(Delivery.Kind.DUPLICATE, 0, false, true, Duration.ZERO);
    if (r instanceof CallOutcome.InProgress<JsonValue> p)
      return new Delivery(Delivery.Kind.IN_PROGRESS, 0, false, false, p.retryAfter());
    if (r instanceof CallOutcome.Uncertain<JsonValue>)
      return new Delivery(Delivery.Kind.UNCERTAIN, 0, false, false, Duration.ZERO);
    // Without a fingerprint a key cannot be reused: report it rather than guess.
    throw new ProtocolException("message " + messageId + ": the gateway answered mismatch without a fingerprint", 200, null);
  }

  @Override
  public void close() {
    call.close();
  }
}
