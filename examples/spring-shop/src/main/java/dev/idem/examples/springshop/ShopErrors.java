package dev.idem.examples.springshop;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.jdbc.CannotGetJdbcConnectionException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** The shop's answers to what failed: the database away is 503 unavailable (Retry-After), a bad body 400, the rest 500. */
@RestControllerAdvice
public class ShopErrors {
  private static final Log LOG = LogFactory.getLog(ShopErrors.class);

  @ExceptionHandler(HttpMessageNotReadableException.class)
  ResponseEntity<Object> unreadable(HttpMessageNotReadableException e) {
    return ShopProblem.badRequest("the body is not a JSON object");
  }

  @ExceptionHandler(DataAccessException.class)
  ResponseEntity<Object> database(DataAccessException e) {
    LOG.warn("database: " + e.getMessage());
    if (e instanceof TransientDataAccessException || e instanceof CannotGetJdbcConnectionException
        || e instanceof org.springframework.dao.DataAccessResourceFailureException)
      return ShopProblem.retryLater(503, "unavailable", "Database unavailable", "the database did not answer; try again");
    return ShopProblem.of(500, "internal", "Internal error", "the request failed; see the shop's log");
  }

  /** GET /healthz: 200 ok. */
  @org.springframework.web.bind.annotation.RestController
  static class Health {
    @GetMapping(path = "/healthz", produces = "text/plain")
    String ok() {
      return "ok";
    }
  }
}
