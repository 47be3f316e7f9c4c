package dev.idem.core;

/** The answer of {@link IdemStore#consumeToken}. INVALID: unknown, expired, already consumed, or another scope's token. */
public enum ConsumeOutcome {
  CONSUMED,
  INVALID
}
