package dev.idem.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.util.Optional;

/**
 * A record as {@code GET /v1/records/{scope}/{key}} shows it (docs/admin.md).
 *
 * @param scope "" for the empty scope
 * @param state "pending" or "done"
 * @param leaseUntil pending records only
 * @param result done records only: "json" (written through the control API, see
 *     {@code value}), "response" (the gateway's stored response), "uncertain", "not_stored"
 * @param value the committed JSON when result is "json", with exact numbers ({@link ExactJson})
 * @param valueJson the same as its text, byte for byte as committed
 * @param responseStatus the stored HTTP status for "response" and "not_stored"
 * @param json the record's JSON as the gateway sent it
 */
public record StoredRecord(
    String scope,
    String key,
    String state,
    long fence,
    Instant expiresAt,
    Optional<Instant> leaseUntil,
    Optional<String> result,
    Optional<JsonNode> value,
    Optional<String> valueJson,
    Optional<Integer> responseStatus,
    JsonNode json) {

  public boolean pending() {
    return "pending".equals(state);
  }

  public boolean done() {
    return "done".equals(state);
  }

  /** From the record's JSON and the text of its "value" (null: none). */
  static StoredRecord from(JsonNode o, String valueJson) {
    return new StoredRecord(
        Fields.text(o, "scope"),
        Fields.text(o, "key"),
        Fields.text(o, "state"),
        Fields.longValue(o, "fence"),
        Instant.parse(Fields.text(o, "expires_at")),
        Fields.optional(o, "lease_until").map(t -> Instant.parse(Fields.asText(t, "lease_until"))),
        Fields.optional(o, "result").map(t -> Fields.asText(t, "result")),
        Optional.ofNullable(o.get("value")),
        Optional.ofNullable(o.has("value") ? valueJson : null),
        Fields.optional(o, "response_status").map(s -> Math.toIntExact(Fields.asLong(s, "response_status"))),
        o);
  }
}
