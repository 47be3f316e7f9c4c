package dev.idem.spring.web;

import dev.idem.spring.IdemProblem;
import dev.idem.spring.IdempotencyRefusedException;
import dev.idem.spring.support.RequestView;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
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
    CachedBodyRequest cached = WebUtils.getNativeRequest(request, CachedBodyRequest.class);
    byte[] body;
    if (cached == null) {
      body = new byte[0];  // no IdemBodyFilter in the chain (a MockMvc without it): the head alone
    } else {
      if (isFormPost()) {
        cached.getParameterMap();  // parsed through the wrapper, which keeps them as the body
      } else {
        drain(cached);  // what the handler left unread belongs to the request too
      }
      if (cached.overflowed())
        throw new IdempotencyRefusedException(IdemProblem.BODY_TOO_LARGE, "the request body is larger than " + maxBody
            + " bytes (idem.web.max-body)");
      body = cached.getContentAsByteArray();
    }
    String query = request.getQueryString();
    String contentType = request.getContentType();
    String head = request.getMethod() + "\n" + request.getRequestURI() + (query == null ? "" : "?" + query) + "\n"
        + (contentType == null ? "" : contentType) + "\n";
    ByteArrayOutputStream out = new ByteArrayOutputStream(head.length() + body.length);
    out.writeBytes(head.getBytes(StandardCharsets.UTF_8));
    out.writeBytes(body);
    return out.toByteArray();
  }

  private boolean isFormPost() {
    String ct = request.getContentType();
    return ct != null && ct.toLowerCase(java.util.Locale.ROOT).startsWith("application/x-www-form-urlencoded")
        && "POST".equalsIgnoreCase(request.getMethod());
  }

  private static void drain(CachedBodyRequest r) {
    try {
      ServletInputStream in = r.getInputStream();
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
