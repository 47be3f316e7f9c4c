package dev.idem.examples.springshop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.springframework.stereotype.Component;

/** A field of a raw JSON body, for the SpEL of an {@code @Idempotent} whose method takes the raw text (to check its signature). */
@Component("payload")
public class Payload {
  private final ObjectMapper json;

  public Payload(ObjectMapper json) {
    this.json = json;
  }

  /** The field's value (a number keeps every digit), or null when the body is not a JSON object or lacks it. */
  public JsonNode field(String raw, String name) {
    if (raw == null) return null;
    try {
      JsonNode n = json.readTree(raw);
      return n != null && n.isObject() ? n.get(name) : null;
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      return null;
    }
  }
}
