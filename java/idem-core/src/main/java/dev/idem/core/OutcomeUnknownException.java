package dev.idem.core;

/**
 * The call was sent and no answer came (a timeout, a connection lost after sending): it may or
 * may not have taken effect. Never treat it as "not done": read the record before retrying a
 * commit, release, token or lock call; a commit with the same fence and result may simply be
 * repeated; after a begin, abandon by its owner.
 */
public class OutcomeUnknownException extends IdemException {
  private static final long serialVersionUID = 1L;

  public OutcomeUnknownException(String message, Throwable cause) {
    super(message, cause);
  }

  public OutcomeUnknownException(String message) {
    super(message, null);
  }
}
