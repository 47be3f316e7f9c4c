package dev.idem.examples.springshop;

import java.net.URI;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/** The shop's own problems, {@code urn:shop:problem:<name>} (examples/shop/README.md). */
public final class ShopProblem {
  private ShopProblem() {}

  public static ResponseEntity<Object> of(int status, String name, String title, String detail) {
    ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(status), detail);
    p.setType(URI.create("urn:shop:problem:" + name));
    p.setTitle(title);
    return ResponseEntity.status(status).contentType(org.springframework.http.MediaType.APPLICATION_PROBLEM_JSON).body(p);
  }

  /** With Retry-After: 1. */
  public static ResponseEntity<Object> retryLater(int status, String name, String title, String detail) {
    ResponseEntity<Object> p = of(status, name, title, detail);
    return ResponseEntity.status(status).contentType(org.springframework.http.MediaType.APPLICATION_PROBLEM_JSON)
        .header("Retry-After", "1").body(p.getBody());
  }

  public static ResponseEntity<Object> badRequest(String detail) {
    return of(400, "bad-request", "Bad request", detail);
  }
}
