"""WebSocket over HTTP/2 (Extended CONNECT, RFC 8441; docs/http/http2.md
"WebSocket"): a CONNECT stream with :protocol websocket is proxied to an
HTTP/1.1 WebSocket origin (wsorigin.py) as an Upgrade request, the
origin's 101 is the stream's 200, and WebSocket frames go both ways as
the stream's DATA, under flow control; the client's END_STREAM is a
half-close, the origin's close ends the stream, proxy_read_timeout ends
an idle tunnel. Plain CONNECT and other protocols are refused."""

import random
import struct
import time

import h2.errors
import h2.settings
import pytest

from h2client import H2Client
from test_http2 import start
from weirtest import DEADLINE, SANITIZER, wait_for
from wsorigin import (OP_BINARY, OP_CLOSE, OP_TEXT, FrameReader, WsOrigin,
                      encode_frame)

MiB = 1 << 20

LOCATION = ("        location / {\n"
            "            proxy_pass http://127.0.0.1:%d;\n"
            "            proxy_http_version 1.1;\n"
            "            proxy_set_header Upgrade $http_upgrade;\n"
            "            proxy_set_header Connection $connection_upgrade;\n"
            "%s"
            "        }\n")


@pytest.fixture
def ws_origin():
    o = WsOrigin()
    yield o
    o.stop()
    assert o.errors == [], "websocket origin errors: %s" % o.errors[:5]


def ws_weir(weir, ws_origin, location="", tls=None):
    """weir proxying to the origin; with tls (a tlspki leaf) on a TLS
    address (ALPN h2) rather than h2c."""
    port, _ = start(weir, "        http2 on;\n"
                    + LOCATION % (ws_origin.port, location),
                    tls=tls, listen=" ssl" if tls else "")
    return port


class StreamSock:
    """The stream's DATA as a socket for wsorigin's FrameReader."""

    def __init__(self, c, sid):
        self.c = c
        self.sid = sid
        self.pos = 0

    def recv(self, n):
        r = self.c.responses[self.sid]
        self.c.wait(lambda: len(r.body) > self.pos or r.done,
                    "DATA on stream %d" % self.sid)
        data = r.body[self.pos:self.pos + n]
        self.pos += len(data)
        return data


class H2Ws:
    def __init__(self, port, path="/echo", protocol="websocket",
                 method="CONNECT", tls=False):
        self.c = H2Client(port, tls=tls, validate=False)
        self.c.wait(lambda: h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL
                    in self.c.remote_settings, "the server's SETTINGS")
        hdrs = [(":method", method), (":scheme", self.c.scheme),
                (":authority", self.c.authority), (":path", path)]
        if protocol is not None:
            hdrs.insert(1, (":protocol", protocol))
        hdrs.append(("sec-websocket-version", "13"))
        self.sid = self.c.request(None, None, pseudo=hdrs, end=False)
        self.r = self.c.responses[self.sid]
        self.c.wait(lambda: self.r.status is not None or self.r.done,
                    "the answer to the CONNECT")
        self.reader = FrameReader(StreamSock(self.c, self.sid))

    def send(self, opcode, payload, fin=True):
        self.c.send_body(self.sid, encode_frame(opcode, payload, fin=fin,
                                                mask=True), end=False)

    def recv_message(self):
        fin, op, masked, payload = self.reader.frame()
        assert fin and not masked
        return op, payload

    def end(self):
        self.c.conn.end_stream(self.sid)
        self.c.flush()

    def close(self):
        self.c.close()


def test_enable_connect_protocol_sent(weir, ws_origin):
    port = ws_weir(weir, ws_origin)
    c = H2Client(port)
    try:
        c.wait(lambda: c.remote_settings, "the server's SETTINGS")
        assert c.remote_settings.get(
            h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL) == 1
    finally:
        c.close()


def test_websocket_echo_both_directions(weir, ws_origin):
    port = ws_weir(weir, ws_origin)
    ws = H2Ws(port, "/hello")
    try:
        assert ws.r.status == 200, ws.r.headers
        names = [k for k, v in ws.r.headers]
        assert "sec-websocket-accept" not in names, ws.r.headers
        line, headers = ws_origin.requests[-1]
        assert line == "GET /hello HTTP/1.1", line
        assert headers.get("upgrade") == "websocket", headers
        assert "upgrade" in headers.get("connection", "").lower()
        assert len(headers.get("sec-websocket-key", "")) == 24, headers
        assert headers.get("sec-websocket-version") == "13", headers

        assert ws.recv_message() == (OP_TEXT, b"hello from origin")
        ws.send(OP_TEXT, b"hello")
        assert ws.recv_message() == (OP_TEXT, b"hello")
        for i in range(300):
            ws.send(OP_TEXT, b"m%d" % i)
        for i in range(300):
            assert ws.recv_message() == (OP_TEXT, b"m%d" % i)
    finally:
        ws.close()


def test_websocket_large_message_flow_control(weir, ws_origin):
    """4 MiB each way: far past the stream window (256k) both ways."""
    port = ws_weir(weir, ws_origin)
    ws = H2Ws(port, "/echo")
    try:
        assert ws.r.status == 200
        big = random.Random(8441).randbytes(4 * MiB)
        ws.send(OP_BINARY, big)
        op, payload = ws.recv_message()
        assert op == OP_BINARY and payload == big
    finally:
        ws.close()


def test_websocket_client_half_close(weir, ws_origin):
    """The client's close frame and END_STREAM: the origin answers its
    close, sees the end, and the stream ends."""
    port = ws_weir(weir, ws_origin)
    ws = H2Ws(port, "/echo")
    try:
        ws.send(OP_TEXT, b"x")
        assert ws.recv_message() == (OP_TEXT, b"x")
        ws.send(OP_CLOSE, struct.pack("!H", 1000) + b"bye")
        op, payload = ws.recv_message()
        assert op == OP_CLOSE and payload[:2] == b"\x03\xe8"
        ws.end()
        ws.c.wait(lambda: ws.r.done, "the stream to end")
        assert ws.r.ended, ws.r.reset
    finally:
        ws.close()
    wait_for(lambda: ("close-received", "/echo", b"\x03\xe8bye")
             in ws_origin.events, what="the origin to get the close")


def test_websocket_origin_close(weir, ws_origin):
    port = ws_weir(weir, ws_origin)
    ws = H2Ws(port, "/server-close")
    try:
        ws.send(OP_TEXT, b"one")
        assert ws.recv_message() == (OP_TEXT, b"one")
        op, payload = ws.recv_message()
        assert op == OP_CLOSE and payload[:2] == b"\x03\xe9"
        ws.send(OP_CLOSE, payload[:2])
        # the origin closes its connection: the stream ends (END_STREAM)
        ws.c.wait(lambda: ws.r.ended, "END_STREAM after the origin closed")
        # the session stays usable
        sid = ws.c.request("GET", "/plain")
        assert ws.c.response(sid).status == 200
    finally:
        ws.close()


def test_websocket_idle_timeout(weir, ws_origin):
    port = ws_weir(weir, ws_origin, "            proxy_read_timeout 1s;\n")
    ws = H2Ws(port, "/echo")
    try:
        for i in range(3):
            if i:
                time.sleep(0.4)
            ws.send(OP_TEXT, b"tick %d" % i)
            assert ws.recv_message() == (OP_TEXT, b"tick %d" % i)
        idle_from = time.monotonic()
        ws.c.wait(lambda: ws.r.done, "the idle tunnel to end")
        idle = time.monotonic() - idle_from
        # cut, not ended: RST_STREAM CANCEL (a timeout is not an
        # internal error)
        assert ws.r.reset == h2.errors.ErrorCodes.CANCEL, ws.r.reset
        assert not ws.r.ended
    finally:
        ws.close()
    assert idle >= 0.5, idle
    assert idle <= 3.0 * (3 if SANITIZER else 1), idle
    wait_for(lambda: ("eof", "/echo") in ws_origin.events,
             what="the origin side to be closed too")


def test_websocket_origin_reset(weir, ws_origin):
    """The origin resets its connection (a TCP RST): the stream is reset
    with CANCEL (RFC 8441 5: "RST exceptions are represented with the
    RST_STREAM frame with the CANCEL error code"), not INTERNAL_ERROR;
    the session goes on."""
    port = ws_weir(weir, ws_origin)
    ws = H2Ws(port, "/server-reset")
    try:
        ws.send(OP_TEXT, b"one")
        assert ws.recv_message() == (OP_TEXT, b"one")
        ws.send(OP_TEXT, b"two")
        ws.c.wait(lambda: ws.r.done, "the reset of the stream")
        assert ws.r.reset == h2.errors.ErrorCodes.CANCEL, (
            ws.r.reset, ws.r.ended)
        sid = ws.c.request("GET", "/plain")
        assert ws.c.response(sid).status == 200
    finally:
        ws.close()


def test_plain_connect_refused(weir, ws_origin):
    port = ws_weir(weir, ws_origin)
    c = H2Client(port, validate=False)
    try:
        sid = c.request(None, None, pseudo=[
            (":method", "CONNECT"), (":authority", "127.0.0.1:1")],
            end=False)
        r = c.response(sid)
        assert r.status in (400, 405) or r.reset is not None, r.status
        assert r.status != 200
    finally:
        c.close()
    assert ws_origin.requests == []


def test_other_protocol_refused(weir, ws_origin):
    port = ws_weir(weir, ws_origin)
    ws = H2Ws(port, "/echo", protocol="not-websocket")
    try:
        ws.c.wait(lambda: ws.r.done, "the refusal")
        assert ws.r.status == 501, ws.r.status
    finally:
        ws.close()
    assert ws_origin.requests == []


def test_no_101_is_not_a_tunnel(weir, ws_origin):
    """An origin answering 200 to the Upgrade: the client must not take
    it for an open tunnel (a 2xx): 502."""
    port = ws_weir(weir, ws_origin)
    ws = H2Ws(port, "/plain")
    try:
        ws.c.wait(lambda: ws.r.done, "the answer")
        assert ws.r.status == 502, (ws.r.reset, ws.c.events)
        assert ws.r.body == b"", ws.r.body
    finally:
        ws.close()


def test_websocket_client_reset(weir, ws_origin):
    """RST_STREAM from the client ends the tunnel and the origin
    connection at once; the session goes on."""
    port = ws_weir(weir, ws_origin)
    ws = H2Ws(port, "/echo")
    try:
        ws.send(OP_TEXT, b"before")
        assert ws.recv_message() == (OP_TEXT, b"before")
        ws.c.conn.reset_stream(ws.sid)
        ws.c.flush()
        wait_for(lambda: ("eof", "/echo") in ws_origin.events,
                 what="the origin connection to be closed")
        sid = ws.c.request("GET", "/plain")
        assert ws.c.response(sid).status == 200
    finally:
        ws.close()


def test_websocket_small_messages_are_no_flood(weir, ws_origin):
    """2000 tiny messages at once: each is a DATA frame under 64 bytes,
    which would be a flood on a request body, not in a tunnel."""
    port = ws_weir(weir, ws_origin)
    ws = H2Ws(port, "/echo")
    try:
        for i in range(2000):
            ws.send(OP_TEXT, b"%d" % i)
        for i in range(2000):
            assert ws.recv_message() == (OP_TEXT, b"%d" % i)
        assert ws.c.goaway is None
    finally:
        ws.close()
    assert "flood" not in weir.log()


# ------------------------------------------------------------------ TLS

def test_websocket_tls_echo_and_client_close(weir, ws_origin, pki):
    """Over TLS (ALPN h2): the Extended CONNECT is a tunnel as on h2c,
    messages go both ways (one of 1 MiB, past the windows and many TLS
    records), and the client's close frame with END_STREAM ends it: the
    origin answers the close and sees the end, the stream ends with
    END_STREAM, the session goes on."""
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    port = ws_weir(weir, ws_origin, tls=leaf)
    ws = H2Ws(port, "/hello", tls=True)
    try:
        assert ws.c.alpn == "h2"
        assert ws.r.status == 200, ws.r.headers
        line, headers = ws_origin.requests[-1]
        assert line == "GET /hello HTTP/1.1", line
        assert headers.get("upgrade") == "websocket", headers
        assert ws.recv_message() == (OP_TEXT, b"hello from origin")
        for i in range(100):
            ws.send(OP_TEXT, b"m%d" % i)
        for i in range(100):
            assert ws.recv_message() == (OP_TEXT, b"m%d" % i)
        big = random.Random(8441).randbytes(MiB)
        ws.send(OP_BINARY, big)
        assert ws.recv_message() == (OP_BINARY, big)
        ws.send(OP_CLOSE, struct.pack("!H", 1000) + b"bye")
        op, payload = ws.recv_message()
        assert op == OP_CLOSE and payload[:2] == b"\x03\xe8"
        ws.end()
        ws.c.wait(lambda: ws.r.done, "the stream to end")
        assert ws.r.ended, ws.r.reset
        sid = ws.c.request("GET", "/plain")
        assert ws.c.response(sid).status == 200
        assert ws.c.goaway is None
    finally:
        ws.close()
    wait_for(lambda: ("close-received", "/hello", b"\x03\xe8bye")
             in ws_origin.events, what="the origin to get the close")


def test_websocket_tls_origin_close(weir, ws_origin, pki):
    """Over TLS: the origin sends its close frame and closes its
    connection; the client answers, and the stream ends with
    END_STREAM."""
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    port = ws_weir(weir, ws_origin, tls=leaf)
    ws = H2Ws(port, "/server-close", tls=True)
    try:
        assert ws.r.status == 200, ws.r.headers
        ws.send(OP_TEXT, b"one")
        assert ws.recv_message() == (OP_TEXT, b"one")
        op, payload = ws.recv_message()
        assert op == OP_CLOSE and payload[:2] == b"\x03\xe9"
        ws.send(OP_CLOSE, payload[:2])
        ws.c.wait(lambda: ws.r.ended, "END_STREAM after the origin closed")
        assert ws.r.reset is None, ws.r.reset
        sid = ws.c.request("GET", "/plain")
        assert ws.c.response(sid).status == 200
    finally:
        ws.close()
    wait_for(lambda: ("close-received", "/server-close", b"\x03\xe9")
             in ws_origin.events, what="the origin to get the answer")
