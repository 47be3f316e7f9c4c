package dev.idem.spring;

import dev.idem.core.ClaimRunner;
import dev.idem.core.IdemStore;
import dev.idem.spring.support.IdemMetrics;
import dev.idem.spring.support.Principals;
import dev.idem.spring.support.RequestView;
import dev.idem.spring.support.Subject;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * One-time tokens for forms ({@code @Idempotent(token = true)}; docs/spring.md, "Forms and
 * tokens"), bound to the subject that asked ({@code idem.web.subject}): only that user can spend
 * one. A bean named {@code idemTokens}, so a Thymeleaf page puts one in its form:
 *
 * <pre>{@code
 * <input type="hidden" name="_idem_token" th:value="${@idemTokens.issue()}">
 * }</pre>
 *
 * <p>Thread safety: safe for concurrent use.
 */
public final class IdemTokens {
  private final IdemStore store;
  private final ClaimRunner runner;
  private final Subject subject;
  private final Supplier<RequestView> requests;
  private final Duration ttl;
  private final IdemMetrics metrics;

  /** A token and how long it is valid. */
  public record Issued(String token, Duration expiresIn) {}

  public IdemTokens(ClaimRunner runner, Subject subject, Supplier<RequestView> requests, Duration ttl,
                    IdemMetrics metrics) {
    this.runner = Objects.requireNonNull(runner, "runner");
    this.store = runner.store();
    this.subject = subject;
    this.requests = requests;
    this.ttl = ttl;
    this.metrics = metrics;
  }

  /** A token for the current request's subject (a page helper: the token's text alone). */
  public String issue() {
    return issueToken().token();
  }

  /**
   * A token for the current request's subject.
   *
   * @throws IdempotencyRefusedException subject-missing (a header subject and no header)
   * @throws dev.idem.core.IdemException the store could not issue one
   */
  public Issued issueToken() {
    RequestView request = requests.get();
    return issueFor(subject.scope(request, Principals.name(Principals.current(request))));
  }

  /** A token bound to {@code scope}: for calls whose {@code @Idempotent(scope = ...)} names their own. */
  public Issued issueFor(String scope) {
    String token = store.issueToken(scope, ttl);
    runner.storeAnswered();
    metrics.tokenIssued();
    return new Issued(token, ttl);
  }

  public Duration ttl() {
    return ttl;
  }
}
