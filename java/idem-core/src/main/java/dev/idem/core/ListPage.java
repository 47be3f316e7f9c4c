package dev.idem.core;

import java.util.List;
import java.util.Objects;

/**
 * One page of {@link IdemStore#list}: live records only. A page may hold fewer than the limit
 * while more follow; only an empty {@code nextCursor} ends the listing.
 */
public record ListPage(List<IdemRecord> records, String nextCursor) {
  public ListPage {
    records = List.copyOf(records);
    Objects.requireNonNull(nextCursor, "nextCursor");
  }

  public boolean last() {
    return nextCursor.isEmpty();
  }
}
