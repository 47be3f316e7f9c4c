package dev.idem.spring.support;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * idem's metrics in Micrometer, named as the gateway's (docs/observability.md): in Prometheus
 * {@code idem_requests_total{route,outcome}}, {@code idem_tokens_issued_total}, {@code
 * idem_store_errors_total}, {@code idem_store_conflicts_total}, {@code idem_store_seconds{op}}
 * (with the gateway's buckets), {@code idem_inflight}; and {@code idem_messages_total{listener,outcome}}
 * for consumers, which the gateway does not have.
 */
public final class MicrometerIdemMetrics implements IdemMetrics {
  private static final Duration[] BUCKETS = {Duration.ofMillis(1).dividedBy(2), Duration.ofMillis(1),
      Duration.ofMillis(5).dividedBy(2), Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25),
      Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1),
      Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(30),
      Duration.ofSeconds(60)};

  private final MeterRegistry registry;
  private final Counter tokens, errors, conflicts;
  // Meters by their tags, made once: a protected call counts on the hot path.
  private final ConcurrentHashMap<String, ConcurrentHashMap<String, Counter>> requests = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Counter> messages = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Timer> store = new ConcurrentHashMap<>();
  private final AtomicInteger inflight = new AtomicInteger();

  public MicrometerIdemMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.tokens = Counter.builder("idem.tokens.issued").description("one-time tokens issued").register(registry);
    this.errors = Counter.builder("idem.store.errors").description("store calls that failed (unavailable, deadline)")
        .register(registry);
    this.conflicts = Counter.builder("idem.store.conflicts")
        .description("commits, releases or renewals answered fenced: the claim was taken over or removed mid-call")
        .register(registry);
    registry.gauge("idem.inflight", inflight);
  }

  @Override
  public void request(String route, String outcome) {
    ConcurrentHashMap<String, Counter> byOutcome = requests.get(route);
    if (byOutcome == null) byOutcome = requests.computeIfAbsent(route, k -> new ConcurrentHashMap<>());
    Counter c = byOutcome.get(outcome);
    if (c == null) c = byOutcome.computeIfAbsent(outcome, k -> Counter.builder("idem.requests")
        .description("protected calls by route (key space) and outcome").tag("route", route).tag("outcome", outcome)
        .register(registry));
    c.increment();
  }

  @Override
  public void message(String listener, String outcome) {
    messages.computeIfAbsent(listener + '\n' + outcome, k -> Counter.builder("idem.messages")
        .description("messages by listener (scope) and outcome").tag("listener", listener).tag("outcome", outcome)
        .register(registry)).increment();
  }

  @Override
  public void tokenIssued() {
    tokens.increment();
  }

  @Override
  public void storeCall(String op, long nanos, boolean failed) {
    Timer t = store.get(op);
    if (t == null) t = store.computeIfAbsent(op, k -> Timer.builder("idem.store").description("store call time by operation").tag("op", op)
        .serviceLevelObjectives(BUCKETS).register(registry));
    t.record(nanos, TimeUnit.NANOSECONDS);
    if (failed) errors.increment();
  }

  @Override
  public void conflict() {
    conflicts.increment();
  }

  @Override
  public void inflight(int delta) {
    inflight.addAndGet(delta);
  }
}
