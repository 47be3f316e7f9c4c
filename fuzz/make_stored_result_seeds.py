#!/usr/bin/env python3
"""Writes the seeds of stored_result_fuzz to corpus/stored_result/.

Each seed is a stored result as the gateway's encode() writes it (gateway/pipeline/stored_result.cpp):
a kind byte, then for a response a u16 status, a u32 header count, each header as a
u32-length-prefixed name and value, and the u32-length-prefixed body; for not_stored a u16
status; for json the u32-length-prefixed text; for uncertain nothing. Little-endian.
Keep the layout in step with stored_result.cpp (the fuzzer checks that every seed that
decodes re-encodes to the same bytes).
"""
import os
import struct


def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v)


def text(s):
    b = s.encode() if isinstance(s, str) else s
    return u32(len(b)) + b


def response(status, headers, body):
    out = b"R" + u16(status) + u32(len(headers))
    for name, value in headers:
        out += text(name) + text(value)
    return out + text(body)


SEEDS = {
    "response_created": response(201, [("Content-Type", "application/json"), ("Location", "/orders/42"),
                                       ("ETag", '"v1"')], '{"order":"42","status":"created"}'),
    "response_no_headers_empty_body": response(204, [], ""),
    "response_binary_body": response(200, [("Content-Type", "application/octet-stream")],
                                     bytes(range(256))),
    "response_repeated_header": response(200, [("Link", "</a>; rel=preload"), ("Link", "</b>; rel=preload"),
                                               ("X-Empty", "")], "ok"),
    "response_utf8": response(200, [("Content-Type", "text/plain; charset=utf-8")], "订单20240101"),
    "uncertain": b"U",
    "not_stored": b"N" + u16(200),
    "not_stored_5xx": b"N" + u16(503),
    "json_object": b"J" + text('{"status":"done","amount":12.5,"items":[1,2,3]}'),
    "json_empty": b"J" + text(""),
}

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "stored_result")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
