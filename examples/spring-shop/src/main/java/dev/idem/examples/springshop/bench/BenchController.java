package dev.idem.examples.springshop.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idem.spring.Idempotent;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * bench/spring/run's three endpoints (with --shop.bench=true), the same work behind each: none,
 * the starter's {@code @Idempotent}, the articles' hand-written {@code @RepeatSubmit}. The work
 * is an id from a counter, so what is measured is what protection adds.
 */
@RestController
@ConditionalOnProperty(name = "shop.bench", havingValue = "true")
public class BenchController {
  private final AtomicLong ids = new AtomicLong(1790000000000000000L);

  public record Created(long id, JsonNode request) {}

  @PostMapping("/bench/plain")
  public ResponseEntity<Created> plain(@RequestBody JsonNode body) {
    return ResponseEntity.status(201).body(new Created(ids.incrementAndGet(), body));
  }

  @PostMapping("/bench/idem")
  @Idempotent(keySpace = "bench", scope = "''")
  public ResponseEntity<Created> idem(@RequestBody JsonNode body) {
    return ResponseEntity.status(201).body(new Created(ids.incrementAndGet(), body));
  }

  @PostMapping("/bench/handwritten")
  @RepeatSubmit
  public ResponseEntity<Created> handwritten(@RequestBody JsonNode body) {
    return ResponseEntity.status(201).body(new Created(ids.incrementAndGet(), body));
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(name = "shop.bench", havingValue = "true")
  static class Aspects {
    @Bean
    RepeatSubmitAspect repeatSubmitAspect(StringRedisTemplate redis) {
      return new RepeatSubmitAspect(redis);
    }
  }
}
