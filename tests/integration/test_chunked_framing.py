"""Malformed chunked request bodies that no handler reads (`return`, a
static file, an error page) and that a proxy reads: weir answers 400 and
closes when the bad framing arrived with the head, and when it arrives
later (while the body is discarded after the response) it closes the
connection; in neither case does it answer a "request" that follows the
bad body, which another hop might frame differently (smuggling).
docs/http/bodies.md, "Discarding"."""

import os
import select
import socket
import time

import pytest

from weirtest import DEADLINE, connect, wait_accepting


# ---- helpers

def start(weir, origin=None):
    port = weir.port()
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    with open(os.path.join(html, "file.txt"), "w") as f:
        f.write("static\n")
    proxy = ""
    if origin is not None:
        proxy = ("        location /proxy { proxy_pass http://%s; }\n"
                 % origin.addr)
    weir.conf("http {\n"
              "    default_type text/plain;\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        root %s;\n"
              "        location /ret { return 200 \"ret\\n\"; }\n"
              "        location /second { return 200 \"second\\n\"; }\n"
              "        location = /file.txt { }\n"
              "        location /missing { }\n"
              "%s"
              "    }\n"
              "}\n" % (port, html, proxy))
    weir.start(check_ports=False)

    wait_accepting(port)
    return port


class Conn:
    """One client connection with bounded reads."""

    def __init__(self, port):
        self.s = connect(("127.0.0.1", port), timeout=DEADLINE)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.eof = False

    def close(self):
        self.s.close()

    def send(self, data):
        self.s.sendall(data)

    def _more(self, timeout=DEADLINE):
        p = select.poll()
        p.register(self.s, select.POLLIN)
        if not p.poll(timeout * 1000):
            return None             # silent
        try:
            data = self.s.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def response(self):
        """(status, headers, body) of the next response."""
        deadline = time.monotonic() + DEADLINE
        while b"\r\n\r\n" not in self.buf:
            assert time.monotonic() < deadline, "no response head"
            more = self._more(max(0.01, deadline - time.monotonic()))
            assert more, "no response head: %r" % self.buf
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        while len(self.buf) < n:
            assert time.monotonic() < deadline, "short body"
            more = self._more(max(0.01, deadline - time.monotonic()))
            assert more, "short body"
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, headers, body

    def closed(self):
        """True when the server closes without sending anything more."""
        deadline = time.monotonic() + DEADLINE
        while not self.eof:
            assert time.monotonic() < deadline, "connection left open"
            more = self._more(max(0.01, deadline - time.monotonic()))
            assert more is not None, "connection left open"
        return self.buf == b""


def head(target, method=b"POST"):
    return (method + b" " + target + b" HTTP/1.1\r\nHost: t\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")

SECOND = b"GET /second HTTP/1.1\r\nHost: t\r\n\r\n"

BAD_BODIES = [
    # (name, body bytes)
    ("size not hex", b"zz\r\nhello\r\n0\r\n\r\n"),
    ("size negative", b"-5\r\nhello\r\n0\r\n\r\n"),
    ("size 0x", b"0x5\r\nhello\r\n0\r\n\r\n"),
    ("size empty", b"\r\nhello\r\n0\r\n\r\n"),
    ("size space", b"5 \r\nhello\r\n0\r\n\r\n"),
    ("size overflow", b"1" + b"0" * 16 + b"\r\nhello\r\n0\r\n\r\n"),
    ("no crlf after data", b"5\r\nhelloXX0\r\n\r\n"),
    ("lf after data", b"5\r\nhello\n0\r\n\r\n"),
    ("bare lf in size line", b"5\nhello\r\n0\r\n\r\n"),
    ("bare cr in size line", b"5\rhello\r\n0\r\n\r\n"),
    ("bare lf in last chunk", b"5\r\nhello\r\n0\n\r\n"),
    ("bare lf at the end", b"5\r\nhello\r\n0\r\n\n"),
    ("bad extension", b"5;a b\r\nhello\r\n0\r\n\r\n"),
    ("extension no name", b"5;\r\nhello\r\n0\r\n\r\n"),
    ("extension open quote", b"5;a=\"b\r\nhello\r\n0\r\n\r\n"),
    ("bad trailer", b"5\r\nhello\r\n0\r\nX : y\r\n\r\n"),
]

BAD_IDS = [b[0] for b in BAD_BODIES]

# return, a static file, error pages (405 and 404)
TARGETS = [(b"POST", b"/ret"), (b"GET", b"/file.txt"),
           (b"POST", b"/file.txt"), (b"GET", b"/missing")]
TARGET_IDS = ["return", "static", "405", "404"]


def assert_400_and_closed(c, what):
    status, headers, _ = c.response()
    assert status == 400, what
    assert headers.get("connection") == "close", what
    assert c.closed(), "%s: a second response: %r" % (what, c.buf)


# ---- the bad framing arrives with the head

@pytest.mark.parametrize("method,target", TARGETS, ids=TARGET_IDS)
def test_bad_chunked_body_not_read_is_400(weir, method, target):
    port = start(weir)
    for name, body in BAD_BODIES:
        c = Conn(port)
        try:
            c.send(head(target, method) + body + SECOND)
            assert_400_and_closed(c, name)
        finally:
            c.close()


def test_bad_chunked_body_to_proxy_is_400(weir, origin):
    port = start(weir, origin)
    for name, body in BAD_BODIES:
        c = Conn(port)
        try:
            c.send(head(b"/proxy") + body + SECOND)
            assert_400_and_closed(c, name)
        finally:
            c.close()
    assert origin.requests == []


def test_bad_chunk_after_good_ones_is_400(weir):
    """The error is found wherever it is in the buffered bytes."""
    port = start(weir)
    c = Conn(port)
    try:
        c.send(head(b"/ret") + b"5\r\nhello\r\n3;x=\"q\"\r\nabc\r\n"
               b"4\r\nabcdXX0\r\n\r\n" + SECOND)
        assert_400_and_closed(c, "third chunk")
    finally:
        c.close()


# ---- good bodies still keep the connection

@pytest.mark.parametrize("method,target", TARGETS, ids=TARGET_IDS)
def test_good_chunked_body_not_read_keeps_alive(weir, method, target):
    port = start(weir)
    c = Conn(port)
    try:
        body = (b"5\r\nhello\r\n3;x=\"q\" ; y\r\nabc\r\n0\r\n"
                b"X-T: v\r\n\r\n")
        c.send(head(target, method) + body + SECOND)
        status, headers, _ = c.response()
        assert status == {"return": 200, "static": 200, "405": 405,
                          "404": 404}[TARGET_IDS[TARGETS.index(
                              (method, target))]]
        assert headers.get("connection") == "keep-alive"
        status, _, data = c.response()
        assert (status, data) == (200, b"second\n")
    finally:
        c.close()


def test_good_chunked_body_to_return_then_pipelined(weir):
    port = start(weir)
    c = Conn(port)
    try:
        c.send(head(b"/ret") + b"5\r\nhello\r\n0\r\n\r\n" + SECOND)
        status, headers, data = c.response()
        assert (status, data) == (200, b"ret\n")
        assert headers.get("connection") == "keep-alive"
        status, _, data = c.response()
        assert (status, data) == (200, b"second\n")
    finally:
        c.close()


def test_partial_good_body_with_head_then_rest(weir):
    """Buffered bytes that end inside a valid chunk are not an error."""
    port = start(weir)
    c = Conn(port)
    try:
        c.send(head(b"/ret") + b"a\r\nhel")
        status, _, data = c.response()
        assert (status, data) == (200, b"ret\n")
        time.sleep(0.05)  # pacing: the rest comes in a later packet
        c.send(b"lo12345\r\n0\r\n\r\n" + SECOND)
        status, _, data = c.response()
        assert (status, data) == (200, b"second\n")
    finally:
        c.close()


# ---- the bad framing arrives later, while the body is discarded

@pytest.mark.parametrize("name,body", BAD_BODIES, ids=BAD_IDS)
def test_bad_chunk_in_later_packet_closes(weir, name, body):
    port = start(weir)
    c = Conn(port)
    try:
        c.send(head(b"/ret") + b"3\r\nabc\r\n")
        status, _, data = c.response()
        assert (status, data) == (200, b"ret\n")
        time.sleep(0.05)  # pacing: the bad chunk comes in a later packet
        c.send(body + SECOND)
        assert c.closed(), "%s: a second response: %r" % (name, c.buf)
    finally:
        c.close()
