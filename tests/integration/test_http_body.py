"""Request bodies: Content-Length and chunked bodies split at every byte
boundary, bodies spilled to a temporary file, streamed (unbuffered)
bodies, client_max_body_size (413), client_body_timeout (408),
"Expect: 100-continue", bodies discarded on keep-alive connections, and
the trailer fields of chunked bodies (r->headers_in.trailers, echoed by
the body module as "X-Trailer-<name>" and counted in "X-Trailers").

The body consumer is tests/modules/weir_test_body_module (test_echo_body
echoes the body it read); `make test` builds it, and a test that needs it
fails when the build has no weir_test_body_module.so."""

import os
import socket
import time

import pytest

import weirtest
from weirtest import DEADLINE, connect, wait_for


BODY_MODULE = os.path.join(weirtest.WEIR_BUILD_DIR,
                           "weir_test_body_module.so")

needs_body_module = weirtest.requires_module("weir_test_body_module")


# ---- helpers


def body_conf(weir, port, server="", http_extra=""):
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    load = echo = ""
    if os.path.exists(BODY_MODULE):
        load = "load_module %s;\n" % BODY_MODULE
        echo = ("        location /echo { test_echo_body; }\n"
                "        location /stream { test_echo_body unbuffered; }\n"
                "        location /small {\n"
                "            client_max_body_size 100;\n"
                "            test_echo_body;\n"
                "        }\n")
    weir.conf(load +
              "http {\n"
              "    default_type text/plain;\n"
              "%s\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        root %s;\n"
              "        client_body_buffer_size 1k;\n"
              "        client_max_body_size 1m;\n"
              "%s"
              "        location /ret { return 200 \"ret\\n\"; }\n"
              "%s\n"
              "    }\n"
              "}\n" % (http_extra, port, html, echo, server))


def start(weir, port):
    weir.start(check_ports=False)

    def up():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            return False
        s.close()
        return True

    wait_for(up, what="the HTTP port to accept")


class Reader:
    """Reads HTTP/1.1 responses off one socket."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def _fill(self):
        data = self.s.recv(65536)
        if not data:
            raise EOFError("connection closed")
        self.buf += data

    def closed(self):
        """True when the server closes without sending more."""
        try:
            while True:
                data = self.s.recv(65536)
                if not data:
                    return True
                self.buf += data
                if len(self.buf) > 1 << 20:
                    return False
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def response(self, head=False):
        """(status, headers with lowercased names, body); head: the
        answer to a HEAD request (no body whatever the headers say)."""
        deadline = time.monotonic() + DEADLINE
        while b"\r\n\r\n" not in self.buf:
            assert time.monotonic() < deadline, "no response head"
            self._fill()
        text, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = text.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        hdrs = {}
        for line in lines[1:]:
            k, v = line.split(":", 1)
            hdrs[k.strip().lower()] = v.strip()
        if head or status < 200 or status in (204, 304):
            return status, hdrs, b""
        if "content-length" not in hdrs:
            # until close
            while True:
                try:
                    self._fill()
                except EOFError:
                    break
            body, self.buf = self.buf, b""
            return status, hdrs, body
        n = int(hdrs["content-length"])
        while len(self.buf) < n:
            assert time.monotonic() < deadline, "short response body"
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, hdrs, body


def open_conn(port):
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def send_split(port, data, at, pause=0.005):
    """Sends data in two writes split at `at` (with a pause so that the
    server sees two reads) and returns the first response."""
    s = open_conn(port)
    try:
        s.sendall(data[:at])
        time.sleep(pause)  # pacing the client, not waiting for weir
        s.sendall(data[at:])
        return Reader(s).response()
    finally:
        s.close()


def chunked(body, sizes):
    out = b""
    pos = 0
    for n in sizes:
        out += b"%x\r\n" % n + body[pos:pos + n] + b"\r\n"
        pos += n
    return out + b"0\r\n\r\n"


# ---- Content-Length and chunked bodies, split everywhere


@needs_body_module
@pytest.mark.parametrize("path", ["/echo", "/stream"])
def test_content_length_body_split_at_every_byte(weir, path):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    body = b"The quick brown fox jumps"
    head = (b"POST %s HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n" % (path.encode(), len(body)))
    req = head + body
    for at in range(len(head) - 1, len(req)):
        status, hdrs, data = send_split(port, req, at)
        assert status == 200, at
        assert data == body, at
        assert hdrs["x-body-length"] == str(len(body))


@needs_body_module
@pytest.mark.parametrize("path", ["/echo", "/stream"])
def test_chunked_body_split_at_every_byte(weir, path):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    payload = b"hello, chunked world"
    encoded = (b"5\r\nhello\r\n"
               b"2;ext=1;q=\"a b\"\r\n, \r\n"
               b"D\r\nchunked world\r\n"
               b"0\r\nX-Trailer: yes\r\n\r\n")
    head = (b"POST %s HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n" % path.encode())
    req = head + encoded
    for at in range(len(head) - 1, len(req)):
        status, hdrs, data = send_split(port, req, at)
        assert status == 200, at
        assert data == payload, at


@needs_body_module
def test_chunked_body_one_byte_at_a_time(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    payload = b"0123456789" * 3
    req = (b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
           b"Connection: close\r\n\r\n") + chunked(payload, [1, 2, 3, 24])
    s = open_conn(port)
    try:
        for i in range(len(req)):
            s.sendall(req[i:i + 1])
            time.sleep(0.001)  # pacing the client
        status, _, data = Reader(s).response()
    finally:
        s.close()
    assert status == 200
    assert data == payload


@needs_body_module
def test_invalid_chunked_body_is_400_and_closes(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)
    weir.allow.append("client sent invalid chunked body")

    for bad in (b"zz\r\nhello\r\n0\r\n\r\n",
                b"5\r\nhelloXX0\r\n\r\n",
                b"-1\r\n\r\n"):
        s = open_conn(port)
        try:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n" + bad)
            r = Reader(s)
            status, _, _ = r.response()
            assert status == 400, bad
            assert r.closed()
        finally:
            s.close()


# ---- large bodies: memory, temporary file, streaming


@needs_body_module
@pytest.mark.parametrize("te", ["length", "chunked"])
def test_large_body_goes_to_temp_file(weir, te):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    payload = bytes((i * 7) % 251 for i in range(300000))
    if te == "length":
        req = (b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n"
               b"\r\n" % len(payload)) + payload
    else:
        req = (b"POST /echo HTTP/1.1\r\nHost: t\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n"
               + chunked(payload, [1000] * 300))
    s = open_conn(port)
    try:
        s.sendall(req)
        status, hdrs, data = Reader(s).response()
    finally:
        s.close()
    assert status == 200
    assert hdrs["x-body-file"] == "1"
    assert data == payload
    assert "buffered to a temporary file" in weir.log()
    # the temporary file is unlinked as soon as it is created
    tmp = weir.path("client_body_temp")
    assert not os.path.isdir(tmp) or os.listdir(tmp) == []


@needs_body_module
def test_small_body_stays_in_memory(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1024"
                  b"\r\n\r\n" + b"m" * 1024)
        status, hdrs, data = Reader(s).response()
    finally:
        s.close()
    assert status == 200
    assert hdrs["x-body-file"] == "0"
    assert data == b"m" * 1024


@needs_body_module
@pytest.mark.parametrize("te", ["length", "chunked"])
def test_large_body_streamed_unbuffered(weir, te):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    payload = bytes((i * 13) % 253 for i in range(200000))
    if te == "length":
        req = (b"POST /stream HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n"
               b"\r\n" % len(payload)) + payload
    else:
        req = (b"POST /stream HTTP/1.1\r\nHost: t\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n"
               + chunked(payload, [4000] * 50))
    s = open_conn(port)
    try:
        s.sendall(req)
        status, hdrs, data = Reader(s).response()
    finally:
        s.close()
    assert status == 200
    assert hdrs["x-body-file"] == "0"
    assert data == payload


# ---- limits and timeouts


@needs_body_module
def test_too_large_content_length_is_413(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        s.sendall(b"POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 101"
                  b"\r\n\r\n" + b"x" * 101)
        r = Reader(s)
        status, hdrs, body = r.response()
        assert status == 413
        assert b"413" in body
        assert hdrs.get("connection") == "close"
        assert r.closed()
    finally:
        s.close()
    assert "client intended to send too large body: 101 bytes" in weir.log()


@needs_body_module
def test_body_at_the_limit_is_accepted(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        s.sendall(b"POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 100"
                  b"\r\n\r\n" + b"x" * 100)
        status, _, data = Reader(s).response()
    finally:
        s.close()
    assert status == 200 and data == b"x" * 100


@needs_body_module
def test_too_large_chunked_body_is_413_as_soon_as_it_exceeds(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        # 60 + 60 > 100: the second chunk's size line is enough, the
        # rest of the body is never sent
        s.sendall(b"POST /small HTTP/1.1\r\nHost: t\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n"
                  b"3c\r\n" + b"a" * 60 + b"\r\n3c\r\n")
        r = Reader(s)
        status, _, _ = r.response()
        assert status == 413
        assert r.closed()
    finally:
        s.close()
    assert "too large chunked body" in weir.log()


@needs_body_module
def test_body_timeout_is_408(weir):
    port = weir.port()
    body_conf(weir, port, server="client_body_timeout 1s;")
    start(weir, port)

    s = open_conn(port)
    try:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10"
                  b"\r\n\r\n123")
        t0 = time.monotonic()
        r = Reader(s)
        status, _, _ = r.response()
        assert status == 408
        assert time.monotonic() - t0 < DEADLINE
        assert r.closed()
    finally:
        s.close()
    wait_for(lambda: "client timed out while reading client request body"
             in weir.log(), what="the timeout log line")


@needs_body_module
def test_client_closing_mid_body_is_logged(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10"
              b"\r\n\r\n123")
    time.sleep(0.05)  # pacing: let weir read the partial body first
    s.close()
    wait_for(lambda: "client prematurely closed connection" in weir.log(),
             what="the premature close log line")


# ---- Expect: 100-continue


@needs_body_module
def test_expect_100_continue(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
                  b"Expect: 100-continue\r\n\r\n")
        r = Reader(s)
        # the client waits: weir must answer 100 before the body is sent
        status, _, _ = r.response()
        assert status == 100
        s.sendall(b"hello")
        status, _, data = r.response()
        assert status == 200
        assert data == b"hello"
    finally:
        s.close()


@needs_body_module
def test_expect_100_continue_not_sent_for_rejected_body(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        s.sendall(b"POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 500"
                  b"\r\nExpect: 100-continue\r\n\r\n")
        r = Reader(s)
        status, _, _ = r.response()
        assert status == 413
    finally:
        s.close()


def test_expect_100_continue_ignored_when_body_not_read(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        s.sendall(b"POST /ret HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
                  b"Expect: 100-continue\r\n\r\n")
        r = Reader(s)
        status, hdrs, data = r.response()
        # no 100: the final answer comes at once and the connection
        # closes since the body that may follow is never read
        assert status == 200
        assert data == b"ret\n"
        assert hdrs.get("connection") == "close"
    finally:
        s.close()


# ---- discarded bodies on keep-alive connections


@pytest.mark.parametrize("te", ["length", "chunked"])
def test_discarded_body_keeps_connection(weir, te):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    payload = b"d" * 5000
    if te == "length":
        req = (b"POST /ret HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n"
               b"\r\n" % len(payload)) + payload
    else:
        req = (b"POST /ret HTTP/1.1\r\nHost: t\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n"
               + chunked(payload, [1000] * 5))
    s = open_conn(port)
    try:
        r = Reader(s)
        for _ in range(3):
            s.sendall(req)
            status, hdrs, data = r.response()
            assert status == 200 and data == b"ret\n"
            assert hdrs.get("connection") != "close"
        s.sendall(b"GET /ret HTTP/1.1\r\nHost: t\r\n\r\n")
        status, _, data = r.response()
        assert status == 200 and data == b"ret\n"
    finally:
        s.close()


def test_discarded_body_arriving_late(weir):
    """The response is sent before the body arrives; the rest of the body
    is drained in the background and the connection is reused."""
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        r = Reader(s)
        s.sendall(b"POST /ret HTTP/1.1\r\nHost: t\r\nContent-Length: 10"
                  b"\r\n\r\n12345")
        status, _, data = r.response()
        assert status == 200 and data == b"ret\n"
        time.sleep(0.05)  # pacing: the rest comes later
        s.sendall(b"67890GET /ret HTTP/1.1\r\nHost: t\r\n\r\n")
        status, _, data = r.response()
        assert status == 200 and data == b"ret\n"
    finally:
        s.close()


def test_discarded_body_on_error_keeps_connection(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        r = Reader(s)
        s.sendall(b"POST /missing HTTP/1.1\r\nHost: t\r\nContent-Length: 7"
                  b"\r\n\r\nabcdefg"
                  b"GET /ret HTTP/1.1\r\nHost: t\r\n\r\n")
        status, _, _ = r.response()
        assert status in (404, 405)
        status, _, data = r.response()
        assert status == 200 and data == b"ret\n"
    finally:
        s.close()


@needs_body_module
def test_pipelined_requests_after_bodies(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        r = Reader(s)
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3"
                  b"\r\n\r\none"
                  b"POST /echo HTTP/1.1\r\nHost: t\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n"
                  b"POST /stream HTTP/1.1\r\nHost: t\r\nContent-Length: 5"
                  b"\r\n\r\nthree"
                  b"GET /ret HTTP/1.1\r\nHost: t\r\n\r\n")
        for want in (b"one", b"two", b"three", b"ret\n"):
            status, _, data = r.response()
            assert status == 200
            assert data == want
    finally:
        s.close()


@needs_body_module
def test_empty_bodies(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        r = Reader(s)
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0"
                  b"\r\n\r\n"
                  b"POST /stream HTTP/1.1\r\nHost: t\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                  b"GET /echo HTTP/1.1\r\nHost: t\r\n\r\n")
        for _ in range(3):
            status, hdrs, data = r.response()
            assert status == 200
            assert data == b""
            assert hdrs["x-body-length"] == "0"
    finally:
        s.close()


@pytest.mark.parametrize("te", ["length", "chunked"])
def test_discarded_body_split_at_every_byte(weir, te):
    """Wherever the body is cut, the part that comes late is drained in
    the background and the next request on the connection is answered."""
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    if te == "length":
        head = (b"POST /ret HTTP/1.1\r\nHost: t\r\nContent-Length: 12"
                b"\r\n\r\n")
        body = b"hello world!"
    else:
        head = (b"POST /ret HTTP/1.1\r\nHost: t\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        body = b"5\r\nhello\r\n7;x=y\r\n world!\r\n0\r\nT: v\r\n\r\n"
    nxt = b"GET /ret HTTP/1.1\r\nHost: t\r\n\r\n"
    for at in range(0, len(body) + 1):
        s = open_conn(port)
        try:
            r = Reader(s)
            s.sendall(head + body[:at])
            status, hdrs, data = r.response()
            assert status == 200 and data == b"ret\n", at
            assert hdrs.get("connection") != "close", at
            s.sendall(body[at:] + nxt)
            status, _, data = r.response()
            assert status == 200 and data == b"ret\n", at
        finally:
            s.close()


@needs_body_module
@pytest.mark.parametrize("path", ["/echo", "/stream"])
@pytest.mark.parametrize("te", ["length", "chunked"])
def test_pipelined_request_after_large_body(weir, path, te):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    payload = bytes((i * 31) % 256 for i in range(50000))
    if te == "length":
        req = (b"POST %s HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n"
               b"\r\n" % (path.encode(), len(payload))) + payload
    else:
        req = (b"POST %s HTTP/1.1\r\nHost: t\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n" % path.encode()
               + chunked(payload, [3000] * 16 + [2000]))
    s = open_conn(port)
    try:
        r = Reader(s)
        s.sendall(req + b"GET /ret HTTP/1.1\r\nHost: t\r\n\r\n")
        status, hdrs, data = r.response()
        assert status == 200 and data == payload
        status, _, data = r.response()
        assert status == 200 and data == b"ret\n"
    finally:
        s.close()


def test_discard_gives_up_on_a_silent_client(weir):
    port = weir.port()
    body_conf(weir, port, server="lingering_timeout 1s;")
    start(weir, port)

    s = open_conn(port)
    try:
        r = Reader(s)
        s.sendall(b"POST /ret HTTP/1.1\r\nHost: t\r\nContent-Length: 100"
                  b"\r\n\r\nonly a part")
        status, _, data = r.response()
        assert status == 200 and data == b"ret\n"
        t0 = time.monotonic()
        # the rest never comes: weir closes after lingering_timeout
        assert r.closed()
        assert time.monotonic() - t0 < DEADLINE
    finally:
        s.close()


def test_413_gives_up_on_a_silent_client(weir):
    # regression: the error response deleted the timer of the discard the
    # 413 had started, so a client that sent the head only held the
    # connection (and its request) open forever
    port = weir.port()
    body_conf(weir, port, server="lingering_timeout 1s;\n"
              "        location /limited {\n"
              "            client_max_body_size 10;\n"
              "            return 200;\n"
              "        }\n")
    start(weir, port)

    s = open_conn(port)
    try:
        r = Reader(s)
        s.sendall(b"POST /limited HTTP/1.1\r\nHost: t\r\n"
                  b"Content-Length: 100\r\n\r\n")
        status, _, _ = r.response()
        assert status == 413
        t0 = time.monotonic()
        assert r.closed()
        assert time.monotonic() - t0 < DEADLINE
    finally:
        s.close()


# ---- trailer fields of chunked bodies


TRAILER_HEAD = (b"POST %s HTTP/1.1\r\nHost: t\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")


def trailers_of(hdrs):
    """The echoed trailer fields: {lowercased name: value}."""
    return {k[len("x-trailer-"):]: v for k, v in hdrs.items()
            if k.startswith("x-trailer-")}


@needs_body_module
@pytest.mark.parametrize("path", ["/echo", "/stream"])
def test_trailers_arrive_intact(weir, path):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    req = (TRAILER_HEAD % path.encode()
           + b"5\r\nhello\r\n0\r\n"
           b"X-Checksum: sha256=abc\r\n"
           b"X-Empty:\r\n"
           b"x-ows:\t  two  words \t\r\n\r\n")
    s = open_conn(port)
    try:
        s.sendall(req)
        status, hdrs, data = Reader(s).response()
    finally:
        s.close()
    assert status == 200
    assert data == b"hello"
    assert hdrs["x-trailers"] == "3"
    assert trailers_of(hdrs) == {"x-checksum": "sha256=abc", "x-empty": "",
                                 "x-ows": "two  words"}


@needs_body_module
@pytest.mark.parametrize("path", ["/echo", "/stream"])
def test_trailers_split_at_every_byte(weir, path):
    """Wherever the request is cut (the first part lands in the header
    buffer, the rest comes in reads of a few bytes), the same fields."""
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    head = TRAILER_HEAD % path.encode()
    body = (b"3\r\nabc\r\n0\r\nX-A: 1\r\nX-Long-Name: v a l\r\n"
            b"X-C:c\r\n\r\n")
    want = {"x-a": "1", "x-long-name": "v a l", "x-c": "c"}
    req = head + body
    for at in range(len(head) - 1, len(req)):
        status, hdrs, data = send_split(port, req, at)
        assert status == 200, at
        assert data == b"abc", at
        assert hdrs["x-trailers"] == "3", at
        assert trailers_of(hdrs) == want, at


@needs_body_module
def test_trailers_one_byte_at_a_time(weir):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    req = (TRAILER_HEAD % b"/echo"
           + b"2\r\nab\r\n0\r\nX-One: first\r\nX-Two: second\r\n\r\n")
    s = open_conn(port)
    try:
        for i in range(len(req)):
            s.sendall(req[i:i + 1])
            time.sleep(0.001)  # pacing the client
        status, hdrs, data = Reader(s).response()
    finally:
        s.close()
    assert status == 200
    assert data == b"ab"
    assert trailers_of(hdrs) == {"x-one": "first", "x-two": "second"}


@needs_body_module
def test_trailers_with_a_pipelined_request(weir):
    """Fields that stay in the header buffer (not copied) still read right
    while the next request waits behind them."""
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)

    s = open_conn(port)
    try:
        r = Reader(s)
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n"
                  b"3\r\none\r\n0\r\nX-T: 1\r\n\r\n"
                  b"POST /echo HTTP/1.1\r\nHost: t\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n"
                  b"3\r\ntwo\r\n0\r\nX-U: 2\r\n\r\n"
                  b"GET /ret HTTP/1.1\r\nHost: t\r\n\r\n")
        status, hdrs, data = r.response()
        assert (status, data) == (200, b"one")
        assert trailers_of(hdrs) == {"x-t": "1"}
        status, hdrs, data = r.response()
        assert (status, data) == (200, b"two")
        assert trailers_of(hdrs) == {"x-u": "2"}
        status, _, data = r.response()
        assert (status, data) == (200, b"ret\n")
    finally:
        s.close()


@needs_body_module
@pytest.mark.parametrize("split", [False, True])
def test_trailer_limits(weir, split):
    """64 fields and 8 KiB of field lines (CRLF included) at most; one
    more is 400 and the connection closes. split: the trailers come in
    reads of their own instead of with the head."""
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)
    weir.allow.append("client sent invalid chunked body")

    def send(trailers):
        head = TRAILER_HEAD % b"/echo" + b"1\r\nx\r\n0\r\n"
        s = open_conn(port)
        try:
            if split:
                s.sendall(head)
                time.sleep(0.005)  # pacing the client
            s.sendall((b"" if split else head) + trailers + b"\r\n")
            r = Reader(s)
            status, hdrs, _ = r.response()
            return status, hdrs, status != 200 and r.closed()
        finally:
            s.close()

    many = b"".join(b"X-F%d: %d\r\n" % (i, i) for i in range(64))
    status, hdrs, _ = send(many)
    assert status == 200
    assert hdrs["x-trailers"] == "64"
    assert trailers_of(hdrs)["x-f63"] == "63"

    status, _, closed = send(many + b"X-More: 1\r\n")
    assert status == 400 and closed

    # "X-Big: " + value + CRLF is 8192 bytes
    big = b"X-Big: " + b"v" * (8192 - 9) + b"\r\n"
    status, hdrs, _ = send(big)
    assert status == 200
    assert trailers_of(hdrs)["x-big"] == "v" * (8192 - 9)

    status, _, closed = send(b"X-Big: " + b"v" * (8192 - 8) + b"\r\n")
    assert status == 400 and closed


@needs_body_module
@pytest.mark.parametrize("bad", [b"X-A : b\r\n", b"X-A: b\r\n c\r\n",
                                 b"X-A: b\x00\r\n", b"X-A: b\n",
                                 b": b\r\n", b"X-A b\r\n"])
def test_invalid_trailer_is_400(weir, bad):
    port = weir.port()
    body_conf(weir, port)
    start(weir, port)
    weir.allow.append("client sent invalid chunked body")

    s = open_conn(port)
    try:
        s.sendall(TRAILER_HEAD % b"/echo" + b"1\r\nx\r\n0\r\n" + bad
                  + b"\r\n")
        r = Reader(s)
        status, _, _ = r.response()
        assert status == 400
        assert r.closed()
    finally:
        s.close()


@needs_body_module
@pytest.mark.parametrize("path", ["/echo", "/stream"])
def test_framing_trailers_are_dropped(weir, path):
    """Trailer fields that frame, route or manage the connection are
    dropped (docs/http/bodies.md): they change neither the body, nor the
    next request on the connection, nor the server or $host."""
    port = weir.port()
    body_conf(weir, port, server=(
        "        location /host { add_header X-Host $host;"
        " test_echo_body; }\n"))
    start(weir, port)

    s = open_conn(port)
    try:
        r = Reader(s)
        s.sendall(b"POST %s HTTP/1.1\r\nHost: t\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n"
                  b"5\r\nhello\r\n0\r\n"
                  b"Content-Length: 1\r\n"
                  b"Transfer-Encoding: chunked\r\n"
                  b"Host: evil\r\n"
                  b"Connection: close\r\n"
                  b"Trailer: X-Kept\r\n"
                  b"X-Kept: yes\r\n\r\n" % path.encode()
                  + b"POST /host HTTP/1.1\r\nHost: good\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n"
                  b"2\r\nhi\r\n0\r\nHost: evil\r\n\r\n"
                  b"GET /ret HTTP/1.1\r\nHost: t\r\n\r\n")
        status, hdrs, data = r.response()
        assert (status, data) == (200, b"hello")
        assert trailers_of(hdrs) == {"x-kept": "yes"}
        assert hdrs["x-trailers"] == "1"
        assert hdrs.get("connection") != "close"
        status, hdrs, data = r.response()
        assert (status, data) == (200, b"hi")
        assert hdrs["x-trailers"] == "0"
        assert hdrs["x-host"] == "good"
        status, _, data = r.response()
        assert (status, data) == (200, b"ret\n")
    finally:
        s.close()
    assert 'client sent "Content-Length" trailer field, ignored' in weir.log()
    assert 'client sent "Host" trailer field, ignored' in weir.log()
