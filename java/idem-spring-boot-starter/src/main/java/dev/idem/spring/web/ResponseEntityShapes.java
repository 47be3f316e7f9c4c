package dev.idem.spring.web;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import dev.idem.core.StoredResult;
import dev.idem.spring.support.ResultShape;
import dev.idem.spring.support.ResultShapes;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.springframework.core.ResolvableType;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;

/**
 * Results of Spring MVC handlers: a {@code ResponseEntity} is stored as the gateway stores an HTTP
 * response (status, end-to-end headers, body as JSON by the application's ObjectMapper) and
 * replayed with its status and headers; other results as JSON of their declared type.
 */
public final class ResponseEntityShapes implements ResultShapes {
  /** Never stored: hop-by-hop headers, cookies (a session is the client's own), what the server sets itself. */
  private static final Set<String> NOT_STORED = Set.of("set-cookie", "set-cookie2", "connection", "keep-alive",
      "transfer-encoding", "te", "trailer", "upgrade", "proxy-authenticate", "proxy-authorization", "content-length",
      "date", "idempotent-replayed", "idempotency-status");

  private final ObjectMapper mapper;

  public ResponseEntityShapes(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  @Override
  public ResultShape forMethod(Method method, Class<?> targetClass) {
    if (!ResponseEntity.class.isAssignableFrom(method.getReturnType()))
      return ResultShape.json(mapper, ResultShapes.returnType(mapper, method, targetClass));
    ResolvableType body = ResolvableType.forMethodReturnType(method, targetClass).as(ResponseEntity.class).getGeneric(0);
    JavaType type = body.resolve() == null ? mapper.constructType(Object.class) : mapper.constructType(body.getType());
    return new EntityShape(mapper, type, mapper.writerFor(type));
  }

  /** Whether an HTTP status releases the key, as the gateway's: 5xx, 408, 409, 425, 429. */
  public static boolean releasingStatus(int status) {
    return status >= 500 || status == 408 || status == 409 || status == 425 || status == 429;
  }

  // The writer is made once (the mapper's configuration is settled by the first call).
  private record EntityShape(ObjectMapper mapper, JavaType type, ObjectWriter writer) implements ResultShape {
    @Override
    public byte[] encode(Object value) {
      if (value == null) return StoredResult.encode(new StoredResult.Json("null"));
      ResponseEntity<?> e = (ResponseEntity<?>) value;
      List<Map.Entry<String, String>> headers = new ArrayList<>();
      e.getHeaders().forEach((name, values) -> {
        if (NOT_STORED.contains(name.toLowerCase(Locale.ROOT))) return;
        for (String v : values) headers.add(Map.entry(name, v));
      });
      byte[] body;
      try {
        body = writer.writeValueAsBytes(e.getBody());
      } catch (IOException x) {
        throw new IllegalStateException("idem: cannot write the response body as JSON: " + x.getMessage(), x);
      }
      return StoredResult.encode(new StoredResult.Response(e.getStatusCode().value(), headers, body));
    }

    @Override
    public Object decode(StoredResult stored) {
      if (stored instanceof StoredResult.Json j) {
        if (j.text().equals("null")) return null;
        return ResponseEntity.ok(ResultShape.read(mapper, type, j.text()));
      }
      StoredResult.Response r = (StoredResult.Response) stored;
      HttpHeaders headers = new HttpHeaders();
      for (Map.Entry<String, String> h : r.headers()) headers.add(h.getKey(), h.getValue());
      Object body = ResultShape.read(mapper, type, new String(r.body(), StandardCharsets.UTF_8));
      return ResponseEntity.status(r.status()).headers(headers).body(body);
    }

    @Override
    public boolean releases(Object value) {
      return value instanceof ResponseEntity<?> e && releasingStatus(e.getStatusCode().value());
    }
  }
}
