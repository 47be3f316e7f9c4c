package dev.idem.core;

import java.util.Objects;
import java.util.Optional;

/**
 * The arguments of {@link IdemStore#list}.
 *
 * @param keyPrefix only keys starting with this text ("" for every key)
 * @param scope only this scope, exactly ("" is the empty scope)
 * @param state only records in this state
 * @param limit 1 to {@link #MAX_LIMIT} records at most per page
 * @param cursor the previous page's {@link ListPage#nextCursor()}; "" for the first page
 */
public record ListArgs(String keyPrefix, Optional<String> scope, Optional<RecordState> state, int limit,
                       String cursor) {
  public static final int DEFAULT_LIMIT = 100;
  public static final int MAX_LIMIT = 1000;

  public ListArgs {
    Objects.requireNonNull(keyPrefix, "keyPrefix");
    scope = scope == null ? Optional.empty() : scope;
    state = state == null ? Optional.empty() : state;
    if (limit < 1 || limit > MAX_LIMIT)
      throw new IllegalArgumentException("limit must be from 1 to " + MAX_LIMIT + ", got " + limit);
    cursor = cursor == null ? "" : cursor;
  }

  /** Every record, the first page of {@link #DEFAULT_LIMIT}. */
  public static ListArgs all() {
    return new ListArgs("", Optional.empty(), Optional.empty(), DEFAULT_LIMIT, "");
  }

  public ListArgs withCursor(String next) {
    return new ListArgs(keyPrefix, scope, state, limit, next);
  }

  /** True when {@code r} passes the filters (the key prefix, scope and state). */
  public boolean matches(IdemRecord r) {
    return r.key().startsWith(keyPrefix) && scope.map(r.scope()::equals).orElse(true)
        && state.map(s -> s == r.state()).orElse(true);
  }
}
