package dev.idem.examples.springshop;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idem.core.Attempt;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentContext;
import java.net.URI;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * Orders and stock. Each defence of the reference shop, with idem's in front of it: a one-time
 * token per checkout (double clicks and retries: one execution, identical replays), the unique
 * key (user, sku, event) for two devices with two tokens, a key per deduction whose fence the
 * stock log checks (a re-run after a crash deducts nothing twice), the optimistic version for
 * concurrent deductions.
 */
@RestController
@ConditionalOnExpression("'${shop.role:all}' != 'consumer'")
public class OrdersController {
  /** Snowflake-sized, consecutive: neighbours differ in the last digits only (examples/shop/README.md). */
  static final long FIRST_ORDER_ID = 1790000000000000001L;

  private final Db db;
  private final ShopProperties props;

  public OrdersController(Db db, ShopProperties props) {
    this.db = db;
    this.props = props;
  }

  /** An order as the shop answers it, its fields in the reference shop's order. */
  public record Order(String order_no, long order_id, String biz_no, String user_id, String sku_id, String event_id,
                      long quantity, long amount, String status) {}

  static final String ORDER_COLUMNS =
      "SELECT order_no, order_id, biz_no, user_id, sku_id, event_id, quantity, amount, status FROM t_order ";

  Order order(java.sql.ResultSet r) throws java.sql.SQLException {
    return new Order(r.getString(1), r.getLong(2), r.getString(3), r.getString(4), r.getString(5), r.getString(6),
        r.getLong(7), r.getLong(8), r.getString(9));
  }

  private static String text(JsonNode body, String name) {
    JsonNode v = body == null ? null : body.get(name);
    if (v == null || !v.isTextual() || v.asText().isEmpty() || v.asText().length() > 128)
      throw new BadRequest("\"" + name + "\" must be a string of 1 to 128 characters");
    return v.asText();
  }

  private static long quantity(JsonNode body) {
    JsonNode v = body.get("quantity");
    if (v == null || !v.canConvertToLong() || !v.isIntegralNumber() || v.asLong() < 1 || v.asLong() > 100)
      throw new BadRequest("\"quantity\" must be an integer from 1 to 100");
    return v.asLong();
  }

  /** A body the shop refuses: 400 bad-request. */
  static final class BadRequest extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BadRequest(String detail) {
      super(detail);
    }
  }

  /** One checkout: one order per one-time token (X-User-Id's), whatever the clicks and retries. */
  @PostMapping("/orders")
  @Idempotent(token = true)
  public ResponseEntity<Object> create(@RequestBody JsonNode body) {
    if (body == null || !body.isObject()) return ShopProblem.badRequest("the body is not a JSON object");
    String user, sku, event;
    long quantity;
    try {
      user = text(body, "user_id");
      sku = text(body, "sku_id");
      event = text(body, "event_id");
      quantity = quantity(body);
    } catch (BadRequest e) {
      return ShopProblem.badRequest(e.getMessage());
    }
    ResponseEntity<Object> reply = db.inTransaction(() -> {
      List<Long> price = db.jdbc.queryForList("SELECT price FROM t_sku WHERE sku_id = ?", Long.class, sku);
      if (price.isEmpty()) return ShopProblem.of(404, "unknown-sku", "Unknown SKU", "no SKU " + sku);
      String orderNo = Db.randomId(20);
      long orderId = nextOrderId();
      long now = Db.nowMicros();
      // The unique key (user, sku, event) answers a second submission of one purchase (two devices)
      // with the first order. A plain INSERT whose duplicate is caught: the connection counts rows
      // found, not changed (idem's JDBC store needs that), so ON DUPLICATE KEY UPDATE would count a
      // duplicate as an insert; and on MySQL a failed statement leaves the transaction usable.
      boolean inserted;
      try {
        inserted = db.jdbc.update("INSERT INTO t_order (order_no, order_id, biz_no, user_id, sku_id, event_id, "
            + "quantity, amount, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'CREATED', ?)", orderNo, orderId,
            bizNo(orderId, now), user, sku, event, quantity, price.get(0) * quantity, now) == 1;
      } catch (DuplicateKeyException e) {
        inserted = false;
      }
      List<Order> rows = inserted
          ? db.jdbc.query(ORDER_COLUMNS + "WHERE order_no = ?", (r, i) -> order(r), orderNo)
          : db.jdbc.query(ORDER_COLUMNS + "WHERE user_id = ? AND sku_id = ? AND event_id = ?", (r, i) -> order(r),
              user, sku, event);
      if (rows.isEmpty()) throw new IllegalStateException("order vanished after its insert");
      if (!inserted) {
        db.count("orders.unique_key");
        return ResponseEntity.ok(rows.get(0));
      }
      return ResponseEntity.created(URI.create("/orders/" + orderNo)).body(rows.get(0));
    });
    if (reply.getStatusCode().is2xxSuccessful()) maybeSlow();
    return reply;
  }

  /** The next order id, in the caller's transaction (LAST_INSERT_ID keeps it for the session). */
  private long nextOrderId() {
    db.jdbc.update("INSERT INTO t_sequence (name, n) VALUES ('order_id', LAST_INSERT_ID(?)) "
        + "ON DUPLICATE KEY UPDATE n = LAST_INSERT_ID(n + 1)", FIRST_ORDER_ID);
    return db.jdbc.queryForObject("SELECT LAST_INSERT_ID()", Long.class);
  }

  /** 订单, the day (UTC) and the last ten digits of the id: 订单202401010000000042. */
  static String bizNo(long orderId, long nowMicros) {
    var day = Instant.ofEpochSecond(nowMicros / 1_000_000).atZone(ZoneOffset.UTC).toLocalDate();
    return String.format("订单%04d%02d%02d%010d", day.getYear(), day.getMonthValue(), day.getDayOfMonth(),
        orderId % 10_000_000_000L);
  }

  @GetMapping("/orders/{orderNo}")
  public ResponseEntity<Object> get(@PathVariable String orderNo) {
    List<Order> rows = db.jdbc.query(ORDER_COLUMNS + "WHERE order_no = ?", (r, i) -> order(r), orderNo);
    if (rows.isEmpty()) return ShopProblem.of(404, "unknown-order", "Unknown order", "no order " + orderNo);
    return ResponseEntity.ok(rows.get(0));
  }

  public record Sku(String sku_id, long stock, long version, long price) {}

  @GetMapping("/skus/{sku}")
  public ResponseEntity<Object> sku(@PathVariable String sku) {
    List<Sku> rows = db.jdbc.query("SELECT sku_id, stock, version, price FROM t_sku WHERE sku_id = ?",
        (r, i) -> new Sku(r.getString(1), r.getLong(2), r.getLong(3), r.getLong(4)), sku);
    if (rows.isEmpty()) return ShopProblem.of(404, "unknown-sku", "Unknown SKU", "no SKU " + sku);
    return ResponseEntity.ok(rows.get(0));
  }

  public record Deducted(String sku_id, String order_no, long quantity, long stock_after) {}

  /**
   * One deduction per order, whatever the retries: the key is the order number; the method runs
   * under the claim's fence, which the stock log records, so an attempt re-run after a crash finds
   * the earlier one's row (and answers its result) and a zombie finds a newer fence (409 fenced).
   */
  @PostMapping("/skus/{sku}/deduct")
  @Idempotent(keySpace = "deduct-stock", key = "#body.get('order_no').asText()", scope = "''")
  public ResponseEntity<Object> deduct(@PathVariable String sku, @RequestBody JsonNode body) {
    String orderNo;
    long quantity;
    try {
      orderNo = text(body, "order_no");
      quantity = quantity(body);
    } catch (BadRequest e) {
      return ShopProblem.badRequest(e.getMessage());
    }
    Optional<Attempt> claim = IdempotentContext.current();  // empty when idem is switched off
    for (int i = 0; i < 10; i++) {
      ResponseEntity<Object> reply;
      try {
        reply = db.inTransaction(() -> deductOnce(sku, orderNo, quantity, claim));
      } catch (DuplicateKeyException e) {
        continue;  // two holders of one key logged at once: the next attempt reads the winner's row
      }
      if (reply == null) {
        sleepQuietly(ThreadLocalRandom.current().nextInt(1, 8 << Math.min(i, 3)));
        continue;
      }
      if (reply.getStatusCode().is2xxSuccessful()) maybeSlow();
      return reply;
    }
    return ShopProblem.retryLater(503, "contention", "Too many concurrent deductions",
        "the stock of " + sku + " changed 10 times during this deduction");
  }

  private ResponseEntity<Object> deductOnce(String sku, String orderNo, long quantity, Optional<Attempt> claim) {
    List<Object[]> order = db.jdbc.query("SELECT sku_id, quantity FROM t_order WHERE order_no = ?",
        (r, i) -> new Object[] {r.getString(1), r.getLong(2)}, orderNo);
    if (order.isEmpty()) return ShopProblem.of(404, "unknown-order", "Unknown order", "no order " + orderNo);
    if (!sku.equals(order.get(0)[0]) || (long) order.get(0)[1] != quantity)
      return ShopProblem.badRequest("order " + orderNo + " is not for " + quantity + " x " + sku);
    if (claim.isPresent()) {
      List<long[]> logged = db.jdbc.query("SELECT fence, stock_after FROM t_stock_log WHERE idem_key = ?",
          (r, i) -> new long[] {r.getLong(1), r.getLong(2)}, claim.get().key());
      if (!logged.isEmpty()) {
        if (logged.get(0)[0] > claim.get().fence()) {  // a newer attempt ran: this one is a zombie
          db.count("deduct.fenced");
          return ShopProblem.of(409, "fenced", "A newer attempt holds this key",
              "a newer attempt (fence " + logged.get(0)[0] + ") ran");
        }
        db.count("deduct.fence_replay");  // an earlier attempt deducted; its answer was lost
        return ResponseEntity.ok(new Deducted(sku, orderNo, quantity, logged.get(0)[1]));
      }
    }
    List<long[]> row = db.jdbc.query("SELECT stock, version FROM t_sku WHERE sku_id = ?",
        (r, i) -> new long[] {r.getLong(1), r.getLong(2)}, sku);
    if (row.isEmpty()) return ShopProblem.of(404, "unknown-sku", "Unknown SKU", "no SKU " + sku);
    long stock = row.get(0)[0], version = row.get(0)[1];
    if (stock < quantity) return ShopProblem.of(409, "out-of-stock", "Out of stock", stock + " left of " + sku);
    if (db.jdbc.update("UPDATE t_sku SET stock = stock - ?, version = version + 1 WHERE sku_id = ? AND version = ?",
        quantity, sku, version) == 0) {
      db.count("deduct.version_retry");
      return null;
    }
    db.jdbc.update("INSERT INTO t_stock_log (id, idem_key, fence, order_no, sku_id, quantity, stock_after, created_at) "
        + "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", Db.randomId(20), claim.map(Attempt::key).orElse(null),
        claim.map(Attempt::fence).orElse(null), orderNo, sku, quantity, stock - quantity, Db.nowMicros());
    return ResponseEntity.ok(new Deducted(sku, orderNo, quantity, stock - quantity));
  }

  /** --shop.slow-percent of successes sleep --shop.slow-ms after their commit: client timeouts after the side effect. */
  private void maybeSlow() {
    if (props.slowPercent() > 0 && props.slowMs() > 0 && ThreadLocalRandom.current().nextInt(100) < props.slowPercent())
      sleepQuietly(props.slowMs());
  }

  static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
