package dev.idem.spring.support;

import dev.idem.spring.IdemProblem;
import dev.idem.spring.IdempotencyRefusedException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Objects;

/**
 * Whose records a call's are, by {@code idem.web.subject} (the gateway's {@code subject}):
 * {@code principal} (the authenticated user's name; "" without one), {@code header:NAME},
 * {@code header-hash:NAME} (the header's SHA-256 in hex, so credentials never reach the store)
 * or {@code none} ("").
 */
public record Subject(Kind kind, String header) {
  public enum Kind {
    PRINCIPAL,
    HEADER,
    HEADER_HASH,
    NONE
  }

  public Subject {
    Objects.requireNonNull(kind, "kind");
    header = header == null ? "" : header;
  }

  /** @throws IllegalArgumentException a rule of none of the four forms */
  public static Subject parse(String rule) {
    String r = rule == null ? "" : rule.trim();
    String lower = r.toLowerCase(Locale.ROOT);
    if (lower.equals("principal")) return new Subject(Kind.PRINCIPAL, "");
    if (lower.equals("none")) return new Subject(Kind.NONE, "");
    if (lower.startsWith("header:") && r.length() > 7) return new Subject(Kind.HEADER, r.substring(7).trim());
    if (lower.startsWith("header-hash:") && r.length() > 12) return new Subject(Kind.HEADER_HASH, r.substring(12).trim());
    throw new IllegalArgumentException("idem.web.subject must be principal, none, header:NAME or header-hash:NAME, got \""
        + rule + "\"");
  }

  /**
   * The scope of the current call.
   *
   * @param request the current HTTP request, or null outside one
   * @param principalName the authenticated principal's name, or null
   * @throws IdempotencyRefusedException subject-missing: a header rule and no such header
   */
  public String scope(RequestView request, String principalName) {
    switch (kind) {
      case NONE:
        return "";
      case PRINCIPAL:
        return principalName == null ? "" : principalName;
      default:
        String v = request == null ? null : request.header(header);
        if (v == null || v.isEmpty())
          throw new IdempotencyRefusedException(IdemProblem.SUBJECT_MISSING, "the " + header + " header is missing");
        return kind == Kind.HEADER ? v : sha256Hex(v);
    }
  }

  static String sha256Hex(String s) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
