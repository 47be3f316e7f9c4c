package dev.idem.spring;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** A TCP proxy to a real server that a test cuts (the server "goes down") and restores, on one port. */
final class TcpProxy implements AutoCloseable {
  private final String host;
  private final int targetPort;
  private final int port;
  private final Set<Socket> live = ConcurrentHashMap.newKeySet();
  private volatile ServerSocket server;

  TcpProxy(String host, int targetPort) throws IOException {
    this.host = host;
    this.targetPort = targetPort;
    ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    this.port = s.getLocalPort();
    serve(s);
  }

  int port() {
    return port;
  }

  private void serve(ServerSocket s) {
    this.server = s;
    Thread t = new Thread(() -> {
      while (!s.isClosed()) {
        try {
          Socket client = s.accept();
          Socket upstream = new Socket(host, targetPort);
          live.add(client);
          live.add(upstream);
          pump(client, upstream);
          pump(upstream, client);
        } catch (IOException e) {
          // closed: cut
        }
      }
    }, "tcp-proxy-accept");
    t.setDaemon(true);
    t.start();
  }

  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        in.transferTo(out);
      } catch (IOException e) {
        // a side closed
      } finally {
        close(from);
        close(to);
      }
    }, "tcp-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private void close(Socket s) {
    live.remove(s);
    try {
      s.close();
    } catch (IOException e) {
      // closing
    }
  }

  /** Drops every connection and refuses new ones. */
  void cut() throws IOException {
    server.close();
    for (Socket s : live) close(s);
  }

  /** Accepts connections again, on the same port. */
  void restore() throws IOException {
    ServerSocket s = new ServerSocket();
    s.setReuseAddress(true);
    s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    serve(s);
  }

  @Override
  public void close() throws IOException {
    cut();
  }
}
