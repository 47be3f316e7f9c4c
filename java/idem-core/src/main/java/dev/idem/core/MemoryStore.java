package dev.idem.core;

import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The engine in this process's memory, with the same semantics as every other backend (the C++
 * engine's {@code memory:} store): for tests, for one process, and as the reference the shared
 * vectors and the claim runner's tests run against. Nothing survives the process. Its clock is
 * the one given at construction, so tests can move time without sleeping.
 *
 * <p>Thread safety: safe for concurrent use; each operation is atomic (one lock per key's stripe).
 */
public final class MemoryStore implements IdemStore {
  private static final int STRIPES = 64;
  private static final StoreTraits TRAITS = new StoreTraits("memory", false, false, true, true, true);

  private final Clock clock;
  private final long maxResultBytes;
  private final Stripe[] stripes = new Stripe[STRIPES];
  private final AtomicLong highWater = new AtomicLong();
  private final SecureRandom random = new SecureRandom();

  private static final class Stripe {
    final Map<String, Rec> records = new HashMap<>();
    final Map<String, Tok> tokens = new HashMap<>();
    final Map<String, Lck> locks = new HashMap<>();
  }

  private static final class Rec {
    String scope, key, owner;
    RecordState state;
    long fence, leaseUntil, expiresAt;
    byte[] fingerprint, result = Args.EMPTY;
  }

  private static final class Tok {
    boolean consumed;
    long ttl, expiresAt;
  }

  private static final class Lck {
    String owner;
    long fence, expiresAt;
  }

  /** A store on the system clock, holding results of up to 64 MiB. */
  public MemoryStore() {
    this(Clock.systemUTC(), 64L << 20);
  }

  public MemoryStore(Clock clock, long maxResultBytes) {
    this.clock = clock;
    this.maxResultBytes = maxResultBytes;
    for (int i = 0; i < STRIPES; i++) stripes[i] = new Stripe();
  }

  @Override
  public StoreTraits traits() {
    return TRAITS;
  }

  @Override
  public long maxResultBytes() {
    return maxResultBytes;
  }

  private long now() {
    Instant i = clock.instant();
    return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
  }

  private long nextFence(long previous, long now) {
    return highWater.accumulateAndGet(Math.max(previous + 1, now), (hw, f) -> Math.max(hw + 1, f));
  }

  private static String id(String scope, String key) {
    return scope.length() + ":" + scope + key;
  }

  private Stripe stripe(String id) {
    return stripes[Math.floorMod(id.hashCode(), STRIPES)];
  }

  private static boolean match(byte[] stored, byte[] given) {
    return stored.length == 0 || given.length == 0 || Arrays.equals(stored, given);
  }

  private static boolean live(Rec r, long now) {
    return r != null && r.expiresAt > now;
  }

  private static boolean heldBy(Rec r, long fence, long now) {
    return live(r, now) && r.state == RecordState.PENDING && r.fence == fence;
  }

  private static Duration us(long micros) {
    return Duration.ofNanos(Math.multiplyExact(micros, 1000L));
  }

  @Override
  public BeginOutcome begin(BeginArgs a) {
    String id = id(a.scope(), a.key());
    Stripe s = stripe(id);
    synchronized (s) {
      long now = now();
      Rec r = s.records.get(id);
      if (live(r, now)) {
        if (!match(r.fingerprint, a.fingerprint())) return new BeginOutcome.Mismatch();
        if (r.state == RecordState.DONE) return new BeginOutcome.Replay(r.fence, r.result.clone(), us(r.expiresAt - now));
        if (now < r.leaseUntil) return new BeginOutcome.InProgress(us(Math.max(1, r.leaseUntil - now)));
        long previous = r.fence;
        r.fence = nextFence(r.fence, now);
        r.owner = a.owner();
        if (a.fingerprint().length > 0) r.fingerprint = a.fingerprint().clone();
        r.leaseUntil = now + Args.micros(a.lease());
        r.expiresAt = r.leaseUntil + Args.micros(a.retention());
        return new BeginOutcome.Acquired(r.fence, true, previous);
      }
      Rec n = new Rec();
      n.scope = a.scope();
      n.key = a.key();
      n.state = RecordState.PENDING;
      n.fence = nextFence(r == null ? 0 : r.fence, now);
      n.fingerprint = a.fingerprint().clone();
      n.owner = a.owner();
      n.leaseUntil = now + Args.micros(a.lease());
      n.expiresAt = n.leaseUntil + Args.micros(a.retention());
      s.records.put(id, n);
      return new BeginOutcome.Acquired(n.fence, false, 0);
    }
  }

  @Override
  public CommitOutcome commit(CommitArgs a) {
    if (a.result().length > maxResultBytes)
      throw new IllegalArgumentException("the result is " + a.result().length + " bytes, more than the "
          + maxResultBytes + " bytes this memory store can hold");
    String id = id(a.scope(), a.key());
    Stripe s = stripe(id);
    synchronized (s) {
      long now = now();
      Rec r = s.records.get(id);
      boolean liveDone = live(r, now) && r.state == RecordState.DONE;
      if (liveDone && r.fence == a.fence()) return CommitOutcome.COMMITTED;
      boolean over = liveDone && a.overUncertain().length > 0 && Bytes.startsWith(r.result, a.overUncertain());
      if (!over && !heldBy(r, a.fence(), now)) return CommitOutcome.FENCED;
      r.state = RecordState.DONE;
      r.fence = a.fence();
      r.leaseUntil = 0;
      r.expiresAt = now + Args.micros(a.retention());
      r.result = a.result().clone();
      return CommitOutcome.COMMITTED;
    }
  }

  @Override
  public ReleaseOutcome release(ReleaseArgs a) {
    String id = id(a.scope(), a.key());
    Stripe s = stripe(id);
    // With a token to restore, both stripes are held (in one order: no deadlock), so the
    // release and the restore are one step.
    Stripe t = a.restoreToken().map(r -> stripe(id(a.scope(), r.token()))).orElse(s);
    Stripe first = index(s) <= index(t) ? s : t, second = first == s ? t : s;
    synchronized (first) {
      synchronized (second) {
        long now = now();
        if (!heldBy(s.records.get(id), a.fence(), now)) return ReleaseOutcome.FENCED;
        forget(s, id);
        a.restoreToken().ifPresent(r -> restore(a.scope(), r.token(), r.ttl(), now));
        return ReleaseOutcome.RELEASED;
      }
    }
  }

  private int index(Stripe s) {
    return Arrays.asList(stripes).indexOf(s);
  }

  // A removed record's fence lives on in the high-water mark: the next one is greater.
  private static void forget(Stripe s, String id) {
    s.records.remove(id);
  }

  @Override
  public ReleaseOutcome abandon(String scope, String key, String owner) {
    Args.scope(scope);
    Args.key(key);
    Args.nonEmpty(owner, "owner");
    String id = id(scope, key);
    Stripe s = stripe(id);
    synchronized (s) {
      Rec r = s.records.get(id);
      if (!live(r, now()) || r.state != RecordState.PENDING || !owner.equals(r.owner)) return ReleaseOutcome.FENCED;
      forget(s, id);
      return ReleaseOutcome.RELEASED;
    }
  }

  @Override
  public ExtendOutcome extend(String scope, String key, long fence, Duration lease) {
    Args.scope(scope);
    Args.key(key);
    Args.positive(lease, "lease");
    String id = id(scope, key);
    Stripe s = stripe(id);
    synchronized (s) {
      long now = now();
      Rec r = s.records.get(id);
      if (!heldBy(r, fence, now)) return ExtendOutcome.FENCED;
      long retention = r.expiresAt - r.leaseUntil;
      r.leaseUntil = now + Args.micros(lease);
      r.expiresAt = r.leaseUntil + retention;
      return ExtendOutcome.EXTENDED;
    }
  }

  private static IdemRecord view(Rec r) {
    return new IdemRecord(r.scope, r.key, r.state, r.fence, r.fingerprint.clone(),
        r.state == RecordState.PENDING ? Optional.of(instant(r.leaseUntil)) : Optional.empty(),
        instant(r.expiresAt), r.result.clone(), r.owner);
  }

  private static Instant instant(long micros) {
    return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000L);
  }

  @Override
  public Optional<IdemRecord> get(String scope, String key) {
    Args.scope(scope);
    Args.key(key);
    String id = id(scope, key);
    Stripe s = stripe(id);
    synchronized (s) {
      Rec r = s.records.get(id);
      return live(r, now()) ? Optional.of(view(r)) : Optional.empty();
    }
  }

  @Override
  public boolean delete(String scope, String key) {
    Args.scope(scope);
    Args.key(key);
    String id = id(scope, key);
    Stripe s = stripe(id);
    synchronized (s) {
      Rec r = s.records.remove(id);
      return live(r, now());
    }
  }

  // Newest first (latest expires_at, then scope and key), by a keyset cursor "<expires µs>.<id>".
  @Override
  public ListPage list(ListArgs a) {
    long afterAt = Long.MAX_VALUE;
    String afterId = null;
    if (!a.cursor().isEmpty()) {
      int dot = a.cursor().indexOf('.');
      try {
        afterAt = Long.parseLong(a.cursor().substring(0, dot));
        afterId = a.cursor().substring(dot + 1);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("cursor: not a cursor this store handed out");
      }
    }
    long now = now();
    List<IdemRecord> all = new ArrayList<>();
    for (Stripe s : stripes) {
      synchronized (s) {
        for (Rec r : s.records.values()) {
          if (!live(r, now)) continue;
          IdemRecord v = view(r);
          if (a.matches(v)) all.add(v);
        }
      }
    }
    Comparator<IdemRecord> order = Comparator.comparing(IdemRecord::expiresAt).reversed()
        .thenComparing(r -> id(r.scope(), r.key()));
    all.sort(order);
    List<IdemRecord> page = new ArrayList<>();
    for (IdemRecord r : all) {
      long at = micros(r.expiresAt());
      String rid = id(r.scope(), r.key());
      if (afterId != null && (at > afterAt || (at == afterAt && rid.compareTo(afterId) <= 0))) continue;
      if (page.size() == a.limit()) {
        IdemRecord last = page.get(page.size() - 1);
        return new ListPage(page, micros(last.expiresAt()) + "." + id(last.scope(), last.key()));
      }
      page.add(r);
    }
    return new ListPage(page, "");
  }

  private static long micros(Instant i) {
    return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
  }

  @Override
  public long sweep() {
    long now = now(), gone = 0;
    for (Stripe s : stripes) {
      synchronized (s) {
        int before = s.records.size();
        s.records.values().removeIf(r -> !live(r, now));
        gone += before - s.records.size();
        s.tokens.values().removeIf(t -> t.expiresAt <= now);
        s.locks.values().removeIf(l -> l.expiresAt <= now);
      }
    }
    return gone;
  }

  @Override
  public String issueToken(String scope, Duration ttl) {
    Args.scope(scope);
    Args.positive(ttl, "ttl");
    byte[] bits = new byte[24];
    random.nextBytes(bits);
    String token = Base64.getUrlEncoder().withoutPadding().encodeToString(bits);
    String id = id(scope, token);
    Stripe s = stripe(id);
    synchronized (s) {
      Tok t = new Tok();
      t.ttl = Args.micros(ttl);
      t.expiresAt = now() + t.ttl;
      s.tokens.put(id, t);
    }
    return token;
  }

  @Override
  public ConsumeOutcome consumeToken(String scope, String token) {
    Args.scope(scope);
    Args.nonEmpty(token, "token");
    String id = id(scope, token);
    Stripe s = stripe(id);
    synchronized (s) {
      long now = now();
      Tok t = s.tokens.get(id);
      if (t == null || t.consumed || t.expiresAt <= now) return ConsumeOutcome.INVALID;
      t.consumed = true;
      t.expiresAt = Math.max(t.expiresAt, now + t.ttl);
      return ConsumeOutcome.CONSUMED;
    }
  }

  @Override
  public RestoreOutcome restoreToken(String scope, String token, Duration ttl) {
    Args.scope(scope);
    Args.nonEmpty(token, "token");
    Args.positive(ttl, "ttl");
    return restore(scope, token, ttl, now()) ? RestoreOutcome.RESTORED : RestoreOutcome.INVALID;
  }

  private boolean restore(String scope, String token, Duration ttl, long now) {
    String id = id(scope, token);
    Stripe s = stripe(id);
    synchronized (s) {
      Tok t = s.tokens.get(id);
      if (t == null || t.expiresAt <= now) return false;
      t.consumed = false;
      t.expiresAt = now + Args.micros(ttl);
      return true;
    }
  }

  @Override
  public LockOutcome lock(String name, String owner, Duration ttl) {
    Args.nonEmpty(name, "lock name");
    Args.nonEmpty(owner, "lock owner");
    Args.positive(ttl, "ttl");
    Stripe s = stripe(name);
    synchronized (s) {
      long now = now();
      Lck l = s.locks.get(name);
      if (l != null && l.expiresAt > now) {
        if (!l.owner.equals(owner)) return new LockOutcome.Busy(us(l.expiresAt - now));
        l.expiresAt = now + Args.micros(ttl);
        return new LockOutcome.Locked(l.fence);
      }
      Lck n = new Lck();
      n.owner = owner;
      n.fence = nextFence(l == null ? 0 : l.fence, now);
      n.expiresAt = now + Args.micros(ttl);
      s.locks.put(name, n);
      return new LockOutcome.Locked(n.fence);
    }
  }

  @Override
  public UnlockOutcome unlock(String name, String owner) {
    Args.nonEmpty(name, "lock name");
    Args.nonEmpty(owner, "lock owner");
    Stripe s = stripe(name);
    synchronized (s) {
      Lck l = s.locks.get(name);
      if (l == null || l.expiresAt <= now() || !l.owner.equals(owner)) return UnlockOutcome.NOT_OWNER;
      s.locks.remove(name);
      return UnlockOutcome.RELEASED;
    }
  }

  @Override
  public LockExtendOutcome extendLock(String name, String owner, Duration ttl) {
    Args.nonEmpty(name, "lock name");
    Args.nonEmpty(owner, "lock owner");
    Args.positive(ttl, "ttl");
    Stripe s = stripe(name);
    synchronized (s) {
      long now = now();
      Lck l = s.locks.get(name);
      if (l == null || l.expiresAt <= now || !l.owner.equals(owner)) return LockExtendOutcome.NOT_OWNER;
      l.expiresAt = now + Args.micros(ttl);
      return LockExtendOutcome.EXTENDED;
    }
  }

  @Override
  public void ping() {}
}
