package dev.idem.spring.shop;

import dev.idem.spring.Idempotent;
import java.math.BigDecimal;
import org.springframework.stereotype.Service;

/** A service method protected outside any HTTP request: the key from its arguments. */
@Service
public class PointsService {
  private final Executions executions;

  public PointsService(Executions executions) {
    this.executions = executions;
  }

  public record Grant(String user, BigDecimal amount) {}

  /** The fence this call's claim holds, as a write made conditional on it would read it. */
  @Idempotent(key = "#orderNo", keySpace = "points-fence")
  public long fence(String orderNo) {
    return dev.idem.spring.IdempotentContext.current().orElseThrow().fence();
  }

  @Idempotent(key = "#orderNo")
  public long grant(String orderNo, Grant grant) {
    return executions.add("points:" + orderNo);
  }
}
