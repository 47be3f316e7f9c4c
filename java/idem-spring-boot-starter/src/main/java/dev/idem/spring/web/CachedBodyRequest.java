package dev.idem.spring.web;

import jakarta.servlet.http.HttpServletRequest;
import org.springframework.web.util.ContentCachingRequestWrapper;

/** The request body as read, kept (up to a limit) for the fingerprint of a protected call. */
final class CachedBodyRequest extends ContentCachingRequestWrapper {
  private volatile boolean overflowed;

  CachedBodyRequest(HttpServletRequest request, int limit) {
    super(request, limit);
  }

  @Override
  protected void handleContentOverflow(int contentCacheLimit) {
    overflowed = true;
  }

  boolean overflowed() {
    return overflowed;
  }
}
