package dev.idem.core;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An acquired claim: settle it once with {@link ClaimRunner#settle}. Closing one unsettled (an
 * exception before the work started) gives it back by its fence in the background; once {@link
 * #started()} was called the work may have taken effect, so a claim closed unsettled is left to its
 * lease, after which the policy's {@link OnUncertain} decides for the next repeat.
 *
 * <p>Thread safety: one caller's handle; {@link #lost()} may be read from any thread.
 */
public final class Claim implements AutoCloseable {
  private final ClaimRunner runner;
  private final String scope, key, owner;
  private final byte[] fingerprint;
  private final long fence;
  private final boolean recovered;
  private final long previousFence;
  private final Duration lease, retention;
  private final ClaimPolicy policy;
  final AtomicBoolean lost = new AtomicBoolean();
  private final AtomicBoolean settled = new AtomicBoolean();
  private volatile boolean started;

  Claim(ClaimRunner runner, BeginArgs args, BeginOutcome.Acquired a, ClaimPolicy policy) {
    this.runner = runner;
    this.scope = args.scope();
    this.key = args.key();
    this.owner = args.owner();
    this.fingerprint = args.fingerprint();
    this.fence = a.fence();
    this.recovered = a.recovered();
    this.previousFence = a.previousFence();
    this.lease = args.lease();
    this.retention = args.retention();
    this.policy = policy;
  }

  public String scope() {
    return scope;
  }

  public String key() {
    return key;
  }

  public String owner() {
    return owner;
  }

  /** Greater than every fence handed out for this key before: make the work's writes conditional on it. */
  public long fence() {
    return fence;
  }

  /** Taken over from a holder whose lease ran out mid-run. */
  public boolean recovered() {
    return recovered;
  }

  /** When recovered: the fence of the claim taken over; 0 otherwise. */
  public long previousFence() {
    return previousFence;
  }

  /** A renewal answered fenced: the claim was taken over or removed while the work ran. */
  public boolean lost() {
    return lost.get();
  }

  /** The work may take effect from now on. */
  public void started() {
    started = true;
  }

  boolean isStarted() {
    return started;
  }

  byte[] fingerprint() {
    return fingerprint;
  }

  Duration lease() {
    return lease;
  }

  Duration retention() {
    return retention;
  }

  ClaimPolicy policy() {
    return policy;
  }

  /** True once settled (by {@link ClaimRunner#settle} or {@link #close}). */
  public boolean settled() {
    return settled.get();
  }

  boolean markSettled() {
    return settled.compareAndSet(false, true);
  }

  /** Gives an unsettled claim back (before {@link #started()}) or leaves it to its lease (after). */
  @Override
  public void close() {
    if (!markSettled() || started) return;
    runner.settleLater(scope, key, owner, fence, Settlement.RELEASE, null, lease, retention, policy,
        Optional.empty(), fingerprint);
  }

  @Override
  public String toString() {
    return "Claim[scope=" + scope + ", key=" + key + ", fence=" + fence + ", recovered=" + recovered + "]";
  }
}
