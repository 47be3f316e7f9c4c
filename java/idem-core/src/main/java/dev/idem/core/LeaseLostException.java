package dev.idem.core;

/**
 * The work ran, but its claim was lost meanwhile (its lease ran out and another caller took the
 * key, or an operator removed the record): its result was not stored, and a repeat may run the
 * work again. {@link #value()} is the work's result, {@link #fence()} the fence it ran under.
 */
public class LeaseLostException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final transient Object value;
  private final long fence;

  public LeaseLostException(Object value, long fence) {
    super("the claim (fence " + fence + ") was lost while the work ran: its result was not stored");
    this.value = value;
    this.fence = fence;
  }

  public Object value() {
    return value;
  }

  public long fence() {
    return fence;
  }
}
