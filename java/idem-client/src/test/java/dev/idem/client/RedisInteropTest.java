package dev.idem.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.ClaimRunner;
import dev.idem.core.CommitArgs;
import dev.idem.core.IdempotentCall;
import dev.idem.core.ReleaseArgs;
import dev.idem.core.ResultCodec;
import dev.idem.core.StoredResult;
import dev.idem.core.UncertainMark;
import dev.idem.redis.RedisStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Java engine and {@code idem serve} on one Redis: a claim taken in Java is seen by the
 * gateway and by {@code idem record get}; a record the gateway committed is replayed in Java;
 * fences never repeat across the two.
 */
class RedisInteropTest {
  static final String PREFIX = "idem-java-interop:";
  static String storeUri;
  static GatewayProcess gateway;
  static RedisStore store;
  static ClaimRunner runner;
  final String run = UUID.randomUUID().toString().substring(0, 8);

  @BeforeAll
  static void start() throws Exception {
    String url = System.getenv("IDEM_TEST_REDIS_URL");
    assumeTrue(url != null && !url.isEmpty(), "IDEM_TEST_REDIS_URL is not set");
    storeUri = url + "?prefix=" + PREFIX;
    gateway = GatewayProcess.onStore(storeUri);
    store = RedisStore.open(storeUri);
    runner = new ClaimRunner(store);
  }

  @AfterAll
  static void stop() throws Exception {
    if (runner != null) runner.close();
    if (store != null) store.close();
    if (gateway != null) gateway.close();
  }

  @Test
  void aClaimTakenInJavaIsSeenByTheGatewayAndTheCli() throws Exception {
    String key = "java-claim-" + run;
    BeginOutcome.Acquired a = (BeginOutcome.Acquired) store.begin(
        new BeginArgs("u", key, "fp".getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(30), Duration.ofHours(1)));
    StoredRecord pending = gateway.client().getRecord("u", key).orElseThrow();
    assertThat(pending.pending()).isTrue();
    assertThat(pending.fence()).isEqualTo(a.fence());
    // The gateway answers a repeat in progress: it sees the Java claim as live.
    assertThat(gateway.client().begin("u", key, "fp")).isInstanceOf(dev.idem.client.BeginOutcome.InProgress.class);

    IdempotentCall<Long> call = IdempotentCall.builder(runner, ResultCodec.longs()).build();
    String done = "java-done-" + run;
    call.run("u", done, "fp", () -> 1790000000000000001L);
    StoredRecord r = gateway.client().getRecord("u", done).orElseThrow();
    assertThat(r.result()).contains("json");
    assertThat(r.valueJson()).contains("1790000000000000001");
    // idem record get, on the same store.
    Process p = new ProcessBuilder(System.getProperty("idem.bin"), "record", "get", "--store", storeUri, "--scope", "u", done)
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(out).contains("1790000000000000001").contains("\"state\":\"done\"");
  }

  @Test
  void aRecordTheGatewayCommittedIsReplayedInJava() {
    String key = "gateway-done-" + run;
    dev.idem.client.BeginOutcome.Acquired a = (dev.idem.client.BeginOutcome.Acquired) gateway.client().begin("u", key, "fp");
    gateway.client().commit("u", key, a.fence(), ExactJson.parse("{\"order_id\":123456789012345678901234567890}"));
    IdempotentCall<String> call = IdempotentCall.builder(runner, ResultCodec.jsonText()).build();
    assertThat(call.run("u", key, "fp", () -> "never")).isEqualTo("{\"order_id\":123456789012345678901234567890}");
  }

  @Test
  void fencesNeverRepeatAcrossTheTwo() {
    String key = "fences-" + run;
    long last = 0;
    for (int i = 0; i < 10; i++) {
      long fence;
      if (i % 2 == 0) {
        fence = ((BeginOutcome.Acquired) store.begin(new BeginArgs("u", key, null, Duration.ofSeconds(30),
            Duration.ofHours(1)))).fence();
        store.release(new ReleaseArgs("u", key, fence));
      } else {
        fence = ((dev.idem.client.BeginOutcome.Acquired) gateway.client().begin("u", key, "")).fence();
        gateway.client().release("u", key, fence);
      }
      assertThat(fence).isGreaterThan(last);
      last = fence;
    }
  }

  // The control API answers a begin of an uncertain record with JSON null, as it does a committed
  // null: ControlApiStore reads the record, and the mark the Java engine wrote comes back whole.
  @Test
  void anUncertainMarkWrittenInJavaIsReadThroughTheControlApi() {
    String key = "uncertain-" + run;
    long fence = ((BeginOutcome.Acquired) store.begin(new BeginArgs("u", key, null, Duration.ofSeconds(30),
        Duration.ofHours(1)))).fence();
    UncertainMark mark = new UncertainMark(fence, "host/java", 1_700_000_000_123L);
    store.commit(new CommitArgs("u", key, fence, StoredResult.encode(new StoredResult.Uncertain(mark)), Duration.ofHours(1)));
    ControlApiStore api = new ControlApiStore(gateway.client());
    BeginOutcome.Replay r = (BeginOutcome.Replay) api.begin(new BeginArgs("u", key, null, Duration.ofSeconds(30),
        Duration.ofHours(1)));
    assertThat(StoredResult.decode(r.result())).isEqualTo(new StoredResult.Uncertain(mark));
    StoredRecord shown = gateway.client().getRecord("u", key).orElseThrow();
    assertThat(shown.result()).contains("uncertain");
    assertThat(shown.json().get("uncertain").get("fence").longValue()).isEqualTo(fence);
  }
}
