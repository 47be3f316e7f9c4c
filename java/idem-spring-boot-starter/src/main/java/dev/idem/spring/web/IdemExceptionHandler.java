package dev.idem.spring.web;

import dev.idem.core.CallRefusedException;
import dev.idem.core.IdemException;
import dev.idem.spring.IdemProblems;
import dev.idem.spring.IdempotencyRefusedException;
import java.net.URI;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.CacheControl;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Answers idem's refusals as {@code application/problem+json} ({@link ProblemDetail}), with the
 * gateway's types ({@code urn:idem:problem:key-reused}, ...), {@code Retry-After} where the client
 * should retry, and {@code Cache-Control: no-store}. First of the application's advice, and only
 * for idem's exceptions.
 */
@RestControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE)
public class IdemExceptionHandler {

  @ExceptionHandler({IdempotencyRefusedException.class, CallRefusedException.class, IdemException.class})
  public ResponseEntity<ProblemDetail> refused(RuntimeException e) {
    IdemProblems.Answer a = IdemProblems.of(e).orElseThrow(() -> e);
    return answer(a);
  }

  /** The response for an answer of {@link IdemProblems}. */
  public static ResponseEntity<ProblemDetail> answer(IdemProblems.Answer a) {
    ProblemDetail p = ProblemDetail.forStatusAndDetail(org.springframework.http.HttpStatusCode.valueOf(a.problem().status()),
        a.detail());
    p.setType(URI.create(a.problem().type()));
    p.setTitle(a.problem().title());
    p.setProperty("retryable", a.problem().retryable());
    ResponseEntity.BodyBuilder b = ResponseEntity.status(a.problem().status())
        .contentType(MediaType.APPLICATION_PROBLEM_JSON).cacheControl(CacheControl.noStore());
    a.retryAfter().ifPresent(d -> b.header(HttpHeaders.RETRY_AFTER, Long.toString(IdemProblems.retryAfterSeconds(d))));
    return b.body(p);
  }
}
