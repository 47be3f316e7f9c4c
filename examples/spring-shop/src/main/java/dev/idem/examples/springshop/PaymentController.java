package dev.idem.examples.springshop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.core.IdemException;
import dev.idem.core.InProgressException;
import dev.idem.core.KeyReusedException;
import dev.idem.core.UncertainKeyException;
import dev.idem.spring.IdemProblems;
import dev.idem.spring.Idempotent;
import jakarta.servlet.http.HttpServletResponse;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.dao.DataAccessException;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * The payment platforms' notifications, re-sent until they read success. {@code /pay/callback}
 * (a form, as Alipay posts it) answers text; {@code /pay/notify} (JSON, as a Java platform writes
 * it, {@code out_trade_no} a 19-digit number or a business number 订单...) answers JSON. Both: the
 * signature first (nothing unsigned changes anything), one run per payment (idem), the state
 * machine in the database (a re-run charges nothing).
 */
@RestController
@ConditionalOnExpression("'${shop.role:all}' != 'consumer'")
public class PaymentController {
  private final Payments payments;
  private final Callbacks callbacks;
  private final Db db;
  private final ShopProperties props;
  private final ObjectMapper json;

  public PaymentController(Payments payments, Callbacks callbacks, Db db, ShopProperties props, ObjectMapper json) {
    this.payments = payments;
    this.callbacks = callbacks;
    this.db = db;
    this.props = props;
    this.json = json;
  }

  private static ResponseEntity<String> text(int status, String body) {
    return ResponseEntity.status(status).contentType(MediaType.TEXT_PLAIN).body(body);
  }

  private static ResponseEntity<String> fail(int status) {
    return text(status, "fail");
  }

  private static ResponseEntity<String> failLater(long seconds) {
    return ResponseEntity.status(503).contentType(MediaType.TEXT_PLAIN).header("Retry-After", Long.toString(seconds))
        .body("fail");
  }

  /** A form, or null when an escape is malformed or a name repeats. */
  static Map<String, String> parseForm(String body) {
    Map<String, String> form = new TreeMap<>();
    if (body == null) return form;
    for (String pair : body.split("&")) {
      if (pair.isEmpty()) continue;
      int eq = pair.indexOf('=');
      if (eq <= 0) return null;
      try {
        String k = URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8);
        String v = URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
        if (form.put(k, v) != null) return null;
      } catch (IllegalArgumentException e) {
        return null;
      }
    }
    return form;
  }

  /** The fields but sign, k=v sorted by name, joined with '&': what the platform signs. */
  static String signedString(Map<String, String> form) {
    StringBuilder b = new StringBuilder();
    form.forEach((k, v) -> {
      if (k.equals("sign")) return;
      if (b.length() > 0) b.append('&');
      b.append(k).append('=').append(v);
    });
    return b.toString();
  }

  @PostMapping(path = "/pay/callback", consumes = MediaType.ALL_VALUE)
  public ResponseEntity<String> callback(@RequestBody(required = false) String body, HttpServletResponse response) {
    Map<String, String> form = parseForm(body);
    String signed = form == null ? "" : signedString(form);
    if (form == null || !Signatures.ok(props.secret(), signed, form.get("sign"))) {
      db.inTransaction(() -> {
        db.count("callback.bad_sign");
        return null;
      });
      return fail(400);
    }
    String orderNo = form.get("out_trade_no"), tradeNo = form.get("trade_no"), amount = form.get("total_amount"),
        status = form.get("trade_status");
    long cents;
    try {
      cents = amount == null ? -1 : Long.parseLong(amount);
    } catch (NumberFormatException e) {
      cents = -1;
    }
    if (empty(orderNo) || empty(tradeNo) || empty(status) || cents < 0) return fail(400);
    if (!status.equals("TRADE_SUCCESS")) return text(200, "success");  // other states change nothing
    try {
      String r = callbacks.pay(orderNo, tradeNo, cents, signed);
      if (r.equals("unknown_order")) return fail(404);
      if (r.equals("wrong_amount")) return fail(400);
      if ("true".equals(response.getHeader("Idempotent-Replayed"))) count("callback.replayed");
      return text(200, "success");
    } catch (InProgressException e) {
      count("callback.in_progress");
      return failLater(IdemProblems.retryAfterSeconds(e.retryAfter()));
    } catch (KeyReusedException e) {
      return fail(409);
    } catch (UncertainKeyException | IdemException | DataAccessException e) {
      return failLater(1);
    }
  }

  private static boolean empty(String s) {
    return s == null || s.isEmpty();
  }

  private void count(String name) {
    db.inTransaction(() -> {
      db.count(name);
      return null;
    });
  }

  /**
   * The JSON notification: one run per payment, keyed by out_trade_no as sent (every digit of a
   * number, every character of a string), its fingerprint the fields that make the payment
   * (copies differ in notify_id). Every answer is stored, a 4xx too, as the gateway stores them.
   */
  @PostMapping(path = "/pay/notify", consumes = MediaType.ALL_VALUE)
  @Idempotent(keySpace = "pay-notify", scope = "''", key = "@payload.field(#raw, 'out_trade_no')",
      fingerprint = {"@payload.field(#raw, 'trade_no')", "@payload.field(#raw, 'total_amount')"})
  public ResponseEntity<Object> notify(@RequestBody(required = false) String raw,
                                       @RequestHeader(value = "X-Pay-Signature", required = false) String signature)
      throws Exception {
    if (raw == null || !Signatures.ok(props.secret(), raw, signature)) {
      count("notify.bad_sign");
      return notifyFail(400, "bad signature");
    }
    JsonNode body;
    try {
      body = json.readTree(raw);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      body = null;
    }
    if (body == null || !body.isObject()) return notifyFail(400, "the body is not a JSON object");
    JsonNode ref = body.get("out_trade_no"), tradeNo = body.get("trade_no"), status = body.get("trade_status"),
        amount = body.get("total_amount");
    boolean byId = ref != null && ref.isIntegralNumber() && ref.canConvertToLong() && ref.asLong() > 0;
    boolean byBizNo = ref != null && ref.isTextual() && !ref.asText().isEmpty() && ref.asText().length() <= 128;
    if (!byId && !byBizNo || tradeNo == null || !tradeNo.isTextual() || tradeNo.asText().isEmpty() || status == null
        || !status.isTextual() || amount == null || !amount.isIntegralNumber() || !amount.canConvertToLong()
        || amount.asLong() < 0)
      return notifyFail(400, "out_trade_no, trade_no, total_amount (cents) and trade_status are required");
    ObjectNode ok = json.createObjectNode();
    ok.put("code", "SUCCESS");
    ok.set("out_trade_no", ref);
    if (!status.asText().equals("TRADE_SUCCESS")) return ResponseEntity.ok(ok);
    String[] orderNo = new String[1];
    Payments.Outcome p = db.inTransaction(() -> {
      List<String> rows = byId
          ? db.jdbc.queryForList("SELECT order_no FROM t_order WHERE order_id = ?", String.class, ref.asLong())
          : db.jdbc.queryForList("SELECT order_no FROM t_order WHERE biz_no = ?", String.class, ref.asText());
      if (rows.isEmpty()) return Payments.Outcome.UNKNOWN_ORDER;
      orderNo[0] = rows.get(0);
      return payments.record(orderNo[0], tradeNo.asText(), amount.asLong(), "notify");
    });
    if (p == Payments.Outcome.PAID) payments.paid();
    if (p == Payments.Outcome.UNKNOWN_ORDER) return notifyFail(404, "unknown order");
    if (p == Payments.Outcome.WRONG_AMOUNT) return notifyFail(400, "total_amount differs from the order's amount");
    ok.put("order_no", orderNo[0]);
    return ResponseEntity.ok(ok);
  }

  private ResponseEntity<Object> notifyFail(int status, String message) {
    ObjectNode o = json.createObjectNode();
    o.put("code", "FAIL");
    o.put("message", message);
    return ResponseEntity.status(status).body(o);
  }
}
