package dev.idem.client;

/**
 * What {@link Idem#listRecords} asks for; every field is optional (null = not filtered).
 *
 * @param keySpace records of this route's key space
 * @param state "pending" or "done"
 * @param uncertain true: only records held as uncertain
 * @param scope only this scope
 * @param limit at most this many records (the gateway caps it)
 * @param cursor from a previous page's {@link RecordPage#nextCursor()}
 */
public record RecordQuery(
    String keySpace, String state, Boolean uncertain, String scope, Integer limit, String cursor) {
  public static RecordQuery all() {
    return new RecordQuery(null, null, null, null, null, null);
  }

  public RecordQuery withKeySpace(String v) {
    return new RecordQuery(v, state, uncertain, scope, limit, cursor);
  }

  public RecordQuery withState(String v) {
    return new RecordQuery(keySpace, v, uncertain, scope, limit, cursor);
  }

  public RecordQuery withUncertain(boolean v) {
    return new RecordQuery(keySpace, state, v, scope, limit, cursor);
  }

  public RecordQuery withScope(String v) {
    return new RecordQuery(keySpace, state, uncertain, v, limit, cursor);
  }

  public RecordQuery withLimit(int v) {
    return new RecordQuery(keySpace, state, uncertain, scope, v, cursor);
  }

  public RecordQuery withCursor(String v) {
    return new RecordQuery(keySpace, state, uncertain, scope, limit, v);
  }
}
