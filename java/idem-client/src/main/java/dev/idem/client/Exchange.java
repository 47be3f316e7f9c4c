package dev.idem.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * One HTTP exchange with the admin listener, and what its answer means: the body of a
 * control API answer, or the {@link IdemException} that tells the caller what to do
 * (docs/java.md, "Errors"). The one place where statuses are mapped.
 */
final class Exchange {
  private final HttpClient http;
  private final URI base;
  private final Duration requestTimeout;
  private final int maxResponseBytes;

  Exchange(HttpClient http, URI base, Duration requestTimeout, int maxResponseBytes) {
    this.http = http;
    this.base = base;
    this.requestTimeout = requestTimeout;
    this.maxResponseBytes = maxResponseBytes;
  }

  record Answer(int status, String body, Optional<String> retryAfter) {}

  // One exchange, bounded as a whole by requestTimeout (HttpClient's own timeout ends when the
  // head arrives; the body has what is left of it, or a body that stalls would block forever)
  // and in size by maxResponseBytes. HttpClient.send, not sendAsync: sendAsync completes its
  // future on the client's executor, one more thread hand-off per call.
  Answer send(HttpRequest r, String what) {
    long deadline = System.nanoTime() + requestTimeout.toNanos();
    HttpResponse<byte[]> res;
    try {
      res = http.send(r, info -> new LimitedBody(maxResponseBytes, info.statusCode(), deadline));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new OutcomeUnknownException(what + ": interrupted (it may have been applied)", 0, e);
    } catch (IOException e) {
      TooLong tooLong = causeOf(e, TooLong.class);
      if (tooLong != null)
        throw new ProtocolException(what + ": answer longer than " + maxResponseBytes + " bytes", tooLong.status, null);
      if (e instanceof HttpConnectTimeoutException || e instanceof ConnectException)
        // No connection: the request was never sent.
        throw new NotAppliedException(what + ": cannot connect to " + base + ": " + e, 0, e);
      if (e instanceof HttpTimeoutException || causeOf(e, TimeoutException.class) != null)
        throw new OutcomeUnknownException(what + ": no answer within " + requestTimeout + " (it may have been applied)", 0, e);
      throw new OutcomeUnknownException(what + ": connection failed: " + e + " (it may have been applied)", 0, e);
    }
    return new Answer(res.statusCode(), new String(res.body(), StandardCharsets.UTF_8), res.headers().firstValue("Retry-After"));
  }

  private static <T extends Throwable> T causeOf(Throwable e, Class<T> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) return type.cast(t);
      if (t.getCause() == t) break;
    }
    return null;
  }

  private static final class TooLong extends IOException {
    private static final long serialVersionUID = 1L;
    final int status;

    TooLong(int status) {
      super("answer too long");
      this.status = status;
    }
  }

  // Collects the body up to a limit and a deadline; past either, cancels the exchange.
  private static final class LimitedBody implements HttpResponse.BodySubscriber<byte[]> {
    private final int limit;
    private final int status;
    private final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    private final CompletableFuture<byte[]> done = new CompletableFuture<>();
    private volatile Flow.Subscription subscription;

    LimitedBody(int limit, int status, long deadline) {
      this.limit = limit;
      this.status = status;
      done.orTimeout(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS).whenComplete((body, failure) -> {
        Flow.Subscription s = subscription;
        if (failure != null && s != null) s.cancel();
      });
    }

    @Override
    public CompletableFuture<byte[]> getBody() {
      return done;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      if (done.isDone()) s.cancel();
      else s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> buffers) {
      if (done.isDone()) return;
      for (ByteBuffer b : buffers) {
        if (out.size() + b.remaining() > limit) {
          subscription.cancel();
          done.completeExceptionally(new TooLong(status));
          return;
        }
        byte[] chunk = new byte[b.remaining()];
        b.get(chunk);
        out.write(chunk, 0, chunk.length);
      }
    }

    @Override
    public void onError(Throwable t) {
      done.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
      done.complete(out.toByteArray());
    }
  }

  // The answer's body read by `reader`; an answer that is not the control API's JSON is a
  // ProtocolException naming the call and quoting the answer.
  static <T> T parse(String what, Answer a, Function<String, T> reader) {
    try {
      return reader.apply(a.body);
    } catch (IllegalArgumentException | Fields.Malformed | java.time.format.DateTimeParseException
             | ArithmeticException e) {
      throw new ProtocolException(what + ": unexpected answer (" + e.getMessage() + "): " + excerpt(a.body), a.status, e);
    }
  }

  // What a non-answer means for the caller (the classes of IdemException).
  IdemException failure(String what, Answer a) {
    String detail = problemDetail(a.body);
    String msg = what + ": " + a.status + (detail.isEmpty() ? "" : ": " + detail);
    String type = problemType(a.body);
    return switch (a.status) {
      case 400 -> new RequestInvalidException(msg);
      case 401 -> new UnauthorizedException(msg);
      case 503 -> type.endsWith(":store-unavailable")
          ? new StoreUnavailableException(msg, retryAfter(a.retryAfter))
          : new OutcomeUnknownException(msg + " (not the gateway's answer: it may have been applied)", 503, null);
      case 504 -> new OutcomeUnknownException(msg + " (it may have been applied: read the record before retrying)", 504, null);
      default -> a.status >= 500
          ? new OutcomeUnknownException(msg + " (it may have been applied)", a.status, null)
          : new ProtocolException(msg, a.status, null);
    };
  }

  // Retry-After in whole seconds (the gateway's form); at least 1 s when absent or unreadable.
  static Duration retryAfter(Optional<String> header) {
    try {
      long s = Long.parseLong(header.orElse("1").trim());
      return Duration.ofSeconds(Math.max(1, Math.min(s, 3600)));
    } catch (NumberFormatException e) {
      return Duration.ofSeconds(1);
    }
  }

  private static String problemDetail(String body) {
    return problemField(body, "detail");
  }

  private static String problemType(String body) {
    return problemField(body, "type");
  }

  private static String problemField(String body, String field) {
    try {
      JsonNode v = ExactJson.parse(body).get(field);
      return v != null && v.isTextual() ? v.textValue() : "";
    } catch (IllegalArgumentException e) {
      return "";
    }
  }

  private static String excerpt(String body) {
    return body.length() <= 200 ? body : body.substring(0, 200) + "...";
  }
}
