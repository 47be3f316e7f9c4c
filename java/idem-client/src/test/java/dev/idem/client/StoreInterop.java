package dev.idem.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.ClaimRunner;
import dev.idem.core.CommitArgs;
import dev.idem.core.IdemStore;
import dev.idem.core.IdempotentCall;
import dev.idem.core.ReleaseArgs;
import dev.idem.core.ResultCodec;
import dev.idem.core.StoredResult;
import dev.idem.core.UncertainMark;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Java engine and {@code idem serve} on one store (issue 30, "Interop"): a claim taken in Java
 * is seen by the gateway's control API, by its records API (what the operator page shows) and by
 * {@code idem record get}; a record the gateway committed is replayed in Java, and one Java
 * committed is replayed by the gateway; claims are taken over across the two; fences never
 * repeat. Each subclass names a store (its URI for {@code idem serve}, and the same store opened
 * in Java); both run the protocol/ files, so they share every record.
 */
abstract class StoreInterop {
  /** What a subclass gives: the store's URI for {@code idem serve}, and the same store in Java. */
  interface Target extends AutoCloseable {
    String uri();

    IdemStore open();

    @Override
    default void close() throws Exception {}
  }

  static Target target;
  static String storeUri;
  static GatewayProcess gateway;
  static IdemStore store;
  static ClaimRunner runner;
  final String run = UUID.randomUUID().toString().substring(0, 8);

  /** Called by each subclass's @BeforeAll. */
  static void start(Target t) throws Exception {
    target = t;
    storeUri = t.uri();
    gateway = GatewayProcess.onStore(storeUri);
    store = t.open();
    runner = new ClaimRunner(store);
  }

  @AfterAll
  static void stop() throws Exception {
    if (runner != null) runner.close();
    if (store != null) store.close();
    if (gateway != null) gateway.close();
    if (target != null) target.close();
    runner = null;
    store = null;
    gateway = null;
    target = null;
  }

  static BeginArgs args(String key, String fingerprint, Duration lease) {
    return new BeginArgs("u", key, fingerprint.getBytes(StandardCharsets.UTF_8), lease, Duration.ofHours(1),
        "java-" + UUID.randomUUID());
  }

  /** idem record get --store URI --scope u KEY: its output (it exits 0). */
  static String cliGet(String key) throws Exception {
    Process p = new ProcessBuilder(System.getProperty("idem.bin"), "record", "get", "--store", storeUri, "--scope", "u", key)
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    return out;
  }

  /** The keys of every page of a listing (a Redis page may be short: SCAN pages are unordered). */
  static java.util.List<String> listAll(RecordQuery q) {
    java.util.List<String> keys = new java.util.ArrayList<>();
    for (int pages = 0; pages < 10_000; pages++) {
      RecordPage page = gateway.client().listRecords(q.withLimit(500));
      page.records().forEach(r -> keys.add(r.key()));
      if (page.nextCursor().isEmpty()) return keys;
      q = q.withCursor(page.nextCursor().get());
    }
    throw new AssertionError("more than 10,000 pages");
  }

  @Test
  void aClaimTakenInJavaIsSeenByTheGatewayItsRecordsApiAndTheCli() throws Exception {
    String key = "java-claim-" + run;
    Instant before = Instant.now();
    BeginOutcome.Acquired a = (BeginOutcome.Acquired) store.begin(args(key, "fp", Duration.ofSeconds(30)));
    // The records API, which the operator page shows.
    StoredRecord pending = gateway.client().getRecord("u", key).orElseThrow();
    assertThat(pending.pending()).isTrue();
    assertThat(pending.fence()).isEqualTo(a.fence());
    assertThat(pending.leaseUntil()).get().matches(t -> t.isAfter(before.plusSeconds(20)), "a lease of 30 s");
    assertThat(listAll(RecordQuery.all().withScope("u").withState("pending"))).contains(key);
    // The gateway sees the Java claim as live: a repeat is in progress, another request a mismatch.
    assertThat(gateway.client().begin("u", key, "fp")).isInstanceOf(dev.idem.client.BeginOutcome.InProgress.class);
    assertThat(gateway.client().begin("u", key, "other")).isInstanceOf(dev.idem.client.BeginOutcome.Mismatch.class);
    assertThat(cliGet(key)).contains("\"state\":\"pending\"").contains("\"fence\":" + a.fence());
    // The claim's holder commits in Java: the gateway replays it.
    store.commit(new CommitArgs("u", key, a.fence(), StoredResult.encode(new StoredResult.Json("{\"order_id\":1790000000000000001}")),
        Duration.ofHours(1)));
    dev.idem.client.BeginOutcome.Replay r = (dev.idem.client.BeginOutcome.Replay) gateway.client().begin("u", key, "fp");
    assertThat(r.resultJson()).isEqualTo("{\"order_id\":1790000000000000001}");
    assertThat(r.result().get("order_id").longValue()).isEqualTo(1790000000000000001L);
  }

  @Test
  void anIdempotentCallsResultIsShownByTheGatewayAndTheCli() throws Exception {
    IdempotentCall<Long> call = IdempotentCall.builder(runner, ResultCodec.longs()).build();
    String done = "java-done-" + run;
    call.run("u", done, "fp", () -> 1790000000000000001L);
    StoredRecord r = gateway.client().getRecord("u", done).orElseThrow();
    assertThat(r.result()).contains("json");
    assertThat(r.valueJson()).contains("1790000000000000001");
    assertThat(cliGet(done)).contains("1790000000000000001").contains("\"state\":\"done\"");
  }

  @Test
  void aRecordTheGatewayCommittedIsReplayedInJava() {
    String key = "gateway-done-" + run;
    dev.idem.client.BeginOutcome.Acquired a = (dev.idem.client.BeginOutcome.Acquired) gateway.client().begin("u", key, "fp");
    String committed = "{\"order_id\":123456789012345678901234567890,\"amount\":88.00}";
    gateway.client().commitJson("u", key, a.fence(), committed, null);
    IdempotentCall<String> call = IdempotentCall.builder(runner, ResultCodec.jsonText()).build();
    assertThat(call.run("u", key, "fp", () -> "never")).isEqualTo(committed);
    BeginOutcome.Replay replay = (BeginOutcome.Replay) store.begin(args(key, "fp", Duration.ofSeconds(30)));
    assertThat(replay.fence()).isEqualTo(a.fence());
    assertThat(StoredResult.decode(replay.result())).isEqualTo(new StoredResult.Json(committed));
    // And through Jackson with exact numbers.
    JsonNode node = ExactJson.parse(call.run("u", key, "fp", () -> "never"));
    assertThat(node.get("amount").decimalValue()).isEqualTo(new java.math.BigDecimal("88.00"));
  }

  @Test
  void expiredClaimsAreTakenOverAcrossTheTwo() throws Exception {
    // A Java holder that died: the gateway takes its claim over, naming it.
    String key = "takeover-" + run;
    long javaFence = ((BeginOutcome.Acquired) store.begin(args(key, "fp", Duration.ofMillis(200)))).fence();
    Thread.sleep(400);  // the lease running out is the subject
    dev.idem.client.BeginOutcome.Acquired g = (dev.idem.client.BeginOutcome.Acquired) gateway.client().begin("u", key, "fp");
    assertThat(g.recovered()).isTrue();
    assertThat(g.previousFence()).isEqualTo(javaFence);
    assertThat(g.fence()).isGreaterThan(javaFence);
    // The Java holder's late commit is fenced.
    assertThat(store.commit(new CommitArgs("u", key, javaFence, StoredResult.encode(new StoredResult.Json("1")),
        Duration.ofHours(1)))).isEqualTo(dev.idem.core.CommitOutcome.FENCED);
    // And a gateway holder that died: Java takes it over.
    String other = "takeover-back-" + run;
    long gatewayFence = ((dev.idem.client.BeginOutcome.Acquired) gateway.client().begin("u", other, "fp",
        Duration.ofMillis(200), null)).fence();
    Thread.sleep(400);
    BeginOutcome.Acquired j = (BeginOutcome.Acquired) store.begin(args(other, "fp", Duration.ofSeconds(30)));
    assertThat(j.recovered()).isTrue();
    assertThat(j.previousFence()).isEqualTo(gatewayFence);
    assertThat(gateway.client().commit("u", other, gatewayFence, ExactJson.parse("1"))).isEqualTo(CommitOutcome.FENCED);
  }

  // An uncertain mark written by the Java engine is the gateway's own: its records API (the
  // operator page) shows the attempt it names, and the control API reads it back whole.
  @Test
  void anUncertainMarkWrittenInJavaIsShownByTheGateway() {
    String key = "uncertain-" + run;
    long fence = ((BeginOutcome.Acquired) store.begin(args(key, "", Duration.ofSeconds(30)))).fence();
    UncertainMark mark = new UncertainMark(fence, "host/java", 1_700_000_000_123L);
    store.commit(new CommitArgs("u", key, fence, StoredResult.encode(new StoredResult.Uncertain(mark)), Duration.ofHours(1)));
    StoredRecord shown = gateway.client().getRecord("u", key).orElseThrow();
    assertThat(shown.result()).contains("uncertain");
    assertThat(shown.json().get("uncertain").get("fence").longValue()).isEqualTo(fence);
    assertThat(shown.json().get("uncertain").get("instance").textValue()).isEqualTo("host/java");
    assertThat(listAll(RecordQuery.all().withScope("u").withUncertain(true))).contains(key);
    // A begin answers null for it, as for a committed null: ControlApiStore reads the record.
    BeginOutcome.Replay r = (BeginOutcome.Replay) new ControlApiStore(gateway.client()).begin(args(key, "", Duration.ofSeconds(30)));
    assertThat(StoredResult.decode(r.result())).isEqualTo(new StoredResult.Uncertain(mark));
  }

  @Test
  void fencesNeverRepeatAcrossTheTwo() {
    String key = "fences-" + run;
    long last = 0;
    for (int i = 0; i < 10; i++) {
      long fence;
      if (i % 2 == 0) {
        fence = ((BeginOutcome.Acquired) store.begin(args(key, "", Duration.ofSeconds(30)))).fence();
        store.release(new ReleaseArgs("u", key, fence));
      } else {
        fence = ((dev.idem.client.BeginOutcome.Acquired) gateway.client().begin("u", key, "")).fence();
        gateway.client().release("u", key, fence);
      }
      assertThat(fence).isGreaterThan(last);
      last = fence;
    }
  }
}
