package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.Args;
import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.Bytes;
import dev.idem.core.CommitArgs;
import dev.idem.core.CommitOutcome;
import dev.idem.core.ConsumeOutcome;
import dev.idem.core.ExtendOutcome;
import dev.idem.core.IdemRecord;
import dev.idem.core.IdemStore;
import dev.idem.core.ListArgs;
import dev.idem.core.ListPage;
import dev.idem.core.LockExtendOutcome;
import dev.idem.core.LockOutcome;
import dev.idem.core.RecordState;
import dev.idem.core.ReleaseArgs;
import dev.idem.core.ReleaseOutcome;
import dev.idem.core.RestoreOutcome;
import dev.idem.core.TokenRestore;
import dev.idem.core.UnlockOutcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The store contract (the C++ tests/stores/contract_test.cpp), written once: each backend's test
 * extends it with {@link #store()}, and a backend is done when it passes unchanged. Runs against
 * real servers; keys carry a random part, so runs never collide.
 */
public abstract class StoreContract {
  protected static final Duration LONG = Duration.ofSeconds(30);
  protected static final Duration DAY = Duration.ofDays(1);
  /** A lease short enough to wait out: expiry cases sleep past it (the store's clock decides). */
  protected static final Duration SHORT = Duration.ofMillis(300);

  /** The store under test; the same object for every case of a class is fine. */
  protected abstract IdemStore store();

  private final String run = UUID.randomUUID().toString().substring(0, 8);

  protected String key(String name) {
    return "contract-" + run + "-" + name;
  }

  /** A result as this store holds it: the bytes themselves; a backend holding only JSON maps them. */
  protected byte[] res(byte[] raw) {
    return raw;
  }

  protected byte[] res(String raw) {
    return res(b(raw));
  }

  protected static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  protected BeginOutcome begin(String scope, String key, String fp, Duration lease, Duration retention) {
    return store().begin(new BeginArgs(scope, key, b(fp), lease, retention));
  }

  protected BeginOutcome.Acquired acquire(String scope, String key) {
    BeginOutcome o = begin(scope, key, "fp", LONG, DAY);
    assertThat(o).isInstanceOf(BeginOutcome.Acquired.class);
    return (BeginOutcome.Acquired) o;
  }

  protected static void sleepPast(Duration d) {
    try {
      Thread.sleep(d.toMillis() + 150);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void beginOnAnAbsentKeyAcquiresWithAJsonSafeFence() {
    BeginOutcome.Acquired a = acquire("", key("a"));
    assertThat(a.fence()).isPositive().isLessThanOrEqualTo(Args.MAX_FENCE);
    assertThat(a.recovered()).isFalse();
    assertThat(a.previousFence()).isZero();
  }

  @Test
  void beginWhileTheLeaseIsLiveIsInProgress() {
    String k = key("busy");
    acquire("", k);
    BeginOutcome o = begin("", k, "fp", LONG, DAY);
    assertThat(o).isInstanceOf(BeginOutcome.InProgress.class);
    Duration retry = ((BeginOutcome.InProgress) o).retryAfter();
    assertThat(retry).isPositive().isLessThanOrEqualTo(LONG);
  }

  @Test
  void commitThenBeginReplaysTheResultByteForByte() {
    String k = key("replay");
    BeginOutcome.Acquired a = acquire("s", k);
    byte[] result = new byte[(int) Math.min(1 << 20, store().maxResultBytes() / 4)];
    for (int i = 0; i < result.length; i++) result[i] = (byte) (i * 31);
    result[0] = 0;
    assertThat(store().commit(new CommitArgs("s", k, a.fence(), res(result), DAY))).isEqualTo(CommitOutcome.COMMITTED);
    BeginOutcome o = begin("s", k, "fp", LONG, DAY);
    assertThat(o).isInstanceOf(BeginOutcome.Replay.class);
    BeginOutcome.Replay r = (BeginOutcome.Replay) o;
    assertThat(r.result()).isEqualTo(res(result));
    if (r.fence() != 0) assertThat(r.fence()).isEqualTo(a.fence());  // 0: the store does not say (the control API)
    if (!r.expiresIn().isZero()) assertThat(r.expiresIn()).isPositive().isLessThanOrEqualTo(DAY);
  }

  @Test
  void mismatchIsCheckedFirstAndChangesNothing() {
    String k = key("mismatch");
    BeginOutcome.Acquired a = acquire("", k);
    assertThat(begin("", k, "other", LONG, DAY)).isInstanceOf(BeginOutcome.Mismatch.class);
    store().commit(new CommitArgs("", k, a.fence(), res("r"), DAY));
    assertThat(begin("", k, "other", LONG, DAY)).isInstanceOf(BeginOutcome.Mismatch.class);
    assertThat(((BeginOutcome.Replay) begin("", k, "fp", LONG, DAY)).result()).isEqualTo(res("r"));
  }

  @Test
  void anEmptyFingerprintMatchesAnyFingerprint() {
    String k = key("empty-fp");
    BeginOutcome.Acquired a = acquire("", k);
    store().commit(new CommitArgs("", k, a.fence(), res("r"), DAY));
    assertThat(begin("", k, "", LONG, DAY)).isInstanceOf(BeginOutcome.Replay.class);
    String k2 = key("empty-fp-2");
    BeginOutcome.Acquired a2 = (BeginOutcome.Acquired) begin("", k2, "", LONG, DAY);
    store().commit(new CommitArgs("", k2, a2.fence(), res("r"), DAY));
    assertThat(begin("", k2, "anything", LONG, DAY)).isInstanceOf(BeginOutcome.Replay.class);
  }

  @Test
  void scopesIsolateKeys() {
    String k = key("scoped");
    acquire("alice", k);
    assertThat(begin("bob", k, "fp", LONG, DAY)).isInstanceOf(BeginOutcome.Acquired.class);
    assertThat(begin("", k, "fp", LONG, DAY)).isInstanceOf(BeginOutcome.Acquired.class);
  }

  @Test
  void anExpiredLeaseIsTakenOverWithAGreaterFenceNamingThePreviousOne() {
    String k = key("takeover");
    BeginOutcome.Acquired first = (BeginOutcome.Acquired) begin("", k, "fp", SHORT, DAY);
    sleepPast(SHORT);
    BeginOutcome o = begin("", k, "fp", LONG, DAY);
    assertThat(o).isInstanceOf(BeginOutcome.Acquired.class);
    BeginOutcome.Acquired second = (BeginOutcome.Acquired) o;
    assertThat(second.recovered()).isTrue();
    assertThat(second.previousFence()).isEqualTo(first.fence());
    assertThat(second.fence()).isGreaterThan(first.fence());
    // The lost holder can do nothing any more.
    assertThat(store().commit(new CommitArgs("", k, first.fence(), res("late"), DAY))).isEqualTo(CommitOutcome.FENCED);
    assertThat(store().extend("", k, first.fence(), LONG)).isEqualTo(ExtendOutcome.FENCED);
    assertThat(store().release(new ReleaseArgs("", k, first.fence()))).isEqualTo(ReleaseOutcome.FENCED);
  }

  @Test
  void commitIsFencedUnlessPendingWithThatFence() {
    String k = key("fenced");
    BeginOutcome.Acquired a = acquire("", k);
    assertThat(store().commit(new CommitArgs("", k, a.fence() + 1, res("x"), DAY))).isEqualTo(CommitOutcome.FENCED);
    assertThat(store().commit(new CommitArgs("", key("absent"), 5, res("x"), DAY))).isEqualTo(CommitOutcome.FENCED);
  }

  @Test
  void aRetriedCommitIsCommittedAndKeepsTheFirstResult() {
    String k = key("retried");
    BeginOutcome.Acquired a = acquire("", k);
    store().commit(new CommitArgs("", k, a.fence(), res("first"), DAY));
    assertThat(store().commit(new CommitArgs("", k, a.fence(), res("second"), DAY))).isEqualTo(CommitOutcome.COMMITTED);
    assertThat(((BeginOutcome.Replay) begin("", k, "fp", LONG, DAY)).result()).isEqualTo(res("first"));
  }

  @Test
  void releaseLetsARetryAcquireWithAGreaterFence() {
    String k = key("release");
    BeginOutcome.Acquired a = acquire("", k);
    assertThat(store().release(new ReleaseArgs("", k, a.fence()))).isEqualTo(ReleaseOutcome.RELEASED);
    assertThat(store().get("", k)).isEmpty();
    BeginOutcome.Acquired again = acquire("", k);
    assertThat(again.fence()).isGreaterThan(a.fence());
    assertThat(again.recovered()).isFalse();
  }

  @Test
  void releaseAndExtendOfADoneRecordAreFenced() {
    String k = key("done-fenced");
    BeginOutcome.Acquired a = acquire("", k);
    store().commit(new CommitArgs("", k, a.fence(), res("r"), DAY));
    assertThat(store().release(new ReleaseArgs("", k, a.fence()))).isEqualTo(ReleaseOutcome.FENCED);
    assertThat(store().extend("", k, a.fence(), LONG)).isEqualTo(ExtendOutcome.FENCED);
    assertThat(store().abandon("", k, "nobody")).isEqualTo(ReleaseOutcome.FENCED);
  }

  @Test
  void abandonRemovesTheOwnersPendingClaimOnly() {
    String k = key("abandon");
    store().begin(new BeginArgs("", k, b("fp"), LONG, DAY, "owner-1"));
    assertThat(store().abandon("", k, "owner-2")).isEqualTo(ReleaseOutcome.FENCED);
    assertThat(store().get("", k)).isPresent();
    assertThat(store().abandon("", k, "owner-1")).isEqualTo(ReleaseOutcome.RELEASED);
    assertThat(store().get("", k)).isEmpty();
  }

  @Test
  void theOwnerIsStoredAndATakeoverReplacesIt() {
    String k = key("owner");
    store().begin(new BeginArgs("", k, b("fp"), SHORT, DAY, "first-owner"));
    if (showsOwners()) assertThat(store().get("", k).orElseThrow().owner()).isEqualTo("first-owner");
    sleepPast(SHORT);
    store().begin(new BeginArgs("", k, b("fp"), LONG, DAY, "second-owner"));
    if (showsOwners()) assertThat(store().get("", k).orElseThrow().owner()).isEqualTo("second-owner");
    assertThat(store().abandon("", k, "first-owner")).isEqualTo(ReleaseOutcome.FENCED);
    assertThat(store().abandon("", k, "second-owner")).isEqualTo(ReleaseOutcome.RELEASED);
  }

  @Test
  void extendKeepsTheLeaseAlive() {
    String k = key("extend");
    BeginOutcome.Acquired a = (BeginOutcome.Acquired) begin("", k, "fp", SHORT, DAY);
    assertThat(store().extend("", k, a.fence(), LONG)).isEqualTo(ExtendOutcome.EXTENDED);
    sleepPast(SHORT);
    assertThat(begin("", k, "fp", LONG, DAY)).isInstanceOf(BeginOutcome.InProgress.class);
    assertThat(store().extend("", k, a.fence() + 1, LONG)).isEqualTo(ExtendOutcome.FENCED);
  }

  @Test
  void getShowsTheRecordAsStored() {
    getShowsTheRecordAsStoredCase();
  }

  /** The case body; a backend whose get shows no fingerprint or owner (the control API) overrides it. */
  protected void getShowsTheRecordAsStoredCase() {
    String k = key("get");
    Instant before = Instant.now().minusSeconds(5);
    BeginOutcome.Acquired a = (BeginOutcome.Acquired) store().begin(new BeginArgs("sc", k, b("fp"), LONG, DAY, "o"));
    IdemRecord p = store().get("sc", k).orElseThrow();
    assertThat(p.scope()).isEqualTo("sc");
    assertThat(p.key()).isEqualTo(k);
    assertThat(p.state()).isEqualTo(RecordState.PENDING);
    assertThat(p.fence()).isEqualTo(a.fence());
    assertThat(p.fingerprint()).isEqualTo(b("fp"));
    assertThat(p.leaseUntil()).isPresent();
    assertThat(p.leaseUntil().get()).isAfter(before);
    assertThat(p.expiresAt()).isAfter(p.leaseUntil().get());
    assertThat(p.owner()).isEqualTo("o");
    store().commit(new CommitArgs("sc", k, a.fence(), res("res"), DAY));
    IdemRecord d = store().get("sc", k).orElseThrow();
    assertThat(d.state()).isEqualTo(RecordState.DONE);
    assertThat(d.result()).isEqualTo(res("res"));
    assertThat(d.leaseUntil()).isEmpty();
    assertThat(d.owner()).isEqualTo("o");
    assertThat(store().get("sc", key("none"))).isEmpty();
  }

  @Test
  void aDoneRecordExpiresAfterItsRetention() {
    String k = key("expire");
    BeginOutcome.Acquired a = acquire("", k);
    store().commit(new CommitArgs("", k, a.fence(), res("r"), SHORT));
    assertThat(store().get("", k)).isPresent();
    sleepPast(SHORT);
    assertThat(store().get("", k)).isEmpty();
    BeginOutcome.Acquired again = acquire("", k);
    assertThat(again.recovered()).isFalse();
    assertThat(again.fence()).isGreaterThan(a.fence());
  }

  @Test
  void deleteIsAnOperatorPurgeAndFencesStillGrow() {
    String k = key("delete");
    BeginOutcome.Acquired a = acquire("", k);
    assertThat(store().delete("", k)).isTrue();
    assertThat(store().delete("", k)).isFalse();
    assertThat(store().commit(new CommitArgs("", k, a.fence(), res("r"), DAY))).isEqualTo(CommitOutcome.FENCED);
    assertThat(acquire("", k).fence()).isGreaterThan(a.fence());
  }

  @Test
  void fencesNeverRepeatForAKey() {
    String k = key("fences");
    long last = 0;
    for (int i = 0; i < 20; i++) {
      BeginOutcome.Acquired a = acquire("", k);
      assertThat(a.fence()).isGreaterThan(last);
      last = a.fence();
      if (i % 2 == 0) store().release(new ReleaseArgs("", k, a.fence()));
      else store().delete("", k);
    }
  }

  @Test
  void aLateCommitReplacesTheUncertainMarkOfItsClaim() {
    String k = key("over");
    if (!store().traits().overUncertain()) return;
    BeginOutcome.Acquired first = (BeginOutcome.Acquired) begin("", k, "fp", SHORT, DAY);
    sleepPast(SHORT);
    BeginOutcome.Acquired second = (BeginOutcome.Acquired) begin("", k, "fp", LONG, DAY);
    byte[] marker = b("U");
    byte[] mark = b("Ufence=" + first.fence() + ";instance=x;at=1");
    store().commit(new CommitArgs("", k, second.fence(), mark, DAY));
    // Another claim's prefix is fenced; the marked claim's own commit lands and takes its fence.
    byte[] otherPrefix = b("Ufence=" + (first.fence() + 7) + ";");
    assertThat(store().commit(new CommitArgs("", k, first.fence() + 7, res("x"), DAY, otherPrefix)))
        .isEqualTo(CommitOutcome.FENCED);
    byte[] prefix = b("Ufence=" + first.fence() + ";");
    assertThat(Bytes.startsWith(mark, marker)).isTrue();
    assertThat(store().commit(new CommitArgs("", k, first.fence(), res("known"), DAY, prefix)))
        .isEqualTo(CommitOutcome.COMMITTED);
    BeginOutcome.Replay r = (BeginOutcome.Replay) begin("", k, "fp", LONG, DAY);
    assertThat(r.result()).isEqualTo(res("known"));
    assertThat(r.fence()).isEqualTo(first.fence());
    // A retry of it is the plain retried commit.
    assertThat(store().commit(new CommitArgs("", k, first.fence(), res("again"), DAY, prefix)))
        .isEqualTo(CommitOutcome.COMMITTED);
    assertThat(((BeginOutcome.Replay) begin("", k, "fp", LONG, DAY)).result()).isEqualTo(res("known"));
  }

  @Test
  void overUncertainLeavesAPendingClaimAlone() {
    String k = key("over-pending");
    BeginOutcome.Acquired a = acquire("", k);
    assertThat(store().commit(new CommitArgs("", k, a.fence() + 1, res("x"), DAY, b(""))))
        .isEqualTo(CommitOutcome.FENCED);
    assertThat(store().commit(new CommitArgs("", k, a.fence() + 1, res("x"), DAY, b("U"))))
        .isEqualTo(CommitOutcome.FENCED);
    assertThat(store().get("", k).orElseThrow().state()).isEqualTo(RecordState.PENDING);
  }

  @Test
  void theLongestKeyAndScopeAreHeld() {
    String scope = "s".repeat(Args.MAX_SCOPE_BYTES);
    String k = key("long-").concat("k".repeat(Args.MAX_KEY_BYTES - key("long-").length()));
    BeginOutcome.Acquired a = acquire(scope, k);
    store().commit(new CommitArgs(scope, k, a.fence(), res("r"), DAY));
    assertThat(store().get(scope, k).orElseThrow().key()).isEqualTo(k);
    String name = "n".repeat(Args.MAX_LOCK_NAME_BYTES - run.length()) + run;
    assertThat(store().lock(name, "o", LONG)).isInstanceOf(LockOutcome.Locked.class);
    assertThat(store().unlock(name, "o")).isEqualTo(UnlockOutcome.RELEASED);
  }

  @Test
  void invalidArgumentsAreRefusedBeforeAnythingIsSent() {
    assertThatThrownBy(() -> store().begin(new BeginArgs("", "", null, LONG, DAY)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store().begin(new BeginArgs("", "k", null, Duration.ZERO, DAY)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store().abandon("", key("x"), "")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store().extend("", key("x"), 1, Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store().lock("", "o", LONG)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store().issueToken("", Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store().get(null, "k")).isInstanceOf(NullPointerException.class);
    byte[] tooLarge = new byte[(int) Math.min(Integer.MAX_VALUE - 16, store().maxResultBytes() + 1)];
    if (store().maxResultBytes() < (64L << 20)) {
      BeginOutcome.Acquired a = acquire("", key("too-large"));
      assertThatThrownBy(() -> store().commit(new CommitArgs("", key("too-large"), a.fence(), tooLarge, DAY)))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void pingAnswers() {
    store().ping();
  }

  @Test
  void listFiltersByKeyPrefixScopeAndState() {
    String p = key("list-");
    BeginOutcome.Acquired a = acquire("ls", p + "a");
    store().commit(new CommitArgs("ls", p + "a", a.fence(), res("r"), DAY));
    acquire("ls", p + "b");
    acquire("other", p + "c");
    List<IdemRecord> all = listAll(new ListArgs(p, Optional.empty(), Optional.empty(), 2, ""));
    assertThat(all).extracting(IdemRecord::key).containsExactlyInAnyOrder(p + "a", p + "b", p + "c");
    assertThat(listAll(new ListArgs(p, Optional.of("ls"), Optional.empty(), 100, "")))
        .extracting(IdemRecord::key).containsExactlyInAnyOrder(p + "a", p + "b");
    assertThat(listAll(new ListArgs(p, Optional.empty(), Optional.of(RecordState.DONE), 100, "")))
        .extracting(IdemRecord::key).containsExactly(p + "a");
    assertThatThrownBy(() -> store().list(new ListArgs("", Optional.empty(), Optional.empty(), 10, "not-a-cursor")))
        .isInstanceOf(IllegalArgumentException.class);
  }

  protected List<IdemRecord> listAll(ListArgs first) {
    List<IdemRecord> out = new ArrayList<>();
    ListArgs at = first;
    for (int pages = 0; pages < 10_000; pages++) {
      ListPage page = store().list(at);
      assertThat(page.records().size()).isLessThanOrEqualTo(at.limit());
      out.addAll(page.records());
      if (page.last()) return out;
      at = at.withCursor(page.nextCursor());
    }
    throw new AssertionError("the listing did not end");
  }

  @Test
  void sixtyFourRacingBeginsAcquireExactlyOnce() throws Exception {
    String k = key("race");
    int n = 64;
    CountDownLatch start = new CountDownLatch(1);
    AtomicInteger acquired = new AtomicInteger(), busy = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        fs.add(pool.submit(() -> {
          start.await();
          BeginOutcome o = begin("", k, "fp", LONG, DAY);
          if (o instanceof BeginOutcome.Acquired) acquired.incrementAndGet();
          else if (o instanceof BeginOutcome.InProgress) busy.incrementAndGet();
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : fs) f.get(60, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
    }
    assertThat(acquired.get()).isEqualTo(1);
    assertThat(busy.get()).isEqualTo(n - 1);
  }

  @Test
  void tokensAreLongRandomUrlSafeAndConsumedOnceInTheirScope() {
    String t = store().issueToken("u1", LONG);
    assertThat(t).matches("[A-Za-z0-9_-]{22,}");
    assertThat(store().issueToken("u1", LONG)).isNotEqualTo(t);
    assertThat(store().consumeToken("u2", t)).isEqualTo(ConsumeOutcome.INVALID);
    assertThat(store().consumeToken("u1", t)).isEqualTo(ConsumeOutcome.CONSUMED);
    assertThat(store().consumeToken("u1", t)).isEqualTo(ConsumeOutcome.INVALID);
    assertThat(store().restoreToken("u2", t, LONG)).isEqualTo(RestoreOutcome.INVALID);
    assertThat(store().restoreToken("u1", t, LONG)).isEqualTo(RestoreOutcome.RESTORED);
    assertThat(store().consumeToken("u1", t)).isEqualTo(ConsumeOutcome.CONSUMED);
    assertThat(store().consumeToken("u1", "never-issued-" + run)).isEqualTo(ConsumeOutcome.INVALID);
  }

  @Test
  void anExpiredTokenIsInvalid() {
    String t = store().issueToken("u", SHORT);
    sleepPast(SHORT);
    assertThat(store().consumeToken("u", t)).isEqualTo(ConsumeOutcome.INVALID);
  }

  /** False for a backend whose get shows no owner (the control API). */
  protected boolean showsOwners() {
    return true;
  }

  @Test
  void aReleaseReArmsAConsumedTokenInTheSameStepAndAFencedOneDoesNot() {
    if (!store().traits().tokenRestoreOnRelease()) return;
    String t = store().issueToken("tok", LONG);
    String k = "space:" + t;
    store().consumeToken("tok", t);
    BeginOutcome.Acquired a = acquire("tok", k);
    assertThat(store().release(new ReleaseArgs("tok", k, a.fence() + 1, Optional.of(new TokenRestore(t, LONG)))))
        .isEqualTo(ReleaseOutcome.FENCED);
    assertThat(store().consumeToken("tok", t)).isEqualTo(ConsumeOutcome.INVALID);
    assertThat(store().release(new ReleaseArgs("tok", k, a.fence(), Optional.of(new TokenRestore(t, LONG)))))
        .isEqualTo(ReleaseOutcome.RELEASED);
    assertThat(store().consumeToken("tok", t)).isEqualTo(ConsumeOutcome.CONSUMED);
  }

  @Test
  void thirtyTwoRacingConsumersOneWins() throws Exception {
    String t = store().issueToken("race", LONG);
    CountDownLatch start = new CountDownLatch(1);
    AtomicInteger won = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(32);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int i = 0; i < 32; i++) {
        fs.add(pool.submit(() -> {
          start.await();
          if (store().consumeToken("race", t) == ConsumeOutcome.CONSUMED) won.incrementAndGet();
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : fs) f.get(60, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
    }
    assertThat(won.get()).isEqualTo(1);
  }

  @Test
  void aLockHasOneOwnerAndItsFenceGrows() {
    String name = key("lock");
    LockOutcome l = store().lock(name, "w1", LONG);
    assertThat(l).isInstanceOf(LockOutcome.Locked.class);
    long fence = ((LockOutcome.Locked) l).fence();
    assertThat(store().lock(name, "w1", LONG)).isEqualTo(new LockOutcome.Locked(fence));
    assertThat(store().lock(name, "w2", LONG)).isInstanceOf(LockOutcome.Busy.class);
    assertThat(store().unlock(name, "w2")).isEqualTo(UnlockOutcome.NOT_OWNER);
    assertThat(store().extendLock(name, "w2", LONG)).isEqualTo(LockExtendOutcome.NOT_OWNER);
    assertThat(store().extendLock(name, "w1", LONG)).isEqualTo(LockExtendOutcome.EXTENDED);
    assertThat(store().unlock(name, "w1")).isEqualTo(UnlockOutcome.RELEASED);
    LockOutcome again = store().lock(name, "w2", LONG);
    assertThat(((LockOutcome.Locked) again).fence()).isGreaterThan(fence);
  }

  @Test
  void anExpiredLockIsFreeAndItsFenceGrows() {
    String name = key("lock-exp");
    long f1 = ((LockOutcome.Locked) store().lock(name, "w1", SHORT)).fence();
    sleepPast(SHORT);
    assertThat(store().extendLock(name, "w1", LONG)).isEqualTo(LockExtendOutcome.NOT_OWNER);
    long f2 = ((LockOutcome.Locked) store().lock(name, "w2", LONG)).fence();
    assertThat(f2).isGreaterThan(f1);
  }

  @Test
  void fencesOfManyKeysAreDistinctPerKeyUnderChurn() throws Exception {
    String k = key("churn");
    Set<Long> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();
    AtomicInteger duplicates = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    CountDownLatch start = new CountDownLatch(1);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        fs.add(pool.submit(() -> {
          start.await();
          for (int j = 0; j < 25; j++) {
            if (begin("", k, "fp", LONG, DAY) instanceof BeginOutcome.Acquired a) {
              if (!seen.add(a.fence())) duplicates.incrementAndGet();
              store().release(new ReleaseArgs("", k, a.fence()));
            }
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : fs) f.get(120, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
    }
    assertThat(duplicates.get()).isZero();
    assertThat(new HashSet<>(seen)).isNotEmpty();
  }
}
