package dev.idem.core;

/** The answer of {@link IdemStore#extendLock}. NOT_OWNER: not held by this owner (or lapsed). */
public enum LockExtendOutcome {
  EXTENDED,
  NOT_OWNER
}
