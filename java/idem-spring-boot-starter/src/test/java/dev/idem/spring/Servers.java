package dev.idem.spring;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * The test servers scripts/services runs ($IDEM_TEST_REDIS_URL, $IDEM_TEST_MYSQL_URL,
 * $IDEM_TEST_AMQP_URL), as Spring Boot properties; a test class whose server is not there is
 * skipped (a JUnit assumption, in its @BeforeAll: before its context is made).
 */
public final class Servers {
  private Servers() {}

  public static String env(String name) {
    String v = System.getenv(name);
    return v == null || v.isEmpty() ? null : v;
  }

  public static void assumeRedis() {
    assumeTrue(env("IDEM_TEST_REDIS_URL") != null, "IDEM_TEST_REDIS_URL is not set");
  }

  public static void assumeMysql() {
    assumeTrue(env("IDEM_TEST_MYSQL_URL") != null, "IDEM_TEST_MYSQL_URL is not set");
  }

  public static void assumeAmqp() {
    assumeTrue(env("IDEM_TEST_AMQP_URL") != null, "IDEM_TEST_AMQP_URL is not set");
  }

  public static URI redis() {
    return URI.create(env("IDEM_TEST_REDIS_URL"));
  }

  public static Map<String, String> redisProperties() {
    Map<String, String> p = new LinkedHashMap<>();
    URI u = redis();
    p.put("spring.data.redis.host", u.getHost());
    p.put("spring.data.redis.port", Integer.toString(u.getPort()));
    return p;
  }

  public static Map<String, String> mysqlProperties() {
    Map<String, String> p = new LinkedHashMap<>();
    URI u = URI.create(env("IDEM_TEST_MYSQL_URL"));
    String[] user = u.getUserInfo().split(":", 2);
    p.put("spring.datasource.url", "jdbc:mariadb://" + u.getHost() + ":" + u.getPort() + u.getPath());
    p.put("spring.datasource.username", user[0]);
    p.put("spring.datasource.password", user.length > 1 ? user[1] : "");
    p.put("spring.datasource.hikari.transaction-isolation", "TRANSACTION_READ_COMMITTED");
    p.put("spring.datasource.hikari.maximum-pool-size", "40");
    return p;
  }

  public static Map<String, String> amqpProperties() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("spring.rabbitmq.addresses", env("IDEM_TEST_AMQP_URL"));
    return p;
  }

  /** Registers {@code props} when the server is there (the class is skipped otherwise). */
  public static void register(DynamicPropertyRegistry registry, Map<String, String> props) {
    props.forEach((k, v) -> registry.add(k, () -> v));
  }
}
