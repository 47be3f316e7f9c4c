#!/usr/bin/env python3
"""Differential framing check: idem alone against nginx in front of idem (docs/fuzzing.md).

Starts a recording upstream (tests/testutil/recording_upstream.cpp), `idem serve` on a memory
store in front of it, and nginx (its own prefix and config in a temporary directory,
`daemon off; master_process off;`) proxying to idem. Each input of the smuggling corpus
(fuzz/corpus/server/, shared with server_fuzz) is sent on one connection to idem directly,
then to nginx; each time the upstream's record of what it received (method, target, body
of each request, in order) is taken. The two must not disagree on where a request ends:

  - the same requests: agree;
  - what idem alone forwarded is a proper subsequence of what nginx→idem forwarded: idem
    refused something nginx let through (idem is the stricter): reported, allowed;
  - anything else — nginx refused what idem accepted, or the two read different requests
    or bodies out of the same bytes — is a failure.

The config protects its routes in lock mode, which keeps no results: what idem does with a
request does not depend on the inputs before it, so both runs see the same gateway.
Exit status 0 when no input fails, 1 otherwise, 77 (skipped) without nginx.

With --segments (no nginx) it checks instead that idem reads each input the same way
however it is cut: every input is sent whole, then cut in two at every byte boundary (the
second part written after a pause, so that idem reads the first alone), and the upstream
must receive the same requests each time. Clients connect from loopback addresses of their
own (127.0.0.2 and up), which the upstream's record names, so the cuts run side by side.

Usage: framing_differential.py --idem BIN --upstream BIN --corpus DIR [--nginx BIN] [-v]
       framing_differential.py --segments --idem BIN --upstream BIN --corpus DIR [--workers N]
"""
import argparse
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

CONFIG = """\
listen: 127.0.0.1:{idem_port}
upstream: http://127.0.0.1:{upstream_port}
store: "memory:"
admin:
  listen: 127.0.0.1:{admin_port}
defaults:
  wait: 0s
  upstream_timeout: 2s
routes:
  - name: orders
    match: {{ method: POST, path: /orders }}
    key: header:Idempotency-Key
    mode: lock
  - name: pay
    match: {{ method: POST, path: /pay }}
    key: "pay:{{json.out_trade_no}}"
    mode: lock
  - name: deduct
    match: {{ method: POST, path: "/skus/{{sku}}/deduct" }}
    key: "stock:{{path.sku}}"
    mode: lock
"""

# nginx as a plain front proxy: the request URI passed on as received (proxy_pass without a
# URI part), request bodies buffered (its default), an exchange finished even when the
# client has half-closed its side (the harness half-closes after its last byte).
NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log info;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  server {{
    listen 127.0.0.1:{nginx_port};
    location / {{
      proxy_pass http://127.0.0.1:{idem_port};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_ignore_client_abort on;
    }}
  }}
}}
"""

EXCHANGE_DEADLINE = 5.0

# Inputs nginx refuses for want of a feature, not over framing: reported, allowed.
NGINX_LIMITS = {
    "options_star": "nginx does not take the asterisk-form target of OPTIONS * (RFC 9112 §3.2.4)",
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, what, timeout=10.0):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{what} does not listen on {port}")


def pieces_of(data):
    """As server_fuzz sends an input whose first byte 0x01-0x08 asks for that many writes + 1
    (other inputs are sent whole here; server_fuzz cuts them at places drawn from their hash)."""
    if not data or not 1 <= data[0] <= 8:
        return [data]
    n, data = data[0] + 1, data[1:]
    cuts = [len(data) * i // n for i in range(n + 1)]
    return [data[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


def exchange(port, pieces, source=None):
    """Writes the pieces on one connection, half-closes, reads until the server closes."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=EXCHANGE_DEADLINE,
                                  source_address=(source, 0) if source else None) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Closed with a reset: tens of thousands of exchanges leave no TIME_WAIT behind.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        try:
            for i, p in enumerate(pieces):
                if i:
                    time.sleep(0.001)
                s.sendall(p)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server closed early; read what it said
        until = time.monotonic() + EXCHANGE_DEADLINE
        try:
            while time.monotonic() < until:
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except OSError:
            pass
    return answer


class Recorder:
    """The upstream's log, read from where the last take() stopped; safe for threads."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.lock = threading.Lock()
        self.by_client = {}

    def take(self, client=None):
        """The requests logged since the last take (of `client`'s requests alone, if given)."""
        with self.lock:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
            complete = data[: data.rfind(b"\n") + 1]
            self.offset += len(complete)
            for line in complete.splitlines():
                r = json.loads(line)
                who = bytes.fromhex(r["client"]).decode("latin-1") if client is not None else None
                self.by_client.setdefault(who, []).append(
                    (r["method"], bytes.fromhex(r["target"]), bytes.fromhex(r["body"])))
            return self.by_client.pop(client, [])


def is_subsequence(short, long):
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def show(requests):
    def one(r):
        body = r[2] if len(r[2]) <= 60 else r[2][:60] + b"..."
        return f"{r[0]} {r[1].decode('latin-1')!r} body={body!r}"

    return "[" + ", ".join(one(r) for r in requests) + "]"


def status_line(answer):
    return answer.split(b"\r\n", 1)[0].decode("latin-1") if answer else "(no answer)"


def segments(gateways, recorder, corpus, names, verbose):
    """Each input whole, then cut in two at every byte boundary: the same requests each time.
    `gateways`: (process, port) of one idem per client. Returns the number of failing cuts."""
    inputs = {}
    for name in names:
        with open(os.path.join(corpus, name), "rb") as f:
            inputs[name] = b"".join(pieces_of(f.read()))
    sources = [f"127.0.0.{2 + i}" for i in range(len(gateways))]
    whole = {}
    for name, data in inputs.items():
        exchange(gateways[0][1], [data], sources[0])
        whole[name] = recorder.take(sources[0])
    tasks = queue.Queue()
    for name, data in inputs.items():
        for at in range(1, len(data)):
            tasks.put((name, at))
    total = tasks.qsize()
    failed = []
    lock = threading.Lock()

    def work(source, idem_port):
        while True:
            try:
                name, at = tasks.get_nowait()
            except queue.Empty:
                return
            data = inputs[name]
            answer = exchange(idem_port, [data[:at], data[at:]], source)
            got = recorder.take(source)
            if got != whole[name]:
                with lock:
                    failed.append(name)
                    print(f"FAIL     {name} cut at {at}: {data[max(0, at - 20):at]!r} | {data[at:at + 20]!r}"
                          f"\n    whole:  {show(whole[name])}\n    cut:    {show(got)}  answer {status_line(answer)}")
            elif verbose:
                print(f"agree    {name} cut at {at}")

    threads = [threading.Thread(target=work, args=(source, port)) for source, (_, port) in zip(sources, gateways)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for idem, _ in gateways:
        if idem.poll() is not None:
            raise RuntimeError(f"idem exited with status {idem.returncode}")
    print(f"framing_segments: {len(inputs)} inputs cut at each of {total} byte boundaries in "
          f"{time.monotonic() - started:.0f} s: {total - len(failed)} read as the whole input, "
          f"{len(failed)} not ({len(set(failed))} inputs)")
    return len(failed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--idem", required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    ap.add_argument("--segments", action="store_true")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not args.segments and not os.access(args.nginx, os.X_OK):
        print(f"framing_differential: no nginx at {args.nginx}: skipped")
        return 77

    work = tempfile.mkdtemp(prefix="idem-framing-")
    procs = []
    failures = 0
    try:
        log = os.path.join(work, "upstream.jsonl")
        upstream = subprocess.Popen([args.upstream, log], stdout=subprocess.PIPE,
                                    stderr=open(os.path.join(work, "upstream.err"), "wb"))
        procs.append(upstream)
        upstream_port = int(upstream.stdout.readline())

        def start_idem(i):
            """An idem in front of the upstream, on ports of its own; its port once it serves."""
            port, admin_port = free_port(), free_port()
            config = os.path.join(work, f"idem{i}.yaml")
            with open(config, "w") as f:
                f.write(CONFIG.format(idem_port=port, upstream_port=upstream_port, admin_port=admin_port))
            proc = subprocess.Popen([args.idem, "serve", "--config", config], stdout=subprocess.DEVNULL,
                                    stderr=open(os.path.join(work, "idem.err"), "ab"))
            procs.append(proc)
            wait_for_port(port, proc, "idem")
            urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/healthz", timeout=5).read()
            return proc, port

        names = sorted(n for n in os.listdir(args.corpus) if not n.startswith("."))
        if args.segments:
            # A gateway per client: lock mode answers a key held by another client 409.
            gateways = [start_idem(i) for i in range(args.workers)]
            failures = segments(gateways, Recorder(log), args.corpus, names, args.verbose)
            return 1 if failures else 0
        idem, idem_port = start_idem(0)
        nginx_port = free_port()
        with open(os.path.join(work, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF.format(dir=work, nginx_port=nginx_port, idem_port=idem_port))
        nginx = subprocess.Popen([args.nginx, "-p", work, "-c", os.path.join(work, "nginx.conf"),
                                  "-e", os.path.join(work, "nginx-error.log")],
                                 stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "nginx.err"), "wb"))
        procs.append(nginx)
        wait_for_port(nginx_port, nginx, "nginx")

        recorder = Recorder(log)
        agree = stricter = limits = 0
        for name in names:
            with open(os.path.join(args.corpus, name), "rb") as f:
                pieces = pieces_of(f.read())
            idem_answer = exchange(idem_port, pieces)
            direct = recorder.take()
            nginx_answer = exchange(nginx_port, pieces)
            via = recorder.take()
            for proc, what in ((upstream, "the upstream"), (idem, "idem"), (nginx, "nginx")):
                if proc.poll() is not None:
                    raise RuntimeError(f"{what} exited with status {proc.returncode} on input {name}")
            detail = (f"\n    idem alone:   {show(direct)}  answer {status_line(idem_answer)}"
                      f"\n    nginx → idem: {show(via)}  answer {status_line(nginx_answer)}")
            if direct == via:
                agree += 1
                if args.verbose:
                    print(f"agree    {name}{detail}")
            elif is_subsequence(direct, via):
                stricter += 1
                print(f"stricter {name}: idem refused what nginx let through{detail}")
            elif name in NGINX_LIMITS and not via:
                limits += 1
                print(f"limit    {name}: {NGINX_LIMITS[name]}{detail}")
            else:
                failures += 1
                why = ("nginx refused what idem accepted" if is_subsequence(via, direct)
                       else "they read different requests out of the same bytes")
                print(f"FAIL     {name}: {why}{detail}")
        print(f"framing_differential: {len(names)} inputs, {agree} agree, {stricter} where idem is "
              f"stricter, {limits} nginx cannot take, {failures} failing")
    except Exception:
        failures += 1
        raise
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
            p.wait()
        if failures:
            for f in ("upstream.err", "idem.err", "nginx.err"):
                path = os.path.join(work, f)
                if os.path.exists(path) and os.path.getsize(path):
                    print(f"--- {f}:\n" + open(path, errors="replace").read()[-4000:])
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
