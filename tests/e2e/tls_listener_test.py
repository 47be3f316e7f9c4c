#!/usr/bin/env python3
"""TLS on the client listener of `idem serve` (docs/operations.md, "TLS at the edge"),
end to end against the binary, with certificates made here by the openssl command: a tiny
CA and two server certificates for 127.0.0.1 and localhost.

usage: tls_listener_test.py --idem PATH [unittest args]
"""
import argparse
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
import warnings

IDEM = None
WORK = None
OPENSSL = shutil.which("openssl")


def run(*cmd):
    subprocess.run(cmd, check=True, cwd=WORK, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certificates():
    """ca.pem; a.crt/a.key and b.crt/b.key: two server certificates (CN a and b) signed by it."""
    run(OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=idem test CA")
    with open(os.path.join(WORK, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("a", "b"):
        run(OPENSSL, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN=server {name}")
        run(OPENSSL, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", "san.ext")


def path(name):
    return os.path.join(WORK, name)


def install_pair(prefix, cert, key):
    """Copies a certificate and a key to the paths a gateway's config names."""
    shutil.copyfile(path(cert), path(prefix + ".crt"))
    shutil.copyfile(path(key), path(prefix + ".key"))


class Upstream(http.server.ThreadingHTTPServer):
    """Answers every request with a JSON body counting the requests it was sent, and keeps
    the head of each."""

    def __init__(self):
        self.heads = []
        self.lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_any(handler):
                length = int(handler.headers.get("Content-Length") or 0)
                handler.rfile.read(length)
                with self.lock:
                    self.heads.append(dict(handler.headers.items()))
                    n = len(self.heads)
                body = json.dumps({"execution": n}).encode()
                handler.send_response(201)
                handler.send_header("Content-Type", "application/json")
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)

            do_GET = do_POST = do_any

            def log_message(handler, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


class Gateway:
    """An `idem serve` whose client listener speaks TLS with <prefix>.crt and <prefix>.key."""

    def __init__(self, prefix, upstream_port, extra=""):
        self.prefix = prefix
        self.config = path(prefix + ".yaml")
        with open(self.config, "w") as f:
            f.write(f"""listen: 127.0.0.1:0
upstream: http://127.0.0.1:{upstream_port}
store: "memory:"
admin:
  listen: 127.0.0.1:0
tls:
  cert_file: {path(prefix + '.crt')}
  key_file: {path(prefix + '.key')}
routes:
  - name: orders
    match: {{ method: POST, path: /orders }}
{extra}""")
        self.err = open(path(prefix + ".err"), "w+")
        self.proc = subprocess.Popen([IDEM, "serve", "--config", self.config], stdout=subprocess.DEVNULL,
                                     stderr=self.err)
        deadline = time.monotonic() + 20
        while True:
            m = re.search(r"serving on 127\.0\.0\.1:(\d+) with TLS \(admin 127\.0\.0\.1:(\d+)", self.stderr())
            if m:
                self.port, self.admin_port = int(m.group(1)), int(m.group(2))
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("idem did not start: " + self.stderr())
            time.sleep(0.05)

    def stderr(self):
        self.err.flush()
        with open(self.err.name) as f:
            return f.read()

    def reloads(self, result):
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.admin_port}/metrics", timeout=5).read().decode()
        m = re.search(r'^idem_config_reloads_total\{result="' + result + r'"\} (\d+)', text, re.M)
        return int(m.group(1))

    def reload(self, result):
        """SIGHUP, and waits until the reload is counted with `result` ("ok" or "failed")."""
        before = self.reloads(result)
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while self.reloads(result) == before:
            if time.monotonic() > deadline:
                raise AssertionError("no reload counted: " + self.stderr())
            time.sleep(0.02)

    def close(self):
        """Stops the gateway: it must drain and exit 0, with nothing from a sanitizer."""
        self.proc.terminate()
        code = self.proc.wait(timeout=20)
        text = self.stderr()
        self.err.close()
        if code != 0 or "Sanitizer" in text or "runtime error" in text:
            raise AssertionError(f"idem exited {code}:\n{text}")


def client_context(**kw):
    ctx = ssl.create_default_context(cafile=path("ca.pem"))
    for k, v in kw.items():
        setattr(ctx, k, v)
    return ctx


def https(port, ctx=None):
    return http.client.HTTPSConnection("127.0.0.1", port, context=ctx or client_context(), timeout=10)


def served_cn(port):
    """The CN of the certificate a new connection is shown."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with client_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            subject = dict(x[0] for x in tls.getpeercert()["subject"])
            return subject["commonName"]


def read_until_closed(sock, limit=10):
    """What the peer sends until it closes; sock's timeout bounds each wait."""
    data = b""
    while len(data) < 1 << 20:
        part = sock.recv(4096)
        if not part:
            return data
        data += part
    return data


class TlsListener(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.upstream = Upstream()
        install_pair("gw", "a.crt", "a.key")
        cls.gw = Gateway("gw", cls.upstream.server_address[1])

    @classmethod
    def tearDownClass(cls):
        cls.gw.close()
        cls.upstream.shutdown()

    def post(self, conn, key, body=b'{"sku":"x"}'):
        conn.request("POST", "/orders", body=body,
                     headers={"Idempotency-Key": key, "Content-Type": "application/json"})
        r = conn.getresponse()
        return r, r.read()

    def test_request_forwarded_over_https_and_replayed(self):
        conn = https(self.gw.port)
        first, body1 = self.post(conn, "tls-order-1")
        self.assertEqual(first.status, 201, body1)
        seen = self.upstream.heads[-1]
        self.assertEqual(seen.get("X-Forwarded-Proto"), "https")
        self.assertTrue(seen.get("Forwarded", "").endswith(";proto=https"), seen.get("Forwarded"))
        n = len(self.upstream.heads)
        second, body2 = self.post(https(self.gw.port), "tls-order-1")
        self.assertEqual(second.status, 201)
        self.assertEqual(second.getheader("Idempotent-Replayed"), "true")
        self.assertEqual(body1, body2)
        self.assertEqual(len(self.upstream.heads), n, "the upstream ran the request twice")

    def test_streamed_request_says_https_too(self):
        # Not on a route: relayed as it arrives (docs/gateway.md), its head set field by field.
        conn = https(self.gw.port)
        conn.request("GET", "/catalog", headers={"X-Forwarded-Proto": "http"})
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 201)
        self.assertEqual(self.upstream.heads[-1].get("X-Forwarded-Proto"), "https")

    def test_tls_1_1_client_refused(self):
        ctx = client_context(minimum_version=ssl.TLSVersion.TLSv1_1, maximum_version=ssl.TLSVersion.TLSv1_1)
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        with socket.create_connection(("127.0.0.1", self.gw.port), timeout=10) as raw:
            with self.assertRaises(ssl.SSLError) as e:
                ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        # The server's alert, not the client refusing to try.
        self.assertIn("PROTOCOL_VERSION", str(e.exception).upper().replace(" ", "_"))
        # TLS 1.2 is taken.
        conn = https(self.gw.port, client_context(maximum_version=ssl.TLSVersion.TLSv1_2))
        conn.request("GET", "/v12")
        self.assertEqual(conn.getresponse().status, 201)

    def test_alpn_http11(self):
        ctx = client_context()
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        with socket.create_connection(("127.0.0.1", self.gw.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                self.assertEqual(tls.selected_alpn_protocol(), "http/1.1")
        # h2 alone: no protocol agreed, the handshake completes; the HTTP/2 preface gets 505.
        ctx = client_context()
        ctx.set_alpn_protocols(["h2"])
        with socket.create_connection(("127.0.0.1", self.gw.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                self.assertIsNone(tls.selected_alpn_protocol())
                tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                self.assertTrue(read_until_closed(tls).startswith(b"HTTP/1.1 505 "))

    def test_plain_http_to_the_tls_port(self):
        with socket.create_connection(("127.0.0.1", self.gw.port), timeout=10) as s:
            s.sendall(b"GET /orders HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = read_until_closed(s)
        self.assertTrue(answer.startswith(b"HTTP/1.1 400 "), answer)
        self.assertIn(b"speaks HTTPS", answer)
        # The gateway serves on.
        conn = https(self.gw.port)
        conn.request("GET", "/after-plain")
        self.assertEqual(conn.getresponse().status, 201)

    def test_check_and_serve_refuse_a_key_of_another_certificate(self):
        install_pair("bad", "a.crt", "b.key")
        with open(self.gw.config) as f:
            text = f.read().replace(path("gw."), path("bad."))
        with open(path("bad.yaml"), "w") as f:
            f.write(text)
        r = subprocess.run([IDEM, "check", path("bad.yaml")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr, r"bad\.yaml:\d+: tls\.key_file: .*does not belong")
        # idem serve refuses to start on it, as on any config error.
        r = subprocess.run([IDEM, "serve", "--config", path("bad.yaml")], capture_output=True, text=True,
                           timeout=20)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr, r"bad\.yaml:\d+: tls\.key_file: .*does not belong")
        os.remove(path("bad.key"))
        r = subprocess.run([IDEM, "check", path("bad.yaml")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr, r"bad\.yaml:\d+: tls\.key_file: cannot load the private key")


class Reload(unittest.TestCase):
    """A certificate swapped and SIGHUP: new connections see the new one, a keep-alive
    connection made before goes on; a pair that does not match is refused and the running
    one kept."""

    def test_swap_then_bad_pair(self):
        upstream = Upstream()
        install_pair("rl", "a.crt", "a.key")
        gw = Gateway("rl", upstream.server_address[1])
        try:
            self.assertEqual(served_cn(gw.port), "server a")
            old = https(gw.port)
            old.request("GET", "/before")
            self.assertEqual(old.getresponse().read(), b'{"execution": 1}')
            old_sock = old.sock

            install_pair("rl", "b.crt", "b.key")
            gw.reload("ok")
            self.assertEqual(served_cn(gw.port), "server b")
            old.request("GET", "/after")
            self.assertEqual(old.getresponse().read(), b'{"execution": 2}')
            self.assertIs(old.sock, old_sock, "the keep-alive connection was not kept")

            install_pair("rl", "a.crt", "b.key")  # a key of another certificate
            gw.reload("failed")
            self.assertRegex(gw.stderr(), r"reload failed, the running config is kept: .*tls\.key_file")
            self.assertEqual(served_cn(gw.port), "server b")
        finally:
            gw.close()
            upstream.shutdown()


class Waiting(unittest.TestCase):
    """A socket that never completes its handshake waits for its first request: cut at the
    header timeout (10 s), and closed first at the per-client connection cap."""

    def test_silent_sockets(self):
        upstream = Upstream()
        install_pair("cap", "a.crt", "a.key")
        gw = Gateway("cap", upstream.server_address[1], "limits:\n  connections_per_client: 2\n")
        try:
            t0 = time.monotonic()
            silent = [socket.create_connection(("127.0.0.1", gw.port), timeout=20) for _ in range(2)]
            # Both slots are held by sockets in handshake: a client's request is served, one
            # of them closed to make room.
            conn = https(gw.port)
            conn.request("GET", "/probe")
            self.assertEqual(conn.getresponse().status, 201)
            conn.close()
            self.assertEqual(read_until_closed(silent[0]), b"", "the longest waiting was not closed")
            # The other is cut at the header timeout.
            self.assertEqual(read_until_closed(silent[1]), b"")
            waited = time.monotonic() - t0
            self.assertGreater(waited, 9)
            self.assertLess(waited, 15)
            for s in silent:
                s.close()
        finally:
            gw.close()
            upstream.shutdown()


def main():
    global IDEM, WORK
    parser = argparse.ArgumentParser()
    parser.add_argument("--idem", required=True)
    args, rest = parser.parse_known_args()
    IDEM = os.path.abspath(args.idem)
    # Connections left to the collector, and the TLS 1.1 client made on purpose.
    warnings.simplefilter("ignore", ResourceWarning)
    warnings.simplefilter("ignore", DeprecationWarning)
    if not OPENSSL:
        print("openssl not found: skipped")
        return 77
    with tempfile.TemporaryDirectory(prefix="idem-tls-") as work:
        WORK = work
        make_certificates()
        result = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
        return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
