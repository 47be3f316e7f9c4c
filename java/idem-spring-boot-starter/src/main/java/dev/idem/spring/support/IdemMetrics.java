package dev.idem.spring.support;

/**
 * What the starter counts (docs/spring.md, "Metrics"): the gateway's metrics where they mean the
 * same thing. The Micrometer implementation is {@code MicrometerIdemMetrics}; without Micrometer
 * nothing is counted.
 */
public interface IdemMetrics {
  /** A protected call of {@code route} (its key space) ended with {@code outcome} (the gateway's labels). */
  void request(String route, String outcome);

  /** A message of {@code listener} (its scope) ended with {@code outcome}. */
  void message(String listener, String outcome);

  void tokenIssued();

  /** A store call took {@code nanos}; {@code failed}: it threw (unavailable, unknown outcome). */
  void storeCall(String op, long nanos, boolean failed);

  /** A commit, release or renewal answered fenced: the claim was taken over or removed mid-call. */
  void conflict();

  /** A protected call started (+1) or ended (-1). */
  void inflight(int delta);

  static IdemMetrics none() {
    return new IdemMetrics() {
      @Override
      public void request(String route, String outcome) {}

      @Override
      public void message(String listener, String outcome) {}

      @Override
      public void tokenIssued() {}

      @Override
      public void storeCall(String op, long nanos, boolean failed) {}

      @Override
      public void conflict() {}

      @Override
      public void inflight(int delta) {}
    };
  }
}
