package dev.idem.core;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A store that forwards every operation to another (the C++ engine's StoreWrapper): a decorator
 * that counts, delays or injects faults overrides only the operations it cares about.
 */
public class ForwardingStore implements IdemStore {
  protected final IdemStore inner;

  public ForwardingStore(IdemStore inner) {
    this.inner = Objects.requireNonNull(inner, "inner");
  }

  @Override
  public StoreTraits traits() {
    return inner.traits();
  }

  @Override
  public long maxResultBytes() {
    return inner.maxResultBytes();
  }

  @Override
  public BeginOutcome begin(BeginArgs args) {
    return inner.begin(args);
  }

  @Override
  public CommitOutcome commit(CommitArgs args) {
    return inner.commit(args);
  }

  @Override
  public ReleaseOutcome release(ReleaseArgs args) {
    return inner.release(args);
  }

  @Override
  public ReleaseOutcome abandon(String scope, String key, String owner) {
    return inner.abandon(scope, key, owner);
  }

  @Override
  public ExtendOutcome extend(String scope, String key, long fence, Duration lease) {
    return inner.extend(scope, key, fence, lease);
  }

  @Override
  public Optional<IdemRecord> get(String scope, String key) {
    return inner.get(scope, key);
  }

  @Override
  public boolean delete(String scope, String key) {
    return inner.delete(scope, key);
  }

  @Override
  public ListPage list(ListArgs args) {
    return inner.list(args);
  }

  @Override
  public long sweep() {
    return inner.sweep();
  }

  @Override
  public String issueToken(String scope, Duration ttl) {
    return inner.issueToken(scope, ttl);
  }

  @Override
  public ConsumeOutcome consumeToken(String scope, String token) {
    return inner.consumeToken(scope, token);
  }

  @Override
  public RestoreOutcome restoreToken(String scope, String token, Duration ttl) {
    return inner.restoreToken(scope, token, ttl);
  }

  @Override
  public LockOutcome lock(String name, String owner, Duration ttl) {
    return inner.lock(name, owner, ttl);
  }

  @Override
  public UnlockOutcome unlock(String name, String owner) {
    return inner.unlock(name, owner);
  }

  @Override
  public LockExtendOutcome extendLock(String name, String owner, Duration ttl) {
    return inner.extendLock(name, owner, ttl);
  }

  @Override
  public void ping() {
    inner.ping();
  }

  @Override
  public void close() {
    inner.close();
  }
}
