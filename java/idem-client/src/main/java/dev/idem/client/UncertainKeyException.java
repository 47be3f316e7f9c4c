package dev.idem.client;

/**
 * The key is held as uncertain ({@link OnUncertain#HOLD}): an earlier attempt's lease
 * expired mid-run, so whether it took effect is unknown. Nothing ran; an operator removes
 * the record ({@link Idem#deleteRecord}) to let it run again.
 */
public class UncertainKeyException extends CallRefusedException {
  private static final long serialVersionUID = 1L;

  public UncertainKeyException() {
    super("outcome of an earlier attempt is unknown (its lease expired mid-run); remove the record to run again");
  }
}
