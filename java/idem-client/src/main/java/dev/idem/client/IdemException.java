package dev.idem.client;

/**
 * A control API call that did not get an answer of its own. What the caller should do
 * depends on the subclass:
 *
 * <ul>
 *   <li>{@link NotAppliedException} (and its {@link StoreUnavailableException}): nothing was
 *       applied; retry the same call as is (after {@link StoreUnavailableException#retryAfter()}).
 *   <li>{@link OutcomeUnknownException}: the call may have been applied; read the record
 *       ({@link Idem#getRecord}) before retrying a commit, release, token or lock call.
 *   <li>{@link UnauthorizedException}, {@link RequestInvalidException}, {@link ProtocolException}:
 *       a mistake to fix (token, arguments, gateway version); retrying does not help.
 * </ul>
 */
public class IdemException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int status;

  public IdemException(String message, int status, Throwable cause) {
    super(message, cause);
    this.status = status;
  }

  /** The HTTP status of the answer, or 0 when no answer came. */
  public int status() {
    return status;
  }
}
