package dev.idem.core;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;

/**
 * The arguments of {@link IdemStore#commit}.
 *
 * @param fence the claim's fence, from begin
 * @param result the bytes every repeat gets, as committed
 * @param retention how long the result is replayed from now (&gt; 0)
 * @param overUncertain not empty: the commit also succeeds on a live done record whose result
 *     starts with these bytes and replaces it (the claim runner passes the uncertain mark a
 *     takeover of this very claim would have written); empty (or null): only the pending record
 *     with this fence, and a retry of a commit that landed
 */
public record CommitArgs(String scope, String key, long fence, byte[] result, Duration retention,
                         byte[] overUncertain) {
  public CommitArgs {
    Args.scope(scope);
    Args.key(key);
    Objects.requireNonNull(result, "result");
    Args.positive(retention, "retention");
    overUncertain = Args.bytes(overUncertain);
    if (overUncertain.length > 0) Args.fence(fence);
  }

  public CommitArgs(String scope, String key, long fence, byte[] result, Duration retention) {
    this(scope, key, fence, result, retention, null);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CommitArgs c && scope.equals(c.scope) && key.equals(c.key) && fence == c.fence
        && Arrays.equals(result, c.result) && retention.equals(c.retention)
        && Arrays.equals(overUncertain, c.overUncertain);
  }

  @Override
  public int hashCode() {
    return Objects.hash(scope, key, fence, Arrays.hashCode(result), retention, Arrays.hashCode(overUncertain));
  }

  @Override
  public String toString() {
    return "CommitArgs[scope=" + scope + ", key=" + key + ", fence=" + fence + ", result=" + Bytes.describe(result)
        + ", retention=" + retention + ", overUncertain=" + Bytes.describe(overUncertain) + "]";
  }
}
