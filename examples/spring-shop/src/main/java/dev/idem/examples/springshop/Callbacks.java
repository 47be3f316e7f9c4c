package dev.idem.examples.springshop;

import dev.idem.spring.Idempotent;
import dev.idem.spring.UncertainPolicy;
import org.springframework.stereotype.Service;

/**
 * The form callback's run, once per out_trade_no (the reference shop's Guard: scope pay-callback,
 * the signed string as fingerprint, lease 3 s renewed, wait 5 s, retry). A refusal (an unknown
 * order, another amount) is not stored: the key is released, so a later re-send runs again.
 */
@Service
public class Callbacks {
  private final Payments payments;
  private final Db db;

  public Callbacks(Payments payments, Db db) {
    this.payments = payments;
    this.db = db;
  }

  @Idempotent(keySpace = "pay-callback", scope = "''", key = "#orderNo", fingerprint = "#signed", lease = "3s",
      waitFor = "5s", onUncertain = UncertainPolicy.RETRY, releaseWhen = "#result != 'success'")
  public String pay(String orderNo, String tradeNo, long amount, String signed) {
    Payments.Outcome p = db.inTransaction(() -> payments.record(orderNo, tradeNo, amount, "callback"));
    if (p == Payments.Outcome.PAID) payments.paid();
    return switch (p) {
      case UNKNOWN_ORDER -> "unknown_order";
      case WRONG_AMOUNT -> "wrong_amount";
      default -> "success";
    };
  }
}
