package dev.idem.core;

/** How the work under a claim ended. */
public enum WorkEnd {
  /** It has a result to keep: repeats replay it. */
  SUCCEEDED,
  /** It did not take effect, or may safely run again: a retry runs it again. */
  FAILED,
  /** It may or may not have taken effect. */
  UNKNOWN
}
