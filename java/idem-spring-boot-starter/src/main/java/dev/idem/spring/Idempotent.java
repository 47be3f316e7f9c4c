package dev.idem.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the method at most once per idempotency key; every repeat gets the first result
 * (docs/spring.md). On a Spring MVC handler, on a service method, on any Spring bean's public
 * method called through its proxy (not from the same object: {@code this.m()} is not intercepted).
 *
 * <pre>{@code
 * @PostMapping("/orders")
 * @ResponseStatus(HttpStatus.CREATED)
 * @Idempotent                                   // key: the Idempotency-Key header; scope: the principal
 * public OrderView create(@RequestBody @Valid CreateOrder req) { ... }
 *
 * @Idempotent(key = "#req.orderNo", releaseWhen = "#result.code != 0")
 * public CommonResult<Long> pay(PayRequest req) { ... }
 * }</pre>
 *
 * <p>What a call does, in the order of the articles' checklist (validate → token → lock → state →
 * write): the scope, key and fingerprint are rendered and checked (a missing key is {@code 400
 * key-missing}; nothing is claimed); the record {@code <keySpace>:<key>} is claimed in the store in
 * one atomic step that also reads its state (a repeat of a completed call is replayed, a repeat
 * of a running one waits for it, another request under the same key is {@code 422 key-reused}); a
 * one-time token is consumed; the method runs while the claim's lease is renewed; its result is
 * committed, or the claim is released (an exception, or a result that {@link #releaseWhen} says
 * failed), re-arming the token.
 *
 * <p>Durations are Spring Boot's ({@code 30s}, {@code 10m}, {@code 24h}, ISO-8601) and may be
 * {@code ${placeholders}}; empty means the {@code idem.defaults.*} property.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

  /**
   * The key: a SpEL expression over the method's arguments ({@code #req.orderNo}, {@code #p0}),
   * {@code #headers['X-Request-Id']}, {@code #principal}, {@code #request} and beans ({@code @b}).
   * Empty: the {@code Idempotency-Key} header ({@code idem.web.key-header}) of the current HTTP
   * request, which must then be 1 to 255 visible ASCII characters. A rendered key's characters
   * outside visible ASCII are percent-encoded; numbers are written with every digit.
   */
  String key() default "";

  /**
   * A one-time token is the key: the {@code Idempotency-Token} header or the {@code _idem_token}
   * form field, issued by {@code POST /_idem/tokens} (or {@code IdemTokens.issue()} in a page) to
   * the same scope. A double submit with one token is answered the first result; a token is good
   * for one success and is re-armed when the method fails.
   */
  boolean token() default false;

  /**
   * Whose records these are: a SpEL expression, as {@link #key}. Empty: {@code idem.web.subject}
   * (by default the authenticated principal's name; {@code ""}, one scope for all, without one).
   */
  String scope() default "";

  /**
   * The method's records are stored as {@code <keySpace>:<key>}, so the same key on two methods
   * never meets. Empty: the class's simple name and the method's ({@code OrderController.create}).
   * 1 to 64 of {@code A-Z a-z 0-9 . _ -}. Two methods that must share records name the same.
   */
  String keySpace() default "";

  /**
   * What makes a repeat "the same request": SpEL expressions whose values (as JSON, by the
   * application's ObjectMapper, properties sorted) are hashed. Empty: {@link #fingerprintFrom}.
   */
  String[] fingerprint() default {};

  /** Where the fingerprint comes from when {@link #fingerprint} is empty. */
  FingerprintFrom fingerprintFrom() default FingerprintFrom.AUTO;

  /** How long a claim is held unless renewed; renewed every lease/3 while the method runs. */
  String lease() default "";

  /** How long the result is replayed. */
  String retention() default "";

  /** How long a repeat waits for a first call still running, before {@code 409 in-progress}. */
  String waitFor() default "";

  /** What an earlier attempt with an unknown outcome (its process died mid-call) means. */
  UncertainPolicy onUncertain() default UncertainPolicy.DEFAULT;

  /** What a call does when the store cannot be reached. */
  StoreErrorPolicy onStoreError() default StoreErrorPolicy.DEFAULT;

  /**
   * A SpEL expression over the method's result ({@code #result}) and arguments: true means the
   * call failed, and the key is released instead of the result stored, so a retry runs again
   * ({@code "#result.code != 0"} for {@code CommonResult}-style answers). Empty: {@code
   * idem.defaults.release-when}. A {@code ResponseEntity} with a 5xx, 408, 409, 425 or 429 status
   * always releases, as the gateway does.
   */
  String releaseWhen() default "";

  /**
   * Exceptions after which the method's outcome is unknown (a timeout calling a payment
   * platform): the record is held as uncertain ({@code HOLD}) or left to expire and run again
   * ({@code RETRY}). Every other exception releases the key.
   */
  Class<? extends Throwable>[] uncertainOn() default {};

  /**
   * The claim is written in the database transaction of the method (the JDBC store on the
   * application's DataSource): the caller's when one is active, else one opened here at READ
   * COMMITTED. The record commits or rolls back with the method's own writes; a released outcome
   * rolls the transaction back.
   */
  boolean transactional() default false;

  /** Where the fingerprint comes from. */
  enum FingerprintFrom {
    /** A Spring MVC handler: the request's method, path, query, Content-Type and raw body. Else: ARGUMENTS. */
    AUTO,
    /** The HTTP request as AUTO describes it. */
    BODY,
    /** Every argument, as JSON by the application's ObjectMapper (servlet and security objects left out). */
    ARGUMENTS,
    /** None: any request under a key is a repeat. */
    NONE
  }
}
