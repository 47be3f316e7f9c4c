package dev.idem.core;

/** A record's state: someone holds a lease and works, or the result is stored and replayed. */
public enum RecordState {
  PENDING,
  DONE;

  /** "pending" or "done", as the C++ engine and the control API write it. */
  public String wireName() {
    return this == PENDING ? "pending" : "done";
  }
}
