package dev.idem.core;

/**
 * An earlier attempt's outcome is unknown and the policy is HOLD: nothing ran. An operator decides
 * (asks the service about {@link #mark()}'s fence, then removes the record) or its retention passes
 * (HTTP: 409).
 */
public class UncertainKeyException extends CallRefusedException {
  private static final long serialVersionUID = 1L;
  private final transient UncertainMark mark;

  public UncertainKeyException(UncertainMark mark) {
    super("the outcome of an earlier attempt is unknown" + (mark.fence() != 0 ? " (fence " + mark.fence()
        + ", marked by " + mark.instance() + ")" : "") + ": nothing ran; an operator must decide");
    this.mark = mark;
  }

  public UncertainMark mark() {
    return mark;
  }
}
