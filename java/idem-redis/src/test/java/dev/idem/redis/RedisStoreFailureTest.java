package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.NotAppliedException;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.RecordState;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What a call answers when the server's answer does not come (a proxy between the store and a
 * real Redis holds the answers back): the outcome is unknown, the call may have been applied, and
 * the answer that arrives late is never taken for a later call's.
 */
class RedisStoreFailureTest {
  String redis;
  HoldingProxy proxy;
  RedisStore direct;
  final String run = UUID.randomUUID().toString().substring(0, 8);

  @BeforeEach
  void start() throws IOException {
    String url = System.getenv("IDEM_TEST_REDIS_URL");
    assumeTrue(url != null && !url.isEmpty(), "IDEM_TEST_REDIS_URL is not set");
    redis = url;
    URI u = URI.create(url);
    proxy = new HoldingProxy(u.getHost(), u.getPort());
    direct = RedisStore.open(url + "?prefix=idem-java-failure:");
  }

  @AfterEach
  void stop() throws IOException {
    if (direct != null) direct.close();
    if (proxy != null) proxy.close();
  }

  static BeginArgs begin(String key) {
    return new BeginArgs("u", key, null, Duration.ofSeconds(30), Duration.ofMinutes(5));
  }

  @Test
  void aCallNotAnsweredInTimeIsAnUnknownOutcomeAndItsLateAnswerIsNobodysElse() {
    try (RedisStore store = RedisStore.open("redis://127.0.0.1:" + proxy.port() + "?prefix=idem-java-failure:&timeout_ms=400")) {
      String held = "held-" + run, next = "next-" + run;
      assertThat(store.begin(begin("first-" + run))).isInstanceOf(BeginOutcome.Acquired.class);
      proxy.hold(true);
      long t0 = System.nanoTime();
      assertThatThrownBy(() -> store.begin(begin(held))).isInstanceOf(OutcomeUnknownException.class);
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).isBetween(Duration.ofMillis(350), Duration.ofSeconds(10));
      // It was sent, and applied: "unknown" means exactly that.
      assertThat(direct.get("u", held)).get().extracting(r -> r.state()).isEqualTo(RecordState.PENDING);
      // The late answer arrives first on the connection: it belongs to the call that gave up, and
      // the next call gets its own.
      proxy.hold(false);
      BeginOutcome.Acquired a = (BeginOutcome.Acquired) store.begin(begin(next));
      assertThat(direct.get("u", next)).get().extracting(r -> r.fence()).isEqualTo(a.fence());
      assertThat(store.begin(begin(held))).isInstanceOf(BeginOutcome.InProgress.class);
    }
  }

  @Test
  void aServerThatIsGoneIsNotApplied() throws IOException {
    RedisStore store = RedisStore.open("redis://127.0.0.1:" + proxy.port() + "?prefix=idem-java-failure:&timeout_ms=400");
    try {
      proxy.close();  // the connection ends; commands made while it is down are rejected unsent
      assertThatThrownBy(() -> {
        for (int i = 0; i < 50; i++) store.begin(begin("gone-" + run + "-" + i));
      }).isInstanceOfAny(NotAppliedException.class, OutcomeUnknownException.class);
      assertThatThrownBy(() -> store.begin(begin("gone-again-" + run))).isInstanceOf(NotAppliedException.class);
      assertThat(direct.get("u", "gone-again-" + run)).isEmpty();
    } finally {
      store.close();
    }
  }

  /** Forwards a TCP connection to Redis; while held, the server's bytes wait (in order) in the proxy. */
  static final class HoldingProxy implements AutoCloseable {
    private final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final String host;
    private final int port;
    private boolean held;
    private final ByteArrayOutputStream waiting = new ByteArrayOutputStream();
    private final List<OutputStream> clients = new ArrayList<>();

    HoldingProxy(String host, int port) throws IOException {
      this.host = host;
      this.port = port;
      Thread t = new Thread(this::accept, "redis-holding-proxy");
      t.setDaemon(true);
      t.start();
    }

    int port() {
      return server.getLocalPort();
    }

    synchronized void hold(boolean h) {
      held = h;
      if (!h && waiting.size() > 0) {
        try {
          for (OutputStream c : clients) {
            c.write(waiting.toByteArray());
            c.flush();
          }
        } catch (IOException e) {
          // the client went away
        }
        waiting.reset();
      }
    }

    private synchronized void toClient(OutputStream c, byte[] b, int n) throws IOException {
      if (held) {
        waiting.write(b, 0, n);
      } else {
        c.write(b, 0, n);
        c.flush();
      }
    }

    private void accept() {
      while (!server.isClosed()) {
        try {
          Socket client = server.accept();
          Socket upstream = new Socket(host, port);
          sockets.add(client);
          sockets.add(upstream);
          synchronized (this) {
            clients.add(client.getOutputStream());
          }
          pump(client.getInputStream(), upstream.getOutputStream(), null);
          pump(upstream.getInputStream(), null, client.getOutputStream());
        } catch (IOException e) {
          return;
        }
      }
    }

    private void pump(InputStream in, OutputStream toServer, OutputStream toClient) {
      Thread t = new Thread(() -> {
        byte[] buf = new byte[8192];
        try {
          for (int n; (n = in.read(buf)) > 0; ) {
            if (toServer != null) {
              toServer.write(buf, 0, n);
              toServer.flush();
            } else {
              toClient(toClient, buf, n);
            }
          }
        } catch (IOException e) {
          // a side went away
        }
        closeAll();
      }, "redis-holding-proxy-pump");
      t.setDaemon(true);
      t.start();
    }

    private void closeAll() {
      for (Socket s : sockets) {
        try {
          s.close();
        } catch (IOException e) {
          // closing
        }
      }
    }

    @Override
    public void close() throws IOException {
      server.close();
      closeAll();
    }
  }
}
