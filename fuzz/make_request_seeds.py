#!/usr/bin/env python3
"""Writes the seed requests of request_key_fuzz to corpus/request_key/.

The fuzzer reads its input through FuzzedDataProvider: numbers and choices from the end
of the input, strings from the front (a string ends at a backslash followed by another
character; a backslash itself is written twice), the body is what is left. This writes
readable requests in that layout, so the seeds reach every route of the target's config
from the first run. Keep the order of reads in step with request_key_fuzz.cpp.
"""
import os

ROUTES = 17  # the routes of the target's config, plus the fuzzed-template route
HEADERS = ["Idempotency-Key", "idempotency-key", "Idempotency-Token", "X-Request-Id", "X-Tenant",
           "X-User-Id", "Authorization", "Cookie", "Content-Type", "X-Order", "X-Part", "X-K", "Accept"]
CONTENT_TYPES = ["application/json", "application/x-www-form-urlencoded",
                 "Application/X-WWW-Form-Urlencoded ; charset=utf-8", "text/plain"]


class Input:
    def __init__(self):
        self.front = b""
        self.back = []  # bytes read from the end, in the order they are read

    def byte(self, v):
        self.back.append(v)

    def string(self, s):
        self.front += s.encode().replace(b"\\", b"\\\\") + b"\\x"

    def data(self, body):
        return self.front + body.encode() + bytes(reversed(self.back))


def seed(route, segments=(), query=None, headers=(), body="", template=None, fuzzed=(0, 0, 0, 3)):
    i = Input()
    i.byte(route)
    if template is not None:
        i.string(template)
        required, lock, subject, fingerprint = fuzzed
        for v in (required, lock, subject, fingerprint):
            i.byte(v)
    i.byte(0)  # the route's own method
    i.byte(0)  # a target shaped by the route's path pattern
    for s in segments:
        i.string(s)
    i.byte(1 if query is not None else 0)
    if query is not None:
        i.string(query)
    i.byte(len(headers))
    for name, value in headers:
        i.byte(1)
        i.byte(HEADERS.index(name))
        if name == "Content-Type":
            if value in CONTENT_TYPES:
                i.byte(1)
                i.byte(CONTENT_TYPES.index(value))
                continue
            i.byte(0)
        i.string(value)
    return i.data(body)


JSON = ("Content-Type", "application/json")
FORM = ("Content-Type", "application/x-www-form-urlencoded")
SEEDS = {
    "header_key": seed(0, headers=[("Idempotency-Key", "abc-123"), JSON], body='{"a":1}'),
    "header_key_sf_string": seed(0, headers=[("Idempotency-Key", '"a\\"b c"')]),
    "header_key_twice": seed(0, headers=[("Idempotency-Key", "a"), ("idempotency-key", "b")]),
    "optional_header_json": seed(1, segments=["x/y"], headers=[("X-Request-Id", "r1"), ("X-Tenant", "t1"), JSON],
                                 body='{"b":[1.0,2e0,"\\u00e9"],"a":{"y":null,"x":true}}'),
    "token": seed(2, segments=["f1"], headers=[("Idempotency-Token", "tok_abcdef"), ("X-User-Id", "u1")]),
    "token_optional": seed(3, segments=["f"], headers=[("X-User-Id", "u1")]),
    "json_key": seed(4, headers=[JSON], body='{"out_trade_no":"T-1001","amount":12.50}'),
    "json_key_number": seed(4, headers=[JSON], body='{"out_trade_no":1e21}'),
    "json_deep": seed(5, headers=[JSON],
                      body='{"items":[{"sku":"A"},{"sku":"B"}],"a":{"b":{"c":7}},"amount":0.3,"currency":"EUR"}'),
    "header_template": seed(6, headers=[("X-Order", "o1"), ("X-Part", "p2"), ("X-Order", "o3")]),
    "query_template": seed(7, query="id=5&v=a+b%20c&id=6", headers=[]),
    "path_lock": seed(8, segments=["sku%2F1"]),
    "path_fields": seed(9, segments=["acc", "tx9"], headers=[("X-K", "k"), JSON], body='{"x":[1,{"y":2}]}'),
    "form_template": seed(10, headers=[FORM], body="id=f%2B1&amount=3&id=2"),
    "form_charset": seed(10, headers=[("Content-Type", "Application/X-WWW-Form-Urlencoded ; charset=utf-8")],
                         body="amount=1&id"),
    "subject_hash": seed(11, headers=[("Authorization", "Bearer token"), JSON], body='{"id":"42"}'),
    "subject_header": seed(12, segments=["t1", "x/y"], query="k=v", headers=[("X-Tenant", "acme")]),
    "everything": seed(13, segments=["p1"], query="k=q",
                       headers=[("Cookie", "sid=1"), ("X-K", "h"), JSON], body='{"k":"j"}'),
    "fuzzed_template": seed(16, segments=["a", "b", "c"], query="q=1", headers=[("X-K", "h"), JSON],
                            body='{"a":{"b":[true]}}', template="k:{json.a.b.0}{header.X-K}{query.q}{path.p}"),
    # One request, one reading (docs/gateway.md): a member in another case, a scheme spelled
    # otherwise, a list of keys, a ';' in a templated pair.
    "json_key_member_in_another_case": seed(4, headers=[JSON], body='{"out_trade_no":"T-1","OUT_TRADE_NO":"T-2"}'),
    "subject_hash_scheme_spelling": seed(11, headers=[("Authorization", "bearer  token"), JSON], body='{"id":"42"}'),
    "header_key_list": seed(0, headers=[("Idempotency-Key", "a, b;p=1")]),
    "form_template_semicolon": seed(10, headers=[FORM], body="id=1;x&amount=3"),
    # JSON-RPC routes (docs/configuration.md, "JSON-RPC routes"): a call, a batch, a listed
    # method with a header key, an id whose member name is escaped.
    "jsonrpc_call": seed(14, headers=[JSON], body='{"jsonrpc":"2.0","id":9007199254740993123,"method":"tools/call",'
                         '"params":{"name":"t","_meta":{"k":"a-1","progressToken":1}}}'),
    "jsonrpc_batch": seed(14, headers=[JSON], body='[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]'),
    "jsonrpc_header": seed(15, segments=["x"], headers=[("X-Tenant", "t"), ("Idempotency-Key", "h-1"), JSON],
                           body='{"id" : "a" ,"method":"a","params":[1]}'),
    "jsonrpc_escaped_id": seed(15, segments=["x"], headers=[("X-Tenant", "t"), ("Idempotency-Key", "h-1")],
                               body='{"\\u0069d":1.0,"method":"tools/call"}'),
    "fuzzed_template_lock": seed(16, segments=["a", "b", "c"], headers=[("Authorization", "x"), FORM],
                                 body="f=1", template="{subject}/{form.f}", fuzzed=(1, 1, 2, 0)),
}

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "request_key")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
