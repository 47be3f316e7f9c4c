package dev.idem.client;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.util.RawValue;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

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
  private final Exchange exchange;

  private Idem(Builder b) {
    String s = Objects.requireNonNull(b.baseUri, "baseUri").toString();
    this.base = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
    if (!"http".equals(base.getScheme()) && !"https".equals(base.getScheme()))
      throw new IllegalArgumentException("baseUri: http or https, got " + b.baseUri);
    if (b.token != null && (b.token.isEmpty() || b.token.chars().anyMatch(c -> c < 0x21 || c > 0x7e)))
      throw new IllegalArgumentException("token: printable ASCII without spaces");
    this.authorization = b.token == null ? null : "Bearer " + b.token;
    this.requestTimeout = positive(b.requestTimeout, "requestTimeout");
    HttpClient http = b.httpClient != null
        ? b.httpClient
        : HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(requestTimeout).build();
    this.exchange = new Exchange(http, base, requestTimeout, b.maxResponseBytes);
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
    return begin(scope, key, fingerprint, lease, retention, null);
  }

  /**
   * The same, naming who claims: {@code owner} (unique to this attempt, e.g. a UUID; null
   * for none) lets {@link #abandon} give the claim back should this call's answer be lost
   * ({@link OutcomeUnknownException}), when the fence was never learned.
   */
  public BeginOutcome begin(String scope, String key, String fingerprint, Duration lease, Duration retention,
                            String owner) {
    if (owner != null && owner.isEmpty()) throw new IllegalArgumentException("owner must not be empty (null for none)");
    ObjectNode body = body("scope", name(scope, "scope"), "key", nonEmpty(key, "key"),
        "fingerprint", fingerprint == null || fingerprint.isEmpty() ? null : fingerprint,
        "lease_ms", millis(lease, "lease"), "retention_ms", millis(retention, "retention"), "owner", owner);
    return call("/v1/begin", body, false, "result", (o, result) -> {
      String outcome = outcome(o);
      return switch (outcome) {
        case "acquired" -> new BeginOutcome.Acquired(positiveFence(o), Fields.bool(o, "recovered", false),
            o.has("previous_fence") ? Fields.longValue(o, "previous_fence") : 0L);
        case "replay" -> BeginOutcome.Replay.of(result == null ? "null" : result);
        case "in_progress" -> new BeginOutcome.InProgress(Duration.ofMillis(Fields.longValue(o, "retry_after_ms")));
        case "mismatch" -> new BeginOutcome.Mismatch();
        default -> throw unexpected("/v1/begin", outcome);
      };
    });
  }

  /**
   * Completes the claim with {@code result} (any JSON value; {@code NullNode.instance} for JSON
   * null): every later begin with a matching fingerprint replays it, numbers exactly as the nodes
   * hold them. A retried commit with the same fence is safe.
   */
  public CommitOutcome commit(String scope, String key, long fence, JsonNode result, Duration retention) {
    Objects.requireNonNull(result, "result (NullNode.instance for JSON null)");
    return commitJson(scope, key, fence, ExactJson.write(result), retention);
  }

  public CommitOutcome commit(String scope, String key, long fence, JsonNode result) {
    return commit(scope, key, fence, result, null);
  }

  /**
   * The same with the result as JSON text, stored byte for byte as written (what {@link
   * BeginOutcome.Replay#resultJson()} gives back).
   *
   * @throws IllegalArgumentException {@code resultJson} is not one strict JSON value
   */
  public CommitOutcome commitJson(String scope, String key, long fence, String resultJson, Duration retention) {
    String raw = Objects.requireNonNull(resultJson, "resultJson").strip();
    ExactJson.parse(raw);  // one value, or refused before anything is sent
    ObjectNode body = body("scope", name(scope, "scope"), "key", nonEmpty(key, "key"), "fence", fence(fence));
    body.putRawValue("result", new RawValue(raw));
    Long ms = millis(retention, "retention");
    if (ms != null) body.put("retention_ms", ms);
    return call("/v1/commit", body, true, null, (o, r) -> {
      return switch (outcome(o)) {
        case "committed" -> CommitOutcome.COMMITTED;
        case "fenced" -> CommitOutcome.FENCED;
        default -> throw unexpected("/v1/commit", outcome(o));
      };
    });
  }

  /** Gives the claim back (nothing is stored), so that a retry acquires it again. */
  public ReleaseOutcome release(String scope, String key, long fence) {
    return call("/v1/release", body(
        "scope", name(scope, "scope"), "key", nonEmpty(key, "key"), "fence", fence(fence)), true, null, (o, r) -> {
      return switch (outcome(o)) {
        case "released" -> ReleaseOutcome.RELEASED;
        case "fenced" -> ReleaseOutcome.FENCED;
        default -> throw unexpected("/v1/release", outcome(o));
      };
    });
  }

  /**
   * Gives back the pending claim that a begin naming {@code owner} made, for a caller that
   * never learned its fence (the begin's answer was lost). FENCED: no pending claim of that
   * owner (never made, already given back, done, or taken over); nothing changed.
   */
  public ReleaseOutcome abandon(String scope, String key, String owner) {
    return call("/v1/abandon", body(
        "scope", name(scope, "scope"), "key", nonEmpty(key, "key"), "owner", nonEmpty(owner, "owner")), true, null, (o, r) -> {
      return switch (outcome(o)) {
        case "released" -> ReleaseOutcome.RELEASED;
        case "fenced" -> ReleaseOutcome.FENCED;
        default -> throw unexpected("/v1/abandon", outcome(o));
      };
    });
  }

  /** Extends the claim's lease to {@code lease} from now; FENCED: the claim was lost. */
  public ExtendOutcome extend(String scope, String key, long fence, Duration lease) {
    return call("/v1/extend", body(
        "scope", name(scope, "scope"), "key", nonEmpty(key, "key"), "fence", fence(fence),
        "lease_ms", millis(Objects.requireNonNull(lease, "lease"), "lease")), true, null, (o, r) -> {
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
    return call("/v1/tokens", body("scope", name(scope, "scope"), "ttl_ms", millis(ttl, "ttl")),
        false, null, (o, r) -> {
      String token = Fields.text(o, "token");
      if (token.isEmpty()) throw new ProtocolException("/v1/tokens answered an empty token", 200, null);
      return token;
    });
  }

  /** Consumes the token: of concurrent consumers exactly one gets CONSUMED. */
  public ConsumeOutcome consumeToken(String scope, String token) {
    return call("/v1/tokens/consume",
        body("scope", name(scope, "scope"), "token", Objects.requireNonNull(token, "token")), false, null, (o, r) -> {
      return switch (outcome(o)) {
        case "consumed" -> ConsumeOutcome.CONSUMED;
        case "invalid" -> ConsumeOutcome.INVALID;
        default -> throw unexpected("/v1/tokens/consume", outcome(o));
      };
    });
  }

  /** Re-arms a consumed token after a failure, so the user can submit again. */
  public RestoreOutcome restoreToken(String scope, String token, Duration ttl) {
    return call("/v1/tokens/restore", body("scope", name(scope, "scope"),
        "token", Objects.requireNonNull(token, "token"), "ttl_ms", millis(ttl, "ttl")), false, null, (o, r) -> {
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
    return call("/v1/locks/acquire", lockBody(name, owner, ttl), false, null, (o, r) -> {
      return switch (outcome(o)) {
        case "locked" -> new LockOutcome.Locked(positiveFence(o));
        case "busy" -> new LockOutcome.Busy(Duration.ofMillis(Fields.longValue(o, "retry_after_ms")));
        default -> throw unexpected("/v1/locks/acquire", outcome(o));
      };
    });
  }

  /** Frees the lock if {@code owner} holds it; never another owner's. */
  public UnlockOutcome releaseLock(String name, String owner) {
    return call("/v1/locks/release",
        body("name", nonEmpty(name, "name"), "owner", nonEmpty(owner, "owner")), true, null, (o, r) -> {
      return switch (outcome(o)) {
        case "released" -> UnlockOutcome.RELEASED;
        case "not_owner" -> UnlockOutcome.NOT_OWNER;
        default -> throw unexpected("/v1/locks/release", outcome(o));
      };
    });
  }

  /** Holds the lock for {@code ttl} from now if {@code owner} holds it. */
  public LockExtendOutcome extendLock(String name, String owner, Duration ttl) {
    return call("/v1/locks/extend", lockBody(name, owner, ttl), true, null, (o, r) -> {
      return switch (outcome(o)) {
        case "extended" -> LockExtendOutcome.EXTENDED;
        case "not_owner" -> LockExtendOutcome.NOT_OWNER;
        default -> throw unexpected("/v1/locks/extend", outcome(o));
      };
    });
  }

  private static ObjectNode lockBody(String name, String owner, Duration ttl) {
    return body("name", nonEmpty(name, "name"), "owner", nonEmpty(owner, "owner"),
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
    Exchange.Answer a = exchange.send(get(recordPath(scope, key) + keySpaceQuery(keySpace)), "GET /v1/records");
    if (a.status() == 404) return Optional.empty();
    if (a.status() != 200) throw exchange.failure("GET /v1/records", a);
    return Optional.of(Exchange.parse("GET /v1/records", a, text -> {
      ExactJson.WithRaw r = ExactJson.parseObject(text, "value");
      return StoredRecord.from(r.object(), r.raw());
    }));
  }

  /** Removes the record (an operator's purge); false when there was none. */
  public boolean deleteRecord(String scope, String key) {
    return deleteRecord(scope, key, null);
  }

  /** The same, for a route's key as it rendered it (see {@link #getRecord(String, String, String)}). */
  public boolean deleteRecord(String scope, String key, String keySpace) {
    HttpRequest r = request(recordPath(scope, key) + keySpaceQuery(keySpace)).DELETE().build();
    Exchange.Answer a = exchange.send(r, "DELETE /v1/records");
    if (a.status() == 204) return true;
    if (a.status() == 404) return false;
    throw exchange.failure("DELETE /v1/records", a);
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
    Exchange.Answer a = exchange.send(get("/v1/records" + query), "GET /v1/records");
    if (a.status() != 200) throw exchange.failure("GET /v1/records", a);
    return Exchange.parse("GET /v1/records", a, Idem::page);
  }

  // {"records": [record...], "next_cursor": "..."}, each record's value kept as written.
  private static RecordPage page(String text) {
    List<StoredRecord> records = new ArrayList<>();
    String next = "";
    boolean sawRecords = false;
    try (JsonParser p = ExactJson.parser(text)) {
      if (p.nextToken() != JsonToken.START_OBJECT) throw new Fields.Malformed("not an object");
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken t = p.nextToken();
        if (name.equals("records")) {
          if (t != JsonToken.START_ARRAY) throw new Fields.Malformed("field \"records\": expected an array");
          sawRecords = true;
          while (p.nextToken() == JsonToken.START_OBJECT) {
            ExactJson.WithRaw r = ExactJson.readObject(p, text, "value");
            records.add(StoredRecord.from(r.object(), r.raw()));
          }
          if (p.currentToken() != JsonToken.END_ARRAY) throw new Fields.Malformed("field \"records\": an array of objects");
        } else {
          JsonNode v = ExactJson.readValue(p);
          if (name.equals("next_cursor") && !v.isNull()) next = Fields.asText(v, "next_cursor");
        }
      }
      if (p.currentToken() != JsonToken.END_OBJECT || p.nextToken() != null) throw new Fields.Malformed("not one object");
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException("invalid JSON: " + e.getOriginalMessage(), e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (!sawRecords) throw new Fields.Malformed("missing field \"records\"");
    return new RecordPage(records, next.isEmpty() ? Optional.empty() : Optional.of(next));
  }

  // ---- the wire ------------------------------------------------------------------------------

  // One POST; its 200 (and, where the operation has one, its 409) body as an object, with the
  // text of its member `raw` (null: none) as written.
  private <T> T call(String path, ObjectNode body, boolean conflictIsOutcome, String raw, Reader<T> reader) {
    HttpRequest r = request(path)
        .header("Content-Type", JSON)
        .POST(HttpRequest.BodyPublishers.ofByteArray(ExactJson.writeBytes(body)))
        .build();
    Exchange.Answer a = exchange.send(r, "POST " + path);
    if (a.status() == 200 || (a.status() == 409 && conflictIsOutcome))
      return Exchange.parse("POST " + path, a, text -> {
        ExactJson.WithRaw o = ExactJson.parseObject(text, raw);
        return reader.read(o.object(), o.raw());
      });
    throw exchange.failure("POST " + path, a);
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

  private interface Reader<T> {
    T read(ObjectNode answer, String raw);
  }

  // An object of these members in this order (name, value, ...); null values are left out.
  private static ObjectNode body(Object... namesAndValues) {
    ObjectNode o = ExactJson.object();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      String name = (String) namesAndValues[i];
      Object v = namesAndValues[i + 1];
      if (v == null) continue;
      if (v instanceof String s) o.put(name, s);
      else if (v instanceof Long l) o.put(name, l);
      else throw new IllegalArgumentException("body: " + v.getClass());
    }
    return o;
  }

  private static String outcome(ObjectNode o) {
    return Fields.text(o, "outcome");
  }

  private static long positiveFence(ObjectNode o) {
    long fence = Fields.longValue(o, "fence");
    if (fence <= 0) throw new Fields.Malformed("fence must be positive, got " + fence);
    return fence;
  }

  private static ProtocolException unexpected(String path, String outcome) {
    return new ProtocolException(path + ": unknown outcome \"" + outcome + "\"", 200, null);
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
