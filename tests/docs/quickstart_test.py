#!/usr/bin/env python3
"""scripts/quickstart, run end to end: every step must print what the README promises.

Usage: quickstart_test.py --root SRC --build-dir DIR

Runs `scripts/quickstart --build-dir DIR --ports S,G,A` on free ports (the binaries
already built, nothing rebuilt) and compares everything it prints, standard output and
standard error together, with EXPECTED below: the ports are written back as the script
shows them by default (9000, 8080, 9901), and `…` stands for any text within a line (the
fences and times, which change on every run). Exits 1 showing the first line that
differs.
"""

import argparse
import os
import random
import re
import socket
import subprocess
import sys

EXPECTED = r"""
# 1. First request: runs in the service, order 1 is created
$ curl -X POST http://127.0.0.1:8080/orders -H 'Idempotency-Key: order-7f3a' -d '{"sku":"A-1","qty":1}'
HTTP/1.1 201 Created
Content-Type: application/json
{"order":1,"idempotency_key":"order-7f3a","fence":"…","request":"{\"sku\":\"A-1\",\"qty\":1}"}

# 2. The client retries (timeout, double click): the first response is replayed, no second order
$ curl -X POST http://127.0.0.1:8080/orders -H 'Idempotency-Key: order-7f3a' -d '{"sku":"A-1","qty":1}'
HTTP/1.1 201 Created
Content-Type: application/json
Idempotent-Replayed: true
{"order":1,"idempotency_key":"order-7f3a","fence":"…","request":"{\"sku\":\"A-1\",\"qty\":1}"}

# 3. The same key with a different body: refused, 422 key-reused
$ curl -X POST http://127.0.0.1:8080/orders -H 'Idempotency-Key: order-7f3a' -d '{"sku":"B-2","qty":9}'
HTTP/1.1 422 Unprocessable Entity
Content-Type: application/problem+json
{"type":"urn:idem:problem:key-reused","title":"Idempotency key reused for a different request","status":422,"detail":"this key was used with a different request","instance":"urn:uuid:…","retryable":false}

# 4. A payment, then the same payment again on a route with on_duplicate: reject: 409 duplicate
$ curl -X POST http://127.0.0.1:8080/payments -H 'Idempotency-Key: pay-91c2' -d '{"amount":"9.90"}'
HTTP/1.1 201 Created
Content-Type: application/json
{"charge":1,"idempotency_key":"pay-91c2","fence":"…","request":"{\"amount\":\"9.90\"}"}

#    (the second time)
$ curl -X POST http://127.0.0.1:8080/payments -H 'Idempotency-Key: pay-91c2' -d '{"amount":"9.90"}'
HTTP/1.1 409 Conflict
Content-Type: application/problem+json
{"type":"urn:idem:problem:duplicate","title":"Duplicate request","status":409,"detail":"a request with this key was already completed","instance":"urn:uuid:…","retryable":false}

# 5. What the service executed: one order, one charge
$ curl http://127.0.0.1:9000/orders
HTTP/1.1 200 OK
Content-Type: application/json
{"created":1}
$ curl http://127.0.0.1:9000/payments
HTTP/1.1 200 OK
Content-Type: application/json
{"created":1}

# 6. The record idem keeps for the order (admin API): key space create-order, key order-7f3a
$ curl http://127.0.0.1:9901/v1/records/_/create-order:order-7f3a
HTTP/1.1 200 OK
Content-Type: application/json
{"scope":"","key":"create-order:order-7f3a","state":"done","fence":…,"expires_at":"…","result":"response","response_status":201}

quickstart: 3 order requests and 3 payment requests; the service created 1 order and 1 charge
"""


def free_ports(n):
    """n distinct free loopback ports below the ephemeral range, as the docs test picks them."""
    ports = []
    rng = random.Random()
    while len(ports) < n:
        port = rng.randint(20000, 24999)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


def matches(expected, actual):
    pattern = ".*?".join(re.escape(part) for part in expected.split("…"))
    return re.fullmatch(pattern, actual) is not None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--build-dir", required=True)
    args = p.parse_args()
    service, gateway, admin = free_ports(3)
    run = subprocess.run(
        ["bash", os.path.join(args.root, "scripts", "quickstart"), "--build-dir", args.build_dir,
         "--ports", "%d,%d,%d" % (service, gateway, admin)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    output = run.stdout
    for port, shown in ((service, "9000"), (gateway, "8080"), (admin, "9901")):
        output = output.replace("127.0.0.1:%d" % port, "127.0.0.1:" + shown)
    want = EXPECTED.strip("\n").split("\n")
    got = output.strip("\n").split("\n")
    failures = []
    if run.returncode != 0:
        failures.append("scripts/quickstart exited with %d" % run.returncode)
    for n in range(max(len(want), len(got))):
        w = want[n] if n < len(want) else "(nothing)"
        g = got[n] if n < len(got) else "(nothing)"
        if not matches(w, g):
            failures.append("line %d differs:\n  expected: %s\n  printed:  %s" % (n + 1, w, g))
            break
    if failures:
        print("\n".join(failures))
        print("\nscripts/quickstart printed:\n" + run.stdout)
        return 1
    print("scripts/quickstart: %d lines as expected" % len(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
