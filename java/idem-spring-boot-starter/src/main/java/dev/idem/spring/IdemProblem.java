package dev.idem.spring;

/**
 * The problems a protected call answers, by the names and titles of the gateway's (docs/http.md,
 * "Every problem"): an HTTP client sees {@code application/problem+json} with {@code type}
 * {@code urn:idem:problem:<name>}, whether the gateway or this starter answered.
 */
public enum IdemProblem {
  KEY_MISSING(400, "key-missing", "Idempotency key missing"),
  KEY_INVALID(400, "key-invalid", "Idempotency key invalid"),
  SUBJECT_MISSING(400, "subject-missing", "Subject missing"),
  TOKEN_MISSING(400, "token-missing", "Idempotency token missing"),
  TOKEN_INVALID(400, "token-invalid", "Idempotency token invalid"),
  BODY_TOO_LARGE(413, "body-too-large", "Request body too large"),
  KEY_REUSED(422, "key-reused", "Idempotency key reused for a different request"),
  IN_PROGRESS(409, "in-progress", "Request in progress"),
  OUTCOME_UNCERTAIN(409, "outcome-uncertain", "Outcome of the first request unknown"),
  RESULT_NOT_STORED(409, "result-not-stored", "Result not stored"),
  STORE_UNAVAILABLE(503, "store-unavailable", "Store unavailable");

  private final int status;
  private final String name;
  private final String title;

  IdemProblem(int status, String name, String title) {
    this.status = status;
    this.name = name;
    this.title = title;
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
