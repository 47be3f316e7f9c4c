package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.spring.shop.Executions;
import dev.idem.spring.shop.ShopApplication;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Redis goes down (a proxy in front of the real one is cut) and comes back: {@code
 * on-store-error: reject} answers {@code 503 store-unavailable} and runs nothing; {@code pass} runs
 * unprotected and says so; the health indicator is DOWN; once Redis is back, calls are protected
 * again.
 */
@SpringBootTest(classes = ShopApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"idem.store.timeout=1s", "management.endpoint.health.show-details=always",
        "spring.autoconfigure.exclude=org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration,"
            + "org.springframework.boot.autoconfigure.amqp.RabbitAutoConfiguration"})
class StoreDownTest {
  static TcpProxy proxy;

  @BeforeAll
  static void servers() throws Exception {
    Servers.assumeRedis();
    proxy = new TcpProxy(Servers.redis().getHost(), Servers.redis().getPort());
  }

  @AfterAll
  static void stop() throws Exception {
    if (proxy != null) proxy.close();
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.data.redis.host", () -> "127.0.0.1");
    r.add("spring.data.redis.port", () -> proxy.port());
  }

  @LocalServerPort int port;
  @Autowired Executions executions;
  final ObjectMapper json = new ObjectMapper();

  @Test
  void rejectAnswers503PassRunsUnprotectedAndTheStoreComesBack() throws Exception {
    Http http = new Http(port);
    String key = "down-" + UUID.randomUUID(), order = "P-" + UUID.randomUUID();
    assertThat(http.postJson("/orders", "{\"sku\":\"A\",\"quantity\":1}", "Idempotency-Key", "warm-" + key).statusCode())
        .isEqualTo(201);
    proxy.cut();
    try {
      HttpResponse<String> refused = http.postJson("/orders", "{\"sku\":\"A\",\"quantity\":1}", "Idempotency-Key", key);
      assertThat(refused.statusCode()).isEqualTo(503);
      assertThat(json.readTree(refused.body()).get("type").asText()).isEqualTo("urn:idem:problem:store-unavailable");
      assertThat(refused.headers().firstValue("Retry-After")).isPresent();
      assertThat(executions.of("orders::" + key)).isZero();

      HttpResponse<String> passed = http.postJson("/pay-pass", "{\"orderNo\":\"" + order + "\",\"amount\":1}");
      assertThat(passed.statusCode()).isEqualTo(200);
      assertThat(passed.headers().firstValue("Idempotency-Status")).hasValue("unprotected");
      assertThat(executions.of("pay-pass:" + order)).isEqualTo(1);

      assertThat(http.get("/actuator/health").statusCode()).isEqualTo(503);
    } finally {
      proxy.restore();
    }
    // Lettuce reconnects with a backoff; the first protected call after that is protected again.
    HttpResponse<String> back = null;
    long until = System.nanoTime() + 40_000_000_000L;
    while (System.nanoTime() < until) {
      back = http.postJson("/orders", "{\"sku\":\"A\",\"quantity\":1}", "Idempotency-Key", key);
      if (back.statusCode() != 503) break;
      Thread.sleep(200);
    }
    assertThat(back.statusCode()).isEqualTo(201);
    HttpResponse<String> replay = http.postJson("/orders", "{\"sku\":\"A\",\"quantity\":1}", "Idempotency-Key", key);
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(executions.of("orders::" + key)).isEqualTo(1);
  }
}
