package dev.idem.core;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Runs a piece of work at most once per idempotency key and gives every repeat the first result:
 * the Java engine's face of the claim runner (the C++ {@code idem::Guard}).
 *
 * <pre>{@code
 * IdempotentCall<Long> createOrder = IdempotentCall.builder(runner, ResultCodec.longs()).build();
 * long orderId = createOrder.run("user-7", idempotencyKey, fingerprint, () -> orders.create(request));
 * }</pre>
 *
 * <p>What a call does, by the answer of begin:
 *
 * <ul>
 *   <li>acquired: the work runs on the caller's thread while the runner extends the lease every
 *       lease/3. Its result is committed and returned. If the work throws, the claim is released
 *       (nothing stored; a retry runs the work again) and the exception propagates unchanged.
 *   <li>replay: the first call's result, decoded; the work does not run.
 *   <li>in progress: another caller runs the work: begin is asked again (at once when the first
 *       run is in this process and ends, else with a backoff from 2 ms to 200 ms, never past the
 *       holder's lease), for up to {@code wait}; then the first result, or {@link
 *       InProgressException}.
 *   <li>mismatch: {@link KeyReusedException}; nothing runs.
 *   <li>acquired over an expired claim (recovered): the earlier holder's outcome is unknown.
 *       {@link OnUncertain#HOLD} (the default) completes the record as uncertain and throws
 *       {@link UncertainKeyException} to this and every later caller; {@link OnUncertain#RETRY}
 *       runs the work with {@link Attempt#recovered()} set, under a greater fence.
 * </ul>
 *
 * <p>A claim lost while the work ran is never committed over: {@link #run} throws {@link
 * LeaseLostException} carrying the result. A store that fails: a begin that fails throws ({@link
 * NotAppliedException}: nothing ran; {@link OutcomeUnknownException}: nothing ran, and the claim
 * the begin may have made is given back by owner in the background). A commit that fails after the
 * work ran does not lose the result: it is returned, and the commit is retried in the background
 * while repeats through this object's runner are replayed it (docs/java.md, "Failure behaviour").
 *
 * <p>Results are stored as JSON ({@link StoredResult.Json}) written by the {@link ResultCodec},
 * and unknown outcomes as {@link StoredResult.Uncertain}: the gateway's own forms, so {@code idem
 * serve} and its operator page show them, and a result committed through its control API is
 * replayed here.
 *
 * <p>Thread safety: safe for concurrent use; make one per kind of work and share it.
 */
public final class IdempotentCall<T> {
  private static final Duration FIRST_BACKOFF = Duration.ofMillis(2);
  private static final Duration MAX_BACKOFF = Duration.ofMillis(200);

  private final ClaimRunner runner;
  private final ResultCodec<T> codec;
  private final ClaimPolicy policy;
  private final Duration wait;

  private IdempotentCall(Builder<T> b) {
    this.runner = b.runner;
    this.codec = b.codec;
    this.policy = new ClaimPolicy(b.lease, b.retention, b.renew, b.onUncertain, StoredResult.UNCERTAIN_MARKER);
    this.wait = b.wait;
  }

  /** A call on {@code runner} (share one runner per store). */
  public static <T> Builder<T> builder(ClaimRunner runner, ResultCodec<T> codec) {
    return new Builder<>(runner, codec);
  }

  /** The options of a call; the defaults are those of the C++ Guard. */
  public static final class Builder<T> {
    private final ClaimRunner runner;
    private final ResultCodec<T> codec;
    private Duration lease = Duration.ofSeconds(60);
    private Duration retention = Duration.ofHours(24);
    private Duration wait = Duration.ofSeconds(5);
    private boolean renew = true;
    private OnUncertain onUncertain = OnUncertain.HOLD;

    private Builder(ClaimRunner runner, ResultCodec<T> codec) {
      this.runner = Objects.requireNonNull(runner, "runner");
      this.codec = Objects.requireNonNull(codec, "codec");
    }

    /** How long a claim is held unless renewed (default 60 s). */
    public Builder<T> lease(Duration d) {
      this.lease = Args.positive(d, "lease");
      return this;
    }

    /** How long a result is replayed (default 24 h). */
    public Builder<T> retention(Duration d) {
      this.retention = Args.positive(d, "retention");
      return this;
    }

    /** How long a repeat waits for a running first call (default 5 s; zero: never). */
    public Builder<T> wait(Duration d) {
      if (Objects.requireNonNull(d, "wait").isNegative()) throw new IllegalArgumentException("wait must not be negative, got " + d);
      this.wait = d;
      return this;
    }

    /** Extend the lease every lease/3 while the work runs (default true). */
    public Builder<T> renew(boolean r) {
      this.renew = r;
      return this;
    }

    /** Default {@link OnUncertain#HOLD}. */
    public Builder<T> onUncertain(OnUncertain p) {
      this.onUncertain = Objects.requireNonNull(p, "onUncertain");
      return this;
    }

    public IdempotentCall<T> build() {
      return new IdempotentCall<>(this);
    }
  }

  public ClaimPolicy policy() {
    return policy;
  }

  public Duration waitLimit() {
    return wait;
  }

  /**
   * Runs {@code work} at most once for (scope, key) within the retention and returns its result,
   * or the first call's result to a repeat. An empty fingerprint matches any.
   *
   * @throws InProgressException another caller still runs it after the wait
   * @throws KeyReusedException the key was used with another fingerprint
   * @throws UncertainKeyException an earlier attempt's outcome is unknown (HOLD)
   * @throws LeaseLostException the work ran but its claim was lost, so nothing was stored
   * @throws IdemException the store could not begin (nothing ran)
   */
  public T run(String scope, String key, String fingerprint, Supplier<T> work) {
    Objects.requireNonNull(work, "work");
    return valueOf(execute(scope, key, utf8(fingerprint), a -> work.get()));
  }

  /** The same, for work that wants its fence (to make its own writes conditional on it). */
  public T runWithAttempt(String scope, String key, String fingerprint, Function<Attempt, T> work) {
    return valueOf(execute(scope, key, utf8(fingerprint), work));
  }

  private static byte[] utf8(String s) {
    return s == null ? Args.EMPTY : s.getBytes(StandardCharsets.UTF_8);
  }

  /** The result of an outcome, or the exception {@link #run} throws for it. */
  public static <T> T valueOf(CallOutcome<T> outcome) {
    if (outcome instanceof CallOutcome.Executed<T> e) {
      if (e.claimLost()) throw new LeaseLostException(e.value(), e.fence());
      return e.value();
    }
    if (outcome instanceof CallOutcome.Replayed<T> r) return r.value();
    if (outcome instanceof CallOutcome.InProgress<T> p) throw new InProgressException(p.retryAfter());
    if (outcome instanceof CallOutcome.KeyReused<T>) throw new KeyReusedException();
    throw new UncertainKeyException(((CallOutcome.Uncertain<T>) outcome).mark());
  }

  /** {@link #execute(String, String, byte[], Function)} with a text fingerprint. */
  public CallOutcome<T> execute(String scope, String key, String fingerprint, Function<Attempt, T> work) {
    return execute(scope, key, utf8(fingerprint), work);
  }

  /**
   * Like {@link #run}, but answers every outcome as a value instead of throwing. The work's own
   * exceptions and the store's failures to begin still propagate.
   */
  public CallOutcome<T> execute(String scope, String key, byte[] fingerprint, Function<Attempt, T> work) {
    Args.scope(scope);
    Args.key(key);
    Objects.requireNonNull(work, "work");
    final long deadline = System.nanoTime() + wait.toNanos();
    Duration backoff = FIRST_BACKOFF;
    for (;;) {
      ClaimRunner.Acquired a = runner.acquire(scope, key, fingerprint, policy, null);
      switch (a.step()) {
        case RUN:
          return runUnder(a.claim().orElseThrow(), work);
        case HOLD_UNCERTAIN: {
          Claim c = a.claim().orElseThrow();
          runner.settle(c, Settlement.MARK_UNCERTAIN, null, Optional.empty());
          return new CallOutcome.Uncertain<>(new UncertainMark(c.previousFence(), "", 0));
        }
        case REPLAY:
          return replayed((BeginOutcome.Replay) a.begun());
        case UNCERTAIN:
          return new CallOutcome.Uncertain<>(markOf(((BeginOutcome.Replay) a.begun()).result()));
        case MISMATCH:
          return new CallOutcome.KeyReused<>();
        case NOT_APPLIED:
        case UNKNOWN:
          throw a.failure();
        case BUSY:
        default:
          break;
      }
      Duration retryAfter = ((BeginOutcome.InProgress) a.begun()).retryAfter();
      long left = deadline - System.nanoTime();
      if (left <= 0) return new CallOutcome.InProgress<>(retryAfter);
      long pause = Math.max(Math.min(Math.min(backoff.toNanos(), retryAfter.toNanos()), left), 1_000_000L);
      backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
      // Woken at once when the holder is in this process and settles; else polls.
      runner.awaitSettled(scope, key, Duration.ofNanos(pause));
      if (Thread.currentThread().isInterrupted()) return new CallOutcome.InProgress<>(retryAfter);
    }
  }

  private static UncertainMark markOf(byte[] result) {
    return UncertainMark.read(result, StoredResult.UNCERTAIN_MARKER).orElse(new UncertainMark(0, "", 0));
  }

  private CallOutcome<T> replayed(BeginOutcome.Replay r) {
    StoredResult stored;
    try {
      stored = StoredResult.decode(r.result());
    } catch (IllegalArgumentException e) {
      throw new StoreProtocolException("the key holds a result that is not idem's stored form (" + e.getMessage()
          + "): it was committed by other code", e);
    }
    if (stored instanceof StoredResult.Json j) return new CallOutcome.Replayed<>(codec.fromJson(j.text()), r.fence());
    if (stored instanceof StoredResult.Uncertain u) return new CallOutcome.Uncertain<>(u.mark());
    if (stored instanceof StoredResult.NotStored) return new CallOutcome.Uncertain<>(new UncertainMark(0, "", 0));
    throw new StoreProtocolException("the key holds an HTTP response the gateway stored, not a JSON result: "
        + "it belongs to a gateway route, not to this call");
  }

  private CallOutcome<T> runUnder(Claim claim, Function<Attempt, T> work) {
    Attempt attempt = new Attempt(claim.scope(), claim.key(), claim.fence(), claim.recovered());
    T value;
    ClaimRunner.Renewal renewal = runner.renew(claim, policy);
    claim.started();
    try {
      value = work.apply(attempt);
    } catch (RuntimeException | Error e) {
      renewal.close();
      // Failed: nothing stored, a retry runs the work again (unless the claim was lost meanwhile).
      runner.settle(claim, Decisions.settleFor(WorkEnd.FAILED, policy.onUncertain(), claim.lost()), null,
          Optional.empty());
      throw e;
    }
    renewal.close();
    byte[] bytes;
    try {
      bytes = StoredResult.encode(new StoredResult.Json(codec.toJson(value)));
    } catch (RuntimeException e) {
      // The work took effect and its result cannot be kept: an unknown outcome.
      runner.settle(claim, Decisions.settleFor(WorkEnd.UNKNOWN, policy.onUncertain(), claim.lost()), null,
          Optional.empty());
      throw e;
    }
    Settlement how = Decisions.settleFor(WorkEnd.SUCCEEDED, policy.onUncertain(), claim.lost());
    ClaimRunner.SettleResult s = runner.settle(claim, how, bytes, Optional.empty());
    return switch (s.kind()) {
      case SETTLED -> new CallOutcome.Executed<>(value, claim.fence(), claim.recovered(), true, false, Optional.empty());
      case FENCED -> new CallOutcome.Executed<>(value, claim.fence(), claim.recovered(), false, true, Optional.empty());
      default -> new CallOutcome.Executed<>(value, claim.fence(), claim.recovered(), false, false,
          Optional.ofNullable(s.error()));
    };
  }
}
