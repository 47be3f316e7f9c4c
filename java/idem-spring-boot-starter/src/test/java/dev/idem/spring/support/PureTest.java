package dev.idem.spring.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.InProgressException;
import dev.idem.core.KeyReusedException;
import dev.idem.core.NotAppliedException;
import dev.idem.core.StoreUnavailableException;
import dev.idem.core.UncertainKeyException;
import dev.idem.core.UncertainMark;
import dev.idem.spring.IdemProblem;
import dev.idem.spring.IdemProblems;
import dev.idem.spring.IdempotencyRefusedException;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The starter's pure parts, row by row: keys, subjects, fingerprints, the problem table. */
class PureTest {

  @Test
  void clientKeys() {
    assertThat(Keys.fromClient("Idempotency-Key", "order-1")).isEqualTo("order-1");
    assertThat(Keys.fromClient("Idempotency-Key", "\"abc\"")).isEqualTo("abc");
    assertThatThrownBy(() -> Keys.fromClient("Idempotency-Key", null)).isInstanceOf(IdempotencyRefusedException.class)
        .hasMessage("the Idempotency-Key header is missing");
    assertThatThrownBy(() -> Keys.fromClient("Idempotency-Key", "has space"))
        .hasMessage("Idempotency-Key: key has a character outside visible ASCII (at position 3)");
    assertThatThrownBy(() -> Keys.fromClient("Idempotency-Key", "x".repeat(256)))
        .satisfies(e -> assertThat(((IdempotencyRefusedException) e).problem()).isEqualTo(IdemProblem.KEY_INVALID));
  }

  @Test
  void renderedKeysKeepEveryDigitAndEncodeWhatIsNotVisibleAscii() {
    assertThat(Keys.fromValue("#id", 1790000000000000001L)).isEqualTo("1790000000000000001");
    assertThat(Keys.fromValue("#amount", new BigDecimal("1E+3"))).isEqualTo("1000");
    assertThat(Keys.fromValue("#no", "订单2024")).isEqualTo("%E8%AE%A2%E5%8D%952024");
    assertThat(Keys.fromValue("#no", "a b%c")).isEqualTo("a%20b%25c");
    assertThat(Keys.fromValue("#no", "pay:T-1")).isEqualTo("pay:T-1");
    assertThat(Keys.fromValue("#no", "😀")).isEqualTo("%F0%9F%98%80");
    assertThatThrownBy(() -> Keys.fromValue("#req", new Object())).hasMessageContaining("not text or a whole number");
    assertThatThrownBy(() -> Keys.fromValue("#no", null)).hasMessage("#no is null");
    assertThatThrownBy(() -> Keys.fromValue("#no", "")).hasMessage("#no is empty");
    assertThat(Keys.validKeySpace("OrderController.create")).isTrue();
    assertThat(Keys.validKeySpace("a:b")).isFalse();
    assertThat(Keys.validKeySpace("x".repeat(65))).isFalse();
  }

  @Test
  void subjects() {
    assertThat(Subject.parse("principal").scope(null, "alice")).isEqualTo("alice");
    assertThat(Subject.parse("principal").scope(null, null)).isEmpty();
    assertThat(Subject.parse("none").scope(null, "alice")).isEmpty();
    RequestView r = new FakeRequest(Map.of("X-User-Id", "u1"));
    assertThat(Subject.parse("header:X-User-Id").scope(r, "alice")).isEqualTo("u1");
    assertThat(Subject.parse("header-hash:X-User-Id").scope(r, null)).hasSize(64).doesNotContain("u1");
    assertThatThrownBy(() -> Subject.parse("header:X-Other").scope(r, null))
        .satisfies(e -> assertThat(((IdempotencyRefusedException) e).problem()).isEqualTo(IdemProblem.SUBJECT_MISSING));
    assertThatThrownBy(() -> Subject.parse("cookie:x")).isInstanceOf(IllegalArgumentException.class);
  }

  record Order(String sku, long id, Map<String, Object> extra) {}

  @Test
  void fingerprintsAreCanonicalJsonNeverToString() {
    Fingerprints f = new Fingerprints(new ObjectMapper());
    Map<String, Object> ab = new LinkedHashMap<>(), ba = new LinkedHashMap<>();
    ab.put("a", 1);
    ab.put("b", 2);
    ba.put("b", 2);
    ba.put("a", 1);
    assertThat(f.ofValues(List.of(ab))).isEqualTo(f.ofValues(List.of(ba)));
    assertThat(new String(f.canonicalJson(new Order("A", 1790000000000000001L, ba))))
        .isEqualTo("{\"extra\":{\"a\":1,\"b\":2},\"id\":1790000000000000001,\"sku\":\"A\"}");
    assertThat(f.ofArguments(new Object[] {new Order("A", 1, Map.of())}))
        .isEqualTo(f.ofArguments(new Object[] {new Order("A", 1, Map.of())}));
    assertThat(f.ofArguments(new Object[] {new Order("A", 1, Map.of())}))
        .isNotEqualTo(f.ofArguments(new Object[] {new Order("A", 2, Map.of())}));
  }

  @Test
  void theProblemTable() {
    assertThat(IdemProblems.of(new KeyReusedException()).orElseThrow().problem()).isEqualTo(IdemProblem.KEY_REUSED);
    IdemProblems.Answer busy = IdemProblems.of(new InProgressException(Duration.ofMillis(1500))).orElseThrow();
    assertThat(busy.problem()).isEqualTo(IdemProblem.IN_PROGRESS);
    assertThat(IdemProblems.retryAfterSeconds(busy.retryAfter().orElseThrow())).isEqualTo(2);
    assertThat(IdemProblems.of(new UncertainKeyException(new UncertainMark(7, "h/1", 0))).orElseThrow().problem())
        .isEqualTo(IdemProblem.OUTCOME_UNCERTAIN);
    assertThat(IdemProblems.of(new StoreUnavailableException("down", Duration.ofSeconds(3), null)).orElseThrow()
        .retryAfter()).hasValue(Duration.ofSeconds(3));
    assertThat(IdemProblems.of(new NotAppliedException("down")).orElseThrow().problem())
        .isEqualTo(IdemProblem.STORE_UNAVAILABLE);
    assertThat(IdemProblems.of(new IllegalStateException("the application's own"))).isEmpty();
    assertThat(IdemProblem.KEY_REUSED.status()).isEqualTo(422);
    assertThat(IdemProblem.IN_PROGRESS.type()).isEqualTo("urn:idem:problem:in-progress");
    assertThat(IdemProblem.STORE_UNAVAILABLE.outcome()).isEqualTo("store_unavailable");
    assertThat(IdemProblems.retryAfterSeconds(Duration.ZERO)).isEqualTo(1);
  }

  @Test
  void retryableIsTheGatewaysByProblem() {
    // docs/http.md, "Every problem": true only where the same request can get another answer.
    java.util.Set<String> retryable = java.util.Set.of("in-progress", "store-unavailable");
    for (IdemProblem p : IdemProblem.values())
      assertThat(p.retryable()).as(p.problemName()).isEqualTo(retryable.contains(p.problemName()));
  }

  @Test
  void theGatewaysReleasingStatuses() {
    for (int s : new int[] {500, 502, 503, 504, 408, 409, 425, 429})
      assertThat(dev.idem.spring.web.ResponseEntityShapes.releasingStatus(s)).as("%d", s).isTrue();
    for (int s : new int[] {200, 201, 204, 400, 404, 422})
      assertThat(dev.idem.spring.web.ResponseEntityShapes.releasingStatus(s)).as("%d", s).isFalse();
  }

  private record FakeRequest(Map<String, String> headers) implements RequestView {
    @Override
    public String header(String name) {
      return headers.get(name);
    }

    @Override
    public String parameter(String name) {
      return null;
    }

    @Override
    public java.security.Principal principal() {
      return null;
    }

    @Override
    public byte[] fingerprintInput() {
      return new byte[0];
    }

    @Override
    public void responseHeader(String name, String value) {}

    @Override
    public Object nativeRequest() {
      return null;
    }
  }
}
