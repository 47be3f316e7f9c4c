package dev.idem.spring.web;

import dev.idem.spring.IdemProblem;
import dev.idem.spring.IdempotencyRefusedException;
import dev.idem.spring.support.Fingerprints;
import dev.idem.spring.support.RequestView;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.Principal;
import java.util.Arrays;
import java.util.AbstractMap;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.web.util.WebUtils;

/** The current servlet request ({@link RequestContextHolder}) as a {@link RequestView}. */
public final class ServletRequestView implements RequestView {
  private final HttpServletRequest request;
  private final HttpServletResponse response;
  private final long maxBody;

  ServletRequestView(HttpServletRequest request, HttpServletResponse response, long maxBody) {
    this.request = request;
    this.response = response;
    this.maxBody = maxBody;
  }

  /** The current request's view, or null outside a servlet request. */
  public static Supplier<RequestView> supplier(long maxBody) {
    return () -> {
      RequestAttributes attrs = RequestContextHolder.getRequestAttributes();
      if (!(attrs instanceof ServletRequestAttributes s)) return null;
      return new ServletRequestView(s.getRequest(), s.getResponse(), maxBody);
    };
  }

  @Override
  public String header(String name) {
    return request.getHeader(name);
  }

  @Override
  public Map<String, String> headers() {
    return new AbstractMap<>() {
      @Override
      public String get(Object key) {
        return key instanceof String k ? request.getHeader(k) : null;
      }

      @Override
      public boolean containsKey(Object key) {
        return get(key) != null;
      }

      @Override
      public Set<Entry<String, String>> entrySet() {
        Set<Entry<String, String>> out = new LinkedHashSet<>();
        Enumeration<String> names = request.getHeaderNames();
        if (names == null) return Collections.emptySet();
        while (names.hasMoreElements()) {
          String n = names.nextElement();
          out.add(new SimpleImmutableEntry<>(n, request.getHeader(n)));
        }
        return out;
      }
    };
  }

  @Override
  public String parameter(String name) {
    return request.getParameter(name);
  }

  @Override
  public Principal principal() {
    return request.getUserPrincipal();
  }

  @Override
  public byte[] fingerprintInput() {
    byte[] body = body(), head = head();
    byte[] out = Arrays.copyOf(head, head.length + body.length);
    System.arraycopy(body, 0, out, head.length, body.length);
    return out;
  }

  /** The hash of {@link #fingerprintInput()}, without putting head and body together first. */
  @Override
  public byte[] fingerprint() {
    byte[] body = body();
    MessageDigest d = Fingerprints.sha256();
    d.update(head());
    d.update(body);
    return Fingerprints.hex(d);
  }

  // The raw body as read so far, the rest read now (what the handler left unread belongs to the request too).
  private byte[] body() {
    CachedBodyRequest cached = WebUtils.getNativeRequest(request, CachedBodyRequest.class);
    if (cached == null) return new byte[0];  // no IdemBodyFilter in the chain (a MockMvc without it): the head alone
    if (isFormPost()) {
      cached.getParameterMap();  // parsed through the wrapper, which keeps them as the body
    } else {
      drain(cached);
    }
    if (cached.overflowed())
      throw new IdempotencyRefusedException(IdemProblem.BODY_TOO_LARGE, "the request body is larger than " + maxBody
          + " bytes (idem.web.max-body)");
    return cached.getContentAsByteArray();
  }

  // Method, path with query, Content-Type, each ended by a newline.
  private byte[] head() {
    String query = request.getQueryString();
    String contentType = request.getContentType();
    StringBuilder head = new StringBuilder(64).append(request.getMethod()).append('\n').append(request.getRequestURI());
    if (query != null) head.append('?').append(query);
    head.append('\n');
    if (contentType != null) head.append(contentType);
    return head.append('\n').toString().getBytes(StandardCharsets.UTF_8);
  }

  private boolean isFormPost() {
    String ct = request.getContentType();
    return ct != null && ct.toLowerCase(java.util.Locale.ROOT).startsWith("application/x-www-form-urlencoded")
        && "POST".equalsIgnoreCase(request.getMethod());
  }

  private static void drain(CachedBodyRequest r) {
    try {
      ServletInputStream in = r.getInputStream();
      if (in.isFinished()) return;  // read to its end already (the common case: nothing to copy)
      byte[] buf = new byte[8192];
      while (in.read(buf) >= 0) {
        // read through the wrapper, which keeps it up to its limit
      }
    } catch (IllegalStateException e) {
      // The handler read the body as a Reader: what it read is kept already.
    } catch (IOException e) {
      throw new UncheckedIOException("idem: reading the request body for its fingerprint", e);
    }
  }

  @Override
  public void responseHeader(String name, String value) {
    if (response != null && !response.isCommitted()) response.setHeader(name, value);
  }

  @Override
  public Object nativeRequest() {
    return request;
  }
}
