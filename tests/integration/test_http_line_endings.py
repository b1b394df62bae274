"""Line endings of HTTP/1 heads (docs/http/parser.md, "Line endings"):
a bare LF ends the request line and the header lines of a request, and
the status line and the header lines of an origin's response (RFC 9112
2.2), unless strict_line_endings / proxy_strict_line_endings is on; a CR
alone is always a 400 (502 from an origin); chunk-size lines and
trailers take CRLF only. Heads weir writes are CRLF-only whatever it
read."""

import os
import re

from weirtest import send_and_read_to_eof, wait_accepting
from test_proxy import Client, seen_by, start as proxy_start


def start(weir, http_extra="", server_extra="", servers=""):
    port = weir.port()
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    weir.conf("http {\n"
              "%s\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        root %s;\n"
              "%s\n"
              "        location / { return 200 \"u:$uri h:$http_x_a\"; }\n"
              "    }\n"
              "%s"
              "}\n" % (http_extra, port, html, server_extra,
                       servers.replace("PORT", str(port))))
    weir.start(check_ports=False)

    wait_accepting(port)
    return port


def exchange(port, data, half_close=True):
    """Sends data, half-closes, returns everything weir sent."""
    return send_and_read_to_eof(port, data, half_close=half_close)


def status_of(got):
    assert got.startswith(b"HTTP/1.1 "), got
    return int(got[9:12])


def responses(got):
    """The (status, body) of every response in got (Content-Length)."""
    out = []
    while got:
        head, _, rest = got.partition(b"\r\n\r\n")
        m = re.search(rb"\r\nContent-Length: (\d+)", head)
        n = int(m.group(1)) if m else 0
        out.append((int(head[9:12]), rest[:n]))
        got = rest[n:]
    return out


def crlf_only(head):
    """No LF without CR before it, and no CR without LF after it."""
    return (re.search(rb"(?<!\r)\n", head) is None
            and re.search(rb"\r(?!\n)", head) is None)


# ---- requests

ACCEPTED = [
    # (name, request bytes, body of the answer)
    ("request line", b"GET /a HTTP/1.1\nHost: h\r\nX-A: 1\r\n\r\n",
     b"u:/a h:1"),
    ("headers", b"GET /a HTTP/1.1\r\nHost: h\nX-A: 1\n\n", b"u:/a h:1"),
    ("all lf", b"GET /a HTTP/1.1\nHost: h\nX-A: 1\n\n", b"u:/a h:1"),
    ("mixed", b"GET /a HTTP/1.1\nHost: h\r\nX-A: 1\n\r\n", b"u:/a h:1"),
    ("end lf after crlf", b"GET /a HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\n",
     b"u:/a h:1"),
    ("whitespace before lf", b"GET /a HTTP/1.1\nHost: h \nX-A: 1\t\n\n",
     b"u:/a h:1"),
    ("empty lines first", b"\n\r\n\nGET /a HTTP/1.1\nHost: h\nX-A: 1\n\n",
     b"u:/a h:1"),
]


def test_bare_lf_accepted(weir):
    port = start(weir)
    for name, data, body in ACCEPTED:
        got = exchange(port, data)
        assert status_of(got) == 200, (name, got)
        assert got.endswith(b"\r\n\r\n" + body), (name, got)
        # what weir writes is CRLF-only
        assert crlf_only(got.split(b"\r\n\r\n", 1)[0] + b"\r\n"), (name, got)


def test_bare_lf_pipelined(weir):
    """Two LF-only requests in one packet: each ends where a CRLF parser
    would put its end, and both are answered."""
    port = start(weir)
    got = exchange(port, b"GET /1 HTTP/1.1\nHost: h\nX-A: a\n\n"
                         b"GET /2 HTTP/1.1\nHost: h\nX-A: b\n"
                         b"Connection: close\n\n")
    assert responses(got) == [(200, b"u:/1 h:a"), (200, b"u:/2 h:b")], got


REJECTED = [
    # (name, request bytes)
    ("cr alone in request line", b"GET / HTTP/1.1\rHost: h\r\n\r\n"),
    ("cr cr lf", b"GET / HTTP/1.1\r\r\nHost: h\r\n\r\n"),
    ("cr alone in header", b"GET / HTTP/1.1\nHost: h\rX-A: 1\n\n"),
    ("cr alone in value", b"GET / HTTP/1.1\nHost: h\nX-A: 1\r2\n\n"),
    ("cr alone at the end", b"GET / HTTP/1.1\nHost: h\n\rX"),
    ("cr alone before lf line", b"\rGET / HTTP/1.1\nHost: h\n\n"),
    ("obs-fold after lf", b"GET / HTTP/1.1\nHost: h\nX-A: 1\n 2\n\n"),
    ("space before lf after version", b"GET / HTTP/1.1 \nHost: h\n\n"),
]


def test_cr_alone_rejected(weir):
    port = start(weir)
    for name, data in REJECTED:
        got = exchange(port, data)
        assert status_of(got) == 400, (name, got)
        assert b"\r\nConnection: close\r\n" in got, (name, got)


STRICT_REJECTED = [
    b"GET / HTTP/1.1\nHost: h\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\n\n",
    b"\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
]


def test_strict_line_endings(weir):
    port = start(weir, http_extra="    strict_line_endings on;")
    for data in STRICT_REJECTED:
        got = exchange(port, data)
        assert status_of(got) == 400, (data, got)
    got = exchange(port, b"GET /a HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n")
    assert status_of(got) == 200, got


def test_strict_line_endings_default_server_decides(weir):
    """The head is parsed before Host selects a server: the default
    server's setting applies to the whole head."""
    port = start(weir, server_extra="        strict_line_endings on;",
                 servers=("    server {\n"
                          "        listen 127.0.0.1:PORT;\n"
                          "        server_name lax.test;\n"
                          "        strict_line_endings off;\n"
                          "        location / { return 200 lax; }\n"
                          "    }\n"))
    got = exchange(port, b"GET / HTTP/1.1\nHost: lax.test\n\n")
    assert status_of(got) == 400, got
    got = exchange(port, b"GET / HTTP/1.1\r\nHost: lax.test\r\n\r\n")
    assert status_of(got) == 200 and got.endswith(b"lax"), got


def test_strict_line_endings_in_server_is_per_address(weir):
    """Reverse: a strict named server behind a lenient default server
    still takes bare LF heads (the default server's setting)."""
    port = start(weir, servers=("    server {\n"
                                "        listen 127.0.0.1:PORT;\n"
                                "        server_name strict.test;\n"
                                "        strict_line_endings on;\n"
                                "        location / { return 200 st; }\n"
                                "    }\n"))
    got = exchange(port, b"GET / HTTP/1.1\nHost: strict.test\n\n")
    assert status_of(got) == 200 and got.endswith(b"st"), got


def test_bare_lf_in_chunked_body_rejected(weir, origin):
    """Chunk-size lines, the CRLF after data and trailers stay CRLF-only,
    also when the head ended its lines with LF."""
    port = proxy_start(weir, origin)
    weir.allow.append("client sent invalid chunked body")
    head = (b"POST /echo HTTP/1.1\nHost: client.example\n"
            b"Transfer-Encoding: chunked\n\n")
    for body in (b"5\nhello\r\n0\r\n\r\n",
                 b"5\r\nhello\n0\r\n\r\n",
                 b"5\r\nhello\r\n0\n\r\n",
                 b"5\r\nhello\r\n0\r\n\n",
                 b"5\r\nhello\r\n0\r\nX-T: 1\n\r\n",
                 b"5\rhello\r\n0\r\n\r\n"):
        got = exchange(port, head + body)
        assert status_of(got) == 400, (body, got)
    assert [q for q in origin.requests if q.method == "POST"] == []

    # the same body with CRLF framing goes through (not half-closed:
    # that would be a client that went away)
    with Client(port) as c:
        c.send(head + b"5\r\nhello\r\n0\r\n\r\n")
        r = c.response()
    assert r.status == 200 and r.body == b"hello", r.headers


# ---- what the origin receives, and what it may send

def test_origin_receives_crlf_only(weir, origin):
    """A head read with LF endings is written to the origin with CRLF:
    an origin that parses CRLF only sees the same header lines."""
    port = proxy_start(weir, origin)
    with Client(port) as c:
        c.send(b"GET /headers HTTP/1.1\nHost: client.example\n"
               b"X-A: 1\nX-B: 2\r\nX-C: 3\n\n")
        r = c.response()
    assert r.status == 200
    req = seen_by(origin)[0]
    assert not req.bare_lf, req.raw_head
    assert crlf_only(req.raw_head), req.raw_head
    assert [(k, v) for k, v in req.headers if k.startswith("X-")] == \
        [("X-A", "1"), ("X-B", "2"), ("X-C", "3")]


def lf_origin(origin, head):
    def handler(req, w):
        w.send_raw(head)

    origin.handler = handler


def test_origin_bare_lf_head_relayed(weir, origin):
    lf_origin(origin, b"HTTP/1.1 200 OK\nContent-Length: 5\n"
                      b"X-Up: 1\r\nX-Up2: 2\n\nhello")
    port = proxy_start(weir, origin)
    with Client(port) as c:
        c.send(b"GET /x HTTP/1.1\r\nHost: client.example\r\n\r\n")
        r = c.response()
        # keep-alive: the next response comes on the same connection
        c.send(b"GET /y HTTP/1.1\r\nHost: client.example\r\n\r\n")
        r2 = c.response()
    assert r.status == 200 and r.body == b"hello", r.headers
    assert r.header("x-up") == "1" and r.header("x-up2") == "2"
    assert r2.status == 200 and r2.body == b"hello"


def test_origin_bare_lf_head_written_crlf(weir, origin):
    lf_origin(origin, b"HTTP/1.1 200 OK\nContent-Length: 2\nX-Up: 1\n\nok")
    port = proxy_start(weir, origin)
    # no half close: a proxied request takes the client's FIN for an abort
    got = exchange(port, b"GET /x HTTP/1.1\r\nHost: client.example\r\n"
                         b"Connection: close\r\n\r\n", half_close=False)
    assert status_of(got) == 200, got
    head, _, body = got.partition(b"\r\n\r\n")
    assert body == b"ok", got
    assert crlf_only(head + b"\r\n"), got
    assert b"\r\nX-Up: 1\r\n" in got, got


def test_origin_cr_alone_is_502(weir, origin):
    lf_origin(origin, b"HTTP/1.1 200 OK\nX-Up: 1\r2\nContent-Length: 0\n\n")
    port = proxy_start(weir, origin)
    with Client(port) as c:
        r = c.request("GET", "/x")
    assert r.status == 502


def test_origin_bare_lf_strict_is_502(weir, origin):
    lf_origin(origin, b"HTTP/1.1 200 OK\nContent-Length: 5\n\nhello")
    port = proxy_start(weir, origin,
                       location="            proxy_strict_line_endings on;\n")
    with Client(port) as c:
        r = c.request("GET", "/x")
    assert r.status == 502
    assert "upstream sent no valid HTTP/1.x header" in weir.log()


def test_origin_bare_lf_in_header_strict_is_502(weir, origin):
    lf_origin(origin, b"HTTP/1.1 200 OK\r\nContent-Length: 5\n\r\nhello")
    port = proxy_start(weir, origin,
                       http="    proxy_strict_line_endings on;\n")
    with Client(port) as c:
        r = c.request("GET", "/x")
    assert r.status == 502
    assert "upstream sent invalid header" in weir.log()


def test_origin_bare_lf_in_chunk_line_fails(weir, origin):
    """A chunked response body stays CRLF-only, also after an LF-only
    head: the head may be out already, the body is never complete."""
    lf_origin(origin, b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n"
                      b"5\nhello\r\n0\r\n\r\n")
    port = proxy_start(weir, origin)
    with Client(port, timeout=3) as c:
        c.send(b"GET /x HTTP/1.1\r\nHost: client.example\r\n\r\n")
        while c._more():
            pass
        got = c.buf
    assert got == b"" or got.startswith(b"HTTP/1.1 502") \
        or not got.endswith(b"0\r\n\r\n"), got
    assert "upstream sent invalid chunked response" in weir.log()
