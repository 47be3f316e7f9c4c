package dev.idem.testkit;

import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.core.CommitOutcome;
import dev.idem.core.ExtendOutcome;
import dev.idem.core.ForwardingStore;
import dev.idem.core.IdemStore;
import dev.idem.core.NotAppliedException;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.ReleaseArgs;
import dev.idem.core.ReleaseOutcome;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * A store that fails on purpose (LevelDB's SpecialEnv, the C++ tests' fault-injecting stores): per
 * operation, the store is {@link Mode#DOWN} (the call is not sent: {@link NotAppliedException}),
 * {@link Mode#LOSE_ANSWER} (the call is applied, then its answer is lost: {@link
 * OutcomeUnknownException}) or {@link Mode#UP}. Counts every call.
 */
public final class FaultyStore extends ForwardingStore {
  /** What a call meets. */
  public enum Mode {
    UP,
    DOWN,
    LOSE_ANSWER
  }

  private final ConcurrentHashMap<String, Mode> modes = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, AtomicInteger> counts = new ConcurrentHashMap<>();

  public FaultyStore(IdemStore inner) {
    super(inner);
  }

  /** Sets the mode of one operation ("begin", "commit", "release", "abandon", "extend") or of all ("*"). */
  public FaultyStore set(String op, Mode mode) {
    modes.put(op, mode);
    return this;
  }

  /** Every operation up again. */
  public FaultyStore heal() {
    modes.clear();
    return this;
  }

  /** How many calls of {@code op} were made (whatever they met). */
  public int calls(String op) {
    return counts.computeIfAbsent(op, k -> new AtomicInteger()).get();
  }

  private <T> T call(String op, Supplier<T> body) {
    counts.computeIfAbsent(op, k -> new AtomicInteger()).incrementAndGet();
    Mode m = modes.getOrDefault(op, modes.getOrDefault("*", Mode.UP));
    if (m == Mode.DOWN) throw new NotAppliedException("faulty store: " + op + " not sent (down)");
    T out = body.get();
    if (m == Mode.LOSE_ANSWER) throw new OutcomeUnknownException("faulty store: the answer to " + op + " was lost");
    return out;
  }

  @Override
  public BeginOutcome begin(BeginArgs args) {
    return call("begin", () -> inner.begin(args));
  }

  @Override
  public CommitOutcome commit(CommitArgs args) {
    return call("commit", () -> inner.commit(args));
  }

  @Override
  public ReleaseOutcome release(ReleaseArgs args) {
    return call("release", () -> inner.release(args));
  }

  @Override
  public ReleaseOutcome abandon(String scope, String key, String owner) {
    return call("abandon", () -> inner.abandon(scope, key, owner));
  }

  @Override
  public ExtendOutcome extend(String scope, String key, long fence, Duration lease) {
    return call("extend", () -> inner.extend(scope, key, fence, lease));
  }
}
