package dev.idem.core;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a record's result holds, in the one format every face of idem reads (the gateway's
 * stored result: docs/http.md, docs/admin.md; the C++ gateway/pipeline/stored_result.cpp):
 * a kind byte, then for {@link Json} a u32-length-prefixed JSON text; for {@link Uncertain} the
 * mark's text ({@link UncertainMark}); for {@link Response} a u16 status, a u32 header count, each
 * header as u32-length-prefixed name and value, then the u32-length-prefixed body; for {@link
 * NotStored} a u16 status. Little-endian.
 *
 * <p>{@link IdempotentCall} stores its results as {@link Json} and marks unknown outcomes as
 * {@link Uncertain}, so that {@code idem serve}, {@code idem record get} and the operator page
 * show them as the gateway's own, and a result committed through the gateway's control API is
 * replayed here.
 */
public sealed interface StoredResult
    permits StoredResult.Json, StoredResult.Uncertain, StoredResult.Response, StoredResult.NotStored {

  /** The marker an uncertain record starts with: the kind byte 'U'. */
  byte[] UNCERTAIN_MARKER = {'U'};

  /** A JSON value committed through the control API or by {@link IdempotentCall}: its text, byte for byte. */
  record Json(String text) implements StoredResult {
    public Json {
      Objects.requireNonNull(text, "text");
    }
  }

  /** The first attempt's outcome is unknown; the mark names it (fence 0: not known). */
  record Uncertain(UncertainMark mark) implements StoredResult {
    public Uncertain {
      Objects.requireNonNull(mark, "mark");
    }
  }

  /** An HTTP response the gateway stored for replay. */
  record Response(int status, List<Map.Entry<String, String>> headers, byte[] body) implements StoredResult {
    public Response {
      headers = List.copyOf(headers);
      Objects.requireNonNull(body, "body");
    }
  }

  /** The gateway's response was too large to keep; only its status is. */
  record NotStored(int status) implements StoredResult {}

  /** The stored bytes of {@code r}. */
  static byte[] encode(StoredResult r) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (r instanceof Json j) {
      out.write('J');
      putBytes(out, j.text().getBytes(StandardCharsets.UTF_8));
    } else if (r instanceof Uncertain u) {
      return u.mark().encode(UNCERTAIN_MARKER);
    } else if (r instanceof Response resp) {
      out.write('R');
      putU16(out, resp.status());
      putU32(out, resp.headers().size());
      for (Map.Entry<String, String> h : resp.headers()) {
        putBytes(out, h.getKey().getBytes(StandardCharsets.UTF_8));
        putBytes(out, h.getValue().getBytes(StandardCharsets.UTF_8));
      }
      putBytes(out, resp.body());
    } else if (r instanceof NotStored n) {
      out.write('N');
      putU16(out, n.status());
    }
    return out.toByteArray();
  }

  /**
   * Reads stored bytes.
   *
   * @throws IllegalArgumentException when they are not something {@link #encode} produced
   *     (truncated, an unknown kind, trailing bytes, a malformed mark)
   */
  static StoredResult decode(byte[] bytes) {
    Reader in = new Reader(bytes);
    int kind = in.u8();
    StoredResult r;
    switch (kind) {
      case 'J' -> r = new Json(new String(in.bytes(), StandardCharsets.UTF_8));
      case 'U' -> {
        if (bytes.length == 1) return new Uncertain(new UncertainMark(0, "", 0));
        UncertainMark m = UncertainMark.read(bytes, UNCERTAIN_MARKER).orElseThrow();
        if (m.fence() == 0 || !java.util.Arrays.equals(m.encode(UNCERTAIN_MARKER), bytes))
          throw new IllegalArgumentException("stored result: malformed uncertain mark");
        return new Uncertain(m);
      }
      case 'R' -> {
        int status = in.u16();
        long n = in.u32();
        if (n > in.left() / 8) throw new IllegalArgumentException("stored result: header count larger than the data");
        List<Map.Entry<String, String>> headers = new ArrayList<>();
        for (long i = 0; i < n; i++)
          headers.add(Map.entry(new String(in.bytes(), StandardCharsets.UTF_8), new String(in.bytes(), StandardCharsets.UTF_8)));
        r = new Response(status, headers, in.bytes());
      }
      case 'N' -> r = new NotStored(in.u16());
      default -> throw new IllegalArgumentException(kind < 0 ? "stored result: empty" : "stored result: unknown kind");
    }
    if (in.left() != 0) throw new IllegalArgumentException("stored result: trailing bytes");
    return r;
  }

  private static void putU16(ByteArrayOutputStream out, int v) {
    out.write(v & 0xff);
    out.write((v >> 8) & 0xff);
  }

  private static void putU32(ByteArrayOutputStream out, long v) {
    for (int i = 0; i < 4; i++) out.write((int) (v >> (8 * i)) & 0xff);
  }

  private static void putBytes(ByteArrayOutputStream out, byte[] b) {
    putU32(out, b.length);
    out.write(b, 0, b.length);
  }

  /** Bounds-checked little-endian reading. */
  final class Reader {
    private final byte[] in;
    private int at;

    Reader(byte[] in) {
      this.in = in;
    }

    int u8() {
      return at < in.length ? in[at++] & 0xff : -1;
    }

    int u16() {
      need(2);
      int v = (in[at] & 0xff) | ((in[at + 1] & 0xff) << 8);
      at += 2;
      return v;
    }

    long u32() {
      need(4);
      long v = 0;
      for (int i = 0; i < 4; i++) v |= (long) (in[at + i] & 0xff) << (8 * i);
      at += 4;
      return v;
    }

    byte[] bytes() {
      long n = u32();
      if (n > left()) throw new IllegalArgumentException("stored result: truncated");
      byte[] out = java.util.Arrays.copyOfRange(in, at, at + (int) n);
      at += (int) n;
      return out;
    }

    int left() {
      return in.length - at;
    }

    private void need(int n) {
      if (left() < n) throw new IllegalArgumentException("stored result: truncated");
    }
  }
}
