package dev.idem.client;

/**
 * The call may have been applied: 504 {@code store-timeout} (the store did not answer), or
 * the request was sent and no answer came (a timeout, a connection lost). Read the record
 * before retrying a commit, release, token or lock call. A commit with the same fence and
 * result may simply be repeated (it changes nothing the second time); a repeated begin may
 * find the caller's own earlier claim, in progress until its lease ends.
 */
public class OutcomeUnknownException extends IdemException {
  private static final long serialVersionUID = 1L;

  public OutcomeUnknownException(String message, int status, Throwable cause) {
    super(message, status, cause);
  }
}
