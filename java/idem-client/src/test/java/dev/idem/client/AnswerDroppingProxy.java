package dev.idem.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A proxy in front of a gateway's admin listener that loses answers: it forwards every
 * request, and while {@link #dropBegins} says so, reads the gateway's answer to a
 * {@code POST /v1/begin} and closes the client's connection instead of passing it on. The
 * gateway applied the call; the client saw its connection end (a lost answer). While
 * {@link #refuseCommits} says so, commits are not forwarded at all (a gateway whose store
 * cannot take writes). It reads HTTP/1.1
 * framed by Content-Length only, which is all the control API and its Java client send.
 */
final class AnswerDroppingProxy implements AutoCloseable {
  private final ServerSocket server;
  private final int target;
  private final AtomicInteger beginsToDrop = new AtomicInteger();
  private volatile boolean refuseCommits;
  private final Thread acceptor;

  AnswerDroppingProxy(int targetPort) throws IOException {
    this.target = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    this.acceptor = new Thread(this::acceptLoop, "answer-dropping-proxy");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  URI uri() {
    return URI.create("http://127.0.0.1:" + server.getLocalPort());
  }

  /** The answers of the next {@code n} begins are lost. */
  void dropBegins(int n) {
    beginsToDrop.set(n);
  }

  /** While set, a {@code POST /v1/commit} is not forwarded: its connection just ends. */
  void refuseCommits(boolean refuse) {
    refuseCommits = refuse;
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Thread t = new Thread(() -> serve(client), "answer-dropping-proxy-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;  // closed
      }
    }
  }

  private void serve(Socket client) {
    try (client; Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target)) {
      InputStream fromClient = client.getInputStream();
      OutputStream toClient = client.getOutputStream();
      InputStream fromUpstream = upstream.getInputStream();
      OutputStream toUpstream = upstream.getOutputStream();
      for (;;) {
        byte[] request = readMessage(fromClient);
        if (request == null) return;
        String head = new String(request, 0, Math.min(request.length, 32), StandardCharsets.ISO_8859_1);
        if (refuseCommits && head.startsWith("POST /v1/commit ")) return;  // not applied
        toUpstream.write(request);
        toUpstream.flush();
        byte[] answer = readMessage(fromUpstream);
        if (answer == null) return;
        boolean begin = head.startsWith("POST /v1/begin ");
        if (begin && beginsToDrop.getAndUpdate(n -> Math.max(0, n - 1)) > 0) return;  // the answer is lost
        toClient.write(answer);
        toClient.flush();
      }
    } catch (IOException e) {
      // a peer went away: so does the connection
    }
  }

  // One message: its head up to the blank line, then Content-Length bytes of body; null at
  // the end of the stream before a message began.
  private static byte[] readMessage(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int matched = 0;
    while (matched < 4) {
      int b = in.read();
      if (b < 0) {
        if (out.size() == 0) return null;
        throw new IOException("the stream ended inside a head");
      }
      out.write(b);
      matched = (b == (matched % 2 == 0 ? '\r' : '\n')) ? matched + 1 : (b == '\r' ? 1 : 0);
    }
    int length = 0;
    for (String line : out.toString(StandardCharsets.ISO_8859_1).split("\r\n")) {
      int colon = line.indexOf(':');
      if (colon > 0 && line.substring(0, colon).trim().toLowerCase(Locale.ROOT).equals("content-length"))
        length = Integer.parseInt(line.substring(colon + 1).trim());
    }
    out.write(in.readNBytes(length));
    return out.toByteArray();
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
