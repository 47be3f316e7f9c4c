package dev.idem.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idem.client.BeginOutcome;
import dev.idem.client.ExactJson;
import dev.idem.client.Idem;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * A begin+commit pair through the control API ($IDEM_BENCH_ADMIN, the admin listener of a running
 * idem serve, token $IDEM_BENCH_TOKEN): the client, and the same two POSTs by raw java.net.http,
 * so the difference is the client's own cost. Average time per pair.
 */
@State(Scope.Benchmark)
public class ControlApiBench {
  Idem idem;
  HttpClient http;
  URI base;
  String token;
  static final JsonNode RESULT = ExactJson.parse("{\"order_id\":4217}");
  final AtomicLong next = new AtomicLong();
  final String run = UUID.randomUUID().toString().substring(0, 8);

  @Setup(Level.Trial)
  public void open() {
    base = URI.create(System.getenv().getOrDefault("IDEM_BENCH_ADMIN", "http://127.0.0.1:9901"));
    token = System.getenv().getOrDefault("IDEM_BENCH_TOKEN", "bench-token");
    idem = Idem.builder().baseUri(base).token(token).build();
    http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  }

  @Benchmark
  public Object clientPair() {
    String key = "cb-" + run + "-" + next.incrementAndGet();
    long fence = ((BeginOutcome.Acquired) idem.begin("s", key, "fp")).fence();
    return idem.commit("s", key, fence, RESULT);
  }

  @Benchmark
  public Object rawHttpPair() throws Exception {
    String key = "rb-" + run + "-" + next.incrementAndGet();
    String begun = post("/v1/begin", "{\"scope\":\"s\",\"key\":\"" + key + "\",\"fingerprint\":\"fp\"}");
    int at = begun.indexOf("\"fence\":") + 8;
    int end = at;
    while (Character.isDigit(begun.charAt(end))) end++;
    return post("/v1/commit", "{\"scope\":\"s\",\"key\":\"" + key + "\",\"fence\":" + begun.substring(at, end)
        + ",\"result\":{\"order_id\":4217}}");
  }

  private String post(String path, String body) throws Exception {
    HttpRequest r = HttpRequest.newBuilder(base.resolve(path)).header("Content-Type", "application/json")
        .header("Authorization", "Bearer " + token).POST(HttpRequest.BodyPublishers.ofString(body)).build();
    return http.send(r, HttpResponse.BodyHandlers.ofString()).body();
  }
}
