package dev.idem.client;

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
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A client of the control API and the records API of an {@code idem serve} admin listener
 * (docs/admin.md, docs/java.md): the record operations (begin, commit, release, extend),
 * one-time tokens, locks, and records.
 *
 * <pre>{@code
 * Idem idem = Idem.builder().baseUri(URI.create("http://127.0.0.1:9901"))
 *     .token(System.getenv("IDEM_ADMIN_TOKEN")).build();
 * switch (idem.begin("user-7", key, fingerprint)) {
 *   case BeginOutcome.Acquired a -> ...   // Java 21; on 17 use instanceof
 * }
 * }</pre>
 *
 * <p>Every call either returns the operation's outcome, or throws an {@link IdemException}
 * whose class says what to do: {@link NotAppliedException} / {@link StoreUnavailableException}
 * (nothing was applied: retry as is), {@link OutcomeUnknownException} (it may have been
 * applied: read the record first), {@link UnauthorizedException}, {@link
 * RequestInvalidException}, {@link ProtocolException}. Arguments that can never be valid
 * (null names, a zero duration) throw {@link IllegalArgumentException} or {@link
 * NullPointerException} before anything is sent.
 *
 * <p>Durations are sent in whole milliseconds, rounded up; {@code null} leaves the gateway's
 * default ({@code defaults.lease}, {@code defaults.retention}, {@code tokens.ttl}).
 *
 * <p>Thread safety: an Idem is immutable and safe for concurrent use.
 */
public final class Idem {
  private static final String JSON = "application/json";

  private final URI base;
  private final String authorization;
  private final Duration requestTimeout;
  private final HttpClient http;
  private final int maxResponseBytes;

  private Idem(Builder b) {
    String s = Objects.requireNonNull(b.baseUri, "baseUri").toString();
    this.base = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
    if (!"http".equals(base.getScheme()) && !"https".equals(base.getScheme()))
      throw new IllegalArgumentException("baseUri: http or https, got " + b.baseUri);
    if (b.token != null && (b.token.isEmpty() || b.token.chars().anyMatch(c -> c < 0x21 || c > 0x7e)))
      throw new IllegalArgumentException("token: printable ASCII without spaces");
    this.authorization = b.token == null ? null : "Bearer " + b.token;
    this.requestTimeout = positive(b.requestTimeout, "requestTimeout");
    this.maxResponseBytes = b.maxResponseBytes;
    this.http = b.httpClient != null
        ? b.httpClient
        : HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(requestTimeout).build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** How an Idem is made; only {@link #baseUri} is required. */
  public static final class Builder {
    private URI baseUri;
    private String token;
    private Duration requestTimeout = Duration.ofSeconds(10);
    private HttpClient httpClient;
    private int maxResponseBytes = 16 << 20;

    private Builder() {}

    /** The admin listener, e.g. {@code http://127.0.0.1:9901}. */
    public Builder baseUri(URI uri) {
      this.baseUri = uri;
      return this;
    }

    public Builder baseUri(String uri) {
      return baseUri(URI.create(uri));
    }

    /** The bearer token ({@code admin.token_env}); null when the gateway has none. */
    public Builder token(String token) {
      this.token = token;
      return this;
    }

    /** How long one call may take before its outcome is unknown (default 10 s). */
    public Builder requestTimeout(Duration timeout) {
      this.requestTimeout = timeout;
      return this;
    }

    /**
     * The HttpClient to use (its executor, proxy, TLS context). Requests are sent as
     * HTTP/1.1 whatever the client prefers. Default: a client of this Idem's own.
     */
    public Builder httpClient(HttpClient client) {
      this.httpClient = client;
      return this;
    }

    /** The largest answer read (default 16 MiB); a longer one is a ProtocolException. */
    public Builder maxResponseBytes(int bytes) {
      if (bytes < 1024) throw new IllegalArgumentException("maxResponseBytes: at least 1024");
      this.maxResponseBytes = bytes;
      return this;
    }

    public Idem build() {
      return new Idem(this);
    }
  }

  public URI baseUri() {
    return base;
  }

  // ---- records: begin, commit, release, extend -----------------------------------------------

  /** begin with the gateway's default lease and retention; an empty fingerprint matches any. */
  public BeginOutcome begin(String scope, String key, String fingerprint) {
    return begin(scope, key, fingerprint, null, null);
  }

  /**
   * Claims (scope, key) for the caller, or says why not. {@code fingerprint} identifies the
   * request (null or "" matches any); {@code lease} is how long the claim is held
   * unless extended; {@code retention} how long a committed result is replayed.
   */
  public BeginOutcome begin(String scope, String key, String fingerprint, Duration lease, Duration retention) {
    return call("/v1/begin", JsonValue.object(
        "scope", name(scope, "scope"), "key", nonEmpty(key, "key"),
        "fingerprint", fingerprint == null || fingerprint.isEmpty() ? null : fingerprint,
        "lease_ms", millis(lease, "lease"), "retention_ms", millis(retention, "retention")), false, o -> {
      String outcome = outcome(o);
      return switch (outcome) {
        case "acquired" -> new BeginOutcome.Acquired(
            positiveFence(o), o.get("recovered").map(JsonValue::asBoolean).orElse(false));
        case "replay" -> new BeginOutcome.Replay(o.get("result").orElse(JsonValue.NULL));
        case "in_progress" -> new BeginOutcome.InProgress(Duration.ofMillis(o.require("retry_after_ms").asLong()));
        case "mismatch" -> new BeginOutcome.Mismatch();
        default -> throw unexpected("/v1/begin", outcome);
      };
    });
  }

  /**
   * Completes the claim with {@code result} (any JSON value): every later begin with a
   * matching fingerprint replays it. A retried commit with the same fence is safe.
   */
  public CommitOutcome commit(String scope, String key, long fence, JsonValue result, Duration retention) {
    Objects.requireNonNull(result, "result (JsonValue.NULL for JSON null)");
    return call("/v1/commit", JsonValue.object(
        "scope", name(scope, "scope"), "key", nonEmpty(key, "key"), "fence", fence(fence),
        "result", result, "retention_ms", millis(retention, "retention")), true, o -> {
      return switch (outcome(o)) {
        case "committed" -> CommitOutcome.COMMITTED;
        case "fenced" -> CommitOutcome.FENCED;
        default -> throw unexpected("/v1/commit", outcome(o));
      };
    });
  }

  public CommitOutcome commit(String scope, String key, long fence, JsonValue result) {
    return commit(scope, key, fence, result, null);
  }

  /** Gives the claim back (nothing is stored), so that a retry acquires it again. */
  public ReleaseOutcome release(String scope, String key, long fence) {
    return call("/v1/release", JsonValue.object(
        "scope", name(scope, "scope"), "key", nonEmpty(key, "key"), "fence", fence(fence)), true, o -> {
      return switch (outcome(o)) {
        case "released" -> ReleaseOutcome.RELEASED;
        case "fenced" -> ReleaseOutcome.FENCED;
        default -> throw unexpected("/v1/release", outcome(o));
      };
    });
  }

  /** Extends the claim's lease to {@code lease} from now; FENCED: the claim was lost. */
  public ExtendOutcome extend(String scope, String key, long fence, Duration lease) {
    return call("/v1/extend", JsonValue.object(
        "scope", name(scope, "scope"), "key", nonEmpty(key, "key"), "fence", fence(fence),
        "lease_ms", millis(Objects.requireNonNull(lease, "lease"), "lease")), true, o -> {
      return switch (outcome(o)) {
        case "extended" -> ExtendOutcome.EXTENDED;
        case "fenced" -> ExtendOutcome.FENCED;
        default -> throw unexpected("/v1/extend", outcome(o));
      };
    });
  }

  // ---- one-time tokens -----------------------------------------------------------------------

  /** Issues a one-time token bound to {@code scope}; {@code ttl} null: {@code tokens.ttl}. */
  public String issueToken(String scope, Duration ttl) {
    return call("/v1/tokens", JsonValue.object("scope", name(scope, "scope"), "ttl_ms", millis(ttl, "ttl")),
        false, o -> {
      String token = o.require("token").asString();
      if (token.isEmpty()) throw new ProtocolException("/v1/tokens answered an empty token", 200, null);
      return token;
    });
  }

  /** Consumes the token: of concurrent consumers exactly one gets CONSUMED. */
  public ConsumeOutcome consumeToken(String scope, String token) {
    return call("/v1/tokens/consume",
        JsonValue.object("scope", name(scope, "scope"), "token", Objects.requireNonNull(token, "token")), false, o -> {
      return switch (outcome(o)) {
        case "consumed" -> ConsumeOutcome.CONSUMED;
        case "invalid" -> ConsumeOutcome.INVALID;
        default -> throw unexpected("/v1/tokens/consume", outcome(o));
      };
    });
  }

  /** Re-arms a consumed token after a failure, so the user can submit again. */
  public RestoreOutcome restoreToken(String scope, String token, Duration ttl) {
    return call("/v1/tokens/restore", JsonValue.object("scope", name(scope, "scope"),
        "token", Objects.requireNonNull(token, "token"), "ttl_ms", millis(ttl, "ttl")), false, o -> {
      return switch (outcome(o)) {
        case "restored" -> RestoreOutcome.RESTORED;
        case "invalid" -> RestoreOutcome.INVALID;
        default -> throw unexpected("/v1/tokens/restore", outcome(o));
      };
    });
  }

  // ---- locks ---------------------------------------------------------------------------------

  /** Takes the lock {@code name} for {@code owner} for {@code ttl}, or says who has it for how long. */
  public LockOutcome acquireLock(String name, String owner, Duration ttl) {
    return call("/v1/locks/acquire", lockBody(name, owner, ttl), false, o -> {
      return switch (outcome(o)) {
        case "locked" -> new LockOutcome.Locked(positiveFence(o));
        case "busy" -> new LockOutcome.Busy(Duration.ofMillis(o.require("retry_after_ms").asLong()));
        default -> throw unexpected("/v1/locks/acquire", outcome(o));
      };
    });
  }

  /** Frees the lock if {@code owner} holds it; never another owner's. */
  public UnlockOutcome releaseLock(String name, String owner) {
    return call("/v1/locks/release",
        JsonValue.object("name", nonEmpty(name, "name"), "owner", nonEmpty(owner, "owner")), true, o -> {
      return switch (outcome(o)) {
        case "released" -> UnlockOutcome.RELEASED;
        case "not_owner" -> UnlockOutcome.NOT_OWNER;
        default -> throw unexpected("/v1/locks/release", outcome(o));
      };
    });
  }

  /** Holds the lock for {@code ttl} from now if {@code owner} holds it. */
  public LockExtendOutcome extendLock(String name, String owner, Duration ttl) {
    return call("/v1/locks/extend", lockBody(name, owner, ttl), true, o -> {
      return switch (outcome(o)) {
        case "extended" -> LockExtendOutcome.EXTENDED;
        case "not_owner" -> LockExtendOutcome.NOT_OWNER;
        default -> throw unexpected("/v1/locks/extend", outcome(o));
      };
    });
  }

  private static JsonValue.Obj lockBody(String name, String owner, Duration ttl) {
    return JsonValue.object("name", nonEmpty(name, "name"), "owner", nonEmpty(owner, "owner"),
        "ttl_ms", millis(Objects.requireNonNull(ttl, "ttl"), "ttl"));
  }

  // ---- records -------------------------------------------------------------------------------

  /** The record of (scope, key), or empty when there is none. */
  public Optional<StoredRecord> getRecord(String scope, String key) {
    return getRecord(scope, key, null);
  }

  /**
   * The record a gateway route keeps for {@code key} as the route rendered it, in the route's
   * key space ({@code keySpace}: the route's name unless it sets {@code key_space}); with a
   * null keySpace, {@code key} is the stored key.
   */
  public Optional<StoredRecord> getRecord(String scope, String key, String keySpace) {
    Answer a = send(get(recordPath(scope, key) + keySpaceQuery(keySpace)), "GET /v1/records");
    if (a.status == 404) return Optional.empty();
    if (a.status != 200) throw failure("GET /v1/records", a);
    return Optional.of(parseAnswer("GET /v1/records", a, StoredRecord::from));
  }

  /** Removes the record (an operator's purge); false when there was none. */
  public boolean deleteRecord(String scope, String key) {
    return deleteRecord(scope, key, null);
  }

  /** The same, for a route's key as it rendered it (see {@link #getRecord(String, String, String)}). */
  public boolean deleteRecord(String scope, String key, String keySpace) {
    HttpRequest r = request(recordPath(scope, key) + keySpaceQuery(keySpace)).DELETE().build();
    Answer a = send(r, "DELETE /v1/records");
    if (a.status == 204) return true;
    if (a.status == 404) return false;
    throw failure("DELETE /v1/records", a);
  }

  /** One page of records (newest first where the store can order them). */
  public RecordPage listRecords(RecordQuery q) {
    StringBuilder query = new StringBuilder();
    param(query, "key_space", q.keySpace());
    param(query, "state", q.state());
    if (q.uncertain() != null && q.uncertain()) param(query, "uncertain", "true");
    param(query, "scope", q.scope());
    if (q.limit() != null) param(query, "limit", Integer.toString(q.limit()));
    param(query, "cursor", q.cursor());
    Answer a = send(get("/v1/records" + query), "GET /v1/records");
    if (a.status != 200) throw failure("GET /v1/records", a);
    return parseAnswer("GET /v1/records", a, v -> {
      JsonValue.Obj o = v.asObject();
      List<StoredRecord> records = new ArrayList<>();
      for (JsonValue r : o.require("records").asArray().items()) records.add(StoredRecord.from(r));
      String next = o.get("next_cursor").filter(c -> !c.isNull()).map(JsonValue::asString).orElse("");
      return new RecordPage(records, next.isEmpty() ? Optional.empty() : Optional.of(next));
    });
  }

  // ---- the wire ------------------------------------------------------------------------------

  private record Answer(int status, String body, Optional<String> retryAfter) {}

  // One POST; its 200 (and, where the operation has one, its 409) body as an object.
  private <T> T call(String path, JsonValue.Obj body, boolean conflictIsOutcome, Reader<T> reader) {
    HttpRequest r = request(path)
        .header("Content-Type", JSON)
        .POST(HttpRequest.BodyPublishers.ofString(body.toJson(), StandardCharsets.UTF_8))
        .build();
    Answer a = send(r, "POST " + path);
    if (a.status == 200 || (a.status == 409 && conflictIsOutcome))
      return parseAnswer("POST " + path, a, v -> reader.read(v.asObject()));
    throw failure("POST " + path, a);
  }

  private HttpRequest.Builder request(String pathAndQuery) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + pathAndQuery))
        .version(HttpClient.Version.HTTP_1_1)
        .timeout(requestTimeout)
        .header("Accept", JSON);
    if (authorization != null) b.header("Authorization", authorization);
    return b;
  }

  private HttpRequest get(String pathAndQuery) {
    return request(pathAndQuery).GET().build();
  }

  // One exchange, bounded as a whole by requestTimeout (HttpClient's own timeout ends when
  // the head arrives; a body that stalls would block forever) and in size by maxResponseBytes.
  private Answer send(HttpRequest r, String what) {
    CompletableFuture<HttpResponse<byte[]>> call = http.sendAsync(r, info -> new LimitedBody(maxResponseBytes, info.statusCode()));
    HttpResponse<byte[]> res;
    try {
      res = call.get(requestTimeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      call.cancel(true);
      throw new OutcomeUnknownException(what + ": no answer within " + requestTimeout + " (it may have been applied)", 0, e);
    } catch (InterruptedException e) {
      call.cancel(true);
      Thread.currentThread().interrupt();
      throw new OutcomeUnknownException(what + ": interrupted (it may have been applied)", 0, e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      while (cause instanceof CompletionException && cause.getCause() != null) cause = cause.getCause();
      if (cause instanceof TooLong t)
        throw new ProtocolException(what + ": answer longer than " + maxResponseBytes + " bytes", t.status, null);
      if (cause instanceof HttpConnectTimeoutException || cause instanceof ConnectException)
        // No connection: the request was never sent.
        throw new NotAppliedException(what + ": cannot connect to " + base + ": " + cause, 0, cause);
      if (cause instanceof HttpTimeoutException)
        throw new OutcomeUnknownException(what + ": no answer within " + requestTimeout + " (it may have been applied)", 0, cause);
      throw new OutcomeUnknownException(what + ": connection failed: " + cause + " (it may have been applied)", 0, cause);
    }
    return new Answer(res.statusCode(), new String(res.body(), StandardCharsets.UTF_8), res.headers().firstValue("Retry-After"));
  }

  private static final class TooLong extends IOException {
    private static final long serialVersionUID = 1L;
    final int status;

    TooLong(int status) {
      super("answer too long");
      this.status = status;
    }
  }

  // Collects the body up to a limit; past it, cancels the exchange.
  private static final class LimitedBody implements HttpResponse.BodySubscriber<byte[]> {
    private final int limit;
    private final int status;
    private final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    private final CompletableFuture<byte[]> done = new CompletableFuture<>();
    private Flow.Subscription subscription;

    LimitedBody(int limit, int status) {
      this.limit = limit;
      this.status = status;
    }

    @Override
    public CompletableFuture<byte[]> getBody() {
      return done;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      s.request(Long.MAX_VALUE);
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

  private interface Reader<T> {
    T read(JsonValue.Obj v);
  }

  private static <T> T parseAnswer(String what, Answer a, java.util.function.Function<JsonValue, T> reader) {
    try {
      return reader.apply(JsonValue.parse(a.body));
    } catch (JsonException | java.time.format.DateTimeParseException | ArithmeticException e) {
      throw new ProtocolException(what + ": unexpected answer (" + e.getMessage() + "): " + excerpt(a.body), a.status, e);
    }
  }

  private static String outcome(JsonValue.Obj o) {
    JsonValue v = o.get("outcome").orElseThrow(() -> new JsonException("missing field \"outcome\""));
    return v.asString();
  }

  private static long positiveFence(JsonValue.Obj o) {
    long fence = o.require("fence").asLong();
    if (fence <= 0) throw new JsonException("fence must be positive, got " + fence);
    return fence;
  }

  private static ProtocolException unexpected(String path, String outcome) {
    return new ProtocolException(path + ": unknown outcome \"" + outcome + "\"", 200, null);
  }

  // What a non-answer means for the caller (the classes of IdemException).
  private IdemException failure(String what, Answer a) {
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
      return JsonValue.parse(body).asObject().get(field).map(JsonValue::asString).orElse("");
    } catch (JsonException e) {
      return "";
    }
  }

  private static String excerpt(String body) {
    return body.length() <= 200 ? body : body.substring(0, 200) + "...";
  }

  // ---- arguments -----------------------------------------------------------------------------

  private static String name(String s, String what) {
    return Objects.requireNonNull(s, what);
  }

  private static String nonEmpty(String s, String what) {
    if (Objects.requireNonNull(s, what).isEmpty()) throw new IllegalArgumentException(what + " must not be empty");
    return s;
  }

  private static long fence(long fence) {
    if (fence <= 0) throw new IllegalArgumentException("fence: a positive fence from begin, got " + fence);
    return fence;
  }

  // Whole milliseconds, rounded up, or null (the gateway's default).
  static Long millis(Duration d, String what) {
    if (d == null) return null;
    if (d.isNegative() || d.isZero()) throw new IllegalArgumentException(what + " must be positive, got " + d);
    long ms = d.toMillis();
    return d.equals(Duration.ofMillis(ms)) ? ms : ms + 1;
  }

  private static Duration positive(Duration d, String what) {
    Objects.requireNonNull(d, what);
    if (d.isNegative() || d.isZero()) throw new IllegalArgumentException(what + " must be positive, got " + d);
    return d;
  }

  private String recordPath(String scope, String key) {
    Objects.requireNonNull(scope, "scope");
    nonEmpty(key, "key");
    return "/v1/records/" + (scope.isEmpty() ? "_" : encode(scope)) + "/" + encode(key);
  }

  private static String keySpaceQuery(String keySpace) {
    StringBuilder q = new StringBuilder();
    param(q, "key_space", keySpace);
    return q.toString();
  }

  private static void param(StringBuilder q, String name, String value) {
    if (value == null) return;
    q.append(q.length() == 0 ? '?' : '&').append(name).append('=').append(encode(value));
  }

  // Percent-encodes every byte outside A-Z a-z 0-9 - . ~ ('_' too, so that a scope "_" is
  // never read as the empty scope).
  static String encode(String s) {
    StringBuilder out = new StringBuilder();
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      int c = b & 0xff;
      if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '~')
        out.append((char) c);
      else
        out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
            .append(Character.toUpperCase(Character.forDigit(c & 15, 16)));
    }
    return out.toString();
  }
}
