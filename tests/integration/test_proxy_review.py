"""Review of the proxy module and the HTTP/1.1 origin handler: request
smuggling, header injection, response framing, hop-by-hop headers,
proxy_redirect and URI edge cases, HTTP/1.0 clients and HEAD. Each test
names the bug it pinned (see the review report)."""

import json
import socket

import pytest

from weirtest import DEADLINE, connect
from test_proxy import Client, get, seen_by, start, log_lines


def raw_exchange(port, data, timeout=DEADLINE):
    """Sends data on a new connection, reads until weir closes it (or
    the timeout); returns every byte weir sent."""
    s = connect(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        s.settimeout(timeout)
        got = b""
        while True:
            try:
                d = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break
            if not d:
                break
            got += d
        return got
    finally:
        s.close()


# ---- the request to the origin

def test_proxy_method_head_for_get_client_framing(weir, origin):
    """proxy_method HEAD: the origin answers a HEAD (a Content-Length and
    no body), the client asked GET: it must not be told a length that
    no body follows, or the next response on its connection is read as
    this one's body."""
    port = start(weir, origin, location="            proxy_method HEAD;\n")
    with Client(port, timeout=3) as c:
        r = c.request("GET", "/size/100")
        assert r.status == 200
        assert r.complete
        r2 = c.request("GET", "/size/5")
        assert r2.status == 200


def test_connect_method_not_proxied(weir, origin):
    port = start(weir, origin)
    got = raw_exchange(port, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n"
                       b"Host: 127.0.0.1\r\n\r\n" % origin.port, timeout=2)
    assert not got.startswith(b"HTTP/1.1 200"), got
    assert [q for q in origin.requests if q.method == "CONNECT"] == []


def test_variable_uri_with_space_rejected(weir, origin):
    port = start(weir, None, server=(
        "        location / {\n"
        "            proxy_pass http://%s/x/$arg_p;\n"
        "        }\n" % origin.addr))
    r = get(port, "/?p=a%20HTTP/1.1%0d%0aX-Injected:%201")
    assert r.status in (200, 500)
    for q in origin.requests:
        assert q.header("X-Injected") is None


CRLF_PATH = "/a%0d%0aX-Injected:%20yes%0d%0a"


def test_decoded_uri_crlf_in_set_header_not_sent(weir, origin):
    """$uri is decoded: a CR LF from %0d%0a must not split the request"""
    port = start(weir, origin, location=(
        "            proxy_set_header X-Uri $uri;\n"))
    r = get(port, CRLF_PATH)
    assert r.status == 200
    q = seen_by(origin)[0]
    assert q.header("X-Injected") is None
    assert q.header("X-Uri") is None


def test_decoded_uri_crlf_in_host_rejected(weir, origin):
    port = start(weir, origin, location=(
        "            proxy_set_header Host $uri;\n"))
    r = get(port, CRLF_PATH)
    assert r.status == 500
    assert origin.requests == []


def test_decoded_uri_crlf_in_variable_url_rejected(weir, origin):
    port = start(weir, None, server=(
        "        location / {\n"
        "            proxy_pass http://%s$uri;\n"
        "        }\n" % origin.addr))
    r = get(port, CRLF_PATH)
    assert r.status == 500
    assert origin.requests == []


def test_decoded_uri_crlf_in_redirect_not_relayed(weir, origin):
    """a proxy_redirect replacement with a decoded variable must not
    split the response to the client"""
    def handler(req, w):
        w.respond(302, headers=[("Location", "http://%s/x" % origin.addr)])
    origin.handler = handler
    port = start(weir, None, server=(
        "        location / {\n"
        "            proxy_pass http://%s;\n"
        "            proxy_redirect http://%s/ $uri;\n"
        "        }\n" % (origin.addr, origin.addr)))
    got = raw_exchange(port, b"GET %s HTTP/1.1\r\nHost: client.example\r\n"
                       b"Connection: close\r\n\r\n" % CRLF_PATH.encode(),
                       timeout=3)
    head = got.partition(b"\r\n\r\n")[0]
    assert b"\r\nX-Injected" not in head, got


def test_connection_listed_client_headers_removed(weir, origin):
    port = start(weir, origin)
    r = get(port, "/headers", headers=[("Connection", "keep-alive"),
                                       ("Connection", "X-Secret, x-other"),
                                       ("X-Secret", "1"), ("X-OTHER", "2"),
                                       ("X-Kept", "3")])
    assert r.status == 200
    q = seen_by(origin)[0]
    assert q.header("X-Secret") is None
    assert q.header("X-Other") is None
    assert q.header("X-Kept") == "3"


def test_connection_listed_response_headers_removed(weir, origin):
    def handler(req, w):
        w.respond(200, headers=[("Connection", "x-Drop"),
                                ("X-DROP", "1"), ("X-Keep", "2")],
                  body=b"ok")
    origin.handler = handler
    port = start(weir, origin)
    r = get(port, "/")
    assert r.status == 200 and r.body == b"ok"
    assert r.header("X-Drop") is None
    assert r.header("X-Keep") == "2"


# ---- the response from the origin

RESPONSES = [
    ("nul-in-value", b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\n"
     b"Content-Length: 2\r\n\r\nok"),
    ("obs-fold", b"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\n"
     b"Content-Length: 2\r\n\r\nok"),
    ("cl-plus", b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok"),
    ("cl-list-differs", b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok"),
    ("te-gzip-chunked", b"HTTP/1.1 200 OK\r\n"
     b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
    ("te-and-cl", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    ("space-before-colon", b"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n"
     b"\r\nok"),
    # a bare LF ends a line (test_http_line_endings.py), a CR alone never
    ("cr-alone", b"HTTP/1.1 200 OK\rContent-Length: 2\r\n\r\nok"),
    ("cr-alone-in-value", b"HTTP/1.1 200 OK\r\nX-A: a\rb\r\n"
     b"Content-Length: 2\r\n\r\nok"),
    ("cl-overflow", b"HTTP/1.1 200 OK\r\n"
     b"Content-Length: 99999999999999999999999\r\n\r\nok"),
    ("http09", b"ok"),
    ("http2", b"HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok"),
    ("status-099", b"HTTP/1.1 099 X\r\nContent-Length: 2\r\n\r\nok"),
    ("status-600", b"HTTP/1.1 600 X\r\nContent-Length: 2\r\n\r\nok"),
]


@pytest.mark.parametrize("data", [d for _, d in RESPONSES],
                         ids=[n for n, _ in RESPONSES])
def test_invalid_response_502(weir, origin, data):
    def handler(req, w):
        w.send_raw(data)
        w.close()
    origin.handler = handler
    port = start(weir, origin)
    with Client(port) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: client.example\r\n\r\n")
        r = c.response()
        assert r.status == 502, r


def test_invalid_chunk_size_after_head(weir, origin):
    """a chunk size that would overflow: the head may be out already,
    the body must never be taken as complete"""
    def handler(req, w):
        w.send_raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                   b"\r\nfffffffffffffffffff\r\nok\r\n0\r\n\r\n")
        w.close()
    origin.handler = handler
    port = start(weir, origin)
    got = raw_exchange(port, b"GET / HTTP/1.1\r\nHost: client.example"
                       b"\r\n\r\n", timeout=3)
    assert got == b"" or got.startswith(b"HTTP/1.1 502") \
        or not got.endswith(b"0\r\n\r\n"), got


def test_http10_client_chunked_origin(weir, origin):
    port = start(weir, origin)
    got = raw_exchange(port, b"GET /chunked/1000 HTTP/1.0\r\n"
                       b"Host: client.example\r\n\r\n")
    head, _, body = got.partition(b"\r\n\r\n")
    assert b"transfer-encoding" not in head.lower()
    assert len(body) == 1000


def test_http10_client_trailers_not_relayed(weir, origin):
    port = start(weir, origin)
    got = raw_exchange(port, b"GET /trailers HTTP/1.0\r\n"
                       b"Host: client.example\r\n\r\n")
    assert b"X-Checksum" not in got


def test_head_chunked_origin(weir, origin):
    def handler(req, w):
        w.send_raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    origin.handler = handler
    port = start(weir, origin)
    with Client(port, timeout=3) as c:
        r = c.request("HEAD", "/")
        assert r.status == 200
        origin.handler = None
        r = c.request("GET", "/tiny")
        assert r.status == 200 and len(r.body) == 64


# ---- proxy_redirect

def test_redirect_location_longer_and_shorter(weir, origin):
    """proxy_redirect default and a custom one over Locations that are
    longer, shorter and equal to the proxy_pass URL, and an empty one"""
    def handler(req, w):
        loc = req.header("X-Loc")
        w.respond(302, headers=[("Location", loc)] if loc is not None
                  else [], body=b"")
    origin.handler = handler
    port = start(weir, None, server=(
        "        location /app/ {\n"
        "            proxy_pass http://%s/backend/;\n"
        "        }\n"
        "        location /r/ {\n"
        "            proxy_pass http://%s/;\n"
        "            proxy_redirect http://%s/ /r/;\n"
        "            proxy_redirect ~^/(x)y$ /captured/$1;\n"
        "        }\n" % (origin.addr, origin.addr, origin.addr)))
    host = origin.addr
    cases = [
        ("/app/", "http://%s/backend/x" % host, "/app/x"),
        ("/app/", "http://%s/backend/" % host, "/app/"),
        ("/app/", "http://%s/backend" % host, "http://%s/backend" % host),
        ("/app/", "http://%s/" % host, "http://%s/" % host),
        ("/app/", "HTTP://%s/BACKEND/Q" % host, "/app/Q"),
        ("/app/", "/backend/x", "/backend/x"),
        ("/r/", "http://%s/" % host, "/r/"),
        ("/r/", "http://%s/a?b=%%2F" % host, "/r/a?b=%2F"),
        ("/r/", "/xy", "/captured/x"),
        ("/r/", "http://%s" % host, "http://%s" % host),
    ]
    for path, loc, want in cases:
        r = get(port, path, headers=[("X-Loc", loc)])
        assert r.status == 302
        got = r.header("Location")
        assert got is not None and got.endswith(want), (loc, got)


# ---- HTTP/1.0 clients

@pytest.mark.parametrize("path", ["/chunked/1000", "/close/1000",
                                  "/size/1000"])
def test_http10_keepalive_client_framing(weir, origin, path):
    """an HTTP/1.0 client asking for keep-alive: a body it cannot frame
    (chunked, close-delimited at the origin) needs a length or a close"""
    port = start(weir, origin)
    with Client(port, timeout=3) as c:
        c.send(b"GET %s HTTP/1.0\r\nHost: client.example\r\n"
               b"Connection: keep-alive\r\n\r\n" % path.encode())
        version, status, headers = c._head()
        assert status == 200
        names = [k.lower() for k, _ in headers]
        assert "transfer-encoding" not in names
        cl = [v for k, v in headers if k.lower() == "content-length"]
        if cl:
            while len(c.buf) < int(cl[0]):
                assert c._more()
            assert len(c.buf) == 1000
        else:
            while c._more():
                pass
            assert len(c.buf) == 1000


def test_http10_client_head(weir, origin):
    port = start(weir, origin)
    got = raw_exchange(port, b"HEAD /size/100 HTTP/1.0\r\n"
                       b"Host: client.example\r\n\r\n", timeout=3)
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.") and b" 200 " in head.split(b"\r\n")[0]
    assert body == b""


def test_refused_url_does_not_split_the_log(weir, origin):
    """an evaluated proxy_pass URL refused for a CR LF is logged quoted"""
    port = start(weir, None, server=(
        "        location / {\n"
        "            proxy_pass http://$arg_h$uri;\n"
        "        }\n"))
    r = get(port, "/a%0d%0aFORGED-LINE?h=bad%20host")
    assert r.status == 500
    log = weir.log()
    assert "proxy_pass URL" in log
    assert "\nFORGED-LINE" not in log
    assert "\\x0d\\x0aFORGED-LINE" in log
