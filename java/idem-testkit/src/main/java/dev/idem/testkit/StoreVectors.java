package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.core.IdemRecord;
import dev.idem.core.IdemStore;
import dev.idem.core.ListArgs;
import dev.idem.core.ListPage;
import dev.idem.core.LockOutcome;
import dev.idem.core.NotAppliedException;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.RecordState;
import dev.idem.core.ReleaseArgs;
import dev.idem.core.StoreConfigurationException;
import dev.idem.core.TokenRestore;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * The runner of the shared vectors (protocol/vectors/README.md): every vector of every file, each
 * on a store of its own, as a dynamic test named {@code <store>_<file>_<name>}. A backend's test
 * extends it with {@link #freshStore}. Time moves by sleeping (the servers judge by their own
 * clock). A vector whose scopes or keys are not UTF-8 (the Java API holds them as text) is skipped.
 */
public abstract class StoreVectors {
  static final String[] FILES = {"records", "owners", "takeovers", "tokens", "locks", "listing"};
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The store's name in {@code expect_by_store}: memory, redis, redis-cluster, postgres, mysql. */
  protected abstract String storeName();

  /** An empty store of its own (a fresh key or table prefix); {@code id} is unique to the vector. */
  protected abstract IdemStore freshStore(String id);

  /**
   * Removes what {@link #freshStore} made for {@code id} (its tables, its keys), after the vector
   * ran and its store was closed, whether the vector passed or not. Nothing by default (stores
   * whose data expires by itself).
   */
  protected void dropStore(String id) throws Exception {}

  /**
   * The vectors run side by side (each on a store of its own; most of their time is spent waiting
   * out leases on the server's clock), where the build enables JUnit's parallel execution.
   */
  @TestFactory
  @Execution(ExecutionMode.CONCURRENT)
  Stream<DynamicTest> vectors() {
    List<DynamicTest> tests = new ArrayList<>();
    int n = 0;
    for (String file : FILES) {
      JsonNode doc = read(file);
      for (JsonNode v : doc.get("vectors")) {
        String name = v.get("name").asText();
        String id = "v" + (n++) + "_" + Long.toHexString(System.nanoTime() & 0xfffff);
        tests.add(DynamicTest.dynamicTest(storeName() + "_" + file + "_" + name, () -> {
          IdemStore store = freshStore(id);
          try {
            new Run(store, v).run();
          } catch (NotUtf8 e) {
            Assumptions.abort("the vector holds a scope, key or name that is not UTF-8; the Java API holds them as text");
          } finally {
            try {
              store.close();
            } finally {
              dropStore(id);
            }
          }
        }));
      }
    }
    return tests.stream();
  }

  private static JsonNode read(String file) {
    String path = "/dev/idem/protocol/vectors/" + file + ".json";
    try (InputStream in = StoreVectors.class.getResourceAsStream(path)) {
      if (in == null) throw new IllegalStateException(path + " is not on the class path");
      return JSON.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private final class Run {
    final IdemStore store;
    final JsonNode vector;
    final Map<String, Long> fences = new HashMap<>();
    final Map<String, String> tokens = new HashMap<>();
    final Map<String, Optional<IdemRecord>> records = new HashMap<>();

    Run(IdemStore store, JsonNode vector) {
      this.store = store;
      this.vector = vector;
    }

    void run() throws Exception {
      int i = 0;
      for (JsonNode step : vector.get("steps")) {
        String where = "step " + (i++) + " " + step;
        JsonNode expect = step.has("expect_by_store") && step.get("expect_by_store").has(storeName())
            ? step.get("expect_by_store").get(storeName()) : step.get("expect");
        if (step.get("op").asText().equals("advance")) {
          Thread.sleep(step.get("ms").asLong());
          continue;
        }
        if (step.get("op").asText().equals("race")) {
          race(step, expect, where);
          continue;
        }
        Map<String, Object> answer = call(step, null);
        check(answer, expect, where);
        if (step.has("as") && !answer.containsKey("error")) save(step, answer);
      }
    }

    void save(JsonNode step, Map<String, Object> answer) {
      String as = step.get("as").asText();
      switch (step.get("op").asText()) {
        case "begin", "lock" -> {
          if (answer.get("fence") instanceof Long f) fences.put(as, f);
        }
        case "issue_token" -> tokens.put(as, (String) answer.get("token"));
        case "get" -> records.put(as, Optional.ofNullable((IdemRecord) answer.get("record")));
        default -> {}
      }
    }

    void race(JsonNode step, JsonNode expect, String where) throws Exception {
      int copies = step.get("copies").asInt();
      boolean distinct = step.has("owners") && step.get("owners").asText().equals("distinct");
      CountDownLatch start = new CountDownLatch(1);
      ExecutorService pool = Executors.newFixedThreadPool(copies);
      List<Future<Map<String, Object>>> fs = new ArrayList<>();
      try {
        for (int c = 0; c < copies; c++) {
          String owner = distinct ? "owner-" + c : null;
          fs.add(pool.submit(() -> {
            start.await();
            return call(step.get("step"), owner);
          }));
        }
        start.countDown();
        Map<String, Integer> counts = new TreeMap<>();
        for (Future<Map<String, Object>> f : fs) {
          Map<String, Object> a = f.get(120, TimeUnit.SECONDS);
          counts.merge((String) a.getOrDefault("outcome", a.get("error")), 1, Integer::sum);
        }
        Map<String, Integer> want = new TreeMap<>();
        expect.get("counts").properties().forEach(e -> want.put(e.getKey(), e.getValue().asInt()));
        assertThat(counts).as(where).isEqualTo(want);
      } finally {
        pool.shutdownNow();
      }
    }

    // ---- calling the store ----------------------------------------------------------------

    Map<String, Object> call(JsonNode s, String raceOwner) {
      Map<String, Object> out = new HashMap<>();
      try {
        String op = s.get("op").asText();
        switch (op) {
          case "begin" -> {
            String owner = raceOwner != null ? raceOwner : text(s, "owner", "");
            BeginOutcome b = store.begin(new BeginArgs(text(s, "scope", "s"), text(s, "key", null),
                bytes(s, "fingerprint"), ms(s, "lease_ms"), ms(s, "retention_ms"), owner));
            if (b instanceof BeginOutcome.Acquired a) {
              out.put("outcome", "acquired");
              out.put("fence", a.fence());
              out.put("recovered", a.recovered());
              out.put("previous_fence", a.previousFence());
            } else if (b instanceof BeginOutcome.Replay r) {
              out.put("outcome", "replay");
              out.put("fence", r.fence());
              out.put("result", r.result());
              out.put("expires_in_ms", r.expiresIn().toNanos() / 1000 / 1000);
              out.put("previous_fence", 0L);
            } else if (b instanceof BeginOutcome.InProgress p) {
              out.put("outcome", "in_progress");
              out.put("retry_after_ms", p.retryAfter().toNanos() / 1000 / 1000);
              out.put("previous_fence", 0L);
            } else {
              out.put("outcome", "mismatch");
              out.put("previous_fence", 0L);
            }
          }
          case "commit" -> out.put("outcome", store.commit(new CommitArgs(text(s, "scope", "s"), text(s, "key", null),
              fence(s.get("fence")), bytesOr(s, "result"), ms(s, "retention_ms"), bytesOr(s, "over_uncertain"))).name()
              .toLowerCase());
          case "release" -> {
            Optional<TokenRestore> t = s.has("restore_token")
                ? Optional.of(new TokenRestore(utf8(value(s.get("restore_token"))), ms(s, "ttl_ms"))) : Optional.empty();
            out.put("outcome", store.release(new ReleaseArgs(text(s, "scope", "s"), text(s, "key", null),
                fence(s.get("fence")), t)).name().toLowerCase());
          }
          case "abandon" -> out.put("outcome", store.abandon(text(s, "scope", "s"), text(s, "key", null),
              raceOwner != null ? raceOwner : text(s, "owner", "")).name().toLowerCase());
          case "extend" -> out.put("outcome", store.extend(text(s, "scope", "s"), text(s, "key", null),
              fence(s.get("fence")), ms(s, "lease_ms")).name().toLowerCase());
          case "get" -> out.put("record", store.get(text(s, "scope", "s"), text(s, "key", null)).orElse(null));
          case "remove" -> out.put("outcome", store.delete(text(s, "scope", "s"), text(s, "key", null)) ? "removed" : "absent");
          case "sweep" -> {
            store.sweep();
            out.put("outcome", "ok");
          }
          case "ping" -> {
            store.ping();
            out.put("outcome", "ok");
          }
          case "list" -> out.put("records", list(s));
          case "issue_token" -> {
            out.put("token", store.issueToken(text(s, "scope", "s"), ms(s, "ttl_ms")));
            out.put("outcome", "issued");
          }
          case "consume_token" -> out.put("outcome", store.consumeToken(text(s, "scope", "s"), text(s, "token", null))
              .name().toLowerCase());
          case "restore_token" -> out.put("outcome", store.restoreToken(text(s, "scope", "s"), text(s, "token", null),
              ms(s, "ttl_ms")).name().toLowerCase());
          case "lock" -> {
            LockOutcome l = store.lock(text(s, "name", null), raceOwner != null ? raceOwner : text(s, "owner", ""),
                ms(s, "ttl_ms"));
            if (l instanceof LockOutcome.Locked k) {
              out.put("outcome", "locked");
              out.put("fence", k.fence());
            } else {
              out.put("outcome", "busy");
              out.put("retry_after_ms", ((LockOutcome.Busy) l).retryAfter().toNanos() / 1000 / 1000);
            }
          }
          case "unlock" -> out.put("outcome", store.unlock(text(s, "name", null),
              raceOwner != null ? raceOwner : text(s, "owner", "")).name().toLowerCase());
          case "extend_lock" -> out.put("outcome", store.extendLock(text(s, "name", null),
              raceOwner != null ? raceOwner : text(s, "owner", ""), ms(s, "ttl_ms")).name().toLowerCase());
          default -> fail("unknown op " + op);
        }
      } catch (IllegalArgumentException | NullPointerException e) {
        if (e instanceof NotUtf8) throw e;
        out.put("error", "invalid_argument");
      } catch (NotAppliedException e) {
        out.put("error", "unavailable");
      } catch (OutcomeUnknownException e) {
        out.put("error", "deadline_exceeded");
      } catch (StoreConfigurationException e) {
        out.put("error", "failed_precondition");
      } catch (RuntimeException e) {
        if (e.getClass().getName().startsWith("dev.idem.core")) out.put("error", "internal");
        else throw e;
      }
      return out;
    }

    List<IdemRecord> list(JsonNode s) {
      ListArgs a = new ListArgs(text(s, "key_prefix", ""),
          s.has("scope") ? Optional.of(utf8(value(s.get("scope")))) : Optional.empty(),
          s.has("state") ? Optional.of(s.get("state").asText().equals("done") ? RecordState.DONE : RecordState.PENDING)
              : Optional.empty(), s.has("limit") ? s.get("limit").asInt() : 100, s.has("cursor") ? text(s, "cursor", "") : "");
      List<IdemRecord> out = new ArrayList<>();
      for (int pages = 0; pages < 100_000; pages++) {
        ListPage p = store.list(a);
        assertThat(p.records().size()).isLessThanOrEqualTo(a.limit());
        out.addAll(p.records());
        if (p.last() || s.has("cursor")) return out;
        a = a.withCursor(p.nextCursor());
      }
      throw new AssertionError("the listing did not end");
    }

    // ---- values -------------------------------------------------------------------------------

    Duration ms(JsonNode s, String name) {
      return Duration.ofMillis(s.has(name) ? s.get(name).asLong() : 60000);
    }

    String text(JsonNode s, String name, String dflt) {
      if (!s.has(name)) {
        if (dflt == null) throw new NullPointerException(name);
        return dflt;
      }
      return utf8(value(s.get(name)));
    }

    byte[] bytes(JsonNode s, String name) {
      return s.has(name) ? value(s.get(name)) : new byte[0];
    }

    byte[] bytesOr(JsonNode s, String name) {
      return bytes(s, name);
    }

    byte[] value(JsonNode v) {
      if (v.isTextual()) return v.asText().getBytes(StandardCharsets.UTF_8);
      if (v.has("hex")) return java.util.HexFormat.of().parseHex(v.get("hex").asText().toLowerCase());
      if (v.has("concat")) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (JsonNode p : v.get("concat")) o.writeBytes(value(p));
        return o.toByteArray();
      }
      if (v.has("cycle")) {
        byte[] c = value(v.get("cycle"));
        byte[] out = new byte[v.get("length").asInt()];
        for (int i = 0; i < out.length; i++) out[i] = c[i % c.length];
        return out;
      }
      if (v.has("fence")) return Long.toString(fence(v)).getBytes(StandardCharsets.US_ASCII);
      if (v.has("token")) return tokens.get(v.get("token").asText()).getBytes(StandardCharsets.UTF_8);
      if (v.has("value")) return value(vector.get("values").get(v.get("value").asText()));
      throw new AssertionError("unknown byte value " + v);
    }

    long fence(JsonNode v) {
      if (v.isNumber()) return v.asLong();
      if (v.has("fence")) {
        Long f = fences.get(v.get("fence").asText());
        if (f == null) throw new AssertionError("no fence saved as " + v);
        return f + (v.has("plus") ? v.get("plus").asLong() : 0);
      }
      if (v.has("record")) {
        Long x = field(records.get(v.get("record").asText()).orElseThrow(), v.get("field").asText());
        if (x == null) throw new AssertionError("no " + v);
        return x;
      }
      throw new AssertionError("unknown fence value " + v);
    }

    String utf8(byte[] b) {
      try {
        return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
      } catch (CharacterCodingException e) {
        throw new NotUtf8();
      }
    }

    // ---- expectations ---------------------------------------------------------------------------

    void check(Map<String, Object> a, JsonNode expect, String where) {
      if (expect == null) {
        assertThat(a.get("error")).as(where + ": must succeed").isNull();
        return;
      }
      if (expect.has("error")) {
        assertThat(a.get("error")).as(where).isEqualTo(expect.get("error").asText());
        return;
      }
      assertThat(a.get("error")).as(where + ": must succeed").isNull();
      for (Iterator<Map.Entry<String, JsonNode>> it = expect.properties().iterator(); it.hasNext();) {
        Map.Entry<String, JsonNode> e = it.next();
        String m = e.getKey();
        JsonNode want = e.getValue();
        switch (m) {
          case "outcome" -> assertThat(a.get("outcome")).as(where).isEqualTo(want.asText());
          case "recovered" -> assertThat(a.get("recovered")).as(where).isEqualTo(want.asBoolean());
          case "fence", "previous_fence", "expires_in_ms", "retry_after_ms" -> number((Long) a.get(m), want, where + " " + m);
          case "result" -> assertThat((byte[]) a.get("result")).as(where).isEqualTo(value(want));
          case "record" -> record((IdemRecord) a.get("record"), want, where);
          case "records" -> {
            List<String> got = new ArrayList<>();
            for (Object o : (List<?>) a.get("records")) {
              IdemRecord r = (IdemRecord) o; got.add(r.scope() + "\u0000" + r.key());
            }
            List<String> exp = new ArrayList<>();
            for (JsonNode p : want) exp.add(utf8(value(p.get(0))) + "\u0000" + utf8(value(p.get(1))));
            assertThat(got).as(where).containsExactlyInAnyOrderElementsOf(exp);
          }
          default -> fail(where + ": unknown expectation " + m);
        }
      }
    }

    void record(IdemRecord r, JsonNode want, String where) {
      if (want.isNull()) {
        assertThat(r).as(where + ": no record").isNull();
        return;
      }
      assertThat(r).as(where + ": a record").isNotNull();
      for (Iterator<Map.Entry<String, JsonNode>> it = want.properties().iterator(); it.hasNext();) {
        Map.Entry<String, JsonNode> e = it.next();
        JsonNode w = e.getValue();
        String at = where + " record." + e.getKey();
        switch (e.getKey()) {
          case "scope" -> assertThat(r.scope()).as(at).isEqualTo(utf8(bytesOf(w, "scope")));
          case "key" -> assertThat(r.key()).as(at).isEqualTo(utf8(bytesOf(w, "key")));
          case "owner" -> assertThat(r.owner()).as(at).isEqualTo(utf8(bytesOf(w, "owner")));
          case "fingerprint" -> assertThat(r.fingerprint()).as(at).isEqualTo(bytesOf(w, "fingerprint"));
          case "result" -> assertThat(r.result()).as(at).isEqualTo(bytesOf(w, "result"));
          case "state" -> assertThat(r.state().wireName()).as(at).isEqualTo(w.asText());
          case "fence", "lease_until_us", "expires_at_us", "lease_to_expiry_ms" -> number(field(r, e.getKey()), w, at);
          case "same_as" -> assertThat(r).as(at).isEqualTo(records.get(w.asText()).orElse(null));
          default -> fail(at + ": unknown record member");
        }
      }
    }

    byte[] bytesOf(JsonNode w, String field) {
      if (w.isObject() && w.has("record")) {
        IdemRecord o = records.get(w.get("record").asText()).orElseThrow();
        return switch (w.get("field").asText()) {
          case "fingerprint" -> o.fingerprint();
          case "result" -> o.result();
          case "owner" -> o.owner().getBytes(StandardCharsets.UTF_8);
          case "scope" -> o.scope().getBytes(StandardCharsets.UTF_8);
          default -> o.key().getBytes(StandardCharsets.UTF_8);
        };
      }
      return value(w);
    }

    Long field(IdemRecord r, String f) {
      return switch (f) {
        case "fence" -> r.fence();
        case "lease_until_us" -> r.leaseUntil().map(StoreVectors::micros).orElse(null);
        case "expires_at_us" -> micros(r.expiresAt());
        case "lease_to_expiry_ms" -> r.leaseUntil().map(l -> (micros(r.expiresAt()) - micros(l)) / 1000).orElse(null);
        default -> throw new AssertionError("unknown record field " + f);
      };
    }

    void number(Long got, JsonNode want, String where) {
      if (want.isNull()) {
        assertThat(got).as(where + ": absent").isNull();
        return;
      }
      assertThat(got).as(where).isNotNull();
      if (want.isNumber() || want.has("fence") || want.has("record")) {
        assertThat(got).as(where).isEqualTo(fence(want));
        return;
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = want.properties().iterator(); it.hasNext();) {
        Map.Entry<String, JsonNode> e = it.next();
        long v = fence(e.getValue());
        boolean ok = switch (e.getKey()) {
          case "=" -> got == v;
          case "!=" -> got != v;
          case ">" -> got > v;
          case ">=" -> got >= v;
          case "<" -> got < v;
          case "<=" -> got <= v;
          default -> throw new AssertionError(where + ": unknown comparison " + e.getKey());
        };
        assertThat(ok).as(where + ": " + got + " " + e.getKey() + " " + v).isTrue();
      }
    }
  }

  static long micros(Instant i) {
    return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
  }

  /** A scope, key or name that is not UTF-8: the Java API cannot say it; the vector is skipped. */
  static final class NotUtf8 extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    NotUtf8() {
      super("not UTF-8");
    }
  }
}
