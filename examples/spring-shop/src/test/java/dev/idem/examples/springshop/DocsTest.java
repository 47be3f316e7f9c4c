package dev.idem.examples.springshop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Every command docs/spring.md and docs/zh/spring.md show against the Spring shop, run against it:
 * a fresh database on $IDEM_TEST_MYSQL_URL, RabbitMQ on $IDEM_TEST_AMQP_URL (skipped without them),
 * one SKU A-1 (100 at 19.99).
 */
@org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability
@SpringBootTest(classes = SpringShopApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"shop.seed=A-1=100@1999"})
class DocsTest {
  static final String DATABASE = "spring_docs_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  static URI mysql;

  @BeforeAll
  static void servers() throws Exception {
    String m = System.getenv("IDEM_TEST_MYSQL_URL"), a = System.getenv("IDEM_TEST_AMQP_URL");
    assumeTrue(m != null && !m.isEmpty() && a != null && !a.isEmpty(), "IDEM_TEST_MYSQL_URL and IDEM_TEST_AMQP_URL");
    mysql = URI.create(m);
    try (Connection c = DriverManager.getConnection(jdbc(""), user(0), user(1))) {
      c.createStatement().execute("CREATE DATABASE " + DATABASE);
    }
  }

  @AfterAll
  static void drop() throws Exception {
    if (mysql == null) return;
    try (Connection c = DriverManager.getConnection(jdbc(""), user(0), user(1))) {
      c.createStatement().execute("DROP DATABASE IF EXISTS " + DATABASE);
    }
  }

  static String jdbc(String db) {
    return "jdbc:mariadb://" + mysql.getHost() + ":" + mysql.getPort() + "/" + db;
  }

  static String user(int i) {
    String[] u = mysql.getUserInfo().split(":", 2);
    return i < u.length ? u[i] : "";
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> jdbc(DATABASE));
    r.add("spring.datasource.username", () -> user(0));
    r.add("spring.datasource.password", () -> user(1));
    r.add("spring.rabbitmq.addresses", () -> System.getenv("IDEM_TEST_AMQP_URL"));
    r.add("shop.queue", () -> DATABASE + ".order.paid");
  }

  @LocalServerPort int port;

  static Path root() {
    Path p = Path.of(System.getProperty("idem.protocol.dir", "../../protocol")).toAbsolutePath().normalize().getParent();
    return p;
  }

  @Test
  void everyCommandOfTheSpringPagesRuns() throws Exception {
    List<String> failures = new ArrayList<>();
    int ran = 0;
    for (String page : new String[] {"docs/spring.md", "docs/zh/spring.md"}) {
      Path file = root().resolve(page);
      if (!Files.exists(file)) continue;
      Path dir = Files.createTempDirectory("spring-doc-");
      DocPages.Session session = new DocPages.Session(dir, port);
      for (DocPages.Block b : DocPages.blocks(file)) {
        String why = session.run(b);
        ran++;
        if (why != null) failures.add(page + ":" + b.line() + ": " + why);
      }
    }
    assertThat(ran).as("blocks run").isGreaterThan(0);
    assertThat(failures).as(String.join("\n", failures)).isEmpty();
  }
}
