package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.IdemStore;
import dev.idem.spring.shop.Executions;
import dev.idem.spring.shop.PointsService;
import dev.idem.spring.shop.ShopApplication;
import io.micrometer.core.instrument.MeterRegistry;
import java.math.BigDecimal;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code @Idempotent} on a Spring MVC shop on a real Redis (the application's own connection
 * details): replays, the 32-thread double click, 422, business errors, principals, tokens,
 * uncertain outcomes, metrics and health.
 */
@SpringBootTest(classes = ShopApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"idem.defaults.wait-for=10s", "management.endpoint.health.show-details=always",
        "management.endpoints.web.exposure.include=health",
        "spring.autoconfigure.exclude=org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration,"
            + "org.springframework.boot.autoconfigure.amqp.RabbitAutoConfiguration"})
class WebRedisTest {
  @BeforeAll
  static void servers() {
    Servers.assumeRedis();
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    Servers.register(r, Servers.redisProperties());
  }

  @LocalServerPort int port;
  @Autowired Executions executions;
  @Autowired IdemStore store;
  @Autowired PointsService points;
  @Autowired MeterRegistry meters;
  final ObjectMapper json = new ObjectMapper();
  Http http;

  @BeforeEach
  void client() {
    http = new Http(port);
  }

  static String key() {
    return "k-" + UUID.randomUUID();
  }

  JsonNode body(HttpResponse<String> r) throws Exception {
    return json.readTree(r.body());
  }

  @Test
  void aRepeatIsReplayedWithStatusHeadersAndEveryDigitOfItsId() throws Exception {
    String key = key();
    HttpResponse<String> first = http.postJson("/orders", "{\"sku\":\"A-1\",\"quantity\":2}", "Idempotency-Key", key);
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    long id = body(first).get("id").asLong();
    assertThat(Long.toString(id)).hasSize(19);

    HttpResponse<String> again = http.postJson("/orders", "{\"sku\":\"A-1\",\"quantity\":2}", "Idempotency-Key", key);
    assertThat(again.statusCode()).isEqualTo(201);
    assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(again.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
    assertThat(again.headers().firstValue("X-Shop")).hasValue("test");
    assertThat(again.body()).isEqualTo(first.body());
    assertThat(again.body()).contains("\"id\":" + id);
    assertThat(executions.of("orders::" + key)).isEqualTo(1);
  }

  @Test
  void thirtyTwoDoubleClicksRunOnceAndAllGetTheFirstAnswer() throws Exception {
    String key = key();
    int n = 32;
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<HttpResponse<String>>> answers = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        answers.add(pool.submit(() -> {
          start.await();
          return http.postJson("/orders", "{\"sku\":\"B-2\",\"quantity\":1}", "Idempotency-Key", key, "X-Delay-Ms", "300");
        }));
      }
      start.countDown();
      Set<String> bodies = ConcurrentHashMap.newKeySet();
      int replayed = 0;
      for (Future<HttpResponse<String>> f : answers) {
        HttpResponse<String> r = f.get();
        assertThat(r.statusCode()).isEqualTo(201);
        bodies.add(r.body());
        if (r.headers().firstValue("Idempotent-Replayed").isPresent()) replayed++;
      }
      assertThat(executions.of("orders::" + key)).isEqualTo(1);
      assertThat(bodies).hasSize(1);
      assertThat(replayed).isEqualTo(n - 1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void theSameKeyWithAnotherBodyIs422KeyReused() throws Exception {
    String key = key();
    assertThat(http.postJson("/orders", "{\"sku\":\"A-1\",\"quantity\":1}", "Idempotency-Key", key).statusCode()).isEqualTo(201);
    HttpResponse<String> r = http.postJson("/orders", "{\"sku\":\"A-1\",\"quantity\":9}", "Idempotency-Key", key);
    assertThat(r.statusCode()).isEqualTo(422);
    assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(body(r).get("type").asText()).isEqualTo("urn:idem:problem:key-reused");
    assertThat(body(r).get("retryable").isBoolean()).isTrue();
    assertThat(body(r).get("retryable").asBoolean()).isFalse();
    assertThat(body(r).get("title").asText()).isEqualTo("Idempotency key reused for a different request");
    assertThat(executions.of("orders::" + key)).isEqualTo(1);
  }

  @Test
  void aMissingOrInvalidKeyIs400AndNothingRuns() throws Exception {
    HttpResponse<String> missing = http.postJson("/orders", "{\"sku\":\"A-1\",\"quantity\":1}");
    assertThat(missing.statusCode()).isEqualTo(400);
    HttpResponse<String> invalid = http.postJson("/orders", "{\"sku\":\"A-1\",\"quantity\":1}", "Idempotency-Key", "has space");
    assertThat(invalid.statusCode()).isEqualTo(400);
    assertThat(body(invalid).get("type").asText()).isEqualTo("urn:idem:problem:key-invalid");
    assertThat(body(invalid).get("detail").asText()).contains("at position 3");
  }

  @Test
  void aRepeatWhileTheFirstStillRunsPastTheWaitIs409InProgressWithRetryAfter() throws Exception {
    String key = key();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<HttpResponse<String>> first = pool.submit(() -> http.postJson("/orders-hold",
          "{\"sku\":\"C\",\"quantity\":1}", "Idempotency-Key", key));
      // orders-hold waits 3 s; the first runs 0 s... so hold it with a claim of our own instead:
      first.get();
    } finally {
      pool.shutdownNow();
    }
    String busy = key();
    store.begin(new BeginArgs("", "OrderController.createHold:" + busy, null, Duration.ofSeconds(30), Duration.ofMinutes(5), "other"));
    long t0 = System.nanoTime();
    HttpResponse<String> r = http.postJson("/orders-hold", "{\"sku\":\"C\",\"quantity\":1}", "Idempotency-Key", busy);
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isGreaterThanOrEqualTo(Duration.ofMillis(2900));
    assertThat(r.statusCode()).isEqualTo(409);
    assertThat(body(r).get("type").asText()).isEqualTo("urn:idem:problem:in-progress");
    assertThat(body(r).get("retryable").asBoolean()).isTrue();
    assertThat(Long.parseLong(r.headers().firstValue("Retry-After").orElseThrow())).isBetween(1L, 30L);
    assertThat(executions.of("orders-hold:" + busy)).isZero();
  }

  @Test
  void aBusinessErrorIsNotStoredSoTheRetryRuns() throws Exception {
    String order = "P-" + UUID.randomUUID();
    HttpResponse<String> failed = http.postJson("/pay", "{\"orderNo\":\"" + order + "\",\"amount\":100,\"fail\":true}");
    assertThat(body(failed).get("code").asInt()).isEqualTo(1001);
    HttpResponse<String> ok = http.postJson("/pay", "{\"orderNo\":\"" + order + "\",\"amount\":100,\"fail\":false}");
    assertThat(body(ok).get("code").asInt()).isZero();
    assertThat(body(ok).get("data").asLong()).isEqualTo(2);
    HttpResponse<String> replay = http.postJson("/pay", "{\"orderNo\":\"" + order + "\",\"amount\":100,\"fail\":false}");
    assertThat(replay.body()).isEqualTo(ok.body());
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(executions.of("pay:" + order)).isEqualTo(2);
    // The fingerprint is the chosen fields: another amount under the same order is another request.
    assertThat(http.postJson("/pay", "{\"orderNo\":\"" + order + "\",\"amount\":999,\"fail\":false}").statusCode())
        .isEqualTo(422);
  }

  @Test
  void exceptionsAnd5xxReleaseTheKey() throws Exception {
    String key = key();
    assertThat(http.postJson("/orders", "{\"sku\":\"D\",\"quantity\":1}", "Idempotency-Key", key, "X-Fail", "throw")
        .statusCode()).isEqualTo(409);
    assertThat(http.postJson("/orders", "{\"sku\":\"D\",\"quantity\":1}", "Idempotency-Key", key, "X-Fail", "503")
        .statusCode()).isEqualTo(503);
    HttpResponse<String> ok = http.postJson("/orders", "{\"sku\":\"D\",\"quantity\":1}", "Idempotency-Key", key);
    assertThat(ok.statusCode()).isEqualTo(201);
    assertThat(body(ok).get("execution").asInt()).isEqualTo(3);
  }

  @Test
  void aPrincipalNeverReadsAnothersAnswer() throws Exception {
    String key = key();
    String[] alice = Http.basic("alice", "alice-pw"), bob = Http.basic("bob", "bob-pw");
    HttpResponse<String> a = http.postJson("/orders", "{\"sku\":\"E\",\"quantity\":1}", Http.concat(alice, "Idempotency-Key", key));
    HttpResponse<String> b = http.postJson("/orders", "{\"sku\":\"E\",\"quantity\":1}", Http.concat(bob, "Idempotency-Key", key));
    HttpResponse<String> anonymous = http.postJson("/orders", "{\"sku\":\"E\",\"quantity\":1}", "Idempotency-Key", key);
    assertThat(body(a).get("user").asText()).isEqualTo("alice");
    assertThat(body(b).get("user").asText()).isEqualTo("bob");
    assertThat(body(anonymous).get("user").asText()).isEmpty();
    assertThat(b.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(body(b).get("id").asLong()).isNotEqualTo(body(a).get("id").asLong());
    HttpResponse<String> aliceAgain = http.postJson("/orders", "{\"sku\":\"E\",\"quantity\":1}",
        Http.concat(alice, "Idempotency-Key", key));
    assertThat(aliceAgain.body()).isEqualTo(a.body());
    assertThat(store.get("alice", "OrderController.create:" + key)).isPresent();
    assertThat(store.get("bob", "OrderController.create:" + key)).isPresent();
  }

  @Test
  void aClaimWhoseHolderDiedIsHeldUncertainUnderHoldAndRunsAgainUnderRetry() throws Exception {
    String held = key(), retried = key();
    BeginOutcome b1 = store.begin(new BeginArgs("", "OrderController.createHold:" + held, null, Duration.ofMillis(500),
        Duration.ofMinutes(5), "a-process-that-died"));
    BeginOutcome b2 = store.begin(new BeginArgs("", "OrderController.createRetry:" + retried, null, Duration.ofMillis(500),
        Duration.ofMinutes(5), "a-process-that-died"));
    assertThat(b1).isInstanceOf(BeginOutcome.Acquired.class);
    assertThat(b2).isInstanceOf(BeginOutcome.Acquired.class);

    HttpResponse<String> hold = http.postJson("/orders-hold", "{\"sku\":\"F\",\"quantity\":1}", "Idempotency-Key", held);
    assertThat(hold.statusCode()).isEqualTo(409);
    assertThat(body(hold).get("type").asText()).isEqualTo("urn:idem:problem:outcome-uncertain");
    assertThat(http.postJson("/orders-hold", "{\"sku\":\"F\",\"quantity\":1}", "Idempotency-Key", held).statusCode())
        .isEqualTo(409);
    assertThat(executions.of("orders-hold:" + held)).isZero();

    HttpResponse<String> retry = http.postJson("/orders-retry", "{\"sku\":\"F\",\"quantity\":1}", "Idempotency-Key", retried);
    assertThat(retry.statusCode()).isEqualTo(200);
    assertThat(executions.of("orders-retry:" + retried)).isEqualTo(1);
  }

  @Test
  void aServiceMethodIsKeyedByItsArguments() {
    String order = "O-" + UUID.randomUUID();
    long first = points.grant(order, new PointsService.Grant("alice", new BigDecimal("88.00")));
    long again = points.grant(order, new PointsService.Grant("alice", new BigDecimal("88.00")));
    assertThat(first).isEqualTo(1);
    assertThat(again).isEqualTo(1);
    assertThat(executions.of("points:" + order)).isEqualTo(1);
    long fence = points.fence(order);
    assertThat(fence).isPositive();
    assertThat(points.fence(order)).isEqualTo(fence);  // replayed: the first run's
    assertThat(dev.idem.spring.IdempotentContext.current()).isEmpty();
    org.assertj.core.api.Assertions.assertThatThrownBy(
        () -> points.grant(order, new PointsService.Grant("bob", new BigDecimal("88.00"))))
        .isInstanceOf(dev.idem.core.KeyReusedException.class);
  }

  @Test
  void tokensAreBoundToTheirUserConsumedOnceAndReArmedWhenTheWorkFails() throws Exception {
    String[] alice = Http.basic("alice", "alice-pw"), bob = Http.basic("bob", "bob-pw");
    HttpResponse<String> issued = http.send(http.request("/_idem/tokens", alice)
        .POST(java.net.http.HttpRequest.BodyPublishers.noBody()).build());
    assertThat(issued.statusCode()).isEqualTo(201);
    assertThat(issued.headers().firstValue("Cache-Control")).hasValue("no-store");
    String token = body(issued).get("token").asText();
    assertThat(body(issued).get("expires_in").asLong()).isEqualTo(600);

    // Another user cannot spend it.
    HttpResponse<String> stolen = http.postForm("/contact", Map.of("name", "Li", "_idem_token", token), bob);
    assertThat(stolen.statusCode()).isEqualTo(400);
    assertThat(body(stolen).get("type").asText()).isEqualTo("urn:idem:problem:token-invalid");

    // The work fails: the token is re-armed, and the user submits again with it.
    HttpResponse<String> failed = http.postForm("/contact", Map.of("name", "fail", "_idem_token", token), alice);
    assertThat(failed.statusCode()).isEqualTo(500);

    // A triple click: one execution, one answer.
    int n = 3;
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(n);
    List<Future<HttpResponse<String>>> answers = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      answers.add(pool.submit(() -> {
        start.await();
        return http.postForm("/contact", Map.of("name", "Li", "_idem_token", token), alice);
      }));
    }
    start.countDown();
    Set<String> bodies = ConcurrentHashMap.newKeySet();
    for (Future<HttpResponse<String>> f : answers) {
      HttpResponse<String> r = f.get();
      assertThat(r.statusCode()).isEqualTo(200);
      bodies.add(r.body());
    }
    pool.shutdownNow();
    assertThat(bodies).hasSize(1);
    assertThat(executions.of("contact:" + token)).isEqualTo(2);  // the failed run, then one

    HttpResponse<String> missing = http.postForm("/contact", Map.of("name", "Li"), alice);
    assertThat(missing.statusCode()).isEqualTo(400);
    HttpResponse<String> madeUp = http.postForm("/contact", Map.of("name", "Li", "_idem_token", "made-up"), alice);
    assertThat(body(madeUp).get("type").asText()).isEqualTo("urn:idem:problem:token-invalid");
  }

  @Test
  void theThymeleafPageCarriesAToken() throws Exception {
    String[] alice = Http.basic("alice", "alice-pw");
    HttpResponse<String> page = http.get("/contact", alice);
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("name=\"_idem_token\" value=\"([^\"]+)\"").matcher(page.body());
    assertThat(m.find()).isTrue();
    HttpResponse<String> sent = http.postForm("/contact", Map.of("name", "Wang", "_idem_token", m.group(1)), alice);
    assertThat(sent.statusCode()).isEqualTo(200);
    assertThat(http.get("/idem/idem.js").statusCode()).isEqualTo(200);
  }

  @Test
  void metricsAndHealth() throws Exception {
    String key = key();
    http.postJson("/orders", "{\"sku\":\"G\",\"quantity\":1}", "Idempotency-Key", key);
    http.postJson("/orders", "{\"sku\":\"G\",\"quantity\":1}", "Idempotency-Key", key);
    assertThat(meters.get("idem.requests").tag("route", "OrderController.create").tag("outcome", "replayed").counter()
        .count()).isGreaterThanOrEqualTo(1);
    assertThat(meters.get("idem.store").tag("op", "begin").timer().count()).isGreaterThanOrEqualTo(2);
    HttpResponse<String> health = http.get("/actuator/health");
    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(body(health).at("/components/idem/status").asText()).isEqualTo("UP");
    assertThat(body(health).at("/components/idem/details/store").asText()).isEqualTo("redis");
  }
}
