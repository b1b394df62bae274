"""What the protocol-neutral core asks of the protocol (r->proto) instead
of the socket: whether a client has gone while its response is produced,
the local address of a redirect, keep-alive and lingering, per-request
byte counts, request body limits. HTTP/1 behaviour must stay exactly as
it was; these tests pin the cases where the old code looked at the wrong
thing (a raw peek of a TLS socket, counters of the connection instead of
the request).

Every wait is bounded (DEADLINE); origins are origin.Origin."""

import re
import socket
import ssl
import time

import pytest

import tlspki
from weirtest import DEADLINE, wait_for


LOG_FORMAT = ("    log_format t '$status|$request|$body_bytes_sent|"
              "$bytes_sent|$connection_requests';\n")


def up(port):
    def accepts():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(accepts, what="port %d to accept" % port)


def access_lines(weir, n, name="t.log"):
    path = weir.path("logs", name)

    def lines():
        try:
            with open(path) as f:
                got = [line.rstrip("\n").split("|") for line in f]
        except FileNotFoundError:
            return None
        return got if len(got) >= n else None

    return wait_for(lines, what="%d access log lines" % n)


def tls_server(weir, pki, location, port=None):
    cert = pki.leaf("www.test")
    port = port or weir.port()
    weir.conf(tlspki.ssl_preamble() +
              "http {\n" + LOG_FORMAT +
              "    server {\n"
              "        listen 127.0.0.1:%d ssl;\n"
              "        server_name www.test;\n"
              "        ssl_certificate %s;\n"
              "        ssl_certificate_key %s;\n"
              "        access_log logs/t.log t;\n"
              "        location / {\n"
              "%s"
              "        }\n"
              "    }\n"
              "}\n" % (port, cert.chain, cert.key, location))
    weir.start(check_ports=False)
    up(port)
    return port


class MemTLS:
    """A TLS client over a raw socket through memory BIOs, so that the
    test decides what goes on the wire: a close_notify without a FIN."""

    def __init__(self, port):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        self.inc = ssl.MemoryBIO()
        self.out = ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_hostname="www.test")
        self.sock = socket.create_connection(("127.0.0.1", port),
                                             timeout=DEADLINE)
        self._run(self.obj.do_handshake)

    def _flush(self):
        data = self.out.read()
        if data:
            self.sock.sendall(data)

    def _run(self, op):
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                r = op()
                self._flush()
                return r
            except ssl.SSLWantReadError:
                self._flush()
                d = self.sock.recv(65536)
                if not d:
                    raise AssertionError("EOF during TLS operation")
                self.inc.write(d)
        raise AssertionError("TLS operation timed out")

    def send(self, data):
        self._run(lambda: self.obj.write(data))

    def close_notify(self):
        """close_notify out, the TCP connection left open."""
        try:
            self.obj.unwrap()
        except ssl.SSLWantReadError:
            pass
        self._flush()

    def close(self):
        self.sock.close()


def test_tls_close_notify_while_proxied_is_a_client_abort(weir, pki,
                                                          origin):
    """A TLS client that ends with close_notify (no FIN yet) while the
    origin is silent has gone: 499 at once. A raw peek of the socket
    took the alert record for a pipelined request and waited for the
    origin."""
    port = tls_server(weir, pki,
                      "            proxy_pass http://127.0.0.1:%d;\n"
                      "            proxy_read_timeout 30s;\n" % origin.port)
    c = MemTLS(port)
    try:
        c.send(b"GET /hang HTTP/1.1\r\nHost: www.test\r\n\r\n")
        origin.wait_requests(1)
        c.close_notify()
        line = access_lines(weir, 1)[0]
        assert line[0] == "499", line
        assert line[1] == "GET /hang HTTP/1.1"
        assert "client prematurely closed connection" in weir.log()
    finally:
        c.close()


def test_tls_pipelined_request_while_proxied_is_not_an_abort(weir, pki,
                                                             origin):
    """The other half of the TLS peek: a record of data that waits while
    the response is produced is a pipelined request, answered after."""
    port = tls_server(weir, pki,
                      "            proxy_pass http://127.0.0.1:%d;\n"
                      % origin.port)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    with ctx.wrap_socket(raw, server_hostname="www.test") as s:
        s.sendall(b"GET /delay-head/300 HTTP/1.1\r\nHost: www.test\r\n\r\n")
        origin.wait_requests(1)
        s.sendall(b"GET /tiny HTTP/1.1\r\nHost: www.test\r\n"
                  b"Connection: close\r\n\r\n")
        data = b""
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                d = s.recv(65536)
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            if not d:
                break
            data += d
    assert data.count(b"HTTP/1.1 200 ") == 2, data[:500]
    lines = access_lines(weir, 2)
    assert [l[0] for l in lines] == ["200", "200"]


# ---- the client end of the tunnel, through r->proto->tunnel

@pytest.fixture
def ws_origin():
    from wsorigin import WsOrigin

    o = WsOrigin()
    yield o
    o.stop()
    assert o.errors == [], "websocket origin errors: %s" % o.errors[:5]


def ws_server(weir, ws_origin):
    port = weir.port()
    weir.conf("http {\n" + LOG_FORMAT +
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        access_log logs/t.log t;\n"
              "        location / {\n"
              "            proxy_pass http://127.0.0.1:%d;\n"
              "            proxy_http_version 1.1;\n"
              "            proxy_set_header Upgrade $http_upgrade;\n"
              "            proxy_set_header Connection "
              "$connection_upgrade;\n"
              "        }\n"
              "    }\n"
              "}\n" % (port, ws_origin.port))
    weir.start()
    return port


def test_tunnel_takes_the_bytes_sent_with_the_head(weir, ws_origin):
    """A frame sent in the same write as the Upgrade request (bytes
    after the head in HTTP/1's buffer) is the tunnel's first data."""
    from wsorigin import (OP_TEXT, FrameReader, accept_key, encode_frame,
                          parse_head, read_head)

    port = ws_server(weir, ws_origin)
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(b"GET /echo HTTP/1.1\r\nHost: localhost\r\n"
                  b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: " + key.encode() + b"\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n"
                  + encode_frame(OP_TEXT, b"early", mask=True))
        head, rest = read_head(s)
        line, headers = parse_head(head)
        assert line.startswith("HTTP/1.1 101 "), line
        assert headers.get("sec-websocket-accept") == accept_key(key)
        fin, op, masked, payload = FrameReader(s, rest).frame()
        assert (op, payload) == (OP_TEXT, b"early")
    finally:
        s.close()


def test_tunnel_refused_to_an_http10_client(weir, ws_origin):
    """HTTP/1.0 knows no 101: the protocol declines the tunnel and the
    client gets 502, as before the tunnel went through r->proto."""
    port = ws_server(weir, ws_origin)
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(b"GET /echo HTTP/1.0\r\nHost: localhost\r\n"
                  b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n")
        data = b""
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            d = s.recv(65536)
            if not d:
                break
            data += d
    finally:
        s.close()
    assert data.startswith(b"HTTP/1.1 502 "), data[:200]
    assert "cannot follow" in weir.log()
    assert access_lines(weir, 1)[0][0] == "502"
