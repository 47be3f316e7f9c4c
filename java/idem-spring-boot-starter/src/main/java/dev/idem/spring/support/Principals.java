package dev.idem.spring.support;

import java.security.Principal;
import org.springframework.util.ClassUtils;

/**
 * The authenticated principal of the current call: Spring Security's, when it is on the class path
 * and the context holds an authenticated, non-anonymous user; else the servlet request's.
 */
public final class Principals {
  private static final boolean SECURITY = ClassUtils.isPresent(
      "org.springframework.security.core.context.SecurityContextHolder", Principals.class.getClassLoader());

  private Principals() {}

  public static Principal current(RequestView request) {
    if (SECURITY) {
      Principal p = Security.current();
      if (p != null) return p;
    }
    return request == null ? null : request.principal();
  }

  /** The principal's name, or null. */
  public static String name(Principal p) {
    if (p == null) return null;
    String n = p.getName();
    return n == null || n.isEmpty() ? null : n;
  }

  /** Keeps Spring Security's classes out of reach when it is absent. */
  private static final class Security {
    static Principal current() {
      var auth = org.springframework.security.core.context.SecurityContextHolder.getContext().getAuthentication();
      if (auth == null || !auth.isAuthenticated()
          || auth instanceof org.springframework.security.authentication.AnonymousAuthenticationToken)
        return null;
      return auth;
    }
  }
}
