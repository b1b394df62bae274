"""Defects found in review of the HTTP/1.1 server: each test failed
before its fix."""

import os
import socket

from weirtest import DEADLINE, connect, wait_for

from test_http_v1 import Reader, start


def exchange(port, data):
    """Sends data and returns every response up to the connection's
    close, as (status, headers, body)."""
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        rd = Reader(s)
        out = []
        while True:
            out.append(rd.response())
            if rd.buf == b"" and rd.closed():
                return out
    finally:
        s.close()


# ---- redirects: absolute_redirect (on by default) makes Location a URL

REDIRECTS = """
        location /rel { return 301 /dest?a=1; }
        location /full { return 302 http://example.com/x; }
        location /off { absolute_redirect off; return 301 /dest; }
        location /noport { port_in_redirect off; return 307 /dest; }
        location /named {
            server_name_in_redirect on;
            return 308 /dest;
        }
"""


def test_relative_location_is_made_absolute(weir):
    port = start(weir, server="server_name srv.test;\n" + REDIRECTS)
    req = b"GET %s HTTP/1.1\r\nHost: h.test:%d\r\n\r\n"
    data = b"".join(req % (u, port) for u in (b"/rel", b"/full", b"/off",
                                              b"/noport", b"/named"))
    data += b"GET /rel HTTP/1.0\r\n\r\n"
    res = exchange(port, data)
    loc = [h["location"][0] for _, h, _ in res]
    assert loc == ["http://h.test:%d/dest?a=1" % port,
                   "http://example.com/x",
                   "/dest",
                   "http://h.test/dest",
                   "http://srv.test:%d/dest" % port,
                   "http://127.0.0.1:%d/dest?a=1" % port]


def test_directory_redirect_is_absolute(weir):
    port = start(weir)
    os.makedirs(weir.path("html", "sub"), exist_ok=True)
    res = exchange(port, b"GET /sub?x=1 HTTP/1.1\r\nHost: h.test\r\n\r\n")
    assert res[0][0] == 301
    assert res[0][1]["location"] == ["http://h.test:%d/sub/?x=1" % port]


# ---- a response a filter replaced (412) keeps the connection it promised

def test_precondition_failed_keeps_the_connection(weir):
    port = start(weir)
    get = b"GET /index.html HTTP/1.1\r\nHost: a\r\n%s\r\n"
    data = (get % b'If-Match: "other"\r\n'
            + get % b"If-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT\r\n"
            + b"GET /r HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    res = exchange(port, data)
    assert [st for st, _, _ in res] == [412, 412, 200]
    for st, hdrs, body in res[:2]:
        assert hdrs["connection"] == ["keep-alive"]
        assert len(body) == int(hdrs["content-length"][0])
    assert res[2][2] == b"r:/r"


# ---- reset_timedout_connection (documented) resets a timed-out client

def _stalled_reader(weir, extra):
    port = start(weir, http_extra="    send_timeout 1s;\n" + extra)
    with open(weir.path("html", "huge.bin"), "wb") as f:
        f.write(b"h" * (32 * 1024 * 1024))
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(DEADLINE)
    s.connect(("127.0.0.1", port))
    try:
        s.sendall(b"GET /huge.bin HTTP/1.1\r\nHost: a\r\n\r\n")
        wait_for(lambda: "client timed out" in weir.log(),
                 what="the send timeout in the log")
        while True:
            try:
                if not s.recv(65536):
                    return "eof"
            except ConnectionResetError:
                return "reset"
    finally:
        s.close()


def test_reset_timedout_connection(weir):
    assert _stalled_reader(weir, "    reset_timedout_connection on;\n") \
        == "reset"


def test_timedout_connection_closed_normally_by_default(weir):
    assert _stalled_reader(weir, "") == "eof"
