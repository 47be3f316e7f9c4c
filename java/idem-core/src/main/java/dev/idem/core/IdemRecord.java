package dev.idem.core;

import java.time.Instant;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * An idempotency record as {@link IdemStore#get} shows it.
 *
 * @param fingerprint empty matches any fingerprint
 * @param leaseUntil pending records only
 * @param expiresAt pending: leaseUntil + retention; done: commit time + retention
 * @param result done records only (empty otherwise): the stored bytes
 * @param owner the owner named by the begin that acquired it ("" for none)
 */
public record IdemRecord(String scope, String key, RecordState state, long fence, byte[] fingerprint,
                         Optional<Instant> leaseUntil, Instant expiresAt, byte[] result, String owner) {
  public IdemRecord {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(state, "state");
    fingerprint = Args.bytes(fingerprint);
    leaseUntil = leaseUntil == null ? Optional.empty() : leaseUntil;
    Objects.requireNonNull(expiresAt, "expiresAt");
    result = Args.bytes(result);
    owner = owner == null ? "" : owner;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof IdemRecord r && scope.equals(r.scope) && key.equals(r.key) && state == r.state
        && fence == r.fence && Arrays.equals(fingerprint, r.fingerprint) && leaseUntil.equals(r.leaseUntil)
        && expiresAt.equals(r.expiresAt) && Arrays.equals(result, r.result) && owner.equals(r.owner);
  }

  @Override
  public int hashCode() {
    return Objects.hash(scope, key, state, fence, Arrays.hashCode(fingerprint), leaseUntil, expiresAt,
        Arrays.hashCode(result), owner);
  }

  @Override
  public String toString() {
    return "IdemRecord[scope=" + scope + ", key=" + key + ", state=" + state + ", fence=" + fence + ", fingerprint="
        + Bytes.describe(fingerprint) + ", leaseUntil=" + leaseUntil + ", expiresAt=" + expiresAt + ", result="
        + Bytes.describe(result) + ", owner=" + owner + "]";
  }
}
