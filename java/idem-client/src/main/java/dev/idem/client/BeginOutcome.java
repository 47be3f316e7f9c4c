package dev.idem.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Objects;

/** The answer of {@link Idem#begin}: one of four outcomes (docs/admin.md, "Control API"). */
public sealed interface BeginOutcome
    permits BeginOutcome.Acquired, BeginOutcome.Replay, BeginOutcome.InProgress, BeginOutcome.Mismatch {

  /**
   * The caller holds the key now: do the work, then commit or release with this fence.
   * {@code recovered}: an earlier holder's lease expired mid-run, so its outcome is unknown.
   */
  record Acquired(long fence, boolean recovered, long previousFence) implements BeginOutcome {
    /** previousFence: when recovered, the fence of the claim taken over (0 otherwise). */
    public Acquired(long fence, boolean recovered) {
      this(fence, recovered, 0);
    }
  }

  /**
   * The key was completed: {@code result} is what was committed, read with exact numbers ({@link
   * ExactJson}), and {@code resultJson} its text byte for byte as committed (for a mapper of your
   * own: {@code mapper.readValue(r.resultJson(), Order.class)}). A record the gateway completed
   * without a JSON result (uncertain, not stored) gives JSON null; a gateway response gives
   * {@code {"response_status":..., "body":...}}.
   */
  record Replay(JsonNode result, String resultJson) implements BeginOutcome {
    public Replay {
      Objects.requireNonNull(result, "result");
      Objects.requireNonNull(resultJson, "resultJson");
    }

    /** From the result's text. */
    static Replay of(String resultJson) {
      return new Replay(ExactJson.parse(resultJson), resultJson);
    }
  }

  /** Another caller holds the key; its lease ends within {@code retryAfter}. */
  record InProgress(Duration retryAfter) implements BeginOutcome {}

  /** The key was used with a different fingerprint; nothing changed. */
  record Mismatch() implements BeginOutcome {}
}
