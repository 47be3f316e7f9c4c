package dev.idem.spring.support;

import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.core.CommitOutcome;
import dev.idem.core.ConsumeOutcome;
import dev.idem.core.ExtendOutcome;
import dev.idem.core.ForwardingStore;
import dev.idem.core.IdemException;
import dev.idem.core.IdemRecord;
import dev.idem.core.IdemStore;
import dev.idem.core.ListArgs;
import dev.idem.core.ListPage;
import dev.idem.core.LockExtendOutcome;
import dev.idem.core.LockOutcome;
import dev.idem.core.ReleaseArgs;
import dev.idem.core.ReleaseOutcome;
import dev.idem.core.RestoreOutcome;
import dev.idem.core.UnlockOutcome;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Times every store call and counts the failed ones ({@code idem_store_seconds{op}}, {@code
 * idem_store_errors_total}), by the gateway's operation names. Only the store's own failures
 * ({@link IdemException}) count as errors; a refused argument does not.
 */
public final class ObservedStore extends ForwardingStore {
  private final IdemMetrics metrics;

  public ObservedStore(IdemStore inner, IdemMetrics metrics) {
    super(inner);
    this.metrics = metrics;
  }

  /** The store this one observes. */
  public IdemStore unwrap() {
    return inner;
  }

  private <T> T timed(String op, Supplier<T> call) {
    long t0 = System.nanoTime();
    boolean failed = false;
    try {
      return call.get();
    } catch (IdemException e) {
      failed = true;
      throw e;
    } finally {
      metrics.storeCall(op, System.nanoTime() - t0, failed);
    }
  }

  @Override
  public BeginOutcome begin(BeginArgs args) {
    return timed("begin", () -> inner.begin(args));
  }

  @Override
  public CommitOutcome commit(CommitArgs args) {
    return timed("commit", () -> inner.commit(args));
  }

  @Override
  public ReleaseOutcome release(ReleaseArgs args) {
    return timed("release", () -> inner.release(args));
  }

  @Override
  public ReleaseOutcome abandon(String scope, String key, String owner) {
    return timed("abandon", () -> inner.abandon(scope, key, owner));
  }

  @Override
  public ExtendOutcome extend(String scope, String key, long fence, Duration lease) {
    return timed("extend", () -> inner.extend(scope, key, fence, lease));
  }

  @Override
  public Optional<IdemRecord> get(String scope, String key) {
    return timed("get", () -> inner.get(scope, key));
  }

  @Override
  public boolean delete(String scope, String key) {
    return timed("delete", () -> inner.delete(scope, key));
  }

  @Override
  public ListPage list(ListArgs args) {
    return timed("list", () -> inner.list(args));
  }

  @Override
  public long sweep() {
    return timed("sweep", inner::sweep);
  }

  @Override
  public String issueToken(String scope, Duration ttl) {
    return timed("issue_token", () -> inner.issueToken(scope, ttl));
  }

  @Override
  public ConsumeOutcome consumeToken(String scope, String token) {
    return timed("consume_token", () -> inner.consumeToken(scope, token));
  }

  @Override
  public RestoreOutcome restoreToken(String scope, String token, Duration ttl) {
    return timed("restore_token", () -> inner.restoreToken(scope, token, ttl));
  }

  @Override
  public LockOutcome lock(String name, String owner, Duration ttl) {
    return timed("lock", () -> inner.lock(name, owner, ttl));
  }

  @Override
  public UnlockOutcome unlock(String name, String owner) {
    return timed("unlock", () -> inner.unlock(name, owner));
  }

  @Override
  public LockExtendOutcome extendLock(String name, String owner, Duration ttl) {
    return timed("extend_lock", () -> inner.extendLock(name, owner, ttl));
  }

  @Override
  public void ping() {
    timed("ping", () -> {
      inner.ping();
      return null;
    });
  }

  @Override
  public void close() {
    inner.close();
  }
}
