package dev.idem.core;

import java.time.Duration;

/** A token a release re-arms in the same step ({@link ReleaseArgs#restoreToken()}). */
public record TokenRestore(String token, Duration ttl) {
  public TokenRestore {
    Args.nonEmpty(token, "token");
    Args.positive(ttl, "ttl");
  }
}
