package dev.idem.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.BooleanNode;
import com.sun.net.httpserver.HttpExchange;
import dev.idem.core.CallOutcome;
import dev.idem.core.ClaimRunner;
import dev.idem.core.IdempotentCall;
import dev.idem.core.ResultCodec;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the client makes of answers a real gateway gives only when its store fails (503
 * store-unavailable, 504 store-timeout) or that no gateway gives (garbage, silence): a
 * tiny local server plays the admin listener. Everything else is tested against the real one.
 */
class StatusMappingTest {
  record Reply(int status, String body, Map<String, String> headers) {}

  HttpServer server;
  final Map<String, java.util.function.Function<String, Reply>> routes = new ConcurrentHashMap<>();
  final List<String> requests = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", this::serve);
    server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  void serve(HttpExchange ex) throws IOException {
    String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
    String path = ex.getRequestURI().getPath();
    requests.add(ex.getRequestMethod() + " " + path + " " + body);
    var route = routes.get(path);
    Reply r = route == null ? new Reply(404, "{}", Map.of()) : route.apply(body);
    if (r == null) return;  // never answer (the client's timeout)
    byte[] bytes = r.body().getBytes(StandardCharsets.UTF_8);
    r.headers().forEach((k, v) -> ex.getResponseHeaders().add(k, v));
    ex.sendResponseHeaders(r.status(), bytes.length == 0 ? -1 : bytes.length);
    if (bytes.length > 0) ex.getResponseBody().write(bytes);
    ex.close();
  }

  Idem client() {
    return client(Duration.ofSeconds(5));
  }

  Idem client(Duration timeout) {
    return Idem.builder().baseUri("http://127.0.0.1:" + server.getAddress().getPort()).token("t")
        .requestTimeout(timeout).build();
  }

  static Reply problem(int status, String type, Map<String, String> headers) {
    return new Reply(status, "{\"type\":\"urn:idem:problem:" + type + "\",\"title\":\"t\",\"status\":" + status
        + ",\"detail\":\"the idempotency store is " + type + "\"}", headers);
  }

  static Reply ok(String body) {
    return new Reply(200, body, Map.of("Content-Type", "application/json"));
  }

  @Test
  void storeUnavailableIsNotAppliedWithItsRetryAfter() {
    routes.put("/v1/commit", b -> problem(503, "store-unavailable", Map.of("Retry-After", "7")));
    StoreUnavailableException e = assertThrows(StoreUnavailableException.class,
        () -> client().commit("s", "k", 5, BooleanNode.TRUE));
    assertInstanceOf(NotAppliedException.class, e);
    assertEquals(Duration.ofSeconds(7), e.retryAfter());
    assertEquals(503, e.status());
    assertTrue(e.getMessage().contains("store-unavailable") || e.getMessage().contains("unavailable"), e.getMessage());
    // Without a readable Retry-After: one second.
    routes.put("/v1/begin", b -> problem(503, "store-unavailable", Map.of("Retry-After", "soon")));
    assertEquals(Duration.ofSeconds(1),
        assertThrows(StoreUnavailableException.class, () -> client().begin("s", "k", null)).retryAfter());
  }

  @Test
  void storeTimeoutIsOutcomeUnknown() {
    routes.put("/v1/release", b -> problem(504, "store-timeout", Map.of()));
    OutcomeUnknownException e = assertThrows(OutcomeUnknownException.class, () -> client().release("s", "k", 5));
    assertEquals(504, e.status());
  }

  @Test
  void answersThatAreNotTheGatewaysAreNeverTakenForNotApplied() {
    // A 503 from something in between (no problem type of ours): it may have been applied.
    routes.put("/v1/tokens/consume", b -> new Reply(503, "<html>busy</html>", Map.of()));
    assertThrows(OutcomeUnknownException.class, () -> client().consumeToken("s", "t"));
    routes.put("/v1/begin", b -> new Reply(502, "", Map.of()));
    assertThrows(OutcomeUnknownException.class, () -> client().begin("s", "k", null));
    routes.put("/v1/locks/acquire", b -> ok("{\"outcome\":\"locked\"}"));  // no fence
    assertThrows(ProtocolException.class, () -> client().acquireLock("l", "o", Duration.ofSeconds(1)));
    routes.put("/v1/begin", b -> ok("{\"outcome\":\"acquired\",\"fence\":0,\"recovered\":false}"));
    assertThrows(ProtocolException.class, () -> client().begin("s", "k", null));
    routes.put("/v1/locks/release", b -> ok("{\"outcome\":\"exploded\"}"));
    assertThrows(ProtocolException.class, () -> client().releaseLock("l", "o"));
    routes.put("/v1/extend", b -> ok("not json"));
    assertThrows(ProtocolException.class, () -> client().extend("s", "k", 1, Duration.ofSeconds(1)));
    routes.put("/v1/tokens", b -> ok("{\"token\":\"a\",\"token\":\"b\"}"));  // which one?
    assertThrows(ProtocolException.class, () -> client().issueToken("s", null));
    // fenced only means something where the operation has it.
    routes.put("/v1/tokens/restore", b -> new Reply(409, "{\"outcome\":\"fenced\"}", Map.of()));
    assertThrows(ProtocolException.class, () -> client().restoreToken("s", "t", null));
    routes.put("/v1/begin", b -> new Reply(200, "x".repeat(4096), Map.of()));
    Idem small = Idem.builder().baseUri("http://127.0.0.1:" + server.getAddress().getPort()).maxResponseBytes(1024).build();
    ProtocolException tooLong = assertThrows(ProtocolException.class, () -> small.begin("s", "k", null));
    assertTrue(tooLong.getMessage().contains("longer"), tooLong.getMessage());
    assertEquals(200, tooLong.status());
  }

  @Test
  void noAnswerInTimeIsOutcomeUnknown() {
    routes.put("/v1/commit", b -> null);
    OutcomeUnknownException e = assertThrows(OutcomeUnknownException.class,
        () -> client(Duration.ofMillis(300)).commit("s", "k", 5, BooleanNode.TRUE));
    assertEquals(0, e.status());
  }

  @Test
  void anAnswerThatStallsMidBodyIsOutcomeUnknownInTime() throws Exception {
    CountDownLatch unblock = new CountDownLatch(1);
    server.createContext("/v1/locks/extend", ex -> {
      ex.sendResponseHeaders(200, 100);
      ex.getResponseBody().write("{\"outcome\"".getBytes(StandardCharsets.UTF_8));
      ex.getResponseBody().flush();
      try {
        unblock.await(20, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      ex.close();
    });
    try {
      long t0 = System.nanoTime();
      assertThrows(OutcomeUnknownException.class, () -> client(Duration.ofMillis(400)).extendLock("l", "o", Duration.ofSeconds(1)));
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(ms < 5000, ms + " ms");
    } finally {
      unblock.countDown();
    }
  }

  @Test
  void theRequestIsTheControlApisJson() {
    routes.put("/v1/begin", b -> ok("{\"outcome\":\"acquired\",\"fence\":1790000000000000001,\"recovered\":false}"));
    BeginOutcome.Acquired a = (BeginOutcome.Acquired) client().begin("s", "k\"\n", "fp", Duration.ofNanos(1_500_000), Duration.ofHours(1));
    assertEquals(1790000000000000001L, a.fence());
    assertEquals("POST /v1/begin {\"scope\":\"s\",\"key\":\"k\\\"\\n\",\"fingerprint\":\"fp\",\"lease_ms\":2,\"retention_ms\":3600000}",
        requests.get(0));
  }

  // The engine's claim runner on this client (ControlApiStore): what it makes of the same answers.

  ClaimRunner runner(CountDownLatch settled) {
    return new ClaimRunner(new ControlApiStore(client()), ClaimRunner.Limits.defaults(),
        new ClaimRunner.Hooks((scope, key) -> settled.countDown(), () -> {}));
  }

  @Test
  void aCommitThatFailsAfterTheWorkRanIsRetriedInTheBackground() throws Exception {
    AtomicInteger commits = new AtomicInteger();
    CountDownLatch committed = new CountDownLatch(1);
    routes.put("/v1/begin", b -> ok("{\"outcome\":\"acquired\",\"fence\":77,\"recovered\":false}"));
    routes.put("/v1/commit", b -> {
      int n = commits.incrementAndGet();
      if (n == 1) return problem(504, "store-timeout", Map.of());
      if (n == 2) return problem(503, "store-unavailable", Map.of("Retry-After", "1"));
      committed.countDown();
      return ok("{\"outcome\":\"committed\"}");
    });
    try (ClaimRunner runner = runner(new CountDownLatch(1))) {
      IdempotentCall<String> call = IdempotentCall.builder(runner, ResultCodec.strings()).renew(false).build();
      CallOutcome<String> r = call.execute("s", "k", "", a -> "the result");
      if (!(r instanceof CallOutcome.Executed<String> e)) throw new AssertionError("expected Executed, got " + r);
      assertEquals("the result", e.value());
      assertFalse(e.stored());
      assertFalse(e.claimLost());
      assertInstanceOf(dev.idem.core.OutcomeUnknownException.class, e.storeError().orElseThrow());
      assertTrue(committed.await(10, TimeUnit.SECONDS), "the commit was retried until it was answered");
    }
    assertEquals(3, commits.get());
    // Each retry was the same commit: same fence, same result, as the gateway stores it.
    List<String> sent = requests.stream().filter(s -> s.startsWith("POST /v1/commit")).toList();
    assertEquals(3, sent.size());
    assertTrue(sent.stream().allMatch(s -> s.equals(sent.get(0))), sent.toString());
    assertTrue(sent.get(0).contains("\"fence\":77") && sent.get(0).contains("\"result\":\"the result\""), sent.get(0));
  }

  @Test
  void aBeginThatFailsRunsNothingAndAClaimItMayHaveMadeIsGivenBackByItsOwner() throws Exception {
    routes.put("/v1/begin", b -> problem(503, "store-unavailable", Map.of("Retry-After", "2")));
    AtomicInteger ran = new AtomicInteger();
    CountDownLatch settled = new CountDownLatch(1);
    try (ClaimRunner runner = runner(settled)) {
      IdempotentCall<String> call = IdempotentCall.builder(runner, ResultCodec.strings()).build();
      assertThrows(dev.idem.core.StoreUnavailableException.class, () -> call.run("s", "k", "", () -> "x" + ran.incrementAndGet()));
      routes.put("/v1/begin", b -> problem(504, "store-timeout", Map.of()));
      routes.put("/v1/abandon", b -> ok("{\"outcome\":\"released\"}"));
      assertThrows(dev.idem.core.OutcomeUnknownException.class, () -> call.run("s", "k", "", () -> "x" + ran.incrementAndGet()));
      assertTrue(settled.await(10, TimeUnit.SECONDS), "the claim the lost begin may have made was given back");
    }
    assertEquals(0, ran.get());
    // Nothing but begins, and after the begin that may have claimed the key, an abandon by
    // the owner that begin named.
    List<String> others = requests.stream().filter(s -> !s.startsWith("POST /v1/begin")).toList();
    assertEquals(1, others.size(), others.toString());
    assertTrue(others.get(0).startsWith("POST /v1/abandon "), others.get(0));
    String owner = ExactJson.parse(requests.get(1).substring("POST /v1/begin ".length())).get("owner").textValue();
    assertEquals(owner, ExactJson.parse(others.get(0).substring("POST /v1/abandon ".length())).get("owner").textValue());
    assertTrue(ExactJson.parse(requests.get(0).substring("POST /v1/begin ".length())).has("owner"));
  }

  @Test
  void aFailedReleaseIsRetriedSoTheKeyIsFreedEventually() throws Exception {
    CountDownLatch released = new CountDownLatch(1);
    AtomicInteger releases = new AtomicInteger();
    routes.put("/v1/begin", b -> ok("{\"outcome\":\"acquired\",\"fence\":9,\"recovered\":false}"));
    routes.put("/v1/release", b -> {
      if (releases.incrementAndGet() == 1) return problem(503, "store-unavailable", Map.of("Retry-After", "1"));
      released.countDown();
      return ok("{\"outcome\":\"released\"}");
    });
    try (ClaimRunner runner = runner(new CountDownLatch(1))) {
      IdempotentCall<String> call = IdempotentCall.builder(runner, ResultCodec.strings()).renew(false).build();
      RuntimeException boom = new RuntimeException("boom");
      assertEquals(boom, assertThrows(RuntimeException.class, () -> call.run("s", "k", "", () -> {
        throw boom;
      })));
      assertTrue(released.await(10, TimeUnit.SECONDS));
    }
  }
}
