package dev.idem.client;

/** 401 {@code unauthorized}: the bearer token is missing or wrong (admin.token_env). */
public class UnauthorizedException extends IdemException {
  private static final long serialVersionUID = 1L;

  public UnauthorizedException(String message) {
    super(message, 401, null);
  }
}
