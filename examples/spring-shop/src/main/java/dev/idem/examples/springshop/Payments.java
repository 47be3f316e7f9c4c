package dev.idem.examples.springshop;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.stereotype.Component;

/**
 * A payment, recorded once: {@code UPDATE t_order SET status = 'PAID' ... WHERE status =
 * 'CREATED'} (the state machine: a re-run after a crash charges nothing), then the charge and the
 * outbox row in the same transaction (examples/shop/shop_payment.cpp).
 */
@Component
public class Payments {
  public enum Outcome { PAID, ALREADY_PAID, UNKNOWN_ORDER, WRONG_AMOUNT }

  private final Db db;
  private final ObjectMapper json = new ObjectMapper();
  private volatile Runnable onPaid = () -> {};

  public Payments(Db db) {
    this.db = db;
  }

  /** Runs after a payment committed (the outbox relay wakes). */
  public void onPaid(Runnable r) {
    this.onPaid = r;
  }

  /** In the caller's transaction. */
  public Outcome record(String orderNo, String tradeNo, long amount, String channel) {
    List<Object[]> order = db.jdbc.query("SELECT user_id, amount FROM t_order WHERE order_no = ?",
        (r, i) -> new Object[] {r.getString(1), r.getLong(2)}, orderNo);
    if (order.isEmpty()) return Outcome.UNKNOWN_ORDER;
    if ((long) order.get(0)[1] != amount) return Outcome.WRONG_AMOUNT;
    long now = Db.nowMicros();
    if (db.jdbc.update("UPDATE t_order SET status = 'PAID', paid_at = ? WHERE order_no = ? AND status = 'CREATED'",
        now, orderNo) == 0) {
      db.count(channel + ".already_paid");
      return Outcome.ALREADY_PAID;
    }
    db.jdbc.update("INSERT INTO t_charge (id, order_no, trade_no, amount, created_at) VALUES (?, ?, ?, ?, ?)",
        Db.randomId(20), orderNo, tradeNo, amount, now);
    Map<String, Object> message = new LinkedHashMap<>();
    message.put("order_no", orderNo);
    message.put("user_id", order.get(0)[0]);
    message.put("points", amount / 100);
    try {
      db.jdbc.update("INSERT INTO t_outbox (id, order_no, payload, created_at) VALUES (?, ?, ?, ?)",
          "order.paid:" + orderNo, orderNo, json.writeValueAsString(message), now);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
    return Outcome.PAID;
  }

  void paid() {
    onPaid.run();
  }
}
