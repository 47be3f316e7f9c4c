package dev.idem.client;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real {@code idem serve} (the binary named by -Didem.bin) on free loopback ports, with an
 * admin token and a SQLite store in a directory of its own, for the tests.
 */
public final class GatewayProcess implements AutoCloseable {
  public static final String TOKEN = "java-test-token-1b0c";
  private static final String TOKEN_ENV = "IDEM_JAVA_TEST_TOKEN";
  /** On a control-only gateway: a token of the {@code control} role alone, as a service holds. */
  public static final String CONTROL_TOKEN = "java-test-control-7e2a";
  private static final String CONTROL_TOKEN_ENV = "IDEM_JAVA_TEST_CONTROL_TOKEN";

  private final Path dir;
  private final Process process;
  private final int port;
  private final int adminPort;

  private GatewayProcess(Path dir, Process process, int port, int adminPort) {
    this.dir = dir;
    this.process = process;
    this.port = port;
    this.adminPort = adminPort;
  }

  /**
   * A gateway for the control API alone: no upstream and no routes (docs/control-api.md, "A
   * gateway for the control API alone"); {@link #TOKEN} has every role (the store contract lists
   * and deletes records), {@link #CONTROL_TOKEN} only {@code control}.
   */
  public static GatewayProcess start() throws Exception {
    return start(null, "");
  }

  /** A gateway in front of {@code upstream}; {@code extraYaml} is appended to the config (routes:). */
  public static GatewayProcess start(String upstream, String extraYaml) throws Exception {
    return start(upstream, extraYaml, null);
  }

  /** A control-API gateway on the store {@code storeUri} (a Redis, MySQL... shared with the Java engine). */
  public static GatewayProcess onStore(String storeUri) throws Exception {
    return start(null, "", storeUri);
  }

  private static GatewayProcess start(String upstream, String extraYaml, String storeUri) throws Exception {
    String bin = System.getProperty("idem.bin", System.getenv("IDEM_BIN"));
    // Without the binary (a machine that did not build it) the tests that need a gateway are skipped.
    org.junit.jupiter.api.Assumptions.assumeTrue(bin != null && !bin.isEmpty() && new java.io.File(bin).canExecute(),
        "-Didem.bin (or IDEM_BIN) names no idem binary");
    Path dir = Files.createTempDirectory("idem-java-test");
    IOException last = null;
    for (int tries = 0; tries < 5; tries++) {  // a free port can be taken between probe and bind
      int port = freePort(), admin = freePort();
      String config = "listen: 127.0.0.1:" + port + "\n"
          + (upstream != null ? "upstream: " + upstream + "\n" : "")
          + "store: \"" + (storeUri != null ? storeUri : "sqlite:" + dir.resolve("idem.db")) + "\"\n"
          + "admin:\n  listen: 127.0.0.1:" + admin + "\n"
          + (upstream != null ? "  token_env: " + TOKEN_ENV + "\n"
              : "  tokens:\n    - {name: java-tests, env: " + TOKEN_ENV + ", roles: [control, operator]}\n"
                  + "    - {name: java-service, env: " + CONTROL_TOKEN_ENV + ", roles: [control]}\n")
          + "defaults:\n  lease: 10s\n  wait: 5s\n"
          + extraYaml;
      Path file = dir.resolve("idem.yaml");
      Files.writeString(file, config);
      ProcessBuilder pb = new ProcessBuilder(bin, "serve", "--config", file.toString())
          .redirectErrorStream(true)
          .redirectOutput(dir.resolve("idem.log").toFile());
      pb.environment().put(TOKEN_ENV, TOKEN);
      pb.environment().put(CONTROL_TOKEN_ENV, CONTROL_TOKEN);
      Process p = pb.start();
      GatewayProcess g = new GatewayProcess(dir, p, port, admin);
      try {
        g.waitHealthy(Duration.ofSeconds(15));
        return g;
      } catch (IOException e) {
        last = e;
        g.stopProcess();
      }
    }
    throw last;
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  // Polls /healthz: the process says nothing else when its listeners are up.
  private void waitHealthy(Duration timeout) throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) throw new IOException("idem serve exited " + process.exitValue() + ": " + log());
      try {
        HttpResponse<String> r = http.send(
            HttpRequest.newBuilder(adminUri().resolve("/healthz")).timeout(Duration.ofSeconds(1)).build(),
            HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200) return;
      } catch (IOException e) {
        // not listening yet
      }
      Thread.sleep(20);
    }
    throw new IOException("idem serve not healthy within " + timeout + ": " + log());
  }

  public URI uri() {
    return URI.create("http://127.0.0.1:" + port);
  }

  public URI adminUri() {
    return URI.create("http://127.0.0.1:" + adminPort);
  }

  /** A client of this gateway's control API, with the right token. */
  public Idem client() {
    return Idem.builder().baseUri(adminUri()).token(TOKEN).requestTimeout(Duration.ofSeconds(10)).build();
  }

  public String log() {
    try {
      return Files.readString(dir.resolve("idem.log"));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  private void stopProcess() throws InterruptedException {
    process.destroy();  // SIGTERM: a graceful drain
    if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly().waitFor();
  }

  @Override
  public void close() throws Exception {
    stopProcess();
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }
}
