package dev.idem.client;

/**
 * The work ran and returned {@link #value()}, but its claim was lost meanwhile (the lease
 * expired and another caller took the key over, or an operator removed the record): the
 * result was not committed over the newer holder, so a repeat may run the work again. The
 * work's writes can be checked against {@link #fence()}.
 */
public class LeaseLostException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final transient Object value;
  private final long fence;

  public LeaseLostException(Object value, long fence) {
    super("the claim (fence " + fence + ") was lost while the work ran; its result was not stored");
    this.value = value;
    this.fence = fence;
  }

  /** What the work returned. */
  @SuppressWarnings("unchecked")
  public <T> T value() {
    return (T) value;
  }

  public long fence() {
    return fence;
  }
}
