package dev.idem.core;

import java.time.Duration;
import java.util.Objects;

/**
 * How one face runs its claims through the {@link ClaimRunner}.
 *
 * @param lease how long a claim is held unless renewed (&gt; 0)
 * @param retention how long a result is replayed (&gt; 0)
 * @param renew extend the lease every lease/3 while the work runs
 * @param onUncertain what an unknown outcome becomes
 * @param uncertainMarker what an uncertain record's result starts with; the runner appends the
 *     {@link UncertainMark}. Each face stores results in a form no real result starts with
 *     ({@link StoredResult#UNCERTAIN_MARKER} for {@link IdempotentCall}).
 */
public record ClaimPolicy(Duration lease, Duration retention, boolean renew, OnUncertain onUncertain,
                          byte[] uncertainMarker) {
  public ClaimPolicy {
    Args.positive(lease, "lease");
    Args.positive(retention, "retention");
    Objects.requireNonNull(onUncertain, "onUncertain");
    uncertainMarker = uncertainMarker == null ? Args.EMPTY : uncertainMarker.clone();
  }

  @Override
  public byte[] uncertainMarker() {
    return uncertainMarker.clone();
  }

  byte[] marker() {
    return uncertainMarker;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ClaimPolicy p && lease.equals(p.lease) && retention.equals(p.retention) && renew == p.renew
        && onUncertain == p.onUncertain && java.util.Arrays.equals(uncertainMarker, p.uncertainMarker);
  }

  @Override
  public int hashCode() {
    return Objects.hash(lease, retention, renew, onUncertain, java.util.Arrays.hashCode(uncertainMarker));
  }

  @Override
  public String toString() {
    return "ClaimPolicy[lease=" + lease + ", retention=" + retention + ", renew=" + renew + ", onUncertain="
        + onUncertain + "]";
  }
}
