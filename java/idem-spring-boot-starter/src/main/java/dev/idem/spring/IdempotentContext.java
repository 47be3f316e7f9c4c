package dev.idem.spring;

import dev.idem.core.Attempt;
import java.util.Optional;

/**
 * The claim the current {@code @Idempotent} or {@code @IdempotentListener} method runs under, on
 * its thread: its scope, stored key, fence and whether it took over a claim whose holder died.
 * Make writes conditional on the fence (a greater fence means a newer attempt ran, so a late
 * one must not overwrite it), as the reference shop's stock deduction does:
 *
 * <pre>{@code
 * long fence = IdempotentContext.current().orElseThrow().fence();
 * jdbc.update("INSERT INTO t_stock_log (idem_key, fence, ...) VALUES (?, ?, ...)", key, fence, ...);
 * }</pre>
 */
public final class IdempotentContext {
  private static final ThreadLocal<Attempt> CURRENT = new ThreadLocal<>();

  private IdempotentContext() {}

  /** The claim of the protected method running on this thread; empty outside one (or when it runs unprotected). */
  public static Optional<Attempt> current() {
    return Optional.ofNullable(CURRENT.get());
  }

  /** Sets the current attempt for a method's run; the returned handle restores the one before. */
  public static Scope enter(Attempt attempt) {
    Attempt outer = CURRENT.get();
    CURRENT.set(attempt);
    return () -> {
      if (outer == null) CURRENT.remove();
      else CURRENT.set(outer);
    };
  }

  /** Ends a method's run. */
  @FunctionalInterface
  public interface Scope extends AutoCloseable {
    @Override
    void close();
  }
}
