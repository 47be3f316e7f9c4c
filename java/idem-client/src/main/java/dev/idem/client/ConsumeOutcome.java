package dev.idem.client;

/** The answer of {@link Idem#consumeToken}. */
public enum ConsumeOutcome {
  /** this caller consumed the token (exactly one of concurrent consumers does). */
  CONSUMED,
  /** unknown, expired, already consumed, or issued to another scope. */
  INVALID,
}
