package dev.idem.client;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Runs a piece of work at most once per idempotency key and gives every repeat the first
 * result: what the C++ {@code idem::Guard} gives C++ code (docs/java.md).
 *
 * <pre>{@code
 * IdempotentCall<Long> call = IdempotentCall.builder(idem, ResultCodec.longs()).build();
 * long orderId = call.run("user-7", idempotencyKey, fingerprint, () -> orders.create(request));
 * }</pre>
 *
 * <p>What a call does, by the answer of begin:
 *
 * <ul>
 *   <li>acquired: the work runs on the caller's thread while a daemon thread extends the
 *       lease every lease/3. Its result is committed and returned. If the work throws, the
 *       claim is released (nothing stored; a retry runs the work again) and the exception
 *       propagates.
 *   <li>replay: the first call's result, decoded; the work does not run.
 *   <li>in_progress: another caller runs the work: begin is asked again, after the server's
 *       retry_after (with a backoff starting at 2 ms, at most 200 ms), for up to {@code wait};
 *       then the first result is replayed, or {@link InProgressException}.
 *   <li>mismatch: {@link KeyReusedException}; nothing runs.
 *   <li>acquired over an expired claim (recovered): the earlier holder's outcome is unknown.
 *       {@link OnUncertain#HOLD} (the default) completes the record as uncertain and throws
 *       {@link UncertainKeyException} to this and every later caller; {@link
 *       OnUncertain#RETRY} runs the work with {@link Attempt#recovered()} set.
 * </ul>
 *
 * <p>A claim lost while the work ran (a renewal or the commit answered fenced) is never
 * committed over: {@link #run} throws {@link LeaseLostException} carrying the work's result,
 * {@link #execute} answers {@link CallOutcome.Executed} with {@code claimLost}.
 *
 * <p>Store failures: a begin that fails throws as {@link Idem} does, and nothing runs
 * ({@link StoreUnavailableException}: retry; {@link OutcomeUnknownException}: the begin may
 * have claimed the key, so the claim is given back by the owner each begin names, a UUID of
 * the call, retried in the background until the gateway answers, and a retry of the call
 * finds the key free rather than held or recovered). A commit that fails
 * after the work ran does not lose the result: it is returned ({@code stored} false in
 * {@link #execute}) and the commit is retried in the background (a commit with the same fence
 * is safe to repeat) until the gateway answers or the claim would have expired anyway (lease +
 * retention), extending the claim's lease with each try; meanwhile every repeat of the key
 * through this object is replayed that result without asking the gateway, and the pending
 * settles are tried again at once whenever the gateway answers another call. A failed
 * release is retried the same way (docs/gateway.md, "When the store fails").
 *
 * <p>Results are stored as {@code {"json": "<the encoded result as JSON text>"}}, and an
 * uncertain record as {@code {"uncertain": true}}, so that no result can be mistaken for the
 * mark. The result travels as a string because the gateway keeps strings byte for byte but
 * reads numbers into 64-bit integers or doubles: as text, a number of any size or precision
 * comes back exactly. A key whose record holds anything else (written by other code)
 * answers {@link ProtocolException}.
 *
 * <p>Thread safety: safe for concurrent use; make one per kind of work and share it. It
 * renews and settles on up to two daemon threads of its own, which end when idle;
 * {@link #close()} stops them at once (claims in flight then lose their renewals).
 */
public final class IdempotentCall<T> implements AutoCloseable {
  private static final Duration FIRST_BACKOFF = Duration.ofMillis(2);
  private static final Duration MAX_BACKOFF = Duration.ofMillis(200);
  private static final long MAX_SETTLE_PAUSE_MS = 5000;

  private final Idem idem;
  private final ResultCodec<T> codec;
  private final Duration lease;
  private final Duration retention;
  private final Duration wait;
  private final boolean renew;
  private final OnUncertain onUncertain;
  private final ScheduledThreadPoolExecutor scheduler;
  // Commits retried in the background, by scope and key: what repeats of the same
  // fingerprint are answered from.
  private final ConcurrentHashMap<String, Held> pendingCommits = new ConcurrentHashMap<>();

  private record Held(String fingerprint, JsonValue result) {
    // As the gateway would answer: an empty or null fingerprint matches any.
    boolean answers(String other) {
      return fingerprint == null || fingerprint.isEmpty() || other == null || other.isEmpty()
          || fingerprint.equals(other);
    }
  }
  // Every settle retried in the background, so that an answer from the gateway wakes them.
  private final Set<Retry> retries = ConcurrentHashMap.newKeySet();

  private IdempotentCall(Builder<T> b) {
    this.idem = b.idem;
    this.codec = b.codec;
    this.lease = b.lease;
    this.retention = b.retention;
    this.wait = b.wait;
    this.renew = b.renew;
    this.onUncertain = b.onUncertain;
    this.scheduler = new ScheduledThreadPoolExecutor(2, r -> {
      Thread t = new Thread(r, "idem-call-renewal");
      t.setDaemon(true);
      return t;
    });
    scheduler.setRemoveOnCancelPolicy(true);
    // Idle calls hold no thread (one stays while a renewal or settle is scheduled).
    scheduler.setKeepAliveTime(10, TimeUnit.SECONDS);
    scheduler.allowCoreThreadTimeOut(true);
  }

  public static <T> Builder<T> builder(Idem idem, ResultCodec<T> codec) {
    return new Builder<>(idem, codec);
  }

  /** The options of a call; the defaults are those of the C++ Guard. */
  public static final class Builder<T> {
    private final Idem idem;
    private final ResultCodec<T> codec;
    private Duration lease = Duration.ofSeconds(60);
    private Duration retention = Duration.ofHours(24);
    private Duration wait = Duration.ofSeconds(5);
    private boolean renew = true;
    private OnUncertain onUncertain = OnUncertain.HOLD;

    private Builder(Idem idem, ResultCodec<T> codec) {
      this.idem = Objects.requireNonNull(idem, "idem");
      this.codec = Objects.requireNonNull(codec, "codec");
    }

    /** How long a claim is held unless renewed (at least 100 ms; default 60 s). */
    public Builder<T> lease(Duration d) {
      if (d.compareTo(Duration.ofMillis(100)) < 0) throw new IllegalArgumentException("lease: at least 100ms, got " + d);
      this.lease = d;
      return this;
    }

    /** How long a result is replayed (default 24 h). */
    public Builder<T> retention(Duration d) {
      if (d.isNegative() || d.isZero()) throw new IllegalArgumentException("retention must be positive, got " + d);
      this.retention = d;
      return this;
    }

    /** How long a repeat waits for a running first call (default 5 s; 0 = never). */
    public Builder<T> wait(Duration d) {
      if (d.isNegative()) throw new IllegalArgumentException("wait must not be negative, got " + d);
      this.wait = d;
      return this;
    }

    /** Extend the lease every lease/3 while the work runs (default true). */
    public Builder<T> renew(boolean r) {
      this.renew = r;
      return this;
    }

    public Builder<T> onUncertain(OnUncertain p) {
      this.onUncertain = Objects.requireNonNull(p);
      return this;
    }

    public IdempotentCall<T> build() {
      return new IdempotentCall<>(this);
    }
  }

  /**
   * Runs {@code work} at most once for (scope, key) within the retention and returns its
   * result, or the first call's result to a repeat. An empty fingerprint matches any.
   *
   * @throws InProgressException another caller still runs it after the wait
   * @throws KeyReusedException the key was used with another fingerprint
   * @throws UncertainKeyException an earlier attempt's outcome is unknown (hold)
   * @throws LeaseLostException the work ran but its claim was lost, so nothing was stored
   * @throws IdemException the gateway could not begin (nothing ran)
   */
  public T run(String scope, String key, String fingerprint, Supplier<T> work) {
    Objects.requireNonNull(work, "work");
    return valueOf(execute(scope, key, fingerprint, attempt -> work.get()));
  }

  /** The same, for work that wants its fence (to make its own writes conditional on it). */
  public T runWithAttempt(String scope, String key, String fingerprint, Function<Attempt, T> work) {
    return valueOf(execute(scope, key, fingerprint, work));
  }

  private T valueOf(CallOutcome<T> outcome) {
    if (outcome instanceof CallOutcome.Executed<T> e) {
      if (e.claimLost()) throw new LeaseLostException(e.value(), e.fence());
      return e.value();
    }
    if (outcome instanceof CallOutcome.Replayed<T> r) return r.value();
    if (outcome instanceof CallOutcome.InProgress<T> p) throw new InProgressException(p.retryAfter());
    if (outcome instanceof CallOutcome.KeyReused<T>) throw new KeyReusedException();
    throw new UncertainKeyException();
  }

  /**
   * Like {@link #run}, but answers every outcome as a value instead of throwing. The work's
   * own exceptions and the gateway's failures to begin still propagate.
   */
  public CallOutcome<T> execute(String scope, String key, String fingerprint, Function<Attempt, T> work) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(work, "work");
    final long deadline = System.nanoTime() + wait.toNanos();
    Duration backoff = FIRST_BACKOFF;
    for (;;) {
      Held held = pendingCommits.get(pendingId(scope, key));
      if (held != null) {
        // This object knows the first result; its commit is still on its way. A request of
        // another fingerprint never gets it.
        wakeRetries();
        return held.answers(fingerprint) ? replayed(held.result()) : new CallOutcome.KeyReused<>();
      }
      final String owner = java.util.UUID.randomUUID().toString();
      BeginOutcome begun;
      try {
        begun = idem.begin(scope, key, fingerprint, lease, retention, owner);
        wakeRetries();
      } catch (OutcomeUnknownException e) {
        // The begin may have claimed the key without telling us the fence: give any such
        // claim back, so that it does not hold the key until its lease ends and then look
        // like a holder that died mid-work (recovered) although nothing ran.
        try {
          settle(() -> idem.abandon(scope, key, owner));
        } catch (RuntimeException abandonFailed) {
          e.addSuppressed(abandonFailed);  // the claim, if any, ends with its lease
        }
        throw e;
      }
      if (begun instanceof BeginOutcome.Acquired a) {
        if (a.recovered() && onUncertain == OnUncertain.HOLD) {
          settle(() -> idem.commit(scope, key, a.fence(), UNCERTAIN, retention));
          return new CallOutcome.Uncertain<>();
        }
        return runUnder(new Attempt(scope, key, a.fence(), a.recovered()), fingerprint, work);
      }
      if (begun instanceof BeginOutcome.Replay r) return replayed(r.result());
      if (begun instanceof BeginOutcome.Mismatch) return new CallOutcome.KeyReused<>();
      Duration retryAfter = ((BeginOutcome.InProgress) begun).retryAfter();
      long left = deadline - System.nanoTime();
      if (left <= 0) return new CallOutcome.InProgress<>(retryAfter);
      long sleep = Math.min(Math.min(backoff.toNanos(), retryAfter.toNanos()), left);
      backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
      try {
        TimeUnit.NANOSECONDS.sleep(Math.max(sleep, TimeUnit.MILLISECONDS.toNanos(1)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();  // nothing ran: answer what we know
        return new CallOutcome.InProgress<>(retryAfter);
      }
    }
  }

  /** Stops the renewal and background settle thread; calls in flight lose their renewals. */
  @Override
  public void close() {
    scheduler.shutdownNow();
  }

  // ---- under a claim -------------------------------------------------------------------------

  static final JsonValue UNCERTAIN = JsonValue.object("uncertain", JsonValue.TRUE);

  /** How a result is committed (see the class comment). */
  static JsonValue envelope(JsonValue v) {
    return JsonValue.object("json", v.toJson());
  }

  private CallOutcome<T> replayed(JsonValue stored) {
    if (stored.isNull() || stored.equals(UNCERTAIN)) return new CallOutcome.Uncertain<>();
    JsonValue text = stored instanceof JsonValue.Obj o && o.fields().size() == 1 ? o.fields().get("json") : null;
    if (text instanceof JsonValue.Str str) {
      JsonValue value;
      try {
        value = JsonValue.parse(str.value());
      } catch (JsonException e) {
        throw new ProtocolException("the key's stored result is not JSON: " + e.getMessage(), 200, e);
      }
      return new CallOutcome.Replayed<>(codec.decode(value));
    }
    throw new ProtocolException("the key holds a result IdempotentCall did not store: " + excerpt(stored), 200, null);
  }

  private static String excerpt(JsonValue v) {
    String s = v.toJson();
    return s.length() <= 100 ? s : s.substring(0, 100) + "...";
  }

  // The claim of one run: renewed by the scheduler until stopped; `lost` once a renewal
  // answered fenced. The renewal's extend and stop() exclude each other, so nothing is
  // learned about the claim after the work ended.
  private final class Claim implements Runnable {
    final Attempt attempt;
    private boolean stopped;
    private boolean lost;
    private ScheduledFuture<?> renewal;

    Claim(Attempt attempt) {
      this.attempt = attempt;
    }

    synchronized void start() {  // the first renewal waits until `renewal` is set
      if (!renew) return;
      long every = Math.max(1, lease.toMillis() / 3);
      renewal = scheduler.scheduleWithFixedDelay(this, every, every, TimeUnit.MILLISECONDS);
    }

    @Override
    public synchronized void run() {
      if (stopped || lost) return;
      try {
        if (idem.extend(attempt.scope(), attempt.key(), attempt.fence(), lease) == ExtendOutcome.FENCED) {
          lost = true;
          renewal.cancel(false);
        }
      } catch (IdemException e) {
        // Not renewed this time: the next tick tries again, well within the lease.
      } catch (RuntimeException e) {
        // Never let the scheduler drop the task silently; the next tick tries again.
      }
    }

    synchronized boolean stop() {
      stopped = true;
      if (renewal != null) renewal.cancel(false);
      return lost;
    }
  }

  private CallOutcome<T> runUnder(Attempt attempt, String fingerprint, Function<Attempt, T> work) {
    final String scope = attempt.scope(), key = attempt.key();
    final long fence = attempt.fence();
    Claim claim = new Claim(attempt);
    T value;
    try {
      claim.start();
      value = work.apply(attempt);
    } catch (RuntimeException | Error e) {
      // Nothing is stored, so that a retry runs again (unless the claim is someone else's now).
      if (!claim.stop()) settle(() -> idem.release(scope, key, fence));
      throw e;
    }
    if (claim.stop()) return lost(value, attempt);
    JsonValue encoded;
    try {
      encoded = envelope(codec.encode(value));
    } catch (RuntimeException e) {
      // The work took effect but its result cannot be stored: its outcome is unknown to
      // repeats, which the policy decides for.
      if (onUncertain == OnUncertain.HOLD) settle(() -> idem.commit(scope, key, fence, UNCERTAIN, retention));
      throw e;
    }
    try {
      if (idem.commit(scope, key, fence, encoded, retention) == CommitOutcome.FENCED) return lost(value, attempt);
      return new CallOutcome.Executed<>(value, fence, attempt.recovered(), true, false, Optional.empty());
    } catch (NotAppliedException | OutcomeUnknownException e) {
      final String id = pendingId(scope, key);
      final Held held = new Held(fingerprint, encoded);
      pendingCommits.put(id, held);
      settleLater(() -> {
        try {
          return idem.commit(scope, key, fence, encoded, retention);
        } catch (NotAppliedException | OutcomeUnknownException failed) {
          // Keep the claim while its result waits: past its lease another caller would
          // take the key over as if the outcome were unknown.
          try {
            idem.extend(scope, key, fence, lease);
          } catch (RuntimeException ignored) {
            // the commit's failure is what is retried
          }
          throw failed;
        }
      }, () -> pendingCommits.remove(id, held));
      return new CallOutcome.Executed<>(value, fence, attempt.recovered(), false, false, Optional.of(e));
    }
  }

  private static String pendingId(String scope, String key) {
    return scope.length() + ":" + scope + key;
  }

  private CallOutcome<T> lost(T value, Attempt a) {
    return new CallOutcome.Executed<>(value, a.fence(), a.recovered(), false, true, Optional.empty());
  }

  // A settling call (commit, release): now, and when the gateway cannot answer, again in the
  // background. Every settle is safe to repeat: a commit with the same fence changes nothing
  // the second time, a release or commit of a claim that is gone answers fenced.
  private void settle(Supplier<?> call) {
    try {
      call.get();
      wakeRetries();
    } catch (NotAppliedException | OutcomeUnknownException e) {
      settleLater(call, () -> {});
    }
  }

  private void settleLater(Supplier<?> call, Runnable done) {
    Retry r = new Retry(call, done, System.nanoTime() + lease.plus(retention).toNanos());
    retries.add(r);
    r.schedule(100);
  }

  /** Runs the pending settles now: the gateway answers again. */
  private void wakeRetries() {
    for (Retry r : retries) r.wake();
  }

  // One settle retried with pauses doubling from 100 ms to 5 s, until the gateway answers or
  // the claim would have expired anyway; wake() cuts the pause short.
  private final class Retry implements Runnable {
    private final Supplier<?> call;
    private final Runnable done;
    private final long giveUpAt;
    private long pauseMs = 100;
    private ScheduledFuture<?> next;
    private boolean running;
    private boolean finished;

    Retry(Supplier<?> call, Runnable done, long giveUpAt) {
      this.call = call;
      this.done = done;
      this.giveUpAt = giveUpAt;
    }

    synchronized void schedule(long delayMs) {
      if (finished) return;
      try {
        next = scheduler.schedule(this, delayMs, TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        finish();  // closed meanwhile: the claim expires after its lease
      }
    }

    synchronized void wake() {
      if (finished || running || next == null || next.getDelay(TimeUnit.MILLISECONDS) <= 0) return;
      if (next.cancel(false)) {
        pauseMs = 100;
        schedule(0);
      }
    }

    @Override
    public void run() {
      synchronized (this) {
        if (finished) return;
        running = true;
      }
      boolean again = false;
      try {
        call.get();
      } catch (NotAppliedException | OutcomeUnknownException e) {
        again = System.nanoTime() < giveUpAt && !scheduler.isShutdown();
      } catch (RuntimeException e) {
        // A mistake retrying cannot fix (unauthorized, protocol): the claim expires.
      }
      synchronized (this) {
        running = false;
        if (!again) {
          finish();
          return;
        }
        pauseMs = Math.min(pauseMs * 2, MAX_SETTLE_PAUSE_MS);
        schedule(pauseMs);
      }
    }

    private void finish() {
      finished = true;
      retries.remove(this);
      done.run();
    }
  }
}
