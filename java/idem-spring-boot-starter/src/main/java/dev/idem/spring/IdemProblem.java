package dev.idem.spring;

/**
 * The problems a protected call answers, by the names and titles of the gateway's (docs/http.md,
 * "Every problem"): an HTTP client sees {@code application/problem+json} with {@code type}
 * {@code urn:idem:problem:<name>}, whether the gateway or this starter answered.
 */
public enum IdemProblem {
  KEY_MISSING(400, "key-missing", "Idempotency key missing", false),
  KEY_INVALID(400, "key-invalid", "Idempotency key invalid", false),
  SUBJECT_MISSING(400, "subject-missing", "Subject missing", false),
  TOKEN_MISSING(400, "token-missing", "Idempotency token missing", false),
  TOKEN_INVALID(400, "token-invalid", "Idempotency token invalid", false),
  BODY_TOO_LARGE(413, "body-too-large", "Request body too large", false),
  KEY_REUSED(422, "key-reused", "Idempotency key reused for a different request", false),
  IN_PROGRESS(409, "in-progress", "Request in progress", true),
  OUTCOME_UNCERTAIN(409, "outcome-uncertain", "Outcome of the first request unknown", false),
  RESULT_NOT_STORED(409, "result-not-stored", "Result not stored", false),
  STORE_UNAVAILABLE(503, "store-unavailable", "Store unavailable", true);

  private final int status;
  private final String name;
  private final String title;
  private final boolean retryable;

  IdemProblem(int status, String name, String title, boolean retryable) {
    this.status = status;
    this.name = name;
    this.title = title;
    this.retryable = retryable;
  }

  /**
   * The body's {@code retryable}, as the gateway's: whether sending the same request again (the
   * same key, the same body) can get another answer, after {@code Retry-After} where there is one.
   * It never means "safe to run twice": a repeat with the same key never runs the work twice.
   */
  public boolean retryable() {
    return retryable;
  }

  public int status() {
    return status;
  }

  /** The problem's name: {@code type} is {@code urn:idem:problem:<name>}. */
  public String problemName() {
    return name;
  }

  public String type() {
    return "urn:idem:problem:" + name;
  }

  public String title() {
    return title;
  }

  /** The outcome label of {@code idem_requests_total} for this problem: its name with '_' for '-'. */
  public String outcome() {
    return name.replace('-', '_');
  }
}
