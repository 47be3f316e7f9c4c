package dev.idem.core;

import java.net.InetAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The claim runner: the one way the Java engine runs work under a claim (docs/design.md, "One
 * claim runner"), with the rules of the C++ engine's {@code src/engine/claim.h}:
 *
 * <ul>
 *   <li><b>acquire</b>: one begin, read by {@link Decisions#afterBegin}. A begin whose outcome is
 *       unknown may have claimed the key: that claim is given back by its owner in the
 *       background (looking for it for one lease, since the begin may reach the store late).
 *   <li><b>work</b>: while it runs, {@link #renew} extends the lease every lease/3; a renewal
 *       answered fenced marks the claim {@linkplain Claim#lost() lost}.
 *   <li><b>settle</b>: {@link Decisions#settleFor} says what the work's end means: commit the
 *       result, release the claim, complete it as uncertain, or leave it to expire. A settle whose
 *       store call fails is retried in the background until the store answers (a commit with the
 *       same fence is idempotent; a release goes by fence and re-arms its token).
 * </ul>
 *
 * <p>A known outcome is never treated as unknown: while a settle of this runner is pending, {@link
 * #acquire} answers every repeat of its key from it (a pending commit: a replay of its result, no
 * store call; a pending release: the release is sent first) and never takes the key over; the
 * lease of a pending commit is extended with each retry; pending settles are retried at once
 * whenever the store answers another call. A result the store refuses as too large, or one past
 * the runner's byte budget, is settled as an unknown outcome instead: never retried, never held.
 *
 * <p>Memory is bounded: at most {@link Limits#maxSettles()} settles and give-backs are retried at
 * once, holding at most {@link Limits#maxBytes()} of results; past that a claim is left to its
 * lease (and the policy decides for its repeats), so an outage cannot grow memory without bound.
 *
 * <p>Thread safety: safe for concurrent use. Background work runs on a small pool of daemon
 * threads of the runner's own ({@link Limits#threads()}); {@link #close()} stops it.
 */
public final class ClaimRunner implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(ClaimRunner.class.getName());
  private static final long FIRST_PAUSE_MS = 100, MAX_PAUSE_MS = 5000;

  /** How long a repeat answered from a pending commit may be replayed from memory. */
  public static final Duration HELD_ANSWER_TTL = Duration.ofSeconds(1);

  /**
   * What the runner may hold for settles retried in the background.
   *
   * @param maxSettles settles and give-backs retried at once
   * @param maxBytes results held by pending commits, in bytes
   * @param threads the background threads (renewals and retries)
   */
  public record Limits(int maxSettles, long maxBytes, int threads) {
    public Limits {
      if (maxSettles < 0 || maxBytes < 0 || threads < 1) throw new IllegalArgumentException("limits: " + maxSettles
          + ", " + maxBytes + ", " + threads);
    }

    public static Limits defaults() {
      return new Limits(10_000, 256L << 20, 2);
    }
  }

  /**
   * Called by the runner from any thread; keep them short.
   *
   * @param settled a claim was settled or given back: local waiters for (scope, key) may begin again
   * @param conflict a commit, release or renewal answered fenced: the claim was taken over or removed
   */
  public record Hooks(BiConsumer<String, String> settled, Runnable conflict) {
    public static Hooks none() {
      return new Hooks((s, k) -> {}, () -> {});
    }
  }

  /**
   * One begin's answer: the store's (or the failure), what it means, and the claim when there is
   * one (steps RUN and HOLD_UNCERTAIN).
   */
  public record Acquired(BeginOutcome begun, RuntimeException failure, BeginStep step, Optional<Claim> claim) {}

  /** How a settle ended. */
  public enum SettleKind {
    /** The store answered: done. */
    SETTLED,
    /** The store answered fenced (or the claim was lost): nothing stored, the newer holder left alone. */
    FENCED,
    /** The store could not answer; the settle is retried in the background. */
    RETRYING,
    /** The store refused the result (too large): settled as an unknown outcome instead. */
    REFUSED,
    /** Nothing was to be done (LEAVE). */
    LEFT
  }

  /** A settle's answer; {@code error} for RETRYING and REFUSED. */
  public record SettleResult(SettleKind kind, RuntimeException error) {}

  private final IdemStore store;
  private final Limits limits;
  private final Hooks hooks;
  private final String instance;
  private final String markInstance;
  private final AtomicLong calls = new AtomicLong();
  private final ScheduledThreadPoolExecutor scheduler;
  private final ConcurrentHashMap<String, Pending> pending = new ConcurrentHashMap<>();
  private final Set<Pending> sleeping = ConcurrentHashMap.newKeySet();
  private final AtomicLong background = new AtomicLong();
  private final AtomicLong unanswered = new AtomicLong();
  private final AtomicLong backgroundBytes = new AtomicLong();

  public ClaimRunner(IdemStore store) {
    this(store, Limits.defaults(), Hooks.none());
  }

  public ClaimRunner(IdemStore store, Limits limits, Hooks hooks) {
    this.store = Objects.requireNonNull(store, "store");
    this.limits = Objects.requireNonNull(limits, "limits");
    this.hooks = Objects.requireNonNull(hooks, "hooks");
    byte[] id = new byte[8];
    new SecureRandom().nextBytes(id);
    this.instance = HexFormat.of().formatHex(id);
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      host = "";
    }
    this.markInstance = host + "/" + instance;
    this.scheduler = new ScheduledThreadPoolExecutor(limits.threads(), r -> {
      Thread t = new Thread(r, "idem-claim-runner");
      t.setDaemon(true);
      return t;
    });
    scheduler.setRemoveOnCancelPolicy(true);
  }

  public IdemStore store() {
    return store;
  }

  /** A fresh owner id: unique to this runner's process and call. */
  public String nextOwner() {
    return instance + "-" + calls.incrementAndGet();
  }

  // ---- acquire ------------------------------------------------------------------------------

  /**
   * One begin under {@code policy}, by {@code owner} (a fresh one when null or empty), and what it
   * means. While a settle of this runner for the key is pending, the answer comes from it (see
   * the class comment). Never throws for the store's failures: they are in {@link
   * Acquired#failure()} with step NOT_APPLIED or UNKNOWN.
   */
  public Acquired acquire(String scope, String key, byte[] fingerprint, ClaimPolicy policy, String owner) {
    if (owner == null || owner.isEmpty()) owner = nextOwner();
    BeginArgs args = new BeginArgs(scope, key, fingerprint, policy.lease(), policy.retention(), owner);
    Pending p = pendingFor(scope, key);
    if (p != null) {
      Acquired held = answerFrom(p, args.fingerprint(), policy);
      if (held != null) return held;
    }
    BeginOutcome begun = null;
    RuntimeException failure = null;
    try {
      begun = store.begin(args);
      storeAnswered();
    } catch (IdemException e) {
      failure = e;
    }
    BeginStep step = Decisions.afterBegin(begun, failure, policy.onUncertain(), policy.marker());
    Optional<Claim> claim = Optional.empty();
    if (step == BeginStep.UNKNOWN) {
      // The begin may have claimed the key although its answer was lost: nothing will run
      // under that claim, so it is given back rather than left to expire into an uncertain key.
      settleLater(scope, key, owner, 0, Settlement.RELEASE, null, policy.lease(), policy.retention(), policy,
          Optional.empty(), args.fingerprint());
    } else if (step == BeginStep.RUN || step == BeginStep.HOLD_UNCERTAIN) {
      claim = Optional.of(new Claim(this, args, (BeginOutcome.Acquired) begun, policy));
    }
    return new Acquired(begun, failure, step, claim);
  }

  private Acquired answerFrom(Pending p, byte[] fingerprint, ClaimPolicy policy) {
    Settlement how;
    byte[] result;
    synchronized (p) {
      how = p.how;
      result = p.result;
    }
    if (commits(how)) {
      // As the store would answer: an empty fingerprint matches any.
      BeginOutcome b = p.fingerprint.length > 0 && fingerprint.length > 0 && !Arrays.equals(p.fingerprint, fingerprint)
          ? new BeginOutcome.Mismatch()
          : new BeginOutcome.Replay(p.fence, result.clone(), HELD_ANSWER_TTL);
      wake();
      return new Acquired(b, null, Decisions.afterBegin(b, null, policy.onUncertain(), policy.marker()), Optional.empty());
    }
    // A pending release (or give-back) goes first: a begin now could take the claim over as if
    // its outcome were unknown, when this runner knows the work did not take effect.
    boolean found;
    try {
      if (p.fence != 0) {
        store.release(new ReleaseArgs(p.scope, p.key, p.fence, p.restore));
        found = true;  // released, or fenced: either way the claim is not this runner's any more
      } else {
        found = store.abandon(p.scope, p.key, p.owner) == ReleaseOutcome.RELEASED;
      }
      storeAnswered();
    } catch (IdemException e) {
      return new Acquired(null, e, Decisions.afterBegin(null, e, policy.onUncertain(), policy.marker()), Optional.empty());
    }
    if (found && forget(p)) settledHook(p.scope, p.key);
    return null;
  }

  // ---- renew --------------------------------------------------------------------------------

  /** A claim's renewal: {@link #close()} ends it (idempotent); an answer arriving after is ignored. */
  public static final class Renewal implements AutoCloseable {
    private final ClaimRunner runner;
    final Claim claim;
    final ClaimPolicy policy;
    final long every;  // ns
    // Guarded by the runner's renewal lock: when the next extend is due (System.nanoTime), and
    // whether one is on its way (never two at once for a claim).
    long due;
    boolean extending;
    volatile boolean stopped;

    Renewal(ClaimRunner runner, Claim claim, ClaimPolicy policy, long every, long due) {
      this.runner = runner;
      this.claim = claim;
      this.policy = policy;
      this.every = every;
      this.due = due;
    }

    @Override
    public void close() {
      if (stopped) return;
      stopped = true;
      if (runner != null) runner.renewing.remove(this);
    }
  }

  // Claims whose work runs, renewed by one timer armed for the earliest due extend (docs/design.md,
  // "One claim runner"): a call costs a set insertion and removal, not a scheduled task of its own,
  // and the timer fires only when some claim's work has run for lease/3 (or to look again).
  private final Set<Renewal> renewing = ConcurrentHashMap.newKeySet();
  private final Object renewalLock = new Object();
  private ScheduledFuture<?> renewalTimer;  // guarded by renewalLock
  private volatile long renewalArmedAt = Long.MAX_VALUE;  // System.nanoTime of the armed timer; MAX: none

  /**
   * Renews the claim every lease/3 from the runner's threads until the returned renewal is
   * closed (nothing when {@code !policy.renew()}). A renewal answered fenced sets {@link
   * Claim#lost()}; one that fails is tried again at the next tick, well within the lease.
   */
  public Renewal renew(Claim claim, ClaimPolicy policy) {
    if (!policy.renew()) return new Renewal(null, claim, policy, 0, 0);
    long every = Math.max(1000, Args.micros(policy.lease()) / 3) * 1000L;
    long due = System.nanoTime() + every;
    Renewal r = new Renewal(this, claim, policy, every, due);
    renewing.add(r);
    // The armed timer fires no later than this one is due: nothing to do (the common case).
    if (due - renewalArmedAt < 0) armRenewals(due);
    return r;
  }

  private void armRenewals(long at) {
    synchronized (renewalLock) {
      if (at - renewalArmedAt >= 0) return;
      if (renewalTimer != null) renewalTimer.cancel(false);
      try {
        renewalTimer = scheduler.schedule(this::renewDue, Math.max(0, at - System.nanoTime()), TimeUnit.NANOSECONDS);
        renewalArmedAt = at;
      } catch (java.util.concurrent.RejectedExecutionException e) {
        renewalTimer = null;  // closed: claims are left to their leases
      }
    }
  }

  // The timer: sends the extends that are due, each on the runner's threads, and arms itself for
  // the next one due.
  private void renewDue() {
    synchronized (renewalLock) {
      renewalTimer = null;
      renewalArmedAt = Long.MAX_VALUE;
    }
    long now = System.nanoTime(), next = Long.MAX_VALUE;
    for (Renewal r : renewing) {
      if (r.stopped || r.claim.lost.get()) {
        renewing.remove(r);
        continue;
      }
      boolean send = false;
      synchronized (renewalLock) {
        if (!r.extending && r.due - now <= 0) {
          r.extending = true;
          send = true;
        }
        if (!r.extending && r.due - next < 0) next = r.due;
      }
      if (send) {
        try {
          scheduler.execute(() -> extend(r));
        } catch (java.util.concurrent.RejectedExecutionException e) {
          return;  // closed
        }
      }
    }
    if (next != Long.MAX_VALUE) armRenewals(next);
  }

  // One extend of a renewal; the next is due every after it ends (as a fixed delay), then the timer
  // is armed for it.
  private void extend(Renewal r) {
    try {
      if (r.stopped || r.claim.lost.get()) return;
      Claim claim = r.claim;
      ExtendOutcome out = store.extend(claim.scope(), claim.key(), claim.fence(), r.policy.lease());
      storeAnswered();
      if (r.stopped) return;  // the work ended meanwhile: its settle decides
      if (out == ExtendOutcome.FENCED && !claim.lost.getAndSet(true)) hooks.conflict().run();
    } catch (IdemException e) {
      // Not renewed this time: the next tick tries again.
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "idem: renewal failed", e);
    } finally {
      long due = System.nanoTime() + r.every;
      synchronized (renewalLock) {
        r.due = due;
        r.extending = false;
      }
      if (!r.stopped && !r.claim.lost.get()) armRenewals(due);
    }
  }

  // ---- settle -------------------------------------------------------------------------------

  /**
   * Settles the claim as {@code how} says ({@code result} for COMMIT), once. A release re-arms
   * {@code restore} in the same store step. MARK_UNCERTAIN commits the policy's marker with a mark
   * naming the fence the service may have received: this claim's once {@link Claim#started()},
   * else (a takeover that runs nothing) the fence of the claim taken over. A COMMIT also replaces
   * the mark a takeover of this claim wrote meanwhile ({@link CommitArgs#overUncertain()}).
   *
   * @throws IllegalStateException the claim was settled already
   */
  public SettleResult settle(Claim claim, Settlement how, byte[] result, Optional<TokenRestore> restore) {
    if (!claim.markSettled()) throw new IllegalStateException("claim already settled");
    ClaimPolicy policy = claim.policy();
    SettleResult out;
    switch (how) {
      case LEAVE -> {
        return new SettleResult(SettleKind.LEFT, null);
      }
      case NONE -> {
        return new SettleResult(SettleKind.FENCED, null);
      }
      case COMMIT, MARK_UNCERTAIN -> {
        long serviceFence = claim.isStarted() || !claim.recovered() ? claim.fence() : claim.previousFence();
        byte[] bytes = how == Settlement.MARK_UNCERTAIN ? mark(policy.marker(), serviceFence) : Objects.requireNonNull(result, "result");
        byte[] over = how == Settlement.COMMIT && store.traits().overUncertain()
            ? UncertainMark.prefix(policy.marker(), claim.fence()) : null;
        if (how == Settlement.COMMIT && policy.marker().length == 0) over = null;
        try {
          CommitOutcome r = store.commit(new CommitArgs(claim.scope(), claim.key(), claim.fence(), bytes,
              claim.retention(), over));
          storeAnswered();
          out = new SettleResult(r == CommitOutcome.COMMITTED ? SettleKind.SETTLED : SettleKind.FENCED, null);
          if (r == CommitOutcome.FENCED) hooks.conflict().run();
        } catch (IllegalArgumentException e) {
          if (how != Settlement.COMMIT) throw e;
          // The store cannot hold this result: retrying cannot help. The work took effect, so its
          // outcome is settled as unknown: held as uncertain, or left to expire.
          Settlement instead = Decisions.settleFor(WorkEnd.UNKNOWN, policy.onUncertain(), false);
          if (instead == Settlement.MARK_UNCERTAIN) {
            try {
              store.commit(new CommitArgs(claim.scope(), claim.key(), claim.fence(),
                  mark(policy.marker(), claim.fence()), claim.retention()));
              storeAnswered();
            } catch (IdemException f) {
              settleLater(claim.scope(), claim.key(), claim.owner(), claim.fence(), instead, null, claim.lease(),
                  claim.retention(), policy, Optional.empty(), claim.fingerprint());
              return new SettleResult(SettleKind.REFUSED, e);
            }
          }
          out = new SettleResult(SettleKind.REFUSED, e);
        } catch (IdemException e) {
          // Commit is idempotent: retried with the same fence until the store answers.
          settleLater(claim.scope(), claim.key(), claim.owner(), claim.fence(), how, bytes, claim.lease(),
              claim.retention(), policy, Optional.empty(), claim.fingerprint());
          return new SettleResult(SettleKind.RETRYING, e);
        }
      }
      case RELEASE -> {
        try {
          ReleaseOutcome r = store.release(new ReleaseArgs(claim.scope(), claim.key(), claim.fence(), restore));
          storeAnswered();
          out = new SettleResult(r == ReleaseOutcome.RELEASED ? SettleKind.SETTLED : SettleKind.FENCED, null);
          if (r == ReleaseOutcome.FENCED) hooks.conflict().run();
        } catch (IdemException e) {
          // By fence, and re-arming the token: the user may submit again with it.
          settleLater(claim.scope(), claim.key(), claim.owner(), claim.fence(), how, null, claim.lease(),
              claim.retention(), policy, restore, claim.fingerprint());
          return new SettleResult(SettleKind.RETRYING, e);
        }
      }
      default -> throw new IllegalArgumentException("settle: " + how);
    }
    settledHook(claim.scope(), claim.key());
    return out;
  }

  /** The uncertain record naming {@code serviceFence}, marked by this runner now. */
  byte[] mark(byte[] marker, long serviceFence) {
    return new UncertainMark(serviceFence, markInstance, System.currentTimeMillis()).encode(marker);
  }

  /** True while settles or give-backs are retried in the background and the store has not answered them yet. */
  public boolean settling() {
    return unanswered.get() > 0;
  }

  /** Settles and give-backs retried in the background now. */
  public long pendingSettles() {
    return background.get();
  }

  /** Bytes of results held by pending commits. */
  public long settlingBytes() {
    return backgroundBytes.get();
  }

  /**
   * The store answered a call that was not the runner's own (a face's lock or token call):
   * pending settles are retried at once. Cheap when nothing is pending; any thread.
   */
  public void storeAnswered() {
    if (!sleeping.isEmpty()) wake();
  }

  private void wake() {
    for (Pending p : sleeping) p.wake();
  }

  /** Stops the background threads: pending settles end (their claims expire after their leases). */
  @Override
  public void close() {
    scheduler.shutdownNow();
  }

  // ---- the background -----------------------------------------------------------------------

  private static boolean commits(Settlement how) {
    return how == Settlement.COMMIT || how == Settlement.MARK_UNCERTAIN;
  }

  private static String id(String scope, String key) {
    return scope.length() + ":" + scope + key;
  }

  private Pending pendingFor(String scope, String key) {
    if (background.get() == 0) return null;  // the common case: no map lookup
    Pending p = pending.get(id(scope, key));
    return p == null || p.finished ? null : p;
  }

  /** True when this call finished it. */
  private boolean forget(Pending p) {
    synchronized (p) {
      if (p.finished) return false;
      p.finished = true;
      backgroundBytes.addAndGet(-p.heldBytes);
      p.heldBytes = 0;
      if (p.future != null) p.future.cancel(false);
    }
    pending.remove(p.id, p);
    sleeping.remove(p);
    return true;
  }

  /**
   * Waits at most {@code max} for a claim of (scope, key) to be settled or given back by this
   * runner: how a repeat in this process learns at once that the key's first run ended, instead of
   * waiting out its poll. True when one was.
   */
  public boolean awaitSettled(String scope, String key, Duration max) {
    java.util.concurrent.CompletableFuture<Void> f =
        waiters.computeIfAbsent(id(scope, key), k -> new java.util.concurrent.CompletableFuture<>());
    try {
      f.get(Math.max(1, max.toNanos()), TimeUnit.NANOSECONDS);
      return true;
    } catch (java.util.concurrent.TimeoutException e) {
      return false;
    } catch (java.util.concurrent.ExecutionException e) {
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private final ConcurrentHashMap<String, java.util.concurrent.CompletableFuture<Void>> waiters =
      new ConcurrentHashMap<>();

  private void settledHook(String scope, String key) {
    java.util.concurrent.CompletableFuture<Void> f = waiters.remove(id(scope, key));
    if (f != null) f.complete(null);
    try {
      hooks.settled().accept(scope, key);
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "idem: settled hook failed", e);
    }
  }

  // A settle retried in the background: what acquire() answers from meanwhile.
  private final class Pending implements Runnable {
    final String id, scope, key, owner;
    final long fence;  // 0: the give-back of a claim whose begin answer was lost, by owner
    final Duration lease, retention;
    final ClaimPolicy policy;
    final Optional<TokenRestore> restore;
    final byte[] fingerprint;
    final long giveUpAt, lookUntil;
    // Guarded by this.
    Settlement how;
    byte[] result;
    long heldBytes;
    boolean finished, running, answered, counted = true;
    long pauseMs = FIRST_PAUSE_MS;
    ScheduledFuture<?> future;

    Pending(String scope, String key, String owner, long fence, Duration lease, Duration retention,
            ClaimPolicy policy, Optional<TokenRestore> restore, byte[] fingerprint) {
      this.id = id(scope, key);
      this.scope = scope;
      this.key = key;
      this.owner = owner;
      this.fence = fence;
      this.lease = lease;
      this.retention = retention;
      this.policy = policy;
      this.restore = restore;
      this.fingerprint = fingerprint == null ? Args.EMPTY : fingerprint;
      long now = System.nanoTime();
      // Worth trying for as long as the claim can live: past lease + retention it is gone anyway.
      this.giveUpAt = now + lease.plus(retention).toNanos();
      // A give-back looks for one lease: a begin whose answer was lost may reach the store after
      // the first abandon did.
      this.lookUntil = now + lease.toNanos();
    }

    synchronized void schedule(long delayMs) {
      if (finished) return;
      try {
        future = scheduler.schedule(this, delayMs, TimeUnit.MILLISECONDS);
        if (delayMs > 0) sleeping.add(this);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        done();  // closed: the claim expires after its lease
      }
    }

    synchronized void wake() {
      if (finished || running || future == null || future.getDelay(TimeUnit.MILLISECONDS) <= 0) return;
      if (future.cancel(false)) {
        pauseMs = FIRST_PAUSE_MS;
        sleeping.remove(this);
        schedule(0);
      }
    }

    @Override
    public void run() {
      Settlement now;
      byte[] bytes;
      synchronized (this) {
        if (finished) return;
        running = true;
        sleeping.remove(this);
        now = how;
        bytes = result;
      }
      boolean again = true;
      try {
        again = attempt(now, bytes);
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "idem: background settle failed", e);
        again = false;
      }
      synchronized (this) {
        running = false;
        if (finished) return;
        if (!again || System.nanoTime() >= giveUpAt || scheduler.isShutdown()) {
          done();
          return;
        }
        pauseMs = Math.min(pauseMs * 2, MAX_PAUSE_MS);
        // A pending commit extends its claim with each try: it tries at least every lease/3, so the
        // lease never runs out while the result waits.
        schedule(commits(how) ? Math.max(1, Math.min(pauseMs, lease.toMillis() / 3)) : pauseMs);
      }
    }

    // One try; true when it should be tried again.
    private boolean attempt(Settlement now, byte[] bytes) {
      if (commits(now)) {
        byte[] over = now == Settlement.COMMIT && store.traits().overUncertain() && policy.marker().length > 0
            ? UncertainMark.prefix(policy.marker(), fence) : null;
        try {
          CommitOutcome r = store.commit(new CommitArgs(scope, key, fence, bytes, retention, over));
          if (r == CommitOutcome.FENCED) hooks.conflict().run();
          answered();
          return false;
        } catch (IllegalArgumentException e) {
          if (now != Settlement.COMMIT) return false;
          // Too large for the store: settled as an unknown outcome instead, never retried.
          Settlement instead = Decisions.settleFor(WorkEnd.UNKNOWN, policy.onUncertain(), false);
          synchronized (this) {
            how = instead;
            byte[] m = mark(policy.marker(), fence);
            backgroundBytes.addAndGet(m.length - heldBytes);
            result = m;
            heldBytes = m.length;
          }
          return instead == Settlement.MARK_UNCERTAIN;
        } catch (IdemException e) {
          // Keep the claim while its result waits: past its lease another caller would take the
          // key over as if the outcome were unknown.
          try {
            store.extend(scope, key, fence, lease);
          } catch (IdemException ignored) {
            // the store is still away
          }
          return true;
        }
      }
      try {
        if (fence != 0) {
          store.release(new ReleaseArgs(scope, key, fence, restore));
          answered();
          return false;
        }
        // By owner: the fence of a claim whose begin answer was lost is not known.
        ReleaseOutcome r = store.abandon(scope, key, owner);
        synchronized (this) {
          if (!answered) {
            answered = true;
            counted = false;
            unanswered.decrementAndGet();  // from here on it only looks for a late claim
          }
        }
        return r != ReleaseOutcome.RELEASED && System.nanoTime() < lookUntil;
      } catch (IdemException e) {
        return true;
      }
    }

    private synchronized void answered() {
      answered = true;
    }

    // Ends this settle: no longer counted, and waiters hear of it when the store answered.
    private void done() {
      boolean byUs = forget(this);
      synchronized (this) {
        if (counted) {
          counted = false;
          unanswered.decrementAndGet();
        }
      }
      background.decrementAndGet();
      if (answered && byUs) settledHook(scope, key);
    }
  }

  /**
   * Retries a settle (or, with fence 0, the give-back of a claim that may exist, by owner) until
   * the store answers or the claim would have expired anyway. Past the limits the claim is left to
   * its lease.
   */
  void settleLater(String scope, String key, String owner, long fence, Settlement how, byte[] result, Duration lease,
                   Duration retention, ClaimPolicy policy, Optional<TokenRestore> restore, byte[] fingerprint) {
    if (background.get() >= limits.maxSettles()) {
      LOG.warning("idem: " + limits.maxSettles()
          + " claims are being settled in the background already; leaving one to expire");
      return;
    }
    Pending p = new Pending(scope, key, owner, fence, lease, retention, policy, restore, fingerprint);
    p.how = how;
    if (how == Settlement.COMMIT && result != null
        && result.length > limits.maxBytes() - Math.min(limits.maxBytes(), backgroundBytes.get())) {
      // Past the budget for held results: settled as an unknown outcome.
      LOG.warning("idem: pending results would exceed " + limits.maxBytes() + " bytes; settling one of "
          + result.length + " bytes as an unknown outcome");
      p.how = Decisions.settleFor(WorkEnd.UNKNOWN, policy.onUncertain(), false);
      if (p.how != Settlement.MARK_UNCERTAIN) return;  // retry: left to expire
      result = null;
    }
    if (p.how == Settlement.MARK_UNCERTAIN && result == null) result = mark(policy.marker(), fence);
    p.result = result == null ? Args.EMPTY : result;
    p.heldBytes = p.result.length;
    background.incrementAndGet();
    unanswered.incrementAndGet();
    backgroundBytes.addAndGet(p.heldBytes);
    // An older settle of the key, if any, keeps trying; the newer one speaks for the key now.
    pending.put(p.id, p);
    p.schedule(FIRST_PAUSE_MS);
  }
}
