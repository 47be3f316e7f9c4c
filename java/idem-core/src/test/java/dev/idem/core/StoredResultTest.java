package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The stored-result format, byte for byte as the gateway writes it (gateway/pipeline/stored_result.cpp). */
class StoredResultTest {
  @Test
  void jsonIsTheKindByteAndALengthPrefixedText() {
    byte[] b = StoredResult.encode(new StoredResult.Json("{\"id\":1790000000000000001}"));
    assertThat(b[0]).isEqualTo((byte) 'J');
    assertThat(b[1]).isEqualTo((byte) 26);
    assertThat(new String(b, 5, b.length - 5, StandardCharsets.UTF_8)).isEqualTo("{\"id\":1790000000000000001}");
    assertThat(StoredResult.decode(b)).isEqualTo(new StoredResult.Json("{\"id\":1790000000000000001}"));
  }

  @Test
  void anUncertainMarkIsTextAfterTheKindByte() {
    UncertainMark m = new UncertainMark(42, "host/abc", 1700000000000L);
    byte[] b = StoredResult.encode(new StoredResult.Uncertain(m));
    assertThat(new String(b, StandardCharsets.UTF_8)).isEqualTo("Ufence=42;instance=host/abc;at=1700000000000");
    assertThat(StoredResult.decode(b)).isEqualTo(new StoredResult.Uncertain(m));
    assertThat(StoredResult.decode(new byte[] {'U'})).isEqualTo(new StoredResult.Uncertain(new UncertainMark(0, "", 0)));
    assertThat(UncertainMark.prefix(StoredResult.UNCERTAIN_MARKER, 42)).isEqualTo("Ufence=42;".getBytes());
    assertThatThrownBy(() -> StoredResult.decode("Ugarbage".getBytes())).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aResponseRoundTrips() {
    StoredResult.Response r = new StoredResult.Response(201, List.of(Map.entry("Content-Type", "application/json")),
        "{}".getBytes());
    StoredResult back = StoredResult.decode(StoredResult.encode(r));
    assertThat(back).isInstanceOf(StoredResult.Response.class);
    StoredResult.Response rb = (StoredResult.Response) back;
    assertThat(rb.status()).isEqualTo(201);
    assertThat(rb.headers()).isEqualTo(r.headers());
    assertThat(rb.body()).isEqualTo("{}".getBytes());
    assertThat(StoredResult.decode(StoredResult.encode(new StoredResult.NotStored(200))))
        .isEqualTo(new StoredResult.NotStored(200));
  }

  @Test
  void malformedBytesAreRefusedWithoutReadingOutOfBounds() {
    for (String bad : new String[] {"", "J", "J\u0009\u0000\u0000\u0000abc", "Rx", "X", "N1"}) {
      assertThatThrownBy(() -> StoredResult.decode(bad.getBytes(StandardCharsets.ISO_8859_1)))
          .isInstanceOf(IllegalArgumentException.class);
    }
    assertThatThrownBy(() -> StoredResult.decode(new byte[] {'R', 1, 0, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f}))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void argumentsThatCanNeverBeValidAreRefused() {
    assertThatThrownBy(() -> new BeginArgs("", "", null, java.time.Duration.ofSeconds(1), java.time.Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
    assertThatThrownBy(() -> new CommitArgs("", "k", 0, new byte[0], java.time.Duration.ofSeconds(1), new byte[] {1}))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fence");
    assertThat(Args.micros(java.time.Duration.ofNanos(1))).isEqualTo(1);
    assertThat(Args.millis(java.time.Duration.ofNanos(1_000_001))).isEqualTo(2);
  }
}
