package dev.idem.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Every call of {@link Idem} against a real {@code idem serve}. */
class IdemClientTest extends GatewayTest {
  static String fresh(String what) {
    return what + "-" + UUID.randomUUID();
  }

  @Test
  void beginAnswersEachOutcome() {
    String key = fresh("k");
    BeginOutcome first = idem.begin("s", key, "fp-1");
    BeginOutcome.Acquired a = assertInstanceOf(BeginOutcome.Acquired.class, first);
    assertTrue(a.fence() > 0);
    assertFalse(a.recovered());

    BeginOutcome.InProgress busy = assertInstanceOf(BeginOutcome.InProgress.class, idem.begin("s", key, "fp-1"));
    assertTrue(busy.retryAfter().toMillis() > 0 && busy.retryAfter().toMillis() <= 10_000, busy.toString());
    assertInstanceOf(BeginOutcome.Mismatch.class, idem.begin("s", key, "fp-2"));

    JsonNode result = ExactJson.parse("{\"order\":{\"id\":1790000000000000001},\"ok\":true,\"tags\":[\"a\",null]}");
    assertEquals(CommitOutcome.COMMITTED, idem.commit("s", key, a.fence(), result));
    BeginOutcome.Replay r = assertInstanceOf(BeginOutcome.Replay.class, idem.begin("s", key, "fp-1"));
    assertEquals(result, r.result());
    assertEquals(1790000000000000001L, r.result().get("order").get("id").longValue());
    assertEquals(ExactJson.write(result), r.resultJson());
    // An empty fingerprint matches any.
    assertInstanceOf(BeginOutcome.Replay.class, idem.begin("s", key, ""));
    assertInstanceOf(BeginOutcome.Mismatch.class, idem.begin("s", key, "fp-2"));
    // Scopes isolate.
    assertInstanceOf(BeginOutcome.Acquired.class, idem.begin("other", key, "fp-1"));
  }

  @Test
  void aClaimWhoseBeginAnswerWasLostIsGivenBackByItsOwnerOnly() throws Exception {
    String key = fresh("k");
    try (AnswerDroppingProxy proxy = new AnswerDroppingProxy(gateway.adminUri().getPort())) {
      Idem lossy = Idem.builder().baseUri(proxy.uri()).token(GatewayProcess.TOKEN)
          .requestTimeout(Duration.ofSeconds(10)).build();
      proxy.dropBegins(1);
      assertThrows(OutcomeUnknownException.class, () -> lossy.begin("s", key, "fp", null, null, "attempt-1"));
      // The gateway did claim it: held, until its owner gives it back.
      assertInstanceOf(BeginOutcome.InProgress.class, idem.begin("s", key, "fp"));
      assertEquals(ReleaseOutcome.FENCED, idem.abandon("s", key, "attempt-2"));
      assertEquals(ReleaseOutcome.RELEASED, lossy.abandon("s", key, "attempt-1"));
      assertEquals(ReleaseOutcome.FENCED, idem.abandon("s", key, "attempt-1"));
      BeginOutcome.Acquired again = assertInstanceOf(BeginOutcome.Acquired.class, idem.begin("s", key, "fp"));
      assertFalse(again.recovered());
    }
    assertThrows(IllegalArgumentException.class, () -> idem.abandon("s", key, ""));
    assertThrows(IllegalArgumentException.class, () -> idem.begin("s", key, "fp", null, null, ""));
  }

  @Test
  void commitIsSafeToRetryAndStaleFencesChangeNothing() {
    String key = fresh("k");
    long fence = ((BeginOutcome.Acquired) idem.begin("s", key, null)).fence();
    assertEquals(CommitOutcome.FENCED, idem.commit("s", key, fence + 1, TextNode.valueOf("wrong")));
    assertEquals(CommitOutcome.COMMITTED, idem.commit("s", key, fence, TextNode.valueOf("right"), Duration.ofMinutes(5)));
    assertEquals(CommitOutcome.COMMITTED, idem.commit("s", key, fence, TextNode.valueOf("right")));
    assertEquals(TextNode.valueOf("right"), ((BeginOutcome.Replay) idem.begin("s", key, null)).result());
    assertEquals(CommitOutcome.FENCED, idem.commit("s", fresh("never-begun"), fence, NullNode.instance));
  }

  @Test
  void releaseLetsARetryAcquireWithAGreaterFence() {
    String key = fresh("k");
    long fence = ((BeginOutcome.Acquired) idem.begin("s", key, "fp")).fence();
    assertEquals(ReleaseOutcome.FENCED, idem.release("s", key, fence + 1));
    assertEquals(ReleaseOutcome.RELEASED, idem.release("s", key, fence));
    assertEquals(ReleaseOutcome.FENCED, idem.release("s", key, fence));
    long next = ((BeginOutcome.Acquired) idem.begin("s", key, "fp")).fence();
    assertTrue(next > fence, next + " > " + fence);
  }

  @Test
  void extendMovesTheLeaseOnlyForTheHolder() {
    String key = fresh("k");
    long fence = ((BeginOutcome.Acquired) idem.begin("s", key, null, Duration.ofSeconds(1), null)).fence();
    Instant before = idem.getRecord("s", key).orElseThrow().leaseUntil().orElseThrow();
    assertEquals(ExtendOutcome.EXTENDED, idem.extend("s", key, fence, Duration.ofSeconds(30)));
    Instant after = idem.getRecord("s", key).orElseThrow().leaseUntil().orElseThrow();
    assertTrue(after.isAfter(before.plusSeconds(20)), before + " -> " + after);
    assertEquals(ExtendOutcome.FENCED, idem.extend("s", key, fence - 1, Duration.ofSeconds(30)));
    assertEquals(CommitOutcome.COMMITTED, idem.commit("s", key, fence, NullNode.instance));
    assertEquals(ExtendOutcome.FENCED, idem.extend("s", key, fence, Duration.ofSeconds(30)));  // done now
  }

  @Test
  void tokensAreConsumedOnceAndCanBeRestored() {
    String scope = fresh("user");
    String token = idem.issueToken(scope, Duration.ofMinutes(1));
    assertTrue(token.length() >= 22, token);
    assertNotEquals(token, idem.issueToken(scope, null));
    assertEquals(ConsumeOutcome.INVALID, idem.consumeToken("someone-else", token));
    assertEquals(ConsumeOutcome.CONSUMED, idem.consumeToken(scope, token));
    assertEquals(ConsumeOutcome.INVALID, idem.consumeToken(scope, token));
    assertEquals(RestoreOutcome.RESTORED, idem.restoreToken(scope, token, null));
    assertEquals(ConsumeOutcome.CONSUMED, idem.consumeToken(scope, token));
    assertEquals(RestoreOutcome.INVALID, idem.restoreToken(scope, "never-issued", Duration.ofMinutes(1)));
    assertEquals(ConsumeOutcome.INVALID, idem.consumeToken(scope, "never-issued"));
  }

  @Test
  void locksBelongToTheirOwner() {
    String name = fresh("lock");
    LockOutcome.Locked l = assertInstanceOf(LockOutcome.Locked.class, idem.acquireLock(name, "a", Duration.ofSeconds(30)));
    LockOutcome.Busy busy = assertInstanceOf(LockOutcome.Busy.class, idem.acquireLock(name, "b", Duration.ofSeconds(30)));
    assertTrue(busy.retryAfter().toMillis() > 0, busy.toString());
    assertEquals(LockExtendOutcome.NOT_OWNER, idem.extendLock(name, "b", Duration.ofSeconds(30)));
    assertEquals(LockExtendOutcome.EXTENDED, idem.extendLock(name, "a", Duration.ofSeconds(30)));
    assertEquals(UnlockOutcome.NOT_OWNER, idem.releaseLock(name, "b"));
    assertEquals(UnlockOutcome.RELEASED, idem.releaseLock(name, "a"));
    assertEquals(UnlockOutcome.NOT_OWNER, idem.releaseLock(name, "a"));
    LockOutcome.Locked again = assertInstanceOf(LockOutcome.Locked.class, idem.acquireLock(name, "b", Duration.ofSeconds(30)));
    assertTrue(again.fence() > l.fence());
  }

  @Test
  void recordsAreReadListedAndDeleted() {
    // Scopes and keys that need encoding: the empty scope, a scope that is really "_", and
    // keys with spaces, '%', '?', '#', '+', ':' and non-ASCII text.
    List<String[]> ids = List.of(new String[] {"", fresh("k")}, new String[] {"_", fresh("k")},
        new String[] {"tenant:7 +x", fresh("a b%2F?x=1#订单")});
    for (String[] id : ids) {
      long fence = ((BeginOutcome.Acquired) idem.begin(id[0], id[1], null)).fence();
      StoredRecord pending = idem.getRecord(id[0], id[1]).orElseThrow();
      assertEquals(id[0], pending.scope());
      assertEquals(id[1], pending.key());
      assertTrue(pending.pending());
      assertEquals(fence, pending.fence());
      assertTrue(pending.leaseUntil().isPresent());
      idem.commit(id[0], id[1], fence, ExactJson.mapper().createObjectNode().put("n", 9007199254740993L));
      StoredRecord done = idem.getRecord(id[0], id[1]).orElseThrow();
      assertTrue(done.done());
      assertEquals(Optional.of("json"), done.result());
      assertEquals(Optional.of("{\"n\":9007199254740993}"), done.valueJson());
      assertEquals(9007199254740993L, done.value().orElseThrow().get("n").longValue());
      assertTrue(done.expiresAt().isAfter(Instant.now()));
    }
    assertTrue(idem.getRecord("", ids.get(1)[1]).isEmpty(), "\"_\" is not the empty scope");
    // A key holding '/' or '\\' is sent percent-encoded, which the admin listener takes
    // (docs/admin.md): such a record is read and deleted by its key too.
    for (String raw : List.of("a/b", "a\\b", "x/../y")) {
      String slashed = fresh(raw);
      long f = ((BeginOutcome.Acquired) idem.begin("s/t", slashed, null)).fence();
      StoredRecord held = idem.getRecord("s/t", slashed).orElseThrow();
      assertEquals(slashed, held.key());
      assertEquals("s/t", held.scope());
      assertEquals(f, held.fence());
      assertTrue(idem.deleteRecord("s/t", slashed));
      assertTrue(idem.getRecord("s/t", slashed).isEmpty());
    }

    String scope = fresh("listed");
    for (int n = 0; n < 3; n++) idem.begin(scope, "key-" + n, null);
    long fence = ((BeginOutcome.Acquired) idem.begin(scope, "key-done", null)).fence();
    idem.commit(scope, "key-done", fence, BooleanNode.TRUE);
    RecordPage all = idem.listRecords(RecordQuery.all().withScope(scope));
    assertEquals(4, all.records().size());
    RecordPage pendingOnly = idem.listRecords(RecordQuery.all().withScope(scope).withState("pending"));
    assertEquals(3, pendingOnly.records().size());
    assertTrue(pendingOnly.records().stream().allMatch(StoredRecord::pending));
    // Page by page with the cursor: every record once.
    Set<String> seen = new HashSet<>();
    RecordQuery q = RecordQuery.all().withScope(scope).withLimit(1);
    for (int pages = 0; pages < 10; pages++) {
      RecordPage page = idem.listRecords(q);
      page.records().forEach(r -> assertTrue(seen.add(r.key()), r.key()));
      if (page.nextCursor().isEmpty()) break;
      q = q.withCursor(page.nextCursor().get());
    }
    assertEquals(Set.of("key-0", "key-1", "key-2", "key-done"), seen);

    assertTrue(idem.deleteRecord(scope, "key-done"));
    assertFalse(idem.deleteRecord(scope, "key-done"));
    assertTrue(idem.getRecord(scope, "key-done").isEmpty());
    assertInstanceOf(BeginOutcome.Acquired.class, idem.begin(scope, "key-done", null));
  }

  @Test
  void nineteenDigitIdsAndBigNumbersAreExact() {
    String key = fresh("k");
    long fence = ((BeginOutcome.Acquired) idem.begin("s", key, null)).fence();
    String text = "[1790000000000000001,1790000000000000002,9223372036854775807,"
        + "-9223372036854775808,18446744073709551615,0.1,-2.5e-3,88.00,1e400]";
    idem.commit("s", key, fence, ExactJson.parse(text));
    BeginOutcome.Replay replay = (BeginOutcome.Replay) idem.begin("s", key, null);
    JsonNode back = replay.result();
    assertEquals(1790000000000000001L, back.get(0).longValue());
    assertEquals(1790000000000000002L, back.get(1).longValue());
    assertEquals(Long.MAX_VALUE, back.get(2).longValue());
    assertEquals(Long.MIN_VALUE, back.get(3).longValue());
    assertEquals(new java.math.BigInteger("18446744073709551615"), back.get(4).bigIntegerValue());
    assertEquals(new java.math.BigDecimal("0.1"), back.get(5).decimalValue());
    assertEquals(0, new java.math.BigDecimal("-0.0025").compareTo(back.get(6).decimalValue()));
    assertEquals(new java.math.BigDecimal("88.00"), back.get(7).decimalValue());
    assertEquals(new java.math.BigDecimal("1e400"), back.get(8).decimalValue());
    // Committed as text, the result comes back byte for byte.
    String key2 = fresh("k");
    long fence2 = ((BeginOutcome.Acquired) idem.begin("s", key2, null)).fence();
    idem.commitJson("s", key2, fence2, text, null);
    assertEquals(text, ((BeginOutcome.Replay) idem.begin("s", key2, null)).resultJson());
    assertEquals(Optional.of(text), idem.getRecord("s", key2).orElseThrow().valueJson());
    assertThrows(IllegalArgumentException.class, () -> idem.commitJson("s", key2, fence2, "[1,", null));
    assertThrows(IllegalArgumentException.class, () -> idem.commitJson("s", key2, fence2, "1 2", null));
  }

  @Test
  void aWrongOrMissingTokenIsUnauthorized() {
    Idem wrong = Idem.builder().baseUri(gateway.adminUri()).token("not-the-token").build();
    UnauthorizedException e = assertThrows(UnauthorizedException.class, () -> wrong.begin("s", "k", null));
    assertEquals(401, e.status());
    Idem none = Idem.builder().baseUri(gateway.adminUri()).build();
    assertThrows(UnauthorizedException.class, () -> none.getRecord("s", "k"));
    assertThrows(UnauthorizedException.class, () -> none.listRecords(RecordQuery.all()));
    assertThrows(UnauthorizedException.class, () -> none.acquireLock("l", "o", Duration.ofSeconds(1)));
  }

  @Test
  void invalidArgumentsAreRequestInvalid() {
    // Past the longest duration the gateway takes (3650 days).
    RequestInvalidException e = assertThrows(RequestInvalidException.class,
        () -> idem.begin("s", fresh("k"), null, Duration.ofDays(4000), null));
    assertEquals(400, e.status());
    assertTrue(e.getMessage().contains("lease_ms"), e.getMessage());
    assertThrows(RequestInvalidException.class, () -> idem.listRecords(RecordQuery.all().withLimit(0)));
    assertThrows(RequestInvalidException.class, () -> idem.listRecords(RecordQuery.all().withState("sleeping")));
    assertThrows(RequestInvalidException.class, () -> idem.listRecords(RecordQuery.all().withCursor("forged")));
    // Refused before anything is sent.
    assertThrows(IllegalArgumentException.class, () -> idem.begin("s", "", null));
    assertThrows(IllegalArgumentException.class, () -> idem.commit("s", "k", 0, NullNode.instance));
    assertThrows(IllegalArgumentException.class, () -> idem.extend("s", "k", 1, Duration.ZERO));
    assertThrows(NullPointerException.class, () -> idem.begin(null, "k", null));
    assertThrows(IllegalArgumentException.class, () -> Idem.builder().baseUri("ftp://x").build());
    assertThrows(IllegalArgumentException.class, () -> Idem.builder().baseUri("http://x").token("a b").build());
  }

  @Test
  void anUnreachableGatewayIsNotApplied() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    Idem down = Idem.builder().baseUri("http://127.0.0.1:" + port).token("t").build();
    NotAppliedException e = assertThrows(NotAppliedException.class, () -> down.begin("s", "k", null));
    assertEquals(0, e.status());
  }

  @Test
  void theAdminListenersOtherPathsAreProtocolErrors() {
    Idem wrongPath = Idem.builder().baseUri(gateway.adminUri() + "/nope").token(GatewayProcess.TOKEN).build();
    ProtocolException e = assertThrows(ProtocolException.class, () -> wrongPath.begin("s", "k", null));
    assertEquals(404, e.status());
  }
}
