package dev.idem.spring.shop;

import dev.idem.spring.Idempotent;
import dev.idem.spring.StoreErrorPolicy;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** A payment whose business errors come back as CommonResult codes, as yudao and RuoYi answer. */
@RestController
public class PayController {
  private final Executions executions;

  public PayController(Executions executions) {
    this.executions = executions;
  }

  public record Pay(String orderNo, long amount, boolean fail) {}

  @PostMapping("/pay")
  @Idempotent(key = "#req.orderNo", releaseWhen = "#result.code != 0", fingerprint = {"#req.orderNo", "#req.amount"})
  public CommonResult<Long> pay(@RequestBody Pay req) {
    int n = executions.add("pay:" + req.orderNo());
    if (req.fail()) return CommonResult.error(1001, "balance too low");
    return CommonResult.ok((long) n);
  }

  /** Passes when the store is down: the payment runs unprotected rather than not at all. */
  @PostMapping("/pay-pass")
  @Idempotent(key = "#req.orderNo", onStoreError = StoreErrorPolicy.PASS)
  public CommonResult<Long> payPass(@RequestBody Pay req) {
    return CommonResult.ok((long) executions.add("pay-pass:" + req.orderNo()));
  }
}
