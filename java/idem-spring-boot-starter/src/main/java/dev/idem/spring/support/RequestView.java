package dev.idem.spring.support;

import java.security.Principal;
import java.util.Map;

/**
 * The current HTTP request as a protected call needs it, without the servlet API in the core of
 * the starter (the web part implements it; outside a request there is none).
 */
public interface RequestView {
  /** The first value of a header, or null. */
  String header(String name);

  /** Every header by name, case-insensitive, first values: SpEL's {@code #headers}. */
  Map<String, String> headers();

  /** A form or query parameter, or null. */
  String parameter(String name);

  /** The authenticated principal, or null. */
  Principal principal();

  /**
   * The request as the gateway fingerprints it: method, path with query, Content-Type and the raw
   * body, as read so far by the handler's arguments.
   *
   * @throws dev.idem.spring.IdempotencyRefusedException body-too-large past {@code idem.web.max-body}
   */
  byte[] fingerprintInput();

  /** The fingerprint of {@link #fingerprintInput()} ({@link Fingerprints#ofBytes}); a view may hash it without the copy. */
  default byte[] fingerprint() {
    return Fingerprints.ofBytes(fingerprintInput());
  }

  /** Sets a header of the response (Idempotent-Replayed, Idempotency-Status). */
  void responseHeader(String name, String value);

  /** The servlet request, for SpEL's {@code #request}. */
  Object nativeRequest();
}
