package dev.idem.client;

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
 * @param value the committed JSON when result is "json"
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
    Optional<JsonValue> value,
    Optional<Integer> responseStatus,
    JsonValue.Obj json) {

  public boolean pending() {
    return "pending".equals(state);
  }

  public boolean done() {
    return "done".equals(state);
  }

  static StoredRecord from(JsonValue v) {
    JsonValue.Obj o = v.asObject();
    return new StoredRecord(
        o.require("scope").asString(),
        o.require("key").asString(),
        o.require("state").asString(),
        o.require("fence").asLong(),
        Instant.parse(o.require("expires_at").asString()),
        o.get("lease_until").map(t -> Instant.parse(t.asString())),
        o.get("result").map(JsonValue::asString),
        o.get("value"),
        o.get("response_status").map(s -> Math.toIntExact(s.asLong())),
        o);
  }
}
