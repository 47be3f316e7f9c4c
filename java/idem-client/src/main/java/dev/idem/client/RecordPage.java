package dev.idem.client;

import java.util.List;
import java.util.Optional;

/** One answer of {@link Idem#listRecords}: records, and the cursor of the next page if any. */
public record RecordPage(List<StoredRecord> records, Optional<String> nextCursor) {
  public RecordPage {
    records = List.copyOf(records);
  }
}
