"""WebSocket from HTTP/1.1 clients to HTTP/2 origins (RFC 8441,
docs/http/proxy.md "WebSocket to HTTP/2 origins"): with
`proxy_http_version 2` and the Upgrade passed on as for HTTP/1.1, the
client's handshake goes to the origin as an Extended CONNECT once the
origin's SETTINGS allow it, the origin's 200 is the client's 101 (with
the Sec-WebSocket-Accept of the client's key), and the frames go both
ways as the stream's DATA, under flow control. The origin is
h2origin.py with WsConn, python h2; the client is wsorigin.WsClient over
a raw socket, which checks the handshake as a browser does."""

import queue
import socket
import threading
import time

import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import pytest

from h2origin import Conn
from test_proxy_h2 import curl, h2o, origin_and_pass, start, status_of
from weirtest import DEADLINE, wait_for
from wsorigin import (OP_BINARY, OP_CLOSE, OP_TEXT, FrameReader, WsClient,
                      encode_frame)

MiB = 1 << 20
ENABLE = {h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL: 1}

UPGRADE = ("proxy_set_header Upgrade $http_upgrade;\n"
           "proxy_set_header Connection $connection_upgrade;\n")

__all__ = ["h2o"]


class Pipe:
    """A stream's DATA as a socket for FrameReader: b"" at END_STREAM
    or reset; every wait is bounded."""

    def __init__(self):
        self.q = queue.Queue()
        self.buf = b""
        self.eof = False

    def feed(self, data):
        self.q.put(data)

    def recv(self, n):
        if not self.buf and not self.eof:
            try:
                self.buf = self.q.get(timeout=DEADLINE)
            except queue.Empty:
                raise EOFError("no DATA in time")
            if not self.buf:
                self.eof = True
        data, self.buf = self.buf[:n], self.buf[n:]
        return data


class WsConn(Conn):
    """Conn that also takes Extended CONNECT :protocol websocket:
        /echo        200, then each frame back unmasked; a close frame
                     is answered with one and END_STREAM; the client's
                     END_STREAM is answered with END_STREAM
        /hello       200, the text "hello over h2" first, then as /echo
        /close       200, one message back, then close 1001 and
                     END_STREAM
        /reset       200, one message back, then RST_STREAM
                     INTERNAL_ERROR
        /forbidden   403 with a body (no tunnel)
    origin.ws_log gets (path, what) for "masked", "end" (the client's
    END_STREAM) and "reset" (weir's RST_STREAM)."""

    def __init__(self, origin, sock, data=b""):
        super().__init__(origin, sock, data)
        self.pipes = {}
        self.paths = {}

    def event(self, ev):
        sid = getattr(ev, "stream_id", None)
        if isinstance(ev, h2.events.RequestReceived):
            hdrs = dict((k.decode() if isinstance(k, bytes) else k,
                         v.decode() if isinstance(v, bytes) else v)
                        for k, v in ev.headers)
            if hdrs.get(":method") == "CONNECT":
                with self.o.lock:
                    self.o.requests.append(list(hdrs.items()))
                self.connect(sid, hdrs)
                return
        elif sid in self.pipes:
            pipe = self.pipes[sid]
            if isinstance(ev, h2.events.DataReceived):
                with self.wlock:
                    self.h2.acknowledge_received_data(
                        ev.flow_controlled_length, sid)
                pipe.feed(ev.data)
            elif isinstance(ev, h2.events.StreamEnded):
                self.log(sid, "end")
                pipe.feed(b"")
            elif isinstance(ev, h2.events.StreamReset):
                self.log(sid, "reset")
                pipe.feed(b"")
            return
        super().event(ev)

    def log(self, sid, what):
        with self.o.lock:
            self.o.ws_log.append((self.paths.get(sid), what))

    def connect(self, sid, hdrs):
        path = hdrs.get(":path", "/")
        self.paths[sid] = path
        if path == "/forbidden":
            with self.wlock:
                self.h2.send_headers(sid, [(":status", "403"),
                                           ("content-length", "10")])
            self.send_body(sid, b"forbidden\n")
            return
        self.pipes[sid] = Pipe()
        with self.wlock:
            self.h2.send_headers(sid, [(":status", "200"),
                                       ("sec-websocket-protocol", "chat")
                                       if "sec-websocket-protocol" in hdrs
                                       else ("x-ws", "1")])
            self.flush()
        threading.Thread(target=self.serve, args=(sid, path),
                         daemon=True).start()

    def send_frame(self, sid, opcode, payload, fin=True):
        self.send_body(sid, encode_frame(opcode, payload, fin=fin),
                       end=False)

    def end(self, sid):
        with self.wlock:
            self.h2.end_stream(sid)
            self.flush()

    def serve(self, sid, path):
        reader = FrameReader(self.pipes[sid])
        n = 0
        try:
            if path == "/hello":
                self.send_frame(sid, OP_TEXT, b"hello over h2")
            while True:
                try:
                    fin, op, masked, payload = reader.frame()
                except EOFError:
                    self.end(sid)
                    return
                if masked:
                    self.log(sid, "masked")
                if op == OP_CLOSE:
                    self.send_frame(sid, OP_CLOSE, payload[:2])
                    self.end(sid)
                    return
                self.send_frame(sid, op, payload, fin=fin)
                n += 1
                if path == "/close" and n == 1:
                    self.send_frame(sid, OP_CLOSE,
                                    (1001).to_bytes(2, "big") + b"bye")
                    self.end(sid)
                    return
                if path == "/reset" and n == 1:
                    with self.wlock:
                        self.h2.reset_stream(
                            sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
                        self.flush()
                    return
        except (OSError, h2.exceptions.ProtocolError,
                h2.exceptions.StreamClosedError):
            pass


@pytest.fixture
def ws_h2(h2o, pki):
    """(origin, proxy_pass URL, location lines, preamble) of a WebSocket
    HTTP/2 origin, h2c or TLS."""

    def make(kind="h2c", settings=ENABLE):
        o, url, loc, pre = origin_and_pass(
            lambda **kw: h2o(conn=WsConn, settings=settings, **kw),
            kind, pki)
        o.ws_log = []
        return o, url, loc, pre

    return make


def ws_start(weir, made, location=""):
    o, url, loc, pre = made
    return start(weir, url, location=loc + UPGRADE + location, preamble=pre)


def ws_client(port, path="/echo", extra=()):
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ws = WsClient(s)
    status, headers = ws.handshake(path, extra=extra)
    return ws, status, headers


def read_eof(sock):
    """True when the peer closed (FIN or reset) before DEADLINE."""
    sock.settimeout(DEADLINE)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


@pytest.mark.parametrize("kind", ["h2c", "h2tls"])
def test_echo_both_ways(weir, ws_h2, kind):
    made = ws_h2(kind)
    o = made[0]
    port = ws_start(weir, made)
    ws, status, headers = ws_client(
        port, "/hello", extra=("Sec-WebSocket-Protocol: chat",))
    try:
        assert status == 101, (status, headers)
        assert headers.get("sec-websocket-protocol") == "chat", headers
        assert ws.recv_message() == (OP_TEXT, b"hello over h2")
        ws.send_text("over the stream")
        assert ws.recv_message() == (OP_TEXT, b"over the stream")
        ws.send_binary(b"\x00\xff\x01binary")
        assert ws.recv_message() == (OP_BINARY, b"\x00\xff\x01binary")
    finally:
        ws.s.close()
    head = dict(o.requests[0])
    assert head[":method"] == "CONNECT", head
    assert head[":protocol"] == "websocket", head
    assert head[":path"] == "/hello", head
    assert head[":scheme"] == ("https" if kind == "h2tls" else "http")
    assert head[":authority"] == o.addr, head
    assert head["sec-websocket-version"] == "13", head
    assert head["sec-websocket-protocol"] == "chat", head
    # RFC 8441 5: no key, no Upgrade, no Connection over HTTP/2
    for name in ("sec-websocket-key", "upgrade", "connection"):
        assert name not in head, head
    # the client's frames arrive masked, as it sent them
    assert ("/hello", "masked") in o.ws_log


def test_large_messages_under_flow_control(weir, ws_h2):
    made = ws_h2()
    port = ws_start(weir, made)
    ws, status, _ = ws_client(port)
    try:
        assert status == 101
        big = bytes(range(256)) * (4 * MiB // 256)
        ws.send_binary(big)
        assert ws.recv_message() == (OP_BINARY, big)
        ws.send_text("after")
        assert ws.recv_message() == (OP_TEXT, b"after")
    finally:
        ws.s.close()


def test_close_handshake_from_client(weir, ws_h2):
    made = ws_h2()
    o = made[0]
    port = ws_start(weir, made)
    ws, status, _ = ws_client(port)
    assert status == 101
    ws.send(OP_CLOSE, (1000).to_bytes(2, "big"))
    fin, op, payload = ws.recv_frame()
    assert op == OP_CLOSE and payload[:2] == (1000).to_bytes(2, "big")
    # the origin's END_STREAM ends the client's side: weir closes
    ws.s.shutdown(socket.SHUT_WR)
    assert read_eof(ws.s)
    ws.s.close()
    wait_for(lambda: ("/echo", "end") in o.ws_log,
             what="the client's END_STREAM at the origin")


def test_client_half_close_is_end_stream(weir, ws_h2):
    made = ws_h2()
    o = made[0]
    port = ws_start(weir, made)
    ws, status, _ = ws_client(port)
    assert status == 101
    ws.send_text("last words")
    ws.s.shutdown(socket.SHUT_WR)
    # the echo still comes, then the origin's END_STREAM closes
    assert ws.recv_message() == (OP_TEXT, b"last words")
    assert read_eof(ws.s)
    ws.s.close()
    assert ("/echo", "end") in o.ws_log
    assert ("/echo", "reset") not in o.ws_log


def test_origin_close(weir, ws_h2):
    made = ws_h2()
    port = ws_start(weir, made)
    ws, status, _ = ws_client(port, "/close")
    assert status == 101
    ws.send_text("one")
    assert ws.recv_message() == (OP_TEXT, b"one")
    fin, op, payload = ws.recv_frame()
    assert op == OP_CLOSE and payload == (1001).to_bytes(2, "big") + b"bye"
    ws.s.shutdown(socket.SHUT_WR)
    assert read_eof(ws.s)
    ws.s.close()


def test_origin_reset_closes_client(weir, ws_h2):
    made = ws_h2()
    port = ws_start(weir, made)
    ws, status, _ = ws_client(port, "/reset")
    assert status == 101
    ws.send_text("one")
    assert ws.recv_message() == (OP_TEXT, b"one")
    assert read_eof(ws.s)
    ws.s.close()


def test_refused_handshake_is_a_normal_response(weir, ws_h2):
    made = ws_h2()
    port = ws_start(weir, made)
    ws, status, headers = ws_client(port, "/forbidden")
    try:
        assert status == 403, (status, headers)
        assert "upgrade" not in headers, headers
    finally:
        ws.s.close()


def test_origin_without_extended_connect_gets_502(weir, ws_h2):
    made = ws_h2(settings={})
    port = ws_start(weir, made)
    ws, status, headers = ws_client(port)
    ws.s.close()
    assert status == 502, (status, headers)
    wait_for(lambda: "ENABLE_CONNECT_PROTOCOL" in weir.log(),
             what="the reason in the error log")
    # the session goes on for ordinary requests
    p = curl(port, "/tiny")
    assert p.stdout == b"tiny over h2\n"
    assert made[0].connections == 1


def test_websockets_share_a_session_with_requests(weir, ws_h2):
    made = ws_h2()
    o = made[0]
    port = ws_start(weir, made)
    clients = [ws_client(port)[0] for _ in range(3)]
    try:
        p = curl(port, "/tiny")
        assert status_of(p) == [200]
        for i, ws in enumerate(clients):
            ws.send_text("client %d" % i)
        for i, ws in enumerate(clients):
            assert ws.recv_message() == (OP_TEXT, b"client %d" % i)
    finally:
        for ws in clients:
            ws.s.close()
    assert o.connections == 1


def test_idle_tunnel_times_out(weir, ws_h2):
    made = ws_h2()
    o = made[0]
    port = ws_start(weir, made, location="proxy_read_timeout 1s;\n")
    ws, status, _ = ws_client(port)
    assert status == 101
    start_t = time.monotonic()
    assert read_eof(ws.s)
    ws.s.close()
    assert time.monotonic() - start_t < DEADLINE
    # the stream is reset (CANCEL), the session stays
    wait_for(lambda: ("/echo", "reset") in o.ws_log,
             what="the stream reset at the origin")
    p = curl(port, "/tiny")
    assert p.stdout == b"tiny over h2\n"
    assert o.connections == 1


def test_other_upgrade_goes_as_plain_request(weir, ws_h2):
    made = ws_h2()
    o = made[0]
    port = ws_start(weir, made)
    p = curl(port, "/tiny", args=["-H", "Upgrade: foo/1",
                                  "-H", "Connection: upgrade"])
    assert status_of(p) == [200]
    assert p.stdout == b"tiny over h2\n"
    head = dict(o.requests[-1])
    assert head[":method"] == "GET" and "upgrade" not in head, head


def test_http2_client_to_http2_origin(weir, ws_h2):
    """An HTTP/2 client's Extended CONNECT becomes an Upgrade request for
    the core, then an Extended CONNECT again towards the HTTP/2 origin:
    the origin's 200 goes back as the client's 200, no key either way."""
    from test_http2_websocket import H2Ws
    made = ws_h2()
    o = made[0]
    port = ws_start(weir, made)
    ws = H2Ws(port, "/hello")
    try:
        assert ws.r.status == 200, ws.r.headers
        names = [k for k, v in ws.r.headers]
        assert "sec-websocket-accept" not in names, ws.r.headers
        assert "upgrade" not in names, ws.r.headers
        assert ws.recv_message() == (OP_TEXT, b"hello over h2")
        for i in range(50):
            ws.send(OP_TEXT, b"m%d" % i)
        for i in range(50):
            assert ws.recv_message() == (OP_TEXT, b"m%d" % i)
    finally:
        ws.close()
    head = dict(o.requests[0])
    assert head[":method"] == "CONNECT" and head[":protocol"] == "websocket"
    assert "sec-websocket-key" not in head, head
