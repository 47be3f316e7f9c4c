package dev.idem.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.ClaimRunner;
import dev.idem.core.IdempotentCall;
import dev.idem.core.ResultCodec;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The engine on a control-only gateway with a token of the {@code control} role alone, as a
 * service holds one (docs/admin.md, "Tokens and roles"): calls run once and replay, the store
 * pings and reads its records; listing and deleting records are the operator's.
 */
class ControlTokenTest extends GatewayTest {
  @Test
  void theEngineRunsWithAControlToken() {
    Idem service = Idem.builder().baseUri(gateway.adminUri()).token(GatewayProcess.CONTROL_TOKEN)
        .requestTimeout(Duration.ofSeconds(10)).build();
    ControlApiStore store = new ControlApiStore(service);
    store.ping();
    String key = "control-" + UUID.randomUUID();
    try (ClaimRunner runner = new ClaimRunner(store)) {
      IdempotentCall<Long> call = IdempotentCall.builder(runner, ResultCodec.longs()).build();
      AtomicInteger runs = new AtomicInteger();
      assertThat(call.run("svc", key, "fp", () -> 42L + runs.getAndIncrement())).isEqualTo(42L);
      assertThat(call.run("svc", key, "fp", () -> 0L + runs.getAndIncrement())).isEqualTo(42L);
      assertThat(runs.get()).isEqualTo(1);
    }
    assertThat(store.get("svc", key)).isPresent();
    assertThatThrownBy(() -> service.deleteRecord("svc", key)).hasMessageContaining("403");
    assertThatThrownBy(() -> service.listRecords(RecordQuery.all())).hasMessageContaining("403");
    assertThat(store.get("svc", key)).isPresent();
  }
}
