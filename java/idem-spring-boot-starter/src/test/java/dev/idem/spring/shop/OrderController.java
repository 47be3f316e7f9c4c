package dev.idem.spring.shop;

import dev.idem.spring.Idempotent;
import java.net.URI;
import java.security.Principal;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;

@RestController
public class OrderController {
  /** Snowflake-style ids: consecutive 19-digit numbers, which a double cannot tell apart. */
  private static final AtomicLong IDS = new AtomicLong(1790000000000000000L);

  private final Executions executions;

  public OrderController(Executions executions) {
    this.executions = executions;
  }

  public record CreateOrder(String sku, int quantity) {}

  public record OrderView(long id, String sku, int quantity, String user, int execution) {}

  @PostMapping("/orders")
  @Idempotent
  public ResponseEntity<OrderView> create(@RequestBody CreateOrder req, Principal user,
                                          @RequestHeader("Idempotency-Key") String key,
                                          @RequestHeader(value = "X-Delay-Ms", defaultValue = "0") long delayMs,
                                          @RequestHeader(value = "X-Fail", defaultValue = "") String fail) throws InterruptedException {
    String who = user == null ? "" : user.getName();
    int n = executions.add("orders:" + who + ":" + key);
    if (delayMs > 0) Thread.sleep(delayMs);
    if (fail.equals("503")) return ResponseEntity.status(503).build();
    if (fail.equals("throw")) throw new ResponseStatusException(org.springframework.http.HttpStatus.CONFLICT, "out of stock");
    long id = IDS.incrementAndGet();
    return ResponseEntity.created(URI.create("/orders/" + id)).header("X-Shop", "test")
        .body(new OrderView(id, req.sku(), req.quantity(), who, n));
  }

  /** The same, whose earlier attempts' unknown outcomes run again. */
  @PostMapping("/orders-retry")
  @Idempotent(onUncertain = dev.idem.spring.UncertainPolicy.RETRY, waitFor = "3s")
  public OrderView createRetry(@RequestBody CreateOrder req, @RequestHeader("Idempotency-Key") String key) {
    int n = executions.add("orders-retry:" + key);
    return new OrderView(IDS.incrementAndGet(), req.sku(), req.quantity(), "", n);
  }

  /** Held uncertain (the default), waiting long enough for a dead holder's short lease. */
  @PostMapping("/orders-hold")
  @Idempotent(waitFor = "3s")
  public OrderView createHold(@RequestBody CreateOrder req, @RequestHeader("Idempotency-Key") String key) {
    int n = executions.add("orders-hold:" + key);
    return new OrderView(IDS.incrementAndGet(), req.sku(), req.quantity(), "", n);
  }
}
