package dev.idem.core;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Effectively-once message handling for consumers of an at-least-once broker (RabbitMQ, RocketMQ,
 * Kafka): messages are de-duplicated by message id within a scope fixed at construction,
 * typically the consumer group. It is an {@link IdempotentCall} with an empty fingerprint and no
 * waiting (a consumer that finds the message in progress hands it back to the broker), and {@link
 * OnUncertain#RETRY} by default: a consumer that crashed mid-message leaves a claim that the
 * redelivery takes over once its lease ends. When the work throws, the claim is released and the
 * exception propagates, so the redelivery runs it again.
 *
 * <pre>{@code
 * Deduplicator dedup = Deduplicator.builder(runner, "billing-consumers").build();
 * Delivery d = dedup.handle(message.getMessageId(), () -> grantPoints(message));
 * if (d.ack()) channel.basicAck(tag, false);
 * else if (d.kind() == Delivery.Kind.IN_PROGRESS) channel.basicNack(tag, false, true);
 * else channel.basicReject(tag, false);              // UNCERTAIN: to the dead-letter queue
 * }</pre>
 *
 * <p>Thread safety: safe for concurrent use from any number of listener threads.
 */
public final class Deduplicator {
  private final String scope;
  private final IdempotentCall<Void> call;

  private Deduplicator(Builder b) {
    this.scope = b.scope;
    this.call = IdempotentCall.builder(b.runner, ResultCodec.none())
        .lease(b.lease).retention(b.retention).wait(Duration.ZERO).renew(b.renew).onUncertain(b.onUncertain).build();
  }

  public static Builder builder(ClaimRunner runner, String scope) {
    return new Builder(runner, scope);
  }

  public static final class Builder {
    private final ClaimRunner runner;
    private final String scope;
    private Duration lease = Duration.ofSeconds(60);
    private Duration retention = Duration.ofHours(24);
    private boolean renew = true;
    private OnUncertain onUncertain = OnUncertain.RETRY;

    private Builder(ClaimRunner runner, String scope) {
      this.runner = Objects.requireNonNull(runner, "runner");
      this.scope = Args.scope(scope);
    }

    /** How long one consumer holds a message unless renewed (default 60 s). */
    public Builder lease(Duration d) {
      this.lease = Args.positive(d, "lease");
      return this;
    }

    /** At least as long as the broker may redeliver (default 24 h). */
    public Builder retention(Duration d) {
      this.retention = Args.positive(d, "retention");
      return this;
    }

    public Builder renew(boolean r) {
      this.renew = r;
      return this;
    }

    /** Default {@link OnUncertain#RETRY}. */
    public Builder onUncertain(OnUncertain p) {
      this.onUncertain = Objects.requireNonNull(p, "onUncertain");
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
    Args.nonEmpty(messageId, "messageId");
    CallOutcome<Void> r = call.execute(scope, messageId, Args.EMPTY, a -> {
      work.accept(a);
      return null;
    });
    if (r instanceof CallOutcome.Executed<Void> e)
      return new Delivery(Delivery.Kind.PROCESSED, e.fence(), e.recovered(), e.stored(), Duration.ZERO);
    if (r instanceof CallOutcome.Replayed<Void>) return new Delivery(Delivery.Kind.DUPLICATE, 0, false, true, Duration.ZERO);
    if (r instanceof CallOutcome.InProgress<Void> p)
      return new Delivery(Delivery.Kind.IN_PROGRESS, 0, false, false, p.retryAfter());
    if (r instanceof CallOutcome.Uncertain<Void>) return new Delivery(Delivery.Kind.UNCERTAIN, 0, false, false, Duration.ZERO);
    // Without a fingerprint a key cannot be reused: report it rather than guess.
    throw new StoreProtocolException("message " + messageId + ": the store answered mismatch without a fingerprint");
  }
}
