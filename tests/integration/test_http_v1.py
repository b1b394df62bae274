"""HTTP/1 connections: keep-alive, pipelining, HTTP/1.0, HEAD,
Expect: 100-continue, the malformed-request corpus (exact status, then
the connection is closed), slowloris and the header timeout, the limits
on the request head, chunked responses, lingering close and the idle
keep-alive connection that holds no buffer."""

import http.client
import os
import select
import socket
import time

import pytest

import weirtest
from weirtest import DEADLINE, EARLY, connect, wait_for


BODY_MODULE = os.path.join(weirtest.WEIR_BUILD_DIR,
                           "weir_test_body_module.so")

STREAM_MODULE = os.path.join(weirtest.WEIR_BUILD_DIR,
                             "weir_test_stream_module.so")

needs_stream_module = weirtest.requires_module("weir_test_stream_module")

needs_body_module = weirtest.requires_module("weir_test_body_module")


# ---- helpers

def conf(weir, server="", http_extra="", port=None, body=False):
    """With body, loads the body test module (location /echo), otherwise
    the stream test module (/s3, /s0, /sbig, /tr), when built. Not both:
    two dynamic modules in one process trip ASan's ODR check on the
    generated glue (a build-system issue)."""
    port = port or weir.port()
    load = ""
    if body and os.path.exists(BODY_MODULE):
        load = "load_module %s;\n" % BODY_MODULE
        server += "\n        location /echo { test_echo_body; }\n"
    if not body and os.path.exists(STREAM_MODULE):
        load += "load_module %s;\n" % STREAM_MODULE
        server += ("\n        location /s3 { test_stream 3 10; }\n"
                   "        location /s0 { test_stream 0 1; }\n"
                   "        location /sbig { test_stream 64 64k; }\n"
                   "        location /tr { test_stream 2 5 trailer; }\n")
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    with open(os.path.join(html, "index.html"), "w") as f:
        f.write("<p>hello</p>\n")
    with open(os.path.join(html, "big.bin"), "wb") as f:
        f.write(bytes(range(256)) * 4096)           # 1 MiB
    weir.conf(load + "http {\n"
              "    types { text/html html; }\n"
              "    default_type application/octet-stream;\n"
              "%s\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        root %s;\n"
              "        location / { }\n"
              "        location /r { return 200 \"r:$uri\"; }\n"
              "%s\n"
              "    }\n"
              "}\n" % (http_extra, port, html, server))
    return port


def start(weir, server="", http_extra="", body=False):
    port = conf(weir, server, http_extra, body=body)
    weir.start(check_ports=False)

    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    wait_for(up, what="the HTTP port to accept")
    return port


class Reader:
    """Reads HTTP/1 responses from a socket, with bounded waits."""

    def __init__(self, sock, timeout=DEADLINE):
        self.s = sock
        self.buf = b""
        self.timeout = timeout
        self.eof = False

    def _more(self):
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no data from the server in %.1fs"
                                     % self.timeout)
            p = select.poll()
            p.register(self.s, select.POLLIN)
            if p.poll(left * 1000):
                break
        try:
            data = self.s.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def head(self):
        while b"\r\n\r\n" not in self.buf:
            if not self._more():
                raise AssertionError("connection closed before a response "
                                     "head; got %r" % self.buf)
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        proto, status = lines[0].split(" ", 2)[:2]
        headers = {}
        for line in lines[1:]:
            k, v = line.split(":", 1)
            headers.setdefault(k.strip().lower(), []).append(v.strip())
        return proto, int(status), headers

    def exact(self, n):
        while len(self.buf) < n:
            if not self._more():
                raise AssertionError("connection closed in a body")
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def line(self):
        while b"\r\n" not in self.buf:
            if not self._more():
                raise AssertionError("connection closed in a chunk")
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def response(self, head_only=False):
        """(status, headers, body) of the next final response."""
        while True:
            proto, status, headers = self.head()
            if status >= 200:
                break
        assert proto == "HTTP/1.1", proto
        if head_only or status in (204, 304):
            return status, headers, b""
        if "transfer-encoding" in headers:
            assert headers["transfer-encoding"] == ["chunked"], headers
            body = b""
            while True:
                size = int(self.line().split(b";")[0], 16)
                if size == 0:
                    while self.line() != b"":
                        pass
                    return status, headers, body
                body += self.exact(size)
                assert self.exact(2) == b"\r\n"
        if "content-length" in headers:
            return status, headers, self.exact(
                int(headers["content-length"][0]))
        while self._more():
            pass
        body, self.buf = self.buf, b""
        return status, headers, body

    def closed(self):
        """True when the server closes with nothing more to say."""
        while self._more():
            pass
        return self.buf == b""


def raw_status(port, data, shut=True):
    """Sends data, returns (status, headers, closed-after-response)."""
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        rd = Reader(s)
        status, headers, _ = rd.response()
        return status, headers, rd.closed()
    finally:
        s.close()


GET = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"


# ---- keep-alive and pipelining

def test_keepalive_many_requests_one_connection(weir):
    port = start(weir, server="        location /c { return 200 "
                              "\"$connection $connection_requests\"; }")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    try:
        first = None
        for i in range(20):
            c.request("GET", "/c")
            r = c.getresponse()
            assert r.status == 200
            assert r.getheader("Connection") == "keep-alive"
            number, count = r.read().decode().split()
            # http.client reconnects silently when the server closed:
            # the same socket on this side and, on weir's, the same
            # connection with one more request each time prove the reuse
            if first is None:
                first = (c.sock, number)
            assert (c.sock, number) == first
            assert count == str(i + 1)
    finally:
        c.close()


def test_keepalive_requests_limit(weir):
    port = start(weir, http_extra="    keepalive_requests 3;")
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        for i in range(3):
            s.sendall(b"GET /r HTTP/1.1\r\nHost: a\r\n\r\n")
            status, h, body = rd.response()
            assert status == 200
            expect = "close" if i == 2 else "keep-alive"
            assert h["connection"] == [expect]
        assert rd.closed()
    finally:
        s.close()


def test_keepalive_timeout_closes_idle(weir):
    port = start(weir, http_extra="    keepalive_timeout 1s;")
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(GET)
        assert rd.response()[0] == 200
        t0 = time.monotonic()
        assert rd.closed()
        # kept for the timeout, not closed at once
        assert time.monotonic() - t0 >= 1 - EARLY
    finally:
        s.close()


def test_keepalive_timeout_zero_disables(weir):
    port = start(weir, http_extra="    keepalive_timeout 0;")
    status, h, closed = raw_status(port, GET, shut=False)
    assert status == 200 and h["connection"] == ["close"] and closed


def test_pipelined_requests_answered_in_order(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        reqs = b"".join(b"GET /r%d HTTP/1.1\r\nHost: a\r\n\r\n" % i
                        for i in range(10))
        s.sendall(reqs + b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n"
                  + b"GET /r-last HTTP/1.1\r\nHost: a\r\n"
                  b"Connection: close\r\n\r\n")
        for i in range(10):
            status, _, body = rd.response()
            assert (status, body) == (200, b"r:/r%d" % i)
        status, h, _ = rd.response(head_only=True)
        assert status == 200 and "content-length" in h
        status, h, body = rd.response()
        assert (status, body) == (200, b"r:/r-last")
        assert h["connection"] == ["close"]
        assert rd.closed()
    finally:
        s.close()


def test_pipelined_requests_split_anywhere(weir):
    port = start(weir)
    data = b"".join(b"GET /r%d HTTP/1.1\r\nHost: a\r\n\r\n" % i
                    for i in range(3))
    for cut in range(1, len(data), 7):
        s = connect(("127.0.0.1", port), timeout=DEADLINE)
        rd = Reader(s)
        try:
            s.sendall(data[:cut])
            time.sleep(0.005)
            s.sendall(data[cut:])
            for i in range(3):
                status, _, body = rd.response()
                assert (status, body) == (200, b"r:/r%d" % i), cut
        finally:
            s.close()


# ---- HTTP/1.0, HEAD

def test_http10_closes_by_default(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"GET /r HTTP/1.0\r\n\r\n")
        status, h, body = rd.response()
        assert (status, body) == (200, b"r:/r")
        assert h["connection"] == ["close"]
        assert rd.closed()
    finally:
        s.close()


def test_http10_keepalive_on_request(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        for _ in range(2):
            s.sendall(b"GET /r HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            status, h, body = rd.response()
            assert status == 200 and h["connection"] == ["keep-alive"]
            assert "transfer-encoding" not in h
    finally:
        s.close()


def test_http11_connection_close(weir):
    port = start(weir)
    status, h, closed = raw_status(
        port, b"GET /r HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        shut=False)
    assert status == 200 and h["connection"] == ["close"] and closed


def test_head_has_length_and_no_body(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"HEAD /index.html HTTP/1.1\r\nHost: a\r\n\r\n" + GET)
        status, h, _ = rd.response(head_only=True)
        assert status == 200
        assert h["content-length"] == [str(len("<p>hello</p>\n"))]
        # the next response follows at once: no body bytes in between
        status, h, body = rd.response()
        assert status == 200 and body == b"<p>hello</p>\n"
    finally:
        s.close()


def test_response_headers(weir):
    port = start(weir, http_extra="    server_tokens off;")
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n")
        status, h, _ = rd.response()
        assert status == 200
        assert h["server"] == ["weir"]
        assert len(h["date"]) == 1 and h["date"][0].endswith(" GMT")
        assert h["content-type"][0].startswith("text/html")
        assert "last-modified" in h
    finally:
        s.close()


def test_large_file_is_sent_whole(weir):
    for sendfile in ("on", "off"):
        if weir.proc is not None:
            weir.stop()
            weir.proc = None
        port = start(weir, http_extra="    sendfile %s;" % sendfile)
        s = connect(("127.0.0.1", port), timeout=DEADLINE)
        rd = Reader(s)
        try:
            s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\n" + GET)
            status, h, body = rd.response()
            assert status == 200 and body == bytes(range(256)) * 4096
            assert rd.response()[0] == 200
        finally:
            s.close()


# ---- Expect: 100-continue

def test_expect_continue_not_sent_when_body_is_not_read(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"POST /r HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                  b"Expect: 100-continue\r\n\r\n")
        proto, status, h = rd.head()
        # the response comes at once, without an interim 100: the body
        # is not needed, so the client must not send it on this
        # connection
        assert status == 200
    finally:
        s.close()


@needs_body_module
def test_expect_continue_handshake(weir):
    port = start(weir, body=True)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        for _ in range(2):
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: a\r\n"
                      b"Content-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            # the client waits: the interim response comes first
            proto, status, h = rd.head()
            assert (proto, status) == ("HTTP/1.1", 100)
            s.sendall(b"hello")
            status, h, body = rd.response()
            assert (status, body) == (200, b"hello")
            assert h["connection"] == ["keep-alive"]
    finally:
        s.close()


@needs_body_module
def test_expect_continue_not_sent_when_body_already_sent(weir):
    port = start(weir, body=True)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                  b"Expect: 100-continue\r\n\r\nhello")
        proto, status, h = rd.head()
        assert status == 200
    finally:
        s.close()


@needs_body_module
def test_expect_continue_ignored_on_http10(weir):
    port = start(weir, body=True)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"POST /echo HTTP/1.0\r\nContent-Length: 5\r\n"
                  b"Expect: 100-continue\r\n\r\n")
        r, _, _ = select.select([s], [], [], 0.5)
        assert not r, "an HTTP/1.0 client got an interim response"
        s.sendall(b"hello")
        status, h, body = rd.response()
        assert (status, body) == (200, b"hello")
    finally:
        s.close()


@needs_body_module
def test_pipelined_requests_with_bodies(weir):
    port = start(weir, body=True)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                  b"\r\nabc"
                  b"POST /echo HTTP/1.1\r\nHost: a\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n"
                  b"GET /r HTTP/1.1\r\nHost: a\r\n\r\n"
                  b"POST /r HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n"
                  b"\r\nxy"
                  b"GET /r2 HTTP/1.1\r\nHost: a\r\n\r\n")
        assert rd.response()[::2] == (200, b"abc")
        assert rd.response()[::2] == (200, b"de")
        assert rd.response()[::2] == (200, b"r:/r")
        # a body nobody reads is discarded: the next request follows
        assert rd.response()[::2] == (200, b"r:/r")
        assert rd.response()[::2] == (200, b"r:/r2")
    finally:
        s.close()


def test_expect_unknown_is_417(weir):
    port = start(weir)
    status, _, closed = raw_status(
        port, b"GET /r HTTP/1.1\r\nHost: a\r\nExpect: magic\r\n\r\n")
    assert status == 417


# ---- the malformed-request corpus

LONG = b"a" * 9000

CORPUS = [
    # (name, request bytes, status)
    ("no host on 1.1", b"GET / HTTP/1.1\r\n\r\n", 400),
    ("two hosts", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    ("two same hosts", b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400),
    ("invalid host slash", b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
    ("invalid host dots", b"GET / HTTP/1.1\r\nHost: a..b\r\n\r\n", 400),
    ("cl and te", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n", 400),
    ("te and cl", b"POST / HTTP/1.1\r\nHost: a\r\n"
     b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400),
    ("cl repeated same", b"POST / HTTP/1.1\r\nHost: a\r\n"
     b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400),
    ("cl conflicting", b"POST / HTTP/1.1\r\nHost: a\r\n"
     b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400),
    ("cl list", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n"
     b"\r\nabc", 400),
    ("cl letters", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n"
     b"\r\n", 400),
    ("cl negative", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n"
     b"\r\n", 400),
    ("cl plus", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n"
     b"\r\nx", 400),
    ("cl empty", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n",
     400),
    ("cl overflow", b"POST / HTTP/1.1\r\nHost: a\r\n"
     b"Content-Length: 99999999999999999999999\r\n\r\n", 400),
    ("te gzip", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n"
     b"\r\n", 400),
    ("te identity", b"POST / HTTP/1.1\r\nHost: a\r\n"
     b"Transfer-Encoding: identity\r\n\r\n", 400),
    ("te chunked not last", b"POST / HTTP/1.1\r\nHost: a\r\n"
     b"Transfer-Encoding: chunked, gzip\r\n\r\n", 400),
    ("te chunked twice", b"POST / HTTP/1.1\r\nHost: a\r\n"
     b"Transfer-Encoding: chunked, chunked\r\n\r\n", 400),
    ("te repeated", b"POST / HTTP/1.1\r\nHost: a\r\n"
     b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
     400),
    ("te empty element", b"POST / HTTP/1.1\r\nHost: a\r\n"
     b"Transfer-Encoding: ,chunked\r\n\r\n", 400),
    ("te unknown coding", b"POST / HTTP/1.1\r\nHost: a\r\n"
     b"Transfer-Encoding: gzip, chunked\r\n\r\n", 501),
    ("te on 1.0", b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n"
     b"\r\n0\r\n\r\n", 400),
    ("space before colon", b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
    ("tab before colon", b"GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 400),
    ("obs-fold", b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", 400),
    ("obs-fold first line", b"GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400),
    ("bare cr in value", b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n",
     400),
    ("nul in value", b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x00c\r\n\r\n",
     400),
    ("ctl in value", b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x01c\r\n\r\n",
     400),
    ("bad char in name", b"GET / HTTP/1.1\r\nHost: a\r\nX(A): b\r\n\r\n",
     400),
    ("no colon", b"GET / HTTP/1.1\r\nHost: a\r\nXA\r\n\r\n", 400),
    ("empty name", b"GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", 400),
    ("nul in target", b"GET /a\x00b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("space in target", b"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("del in target", b"GET /a\x7fb HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("bad char in method", b"G@T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("double space", b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("leading space", b" GET / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("trailing space", b"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400),
    ("bare cr in request line", b"GET / HTTP/1.1\rHost: a\r\n\r\n", 400),
    ("http/0.9", b"GET /\r\n\r\n", 400),
    ("version letters", b"GET / HTTP/1.x\r\nHost: a\r\n\r\n", 400),
    ("version lowercase", b"GET / http/1.1\r\nHost: a\r\n\r\n", 400),
    ("version 2.0", b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
    ("version 3.1", b"GET / HTTP/3.1\r\nHost: a\r\n\r\n", 505),
    ("bad escape", b"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("escaped nul", b"GET /a%00b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("above root", b"GET /../x HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("bad scheme", b"GET ftp://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("connect", b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 405),
    ("trace", b"TRACE / HTTP/1.1\r\nHost: a\r\n\r\n", 405),
    ("too long uri", b"GET /" + LONG + b" HTTP/1.1\r\nHost: a\r\n\r\n", 414),
    ("too long header", b"GET / HTTP/1.1\r\nHost: a\r\nX-A: " + LONG
     + b"\r\n\r\n", 431),
    ("too many headers", b"GET / HTTP/1.1\r\nHost: a\r\n"
     + b"".join(b"X-%d: v\r\n" % i for i in range(101)) + b"\r\n", 431),
]


@pytest.fixture
def corpus_port(weir):
    return start(weir)


@pytest.mark.parametrize("name,data,status", CORPUS,
                         ids=[c[0] for c in CORPUS])
def test_malformed_request(corpus_port, name, data, status):
    got, headers, closed = raw_status(corpus_port, data, shut=False)
    assert got == status, name
    assert headers.get("connection") == ["close"], name
    assert closed, name


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 40


def test_absolute_form_sets_the_host(weir):
    port = start(weir, server="        location /h { return 200 $host; }")
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"GET http://Example.COM:8080/h HTTP/1.1\r\n"
                  b"Host: other\r\n\r\n")
        status, _, body = rd.response()
        assert (status, body) == (200, b"example.com")
    finally:
        s.close()


def test_valid_header_oddities(weir):
    port = start(weir)
    for data in [
        b"\r\nGET /r HTTP/1.1\r\nHost: a\r\n\r\n",        # a leading CRLF
        b"GET /r HTTP/1.1\r\nHost: a\r\nX-E:\r\n\r\n",    # an empty value
        b"GET /r HTTP/1.1\r\nhOsT: a\r\n\r\n",            # name case
        b"GET /r HTTP/1.1\r\nHost: a\r\nX-A: b \t\r\n\r\n",
        b"GET /r HTTP/1.1\r\nHost: a\r\nConnection: x, keep-alive\r\n\r\n",
        b"GET /r?a=b HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET /r HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
        b"GET /r HTTP/1.1\r\nHost: a\r\nX_U: ignored\r\n\r\n",
    ]:
        s = connect(("127.0.0.1", port), timeout=DEADLINE)
        rd = Reader(s)
        try:
            s.sendall(data)
            status, _, body = rd.response()
            assert status == 200, data
            assert body == b"r:/r", data
        finally:
            s.close()


# ---- limits and timeouts

def test_large_header_buffers_grow(weir):
    port = start(weir, http_extra="    client_header_buffer_size 128;\n"
                                   "    large_client_header_buffers 4 1k;")
    # a head much larger than the first buffer, each line < 1k
    hdrs = b"".join(b"X-%d: %s\r\n" % (i, b"v" * 500) for i in range(5))
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        for _ in range(2):
            s.sendall(b"GET /r HTTP/1.1\r\nHost: a\r\n" + hdrs[:1400])
            time.sleep(0.01)
            s.sendall(hdrs[1400:] + b"\r\n")
            status, _, body = rd.response()
            assert (status, body) == (200, b"r:/r")
    finally:
        s.close()

    # a request line longer than one large buffer
    status, _, closed = raw_status(
        port, b"GET /" + b"u" * 1100 + b" HTTP/1.1\r\nHost: a\r\n\r\n",
        shut=False)
    assert status == 414 and closed

    # too many large buffers
    hdrs = b"".join(b"X-%d: %s\r\n" % (i, b"v" * 900) for i in range(6))
    status, _, closed = raw_status(
        port, b"GET /r HTTP/1.1\r\nHost: a\r\n" + hdrs + b"\r\n",
        shut=False)
    assert status == 431 and closed


def test_client_max_headers(weir):
    port = start(weir, http_extra="    client_max_headers 5;")
    ok = b"GET /r HTTP/1.1\r\nHost: a\r\n" + b"X: 1\r\n" * 4 + b"\r\n"
    bad = b"GET /r HTTP/1.1\r\nHost: a\r\n" + b"X: 1\r\n" * 5 + b"\r\n"
    assert raw_status(port, ok)[0] == 200
    assert raw_status(port, bad, shut=False)[0:3:2] == (431, True)


def test_header_timeout_408_when_partly_read(weir):
    port = start(weir, http_extra="    client_header_timeout 1s;")
    # the timeout runs from the accept: t0 comes before it
    t0 = time.monotonic()
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n")
        status, h, _ = rd.response()
        assert status == 408
        assert time.monotonic() - t0 >= 1 - EARLY
        assert rd.closed()
    finally:
        s.close()


def test_header_timeout_closes_silent_connection(weir):
    port = start(weir, http_extra="    client_header_timeout 1s;")
    t0 = time.monotonic()
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        assert rd.closed()          # nothing was sent: no 408 either
        assert time.monotonic() - t0 >= 1 - EARLY
    finally:
        s.close()


def test_slowloris_is_cut_off(weir):
    port = start(weir, http_extra="    client_header_timeout 2s;")
    t0 = time.monotonic()
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    data = GET[:-2] + b"X-Slow: " + b"z" * 100 + b"\r\n\r\n"
    got = b""
    answered = None
    try:
        # one byte every 0.3s (the whole head would take 37 s): each byte
        # would reset an idle timer, but the head must be complete within
        # client_header_timeout, so the 408 comes while it is incomplete
        for i in range(len(data)):
            try:
                s.sendall(data[i:i + 1])
            except (BrokenPipeError, ConnectionResetError):
                break
            r, _, _ = select.select([s], [], [], 0.3)
            if r:
                try:
                    chunk = s.recv(4096)
                except ConnectionResetError:
                    # the byte sent after the close: the 408 came first
                    break
                if chunk and answered is None:
                    answered = (i + 1, time.monotonic() - t0)
                got += chunk
                if not chunk:
                    break
        assert got.startswith(b"HTTP/1.1 408 "), got
        sent, elapsed = answered
        assert sent < len(data), "408 only after the whole head"
        assert elapsed >= 2 - EARLY, "408 after %.2fs" % elapsed
    finally:
        s.close()


def test_send_timeout_closes_a_reader_that_stalls(weir):
    port = start(weir, http_extra="    send_timeout 1s;")
    # larger than what the socket buffers of loopback absorb
    with open(weir.path("html", "huge.bin"), "wb") as f:
        f.write(b"h" * (32 * 1024 * 1024))
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(DEADLINE)
    s.connect(("127.0.0.1", port))
    try:
        t0 = time.monotonic()
        s.sendall(b"GET /huge.bin HTTP/1.1\r\nHost: a\r\n\r\n")
        # never read: the send times out, not before send_timeout
        wait_for(lambda: "client timed out" in weir.log(),
                 what="the send timeout in the log")
        assert time.monotonic() - t0 >= 1 - EARLY
        total = 0
        while True:
            try:
                data = s.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            total += len(data)
        assert total < 32 * 1024 * 1024
    finally:
        s.close()


def test_lingering_close_drains_unread_body(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        # a 404 with a body that the server never reads: it must be
        # drained so the response is not destroyed by a reset
        s.sendall(b"POST /missing HTTP/1.1\r\nHost: a\r\n"
                  b"Content-Length: 200000\r\nConnection: close\r\n\r\n")
        s.sendall(b"x" * 50000)
        status, _, _ = rd.response()
        assert status == 404
        try:
            s.sendall(b"x" * 150000)
        except (BrokenPipeError, ConnectionResetError):
            pass
        s.shutdown(socket.SHUT_WR)
        assert rd.closed()
    finally:
        s.close()


def stream_body(pieces, size):
    return b"".join(bytes([ord("a") + i % 26]) * size for i in range(pieces))


@needs_stream_module
def test_chunked_response_for_unknown_length(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"GET /s3 HTTP/1.1\r\nHost: a\r\n\r\n")
        proto, status, h = rd.head()
        assert status == 200 and h["transfer-encoding"] == ["chunked"]
        assert "content-length" not in h
        assert h["connection"] == ["keep-alive"]
        # the exact framing: one chunk per piece, then the last chunk
        raw = rd.exact(len(b"a\r\naaaaaaaaaa\r\n") * 3 + 5)
        assert raw == (b"a\r\n" + b"a" * 10 + b"\r\n"
                       + b"a\r\n" + b"b" * 10 + b"\r\n"
                       + b"a\r\n" + b"c" * 10 + b"\r\n"
                       + b"0\r\n\r\n")
        # an empty body of unknown length, then a large one
        s.sendall(b"GET /s0 HTTP/1.1\r\nHost: a\r\n\r\n"
                  b"GET /sbig HTTP/1.1\r\nHost: a\r\n\r\n")
        status, h, body = rd.response()
        assert (status, body) == (200, b"")
        assert h["transfer-encoding"] == ["chunked"]
        status, h, body = rd.response()
        assert status == 200 and body == stream_body(64, 65536)
    finally:
        s.close()


@needs_stream_module
def test_chunked_trailers(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"GET /tr HTTP/1.1\r\nHost: a\r\n\r\n")
        proto, status, h = rd.head()
        assert h["transfer-encoding"] == ["chunked"]
        raw = rd.exact(len(b"5\r\naaaaa\r\n5\r\nbbbbb\r\n0\r\n"
                           b"X-Trailer: done\r\n\r\n"))
        assert raw == (b"5\r\naaaaa\r\n5\r\nbbbbb\r\n0\r\n"
                       b"X-Trailer: done\r\n\r\n")
    finally:
        s.close()


@needs_stream_module
def test_unknown_length_on_http10_closes(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"GET /s3 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        proto, status, h = rd.head()
        assert "transfer-encoding" not in h and "content-length" not in h
        assert h["connection"] == ["close"]
        while rd._more():
            pass
        assert rd.buf == stream_body(3, 10)
    finally:
        s.close()


@needs_stream_module
def test_chunked_transfer_encoding_off(weir):
    port = start(weir, http_extra="    chunked_transfer_encoding off;")
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"GET /s3 HTTP/1.1\r\nHost: a\r\n\r\n")
        proto, status, h = rd.head()
        assert "transfer-encoding" not in h
        assert h["connection"] == ["close"]
        while rd._more():
            pass
        assert rd.buf == stream_body(3, 10)
    finally:
        s.close()


@needs_stream_module
def test_head_of_unknown_length(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall(b"HEAD /sbig HTTP/1.1\r\nHost: a\r\n\r\n" + GET)
        status, h, _ = rd.response(head_only=True)
        assert status == 200
        assert "transfer-encoding" not in h and "content-length" not in h
        assert h["connection"] == ["keep-alive"]
        assert rd.response()[0] == 200
    finally:
        s.close()


@needs_stream_module
def test_pipelined_large_responses_in_order(weir):
    port = start(weir)
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        s.sendall((b"GET /sbig HTTP/1.1\r\nHost: a\r\n\r\n"
                   b"GET /r HTTP/1.1\r\nHost: a\r\n\r\n") * 3)
        for _ in range(3):
            status, _, body = rd.response()
            assert status == 200 and body == stream_body(64, 65536)
            assert rd.response()[::2] == (200, b"r:/r")
    finally:
        s.close()


def test_idle_keepalive_connections_many(weir):
    port = start(weir)
    socks = []
    try:
        for _ in range(200):
            s = connect(("127.0.0.1", port), timeout=DEADLINE)
            s.sendall(GET)
            socks.append((s, Reader(s)))
        for s, rd in socks:
            assert rd.response()[0] == 200
        # all idle now; more requests on every one of them still work
        for s, rd in socks[::10]:
            s.sendall(GET)
            assert rd.response()[0] == 200
    finally:
        for s, _ in socks:
            s.close()


def test_10000_idle_keepalive_connections(weir):
    """10,000 idle keep-alive connections on one worker while 50 clients
    keep requesting: every request succeeds, no connection is refused.
    (The memory an idle connection costs is measured by bench/.)"""
    import resource
    import threading

    idle_n = 10000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = idle_n + 200
    if hard != resource.RLIM_INFINITY and hard < need:
        # a privileged run (root with CAP_SYS_RESOURCE) raises the hard
        # limit, so the test runs whatever the machine's default; only a
        # run that may not raise it skips, saying why
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE,
                               (soft, idle_n + 1000))
        except (ValueError, OSError):
            pytest.skip("RLIMIT_NOFILE hard limit %d < %d and it may not "
                        "be raised here" % (hard, need))
        hard = idle_n + 1000
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))

    port = weir.port()
    weir.conf("worker_processes 1;\n"
              "worker_rlimit_nofile %d;\n"
              "events { worker_connections %d; }\n"
              "http {\n"
              "    keepalive_timeout 300s;\n"
              "    server {\n"
              "        listen 127.0.0.1:%d backlog=4096;\n"
              "        location / { return 200 \"ok\"; }\n"
              "    }\n"
              "}\n" % (idle_n + 1000, idle_n + 500, port))
    weir.start(check_ports=False)
    wait_for(lambda: _accepts(port), what="the HTTP port to accept")

    idle = []
    failures = []
    stop = threading.Event()
    counts = [0] * 50

    def client(i):
        while not stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", port),
                                             timeout=DEADLINE)
                try:
                    rd = Reader(s)
                    for _ in range(5):
                        s.sendall(GET)
                        status, _, body = rd.response()
                        if (status, body) != (200, b"ok"):
                            failures.append((status, body))
                        counts[i] += 1
                finally:
                    s.close()
                # leave the interpreter to the thread opening the idle
                # connections
                time.sleep(0.02)
            except Exception as exc:            # noqa: BLE001
                failures.append(repr(exc))
                return

    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(50)]
    try:
        for t in threads:
            t.start()
        # open the idle ones in batches: each makes one request, then
        # stays open and silent (bounded by the count and, per socket,
        # by DEADLINE: how fast is for bench/ to say)
        while len(idle) < idle_n:
            batch = []
            for _ in range(min(500, idle_n - len(idle))):
                s = socket.create_connection(("127.0.0.1", port),
                                             timeout=DEADLINE)
                s.sendall(GET)
                batch.append(s)
            for s in batch:
                rd = Reader(s)
                status, _, body = rd.response()
                assert (status, body) == (200, b"ok")
            idle.extend(batch)
        # all idle now: every busy client is served again while they are
        # held
        served = list(counts)
        wait_for(lambda: failures or all(
            now > then for now, then in zip(counts, served)),
            what="every busy client served with the idle ones held")
        # the idle connections are still alive and usable
        for s in idle[::1000]:
            s.sendall(GET)
            assert Reader(s).response()[0] == 200
    finally:
        stop.set()
        for t in threads:
            t.join(DEADLINE)
        for s in idle:
            s.close()
    assert not failures, failures[:5]
    assert all(counts), counts


def _accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


# ---- resource bounds per request

def vm_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


@needs_stream_module
def test_many_chunks_keep_memory_bounded(weir):
    """The chunk framing is recycled: 200,000 one-byte chunks must not
    grow the worker by what 200,000 framings would cost (~36 MB)."""
    pieces = 200000
    port = start(weir, server="        location /many "
                              "{ test_stream %d 1; }\n" % pieces)
    workers = weir.workers()
    assert len(workers) == 1
    pid = workers[0]
    expected = b"".join(b"1\r\n" + bytes([ord("a") + i % 26]) + b"\r\n"
                        for i in range(pieces)) + b"0\r\n\r\n"
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    rd = Reader(s)
    try:
        # warm up the worker's allocator with a short stream first
        s.sendall(b"GET /s3 HTTP/1.1\r\nHost: a\r\n\r\n")
        assert rd.response()[0] == 200
        before = vm_rss_kb(pid)
        peak = before
        s.sendall(b"GET /many HTTP/1.1\r\nHost: a\r\n\r\n")
        proto, status, h = rd.head()
        assert status == 200 and h["transfer-encoding"] == ["chunked"]
        raw = bytearray(rd.buf)
        rd.buf = b""
        deadline = time.monotonic() + DEADLINE * 4
        while len(raw) < len(expected):
            assert time.monotonic() < deadline, "the stream stalled"
            r, _, _ = select.select([s], [], [], 1.0)
            if not r:
                continue
            data = s.recv(1 << 20)
            assert data, "closed after %d bytes" % len(raw)
            raw += data
            peak = max(peak, vm_rss_kb(pid))
        peak = max(peak, vm_rss_kb(pid))
        assert bytes(raw) == expected
        assert peak - before < 6 * 1024, \
            "the worker grew by %d kB" % (peak - before)
    finally:
        s.close()


def test_fast_download_does_not_hold_the_worker(weir):
    """A client taking a large file as fast as the server sends it must
    not keep the worker from another connection's requests: those are
    answered while the large transfer is still in progress."""
    size = 64 << 20
    port = conf(weir, http_extra="    sendfile on;\n"
                                 "    sendfile_max_chunk 256k;\n")
    with open(os.path.join(weir.path("html"), "huge.bin"), "wb") as f:
        f.truncate(size)
    weir.start(check_ports=False)
    wait_for(lambda: _accepts(port), what="the HTTP port to accept")

    other = connect(("127.0.0.1", port), timeout=DEADLINE)
    big = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # room for the whole file in the receive queue, so the server
        # never has to wait for this reader (set before connect, for the
        # window scale); SO_RCVBUFFORCE (33) needs CAP_NET_ADMIN
        try:
            big.setsockopt(socket.SOL_SOCKET, 33, 2 * size)
        except OSError:
            big.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2 * size)
        big.settimeout(DEADLINE)
        big.connect(("127.0.0.1", port))

        # the other connection is accepted and idle
        other.sendall(b"GET /r HTTP/1.1\r\nHost: a\r\n\r\n")
        assert Reader(other).response()[::2] == (200, b"r:/r")

        big.sendall(b"GET /huge.bin HTTP/1.1\r\nHost: a\r\n\r\n")
        other.sendall(b"GET /r HTTP/1.1\r\nHost: a\r\n\r\n")

        # one thread reads both, the small answer first when both are
        # ready, so the order seen is the order the server sent them in
        small = b""
        small_at = None
        prefix = bytearray()
        got = 0
        end = None
        buf = bytearray(256 << 10)
        p = select.poll()
        p.register(other, select.POLLIN)
        p.register(big, select.POLLIN)
        deadline = time.monotonic() + DEADLINE * 4
        while end is None or got < end or small_at is None:
            assert time.monotonic() < deadline, \
                "stalled: %d bytes, small answer %r" % (got, small)
            ready = dict(p.poll(1000))
            if small_at is None and other.fileno() in ready:
                data = other.recv(4096)
                assert data, "the other connection closed"
                small += data
                if small.endswith(b"r:/r"):
                    small_at = got
                continue
            if big.fileno() in ready:
                n = big.recv_into(buf)
                assert n, "closed after %d bytes" % got
                if len(prefix) < 4096:
                    prefix += buf[:min(n, 4096)]
                got += n
                if end is None and b"\r\n\r\n" in prefix:
                    end = prefix.index(b"\r\n\r\n") + 4 + size

        assert small.startswith(b"HTTP/1.1 200 ")
        # the small request was answered before the large transfer ended
        assert small_at < end, "the download (%d bytes) ended first" % got
        head = bytes(prefix[:end - size]).lower()
        assert head.startswith(b"http/1.1 200 ")
        assert b"\r\ncontent-length: %d\r\n" % size in head
        assert got == end
    finally:
        big.close()
        other.close()
