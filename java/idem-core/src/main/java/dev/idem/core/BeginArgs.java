package dev.idem.core;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;

/**
 * The arguments of {@link IdemStore#begin}.
 *
 * @param scope whose key it is ("" for none)
 * @param key the idempotency key, not empty
 * @param fingerprint the bytes that identify the request; empty matches any (null is empty)
 * @param lease how long the claim is held unless extended (&gt; 0)
 * @param retention how long the record lives after its lease (pending) or its commit (done)
 * @param owner who claims, stored with the pending record so that the same owner can {@link
 *     IdemStore#abandon} a claim whose begin answer was lost; "" for none (null is "")
 */
public record BeginArgs(String scope, String key, byte[] fingerprint, Duration lease, Duration retention,
                        String owner) {
  public BeginArgs {
    Args.scope(scope);
    Args.key(key);
    fingerprint = Args.bytes(fingerprint);
    Args.positive(lease, "lease");
    Args.positive(retention, "retention");
    owner = owner == null ? "" : owner;
  }

  public BeginArgs(String scope, String key, byte[] fingerprint, Duration lease, Duration retention) {
    this(scope, key, fingerprint, lease, retention, "");
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BeginArgs b && scope.equals(b.scope) && key.equals(b.key)
        && Arrays.equals(fingerprint, b.fingerprint) && lease.equals(b.lease) && retention.equals(b.retention)
        && owner.equals(b.owner);
  }

  @Override
  public int hashCode() {
    return Objects.hash(scope, key, Arrays.hashCode(fingerprint), lease, retention, owner);
  }

  @Override
  public String toString() {
    return "BeginArgs[scope=" + scope + ", key=" + key + ", fingerprint=" + Bytes.describe(fingerprint) + ", lease="
        + lease + ", retention=" + retention + ", owner=" + owner + "]";
  }
}
