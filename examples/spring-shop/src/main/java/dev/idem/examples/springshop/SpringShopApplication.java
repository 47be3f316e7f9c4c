package dev.idem.examples.springshop;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * The reference shop (examples/shop/README.md, "The shop's HTTP API") as a Spring Boot
 * application, protected by idem-spring-boot-starter alone: no gateway in front of it.
 *
 * <pre>
 * java -jar idem-spring-shop.jar --db=mysql://idem:idem@127.0.0.1:13306/shop --amqp=amqp://guest:guest@127.0.0.1:5672/
 *      [--server.port=9100] [--shop.role=all|web|consumer] [--shop.queue=order.paid]
 *      [--shop.slow-percent=0 --shop.slow-ms=0] [--shop.crash-before-ack=N] [--idem.enabled=false]
 * </pre>
 */
@SpringBootApplication
@EnableScheduling
@EnableConfigurationProperties(ShopProperties.class)
public class SpringShopApplication {
  public static void main(String[] args) {
    SpringApplication app = new SpringApplication(SpringShopApplication.class);
    String[] translated = translate(args);
    for (String a : translated) {
      if (a.equals("--shop.role=consumer")) app.setWebApplicationType(org.springframework.boot.WebApplicationType.NONE);
    }
    ConfigurableApplicationContext context = app.run(translated);
    // SIGTERM: close the context (graceful shutdown), then exit 0 as the reference shop does, so
    // that shop-storm tells a clean stop from a crash (the JVM's own status would be 143).
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      context.close();
      Runtime.getRuntime().halt(0);
    }, "shop-exit"));
  }

  /** The reference shop's --db and --amqp URLs as Spring's properties; the rest as they are. */
  static String[] translate(String[] args) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--crash-before-ack") && i + 1 < args.length) {
        out.add("--shop.crash-before-ack=" + args[++i]);  // the reference consumer's flag, as shop-storm passes it
      } else if (a.startsWith("--db=")) {
        URI u = URI.create(a.substring(5));
        if (!"mysql".equals(u.getScheme()))
          throw new IllegalArgumentException("--db: the Spring shop runs on MySQL/MariaDB: mysql://USER:PASS@HOST[:PORT]/DB");
        String[] user = u.getRawUserInfo() == null ? new String[] {""} : u.getRawUserInfo().split(":", 2);
        out.add("--spring.datasource.url=jdbc:mariadb://" + u.getHost() + ":" + (u.getPort() < 0 ? 3306 : u.getPort())
            + u.getPath());
        out.add("--spring.datasource.username=" + URLDecoder.decode(user[0], StandardCharsets.UTF_8));
        out.add("--spring.datasource.password=" + (user.length > 1 ? URLDecoder.decode(user[1], StandardCharsets.UTF_8) : ""));
      } else if (a.startsWith("--amqp=")) {
        out.add("--spring.rabbitmq.addresses=" + a.substring(7));
      } else {
        out.add(a);
      }
    }
    return out.toArray(String[]::new);
  }
}
