package dev.idem.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.CallOutcome;
import dev.idem.core.ClaimRunner;
import dev.idem.core.IdemStore;
import dev.idem.core.IdempotentCall;
import dev.idem.core.ResultCodec;
import dev.idem.core.StoredResult;
import dev.idem.testkit.StoreContract;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The store contract through the control API of a real {@code idem serve} (on SQLite): the
 * client is one more backend. Cases about what the control API does not show are left out below.
 */
class ControlApiStoreContractTest extends StoreContract {
  static GatewayProcess gateway;
  static ControlApiStore store;

  @BeforeAll
  static void start() throws Exception {
    gateway = GatewayProcess.start();
    store = new ControlApiStore(gateway.client());
  }

  @AfterAll
  static void stop() throws Exception {
    if (gateway != null) gateway.close();
  }

  @Override
  protected IdemStore store() {
    return store;
  }

  // The records API shows neither fingerprints nor owners, and release cannot restore a token:
  // these cases of the contract do not apply (overridden without @Test, so not run).
  @Override
  protected void getShowsTheRecordAsStoredCase() {}

  // The control API holds JSON results: each result as a JSON string of its hex.
  @Override
  protected byte[] res(byte[] raw) {
    return StoredResult.encode(new StoredResult.Json("\"" + dev.idem.core.Bytes.hex(raw) + "\""));
  }

  @Override
  protected boolean showsOwners() {
    return false;
  }

  @Test
  void idempotentCallRunsOnTheControlApiAndStoresTheGatewaysJsonForm() {
    try (ClaimRunner runner = new ClaimRunner(store)) {
      IdempotentCall<Long> call = IdempotentCall.builder(runner, ResultCodec.longs()).build();
      AtomicInteger runs = new AtomicInteger();
      String key = key("call");
      assertThat(call.run("u", key, "fp", () -> 1790000000000000001L + runs.getAndIncrement()))
          .isEqualTo(1790000000000000001L);
      assertThat(call.run("u", key, "fp", () -> 0L + runs.getAndIncrement())).isEqualTo(1790000000000000001L);
      assertThat(runs.get()).isEqualTo(1);
      // The gateway shows it as a JSON result, number exact.
      StoredRecord r = gateway.client().getRecord("u", key).orElseThrow();
      assertThat(r.result()).contains("json");
      assertThat(r.valueJson()).contains("1790000000000000001");
      assertThat(StoredResult.decode(store.get("u", key).orElseThrow().result()))
          .isEqualTo(new StoredResult.Json("1790000000000000001"));
      CallOutcome<Long> again = call.execute("u", key, "fp", a -> 5L);
      assertThat(again).isInstanceOf(CallOutcome.Replayed.class);
    }
  }

  // A begin answers JSON null for a committed null and for the gateway's uncertain records alike:
  // the store reads the record to tell them apart (the uncertain case: RedisInteropTest).
  @Test
  void aCommittedNullIsReplayedAsNullNotAsUncertain() {
    String key = key("null");
    long fence = ((dev.idem.core.BeginOutcome.Acquired) store.begin(new dev.idem.core.BeginArgs("u", key, null,
        java.time.Duration.ofSeconds(30), java.time.Duration.ofHours(1)))).fence();
    byte[] nullResult = StoredResult.encode(new StoredResult.Json("null"));
    assertThat(store.commit(new dev.idem.core.CommitArgs("u", key, fence, nullResult, java.time.Duration.ofHours(1))))
        .isEqualTo(dev.idem.core.CommitOutcome.COMMITTED);
    dev.idem.core.BeginOutcome.Replay r = (dev.idem.core.BeginOutcome.Replay) store.begin(new dev.idem.core.BeginArgs(
        "u", key, null, java.time.Duration.ofSeconds(30), java.time.Duration.ofHours(1)));
    assertThat(r.result()).isEqualTo(nullResult);
    assertThat(r.fence()).isEqualTo(fence);
  }
}
