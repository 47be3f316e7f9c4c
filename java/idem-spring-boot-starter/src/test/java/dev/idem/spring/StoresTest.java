package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idem.core.IdemStore;
import java.io.File;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The store from each of the application's sources, on the real servers: a Redis Cluster named
 * by spring.data.redis.cluster.nodes, an idem store URI, and the control API of a running idem
 * serve ($IDEM_BIN). An annotated bean runs once on each.
 */
class StoresTest {
  final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, RedisAutoConfiguration.class,
          IdemAutoConfiguration.class))
      .withUserConfiguration(WithCounter.class);

  static class Counter {
    final AtomicInteger runs = new AtomicInteger();

    @Idempotent(key = "#id")
    public int once(String id) {
      return runs.incrementAndGet();
    }

    public int runs() {
      return runs.get();  // through the proxy: its own fields are not the bean's
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class WithCounter {
    @Bean
    Counter counter() {
      return new Counter();
    }
  }

  static void runsOnce(org.springframework.context.ApplicationContext ctx, String store) {
    assertThat(ctx.getBean(IdemStore.class).traits().name()).isEqualTo(store);
    Counter c = ctx.getBean(Counter.class);
    String id = "s-" + UUID.randomUUID();
    assertThat(c.once(id)).isEqualTo(1);
    assertThat(c.once(id)).isEqualTo(1);
    assertThat(c.runs()).isEqualTo(1);
  }

  @Test
  void theApplicationsRedisCluster() {
    String url = Servers.env("IDEM_TEST_REDIS_CLUSTER_URL");
    assumeTrue(url != null, "IDEM_TEST_REDIS_CLUSTER_URL is not set");
    String nodes = url.substring("redis-cluster://".length());
    runner.withPropertyValues("spring.data.redis.cluster.nodes=" + nodes).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      runsOnce(ctx, "redis-cluster");
    });
  }

  @Test
  void anIdemStoreUri() {
    Servers.assumeRedis();
    runner.withPropertyValues("idem.store.uri=" + Servers.redis() + "?prefix=idem-spring-uri:").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      runsOnce(ctx, "redis");
    });
  }

  @Test
  void theControlApiOfARunningIdemServe() throws Exception {
    String bin = System.getProperty("idem.bin", System.getenv("IDEM_BIN"));
    assumeTrue(bin != null && !bin.isEmpty() && new File(bin).canExecute(), "IDEM_BIN names no idem binary");
    Path dir = Files.createTempDirectory("idem-spring-serve");
    int admin;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      admin = s.getLocalPort();
    }
    int listen;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      listen = s.getLocalPort();
    }
    Files.writeString(dir.resolve("idem.yaml"), "listen: 127.0.0.1:" + listen + "\nupstream: http://127.0.0.1:9\n"
        + "store: \"sqlite:" + dir.resolve("idem.db") + "\"\nadmin:\n  listen: 127.0.0.1:" + admin
        + "\n  token_env: IDEM_SPRING_TEST_TOKEN\n");
    ProcessBuilder pb = new ProcessBuilder(bin, "serve", "--config", dir.resolve("idem.yaml").toString())
        .redirectErrorStream(true).redirectOutput(dir.resolve("idem.log").toFile());
    pb.environment().put("IDEM_SPRING_TEST_TOKEN", "spring-test-token");
    Process p = pb.start();
    try {
      HttpClient http = HttpClient.newHttpClient();
      long until = System.nanoTime() + 15_000_000_000L;
      boolean up = false;
      while (!up && System.nanoTime() < until && p.isAlive()) {
        try {
          up = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/healthz")).build(),
              HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (java.io.IOException e) {
          Thread.sleep(20);
        }
      }
      assertThat(up).as("idem serve came up: " + Files.readString(dir.resolve("idem.log"))).isTrue();
      runner.withPropertyValues("idem.store.control-api.base-uri=http://127.0.0.1:" + admin,
          "idem.store.control-api.token=spring-test-token").run(ctx -> {
            assertThat(ctx).hasNotFailed();
            runsOnce(ctx, "control-api");
          });
    } finally {
      p.destroy();
      p.waitFor();
    }
  }
}
