package dev.idem.examples;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.client.ControlApiStore;
import dev.idem.client.ExactJson;
import dev.idem.client.Idem;
import dev.idem.core.ClaimRunner;
import dev.idem.core.IdempotentCall;
import dev.idem.core.InProgressException;
import dev.idem.core.JacksonResultCodec;
import dev.idem.core.KeyReusedException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An orders service in plain Java (com.sun.net.httpserver), in two ways idem can protect it
 * (docs/java.md):
 *
 * <ul>
 *   <li>{@code POST /orders} knows nothing of idem: it runs behind {@code idem serve}, whose
 *       route {@code create-order} replays the first response to a repeated
 *       {@code Idempotency-Key}. Orders get 19-digit Snowflake ids.
 *   <li>{@code POST /refunds} protects itself with the engine's {@link IdempotentCall}, whose
 *       store is the control API ({@link ControlApiStore}): the key is the request's {@code
 *       Idempotency-Key}, the scope its {@code X-User-Id}, the fingerprint a hash of the body.
 *       With idem-redis or idem-jdbc instead, only the store changes.
 * </ul>
 *
 * <pre>
 *   java -cp idem-client.jar:idem-examples.jar dev.idem.examples.OrdersService 9000 http://127.0.0.1:9901
 *   idem serve --config idem.yaml    # upstream: http://127.0.0.1:9000, a create-order route
 * </pre>
 */
public final class OrdersService implements AutoCloseable {
  private final HttpServer server;
  private final ExecutorService pool = Executors.newFixedThreadPool(16);
  private final SnowflakeIds ids = new SnowflakeIds(7);
  private final Map<Long, String> orders = new ConcurrentHashMap<>();
  private final AtomicInteger ordersCreated = new AtomicInteger();
  private final AtomicInteger refundsIssued = new AtomicInteger();
  private final ClaimRunner runner;
  private final IdempotentCall<JsonNode> refunds;

  /** Listens on 127.0.0.1:port (0: any free port); refunds use the control API at {@code idem}. */
  public OrdersService(int port, Idem idem) throws IOException {
    this.runner = new ClaimRunner(new ControlApiStore(idem));
    this.refunds = IdempotentCall.builder(runner, JacksonResultCodec.of(ExactJson.mapper(), JsonNode.class)).build();
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 64);
    server.setExecutor(pool);
    server.createContext("/orders", this::orders);
    server.createContext("/refunds", this::refunds);
    server.start();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** How many orders were really created (not replayed). */
  public int ordersCreated() {
    return ordersCreated.get();
  }

  public int refundsIssued() {
    return refundsIssued.get();
  }

  // POST /orders {"sku": "...", "qty": N} -> 201 {"id": <19 digits>, "sku": ..., "qty": ...}
  private void orders(HttpExchange ex) throws IOException {
    if (!ex.getRequestMethod().equals("POST")) {
      reply(ex, 405, "{\"error\":\"POST only\"}");
      return;
    }
    JsonNode req;
    try {
      req = ExactJson.parse(body(ex));
      if (!req.path("sku").isTextual()) throw new IllegalArgumentException("sku: a string");
      if (!req.path("qty").canConvertToExactIntegral() || req.get("qty").longValue() <= 0)
        throw new IllegalArgumentException("qty: a positive integer");
    } catch (IllegalArgumentException e) {
      reply(ex, 400, error(e.getMessage()));
      return;
    }
    long id = ids.next();
    ObjectNode o = ExactJson.mapper().createObjectNode().put("id", id);
    o.set("sku", req.get("sku"));
    o.set("qty", req.get("qty"));
    String order = ExactJson.write(o);
    orders.put(id, order);
    ordersCreated.incrementAndGet();
    reply(ex, 201, order);
  }

  // POST /refunds {"order": <id>, "amount": N}, Idempotency-Key and X-User-Id required.
  private void refunds(HttpExchange ex) throws IOException {
    String key = ex.getRequestHeaders().getFirst("Idempotency-Key");
    String user = ex.getRequestHeaders().getFirst("X-User-Id");
    if (!ex.getRequestMethod().equals("POST") || key == null || key.isEmpty() || user == null) {
      reply(ex, 400, "{\"error\":\"POST with Idempotency-Key and X-User-Id\"}");
      return;
    }
    String body = body(ex);
    JsonNode req;
    try {
      req = ExactJson.parse(body);
      if (!req.path("order").isIntegralNumber() || !req.path("amount").isNumber())
        throw new IllegalArgumentException("order: an integer id, amount: a number");
    } catch (IllegalArgumentException e) {
      reply(ex, 400, error(e.getMessage()));
      return;
    }
    try {
      JsonNode refund = refunds.run(user, key, sha256(body), () -> {
        refundsIssued.incrementAndGet();  // the side effect: at most once per key
        ObjectNode r = ExactJson.mapper().createObjectNode().put("refund", ids.next());
        r.set("order", req.get("order"));
        r.set("amount", req.get("amount"));
        return r;
      });
      reply(ex, 201, ExactJson.write(refund));
    } catch (InProgressException e) {
      ex.getResponseHeaders().set("Retry-After", Long.toString(Math.max(1, (e.retryAfter().toMillis() + 999) / 1000)));
      reply(ex, 409, "{\"error\":\"in progress\"}");
    } catch (KeyReusedException e) {
      reply(ex, 422, "{\"error\":\"Idempotency-Key reused for another request\"}");
    } catch (RuntimeException e) {
      reply(ex, 503, error(e.getMessage()));
    }
  }

  private static String error(String message) {
    return ExactJson.write(ExactJson.mapper().createObjectNode().put("error", message));
  }

  private static String body(HttpExchange ex) throws IOException {
    return new String(ex.getRequestBody().readNBytes(64 * 1024), StandardCharsets.UTF_8);
  }

  private static void reply(HttpExchange ex, int status, String json) throws IOException {
    byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", "application/json");
    ex.sendResponseHeaders(status, bytes.length);
    ex.getResponseBody().write(bytes);
    ex.close();
  }

  private static String sha256(String s) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    pool.shutdownNow();
    runner.close();
  }

  public static void main(String[] args) throws Exception {
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 9000;
    String admin = args.length > 1 ? args[1] : "http://127.0.0.1:9901";
    Idem idem = Idem.builder().baseUri(admin).token(System.getenv("IDEM_ADMIN_TOKEN")).build();
    OrdersService service = new OrdersService(port, idem);
    System.out.println(service.port());
  }
}
