package dev.idem.spring.web;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.util.WebUtils;

/**
 * Keeps what a handler reads of a request body (up to {@code idem.web.max-body}), so that a
 * protected handler's fingerprint is the raw body the client sent, whatever the handler's
 * arguments made of it. Bytes are copied only as they are read.
 */
public final class IdemBodyFilter extends OncePerRequestFilter {
  private final int limit;

  public IdemBodyFilter(long maxBody) {
    this.limit = (int) Math.min(Integer.MAX_VALUE - 8, Math.max(0, maxBody));
  }

  @Override
  protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    if (WebUtils.getNativeRequest(request, CachedBodyRequest.class) != null) {
      chain.doFilter(request, response);
      return;
    }
    chain.doFilter(new CachedBodyRequest(request, limit), response);
  }
}
