package dev.idem.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idem.client.ControlApiStore;
import dev.idem.client.ExactJson;
import dev.idem.client.GatewayProcess;
import dev.idem.client.StoredRecord;
import dev.idem.core.ClaimRunner;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The examples, run: the orders service behind a real {@code idem serve}, and the consumer. */
class ExamplesTest {
  static GatewayProcess gateway;
  static OrdersService service;
  static final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  static void start() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    gateway = GatewayProcess.start("http://127.0.0.1:" + port,
        "routes:\n"
            + "  - name: create-order\n"
            + "    match: { method: POST, path: /orders }\n"
            + "    key: header:Idempotency-Key\n");
    service = new OrdersService(port, gateway.client());
  }

  @AfterAll
  static void stop() throws Exception {
    if (service != null) service.close();
    if (gateway != null) gateway.close();
  }

  static HttpResponse<String> post(URI base, String path, String key, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(20))
        .header("Content-Type", "application/json").header("X-User-Id", "user-7")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) b.header("Idempotency-Key", key);
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aRepeatedOrderThroughTheGatewayIsCreatedOnceWithItsNineteenDigitId() throws Exception {
    int before = service.ordersCreated();
    String key = UUID.randomUUID().toString();
    HttpResponse<String> first = post(gateway.uri(), "/orders", key, "{\"sku\":\"A-1\",\"qty\":2}");
    assertEquals(201, first.statusCode(), first.body());
    long id = ExactJson.parse(first.body()).get("id").longValue();
    assertEquals(19, Long.toString(id).length(), first.body());
    HttpResponse<String> again = post(gateway.uri(), "/orders", key, "{\"sku\":\"A-1\",\"qty\":2}");
    assertEquals(201, again.statusCode());
    assertEquals(first.body(), again.body(), "replayed byte for byte");
    assertEquals(before + 1, service.ordersCreated());
    // The gateway's record of it, by the key as the route rendered it.
    StoredRecord r = gateway.client().getRecord("", key, "create-order").orElseThrow();
    assertTrue(r.done());
    assertEquals(Optional.of("response"), r.result());
    assertEquals(Optional.of(201), r.responseStatus());
    assertEquals("create-order:" + key, r.key());
    assertEquals(r.key(), gateway.client().getRecord("", "create-order:" + key).orElseThrow().key());
    // Another key is another order; the same key with another body is refused.
    HttpResponse<String> other = post(gateway.uri(), "/orders", UUID.randomUUID().toString(), "{\"sku\":\"A-1\",\"qty\":2}");
    assertNotEquals(first.body(), other.body());
    assertEquals(422, post(gateway.uri(), "/orders", key, "{\"sku\":\"B-2\",\"qty\":1}").statusCode());
    assertEquals(before + 2, service.ordersCreated());
  }

  @Test
  void concurrentRepeatsOfOneOrderCreateOne() throws Exception {
    int before = service.ordersCreated();
    String key = UUID.randomUUID().toString();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    CountDownLatch go = new CountDownLatch(1);
    try {
      List<Future<HttpResponse<String>>> all = new ArrayList<>();
      for (int n = 0; n < 8; n++) all.add(pool.submit(() -> {
        go.await();
        return post(gateway.uri(), "/orders", key, "{\"sku\":\"C-3\",\"qty\":1}");
      }));
      go.countDown();
      Set<String> bodies = new HashSet<>();
      for (Future<HttpResponse<String>> f : all) {
        HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
        assertEquals(201, r.statusCode(), r.body());
        bodies.add(r.body());
      }
      assertEquals(1, bodies.size(), bodies.toString());
    } finally {
      pool.shutdownNow();
    }
    assertEquals(before + 1, service.ordersCreated());
  }

  @Test
  void refundsProtectThemselvesWithIdempotentCall() throws Exception {
    URI direct = URI.create("http://127.0.0.1:" + service.port());
    int before = service.refundsIssued();
    String key = UUID.randomUUID().toString();
    String body = "{\"order\":1790000000000000001,\"amount\":500}";
    HttpResponse<String> first = post(direct, "/refunds", key, body);
    assertEquals(201, first.statusCode(), first.body());
    assertEquals(1790000000000000001L, ExactJson.parse(first.body()).get("order").longValue());
    assertEquals(first.body(), post(direct, "/refunds", key, body).body());
    assertEquals(422, post(direct, "/refunds", key, "{\"order\":1790000000000000001,\"amount\":501}").statusCode());
    assertEquals(400, post(direct, "/refunds", null, body).statusCode());
    assertEquals(before + 1, service.refundsIssued());
  }

  @Test
  void theConsumerGrantsPointsOnceWhateverTheBrokerRedelivers() {
    LoyaltyPointsConsumer.MemoryLedger ledger = new LoyaltyPointsConsumer.MemoryLedger();
    AtomicInteger failures = new AtomicInteger(1);
    LoyaltyPointsConsumer.Ledger flaky = (user, n, fence) -> {
      if (failures.getAndDecrement() > 0) throw new IllegalStateException("ledger down");
      ledger.grant(user, n, fence);
    };
    String group = "loyalty-" + UUID.randomUUID();
    try (ClaimRunner runner = new ClaimRunner(new ControlApiStore(gateway.client()))) {
      LoyaltyPointsConsumer consumer = new LoyaltyPointsConsumer(runner, group, flaky);
      // The first delivery fails (requeued), the redelivery grants, later redeliveries are duplicates.
      assertEquals(LoyaltyPointsConsumer.Verdict.REQUEUE, consumer.onMessage("evt-1", "user-7:100"));
      assertEquals(LoyaltyPointsConsumer.Verdict.ACK, consumer.onMessage("evt-1", "user-7:100"));
      assertEquals(LoyaltyPointsConsumer.Verdict.ACK, consumer.onMessage("evt-1", "user-7:100"));
      assertEquals(LoyaltyPointsConsumer.Verdict.ACK, consumer.onMessage("evt-2", "user-7:5"));
      assertEquals(LoyaltyPointsConsumer.Verdict.DEAD_LETTER, consumer.onMessage("evt-3", "garbage"));
    }
    assertEquals(105, ledger.points("user-7"));
  }

  @Test
  void snowflakeIdsAreNineteenDigitsAndIncrease() {
    SnowflakeIds ids = new SnowflakeIds(1);
    long last = 0;
    for (int n = 0; n < 10_000; n++) {
      long id = ids.next();
      assertTrue(id > last);
      assertEquals(19, Long.toString(id).length());
      last = id;
    }
  }
}
