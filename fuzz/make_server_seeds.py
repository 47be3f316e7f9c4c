#!/usr/bin/env python3
"""Writes the seeds of server_fuzz to corpus/server/: raw bytes a client sends on one
connection, chiefly a request-smuggling corpus (docs/fuzzing.md). A seed whose first byte
is 0x01-0x08 is sent in that many writes + 1 (the byte itself is not sent).

The same files drive tests/e2e/framing_differential.py (idem directly against nginx in
front of idem), so keep each seed a self-contained conversation.
"""
import os

H = "Host: shop.example\r\n"
KEY = "Idempotency-Key: k-1\r\n"


def req(method, target, headers="", body="", version="HTTP/1.1"):
    return f"{method} {target} {version}\r\n{H}{headers}\r\n{body}"


def post(target, body, headers=""):
    return req("POST", target, f"{headers}Content-Length: {len(body)}\r\n", body)


SMUGGLED = "GET /smuggled HTTP/1.1\r\n" + H + "\r\n"
ORDER = '{"sku":"a1","qty":1}'
ORDERS_2 = post("/orders", "{}", KEY)

SEEDS = {
    # Ordinary traffic: each route of the harness's config, and the shapes of HTTP/1.1.
    "get_unmatched": req("GET", "/things?id=1"),
    "post_orders": post("/orders", ORDER, KEY + "Content-Type: application/json\r\n"),
    "post_orders_replayed": post("/orders", ORDER, KEY) + post("/orders", ORDER, KEY),
    "post_orders_key_reused": post("/orders", ORDER, KEY) + post("/orders", '{"sku":"b2"}', KEY),
    "post_orders_no_key": post("/orders", ORDER),
    "post_orders_client_fence": post("/orders", ORDER, KEY + "Idempotency-Fence: 99\r\n"),
    "post_unmatched_client_fence": post("/things", "x", "Idempotency-Fence: 99\r\n"),
    "pay_template": post("/pay", '{"out_trade_no":"T-1","amount":12.5}', "Content-Type: application/json\r\n"),
    "pay_not_json": post("/pay", "out_trade_no=T-1"),
    "deduct_lock": post("/skus/a1/deduct", "{}"),
    "token_issue": post("/_idem/tokens", "", "X-User-Id: u1\r\n"),
    "token_unknown": post("/forms/checkout", "a=1", "X-User-Id: u1\r\nIdempotency-Token: tok-unknown\r\n"),
    "head": req("HEAD", "/things") + req("GET", "/things"),
    "expect_continue": post("/things", "hello", "Expect: 100-continue\r\n"),
    "http10": req("GET", "/things", version="HTTP/1.0"),
    "http10_keep_alive": req("GET", "/a", "Connection: keep-alive\r\n", version="HTTP/1.0") + req("GET", "/b"),
    "connection_close_then_more": req("GET", "/a", "Connection: close\r\n") + req("GET", "/b"),
    "absolute_form": req("GET", "http://shop.example/things?x=1") + req("POST", "http://shop.example/orders",
                                                                         KEY + "Content-Length: 2\r\n", "{}"),
    "options_star": req("OPTIONS", "*"),
    "leading_empty_lines": "\r\n\r\n" + req("GET", "/things"),
    "pipelined": req("GET", "/a") + post("/b", "12345") + req("GET", "/c") + post("/orders", ORDER, KEY),
    "pipelined_split": "\x03" + req("GET", "/a") + post("/orders", ORDER, KEY) + req("GET", "/c"),
    "get_with_body": req("GET", "/things", "Content-Length: 5\r\n", "hello") + req("GET", "/next"),
    "chunked": req("POST", "/things", "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
    "chunked_split": "\x05" + req("POST", "/orders", KEY + "Transfer-Encoding: chunked\r\n",
                                  "3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n") + req("GET", "/after"),
    "chunked_uppercase_hex": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                                 "A\r\n0123456789\r\n0\r\n\r\n") + req("GET", "/after"),
    # CL.TE and TE.CL: both framings present; TE wins and the connection must close after.
    "cl_te": req("POST", "/things", "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\nG") +
             post("/orders", ORDER, KEY),
    "cl_te_smuggle": req("POST", "/things", f"Content-Length: {5 + len(SMUGGLED)}\r\nTransfer-Encoding: chunked\r\n",
                         "0\r\n\r\n" + SMUGGLED),
    "te_cl": req("POST", "/things", "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n",
                 f"{len(SMUGGLED):x}\r\n{SMUGGLED}\r\n0\r\n\r\n"),
    "te_cl_smuggle_orders": req("POST", "/things", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n",
                                f"{len(ORDERS_2):x}\r\n{ORDERS_2}\r\n0\r\n\r\n"),
    # TE.0: a Transfer-Encoding that is not exactly chunked must be refused (400, close),
    # never read as "no body" nor as chunked.
    "te_gzip": req("POST", "/things", "Transfer-Encoding: gzip\r\n", "") + SMUGGLED,
    "te_gzip_chunked": req("POST", "/things", "Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n") + SMUGGLED,
    "te_chunked_identity": req("POST", "/things", "Transfer-Encoding: chunked, identity\r\n",
                               "0\r\n\r\n") + SMUGGLED,
    "te_identity": req("POST", "/things", "Transfer-Encoding: identity\r\n", "") + SMUGGLED,
    "te_identity_cl": req("POST", "/things", "Transfer-Encoding: identity\r\nContent-Length: 5\r\n", "hello") +
                      SMUGGLED,
    "te_twice": req("POST", "/things", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                    "0\r\n\r\n") + SMUGGLED,
    "te_chunked_gzip_lines": req("POST", "/things", "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
                                 "0\r\n\r\n") + SMUGGLED,
    "te_case": req("POST", "/things", "Transfer-Encoding: Chunked\r\n", "0\r\n\r\n") + SMUGGLED,
    "te_xchunked": req("POST", "/things", "Transfer-Encoding: xchunked\r\n", "0\r\n\r\n") + SMUGGLED,
    "te_space_before_colon": req("POST", "/things", "Transfer-Encoding : chunked\r\n", "0\r\n\r\n") + SMUGGLED,
    "te_empty": req("POST", "/things", "Transfer-Encoding: \r\nContent-Length: 0\r\n", "") + SMUGGLED,
    "te_http10": req("POST", "/things", "Transfer-Encoding: chunked\r\n", "0\r\n\r\n",
                     version="HTTP/1.0") + SMUGGLED,
    # Content-Length twice, listed, or not a number.
    "cl_duplicate": req("POST", "/things", "Content-Length: 5\r\nContent-Length: 44\r\n", "hello") + SMUGGLED,
    "cl_duplicate_same": req("POST", "/things", "Content-Length: 5\r\nContent-Length: 5\r\n", "hello") + SMUGGLED,
    "cl_list": req("POST", "/things", "Content-Length: 5, 5\r\n", "hello") + SMUGGLED,
    "cl_list_differing": req("POST", "/things", "Content-Length: 5, 44\r\n", "hello") + SMUGGLED,
    "cl_plus": req("POST", "/things", "Content-Length: +5\r\n", "hello") + SMUGGLED,
    "cl_hex": req("POST", "/things", "Content-Length: 0x5\r\n", "hello") + SMUGGLED,
    "cl_huge": req("POST", "/things", "Content-Length: 99999999999999999999999\r\n", "hello") + SMUGGLED,
    "cl_negative": req("POST", "/things", "Content-Length: -1\r\n", "") + SMUGGLED,
    # obs-fold, bare CR, bare LF.
    "obs_fold": req("GET", "/things", "X-Folded: a\r\n b\r\n") + req("GET", "/after"),
    "obs_fold_te": req("POST", "/things", "Transfer-Encoding:\r\n chunked\r\n", "0\r\n\r\n") + SMUGGLED,
    "obs_fold_cl": req("POST", "/things", "Content-Length: 0\r\n 44\r\n", "") + SMUGGLED,
    "whitespace_line_after_start": "POST /things HTTP/1.1\r\n Transfer-Encoding: chunked\r\n" + H +
                                   "Content-Length: 5\r\n\r\nhello" + SMUGGLED,
    "bare_cr_te": req("POST", "/things", "X-A: 1\rTransfer-Encoding: chunked\r\nContent-Length: 5\r\n",
                      "hello") + SMUGGLED,
    "bare_cr_in_value": req("GET", "/things", "X-A: 1\r2\r\n") + req("GET", "/after"),
    "bare_lf": "GET /things HTTP/1.1\nHost: shop.example\n\nGET /after HTTP/1.1\nHost: shop.example\n\n",
    "bare_lf_te": "POST /things HTTP/1.1\r\nContent-Length: 5\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
                  SMUGGLED,
    "bare_lf_chunk": req("POST", "/things", "Transfer-Encoding: chunked\r\n", "5\nhello\n0\n\n") + SMUGGLED,
    # Chunk extensions and trailers: counted against the header limit, trailers discarded.
    "chunk_ext": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                     '5;name=value;q="a;b"\r\nhello\r\n0;last\r\n\r\n') + req("GET", "/after"),
    "chunk_ext_bare_lf": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                             "5;a\nb\r\nhello\r\n0\r\n\r\n") + SMUGGLED,
    "chunk_ext_huge": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                          "5;" + "x" * 20000 + "\r\nhello\r\n0\r\n\r\n") + SMUGGLED,
    "trailer": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                   "5\r\nhello\r\n0\r\nX-Checksum: abc\r\n\r\n") + req("GET", "/after"),
    "trailer_x_user_id": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                             "5\r\nhello\r\n0\r\nX-User-Id: admin\r\n\r\n"),
    "trailer_x_user_id_token": req("POST", "/_idem/tokens", "Transfer-Encoding: chunked\r\n",
                                   "0\r\nX-User-Id: admin\r\n\r\n"),
    "trailer_key_orders": req("POST", "/orders", "Transfer-Encoding: chunked\r\n",
                              "2\r\n{}\r\n0\r\nIdempotency-Key: from-trailer\r\n\r\n"),
    "trailer_framing_fields": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                                  "5\r\nhello\r\n0\r\nContent-Length: 44\r\nTransfer-Encoding: gzip\r\n\r\n") +
                              SMUGGLED,
    "trailer_huge": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                        "0\r\nX-Big: " + "y" * 20000 + "\r\n\r\n") + SMUGGLED,
    "trailer_obs_fold": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                            "0\r\nX-T: a\r\n b\r\n\r\n") + req("GET", "/after"),
    # Chunk sizes past every integer type.
    "chunk_huge": req("POST", "/things", "Transfer-Encoding: chunked\r\n", "fffffffffffffff\r\nabc\r\n0\r\n\r\n") +
                  SMUGGLED,
    "chunk_overflow": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                          "10000000000000005\r\nhello\r\n0\r\n\r\n") + SMUGGLED,
    "chunk_overflow_64": req("POST", "/things", "Transfer-Encoding: chunked\r\n",
                             "ffffffffffffffff\r\nhello\r\n0\r\n\r\n") + SMUGGLED,
    "chunk_negative": req("POST", "/things", "Transfer-Encoding: chunked\r\n", "-5\r\nhello\r\n0\r\n\r\n") +
                      SMUGGLED,
    "chunk_0x": req("POST", "/things", "Transfer-Encoding: chunked\r\n", "0x5\r\nhello\r\n0\r\n\r\n") + SMUGGLED,
    "chunk_short_data": req("POST", "/things", "Transfer-Encoding: chunked\r\n", "5\r\nhelloXX\r\n0\r\n\r\n") +
                        SMUGGLED,
    # HTTP/2 with prior knowledge.
    "h2_preface": "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00",
    # Route matching: spellings of a protected path.
    "orders_upper": post("/ORDERS", ORDER, KEY),
    "orders_double_slash": post("//orders", ORDER, KEY),
    "orders_params": post("/orders;x=1", ORDER, KEY),
    "orders_encoded_slash": post("/orders%2f", ORDER, KEY),
    "orders_trailing_slash": post("/orders/", ORDER, KEY),
    "orders_encoded_o": post("/%6Frders", ORDER, KEY),
    "orders_dot_segment": post("/x/../orders", ORDER, KEY),
    "orders_encoded_dot_segment": post("/x/%2e%2E/orders", ORDER, KEY),
    "orders_backslash": post("/x\\..\\orders", ORDER, KEY),
    "orders_fragment": post("/orders#x", ORDER, KEY),
    "orders_query": post("/orders?a=1", ORDER, KEY),
    "orders_lowercase_method": "post /orders HTTP/1.1\r\n" + H + KEY + f"Content-Length: {len(ORDER)}\r\n\r\n" + ORDER,
    "deduct_spellings": post("/SKUS/a1/Deduct/", "{}") + post("/skus//a1/deduct", "{}"),
    "forms_upper": post("/FORMS/checkout", "a=1", "X-User-Id: u1\r\n"),
    # One request, one reading (docs/gateway.md): method overrides toward a route, fields
    # the route reads sent twice, in another case or named in Connection.
    "override_header_toward_route": req("PUT", "/orders", KEY + "X-HTTP-Method-Override: POST\r\n"
                                        "Content-Length: 2\r\n", "{}") + ORDERS_2,
    "override_query_toward_route": req("PUT", "/orders?_method=post", KEY + "Content-Length: 2\r\n", "{}"),
    "override_form_body_toward_route": post("/orders", "_method=POST&a=1",
                                            "Content-Type: application/x-www-form-urlencoded\r\n").replace(
                                                "POST /orders", "PUT /orders", 1) + ORDERS_2,
    "connection_names_key": post("/orders", ORDER, KEY + "Connection: Idempotency-Key\r\n") + ORDERS_2,
    "key_list": post("/orders", ORDER, "Idempotency-Key: k-1, k-2\r\n"),
    "pay_member_in_another_case": post("/pay", '{"out_trade_no":"T-1","OUT_TRADE_NO":"T-2"}',
                                       "Content-Type: application/json\r\n"),
    "token_subject_twice": post("/_idem/tokens", "", "X-User-Id: u1\r\nX-User-Id: u2\r\n"),
    # Heads at and over the 16 KiB limit.
    "head_large": req("GET", "/things", "X-Big: " + "z" * 16500 + "\r\n") + SMUGGLED,
}

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "server")
    os.makedirs(out, exist_ok=True)
    for name, text in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(text.encode("latin-1"))
