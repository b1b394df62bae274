"""The HTTP/1 parser's own decisions, end to end (docs/http/parser.md):
no CR alone (bare LF line ends: test_http_line_endings.py), what the
target may hold, the URI normalizer (decoding before dot segments,
merge_slashes), absolute-form authority checks. The general
malformed-request corpus is in test_http_v1.py."""

import os
import select
import socket
import time

import pytest

from weirtest import DEADLINE, connect, send_and_read_to_eof, wait_accepting


def start(weir, http_extra=""):
    port = weir.port()
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    weir.conf("http {\n"
              "%s\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        root %s;\n"
              "        location / { return 200 \"u:$uri a:$args\"; }\n"
              "    }\n"
              "}\n" % (http_extra, port, html))
    weir.start(check_ports=False)

    wait_accepting(port)
    return port


def exchange(port, data):
    """Sends data, half-closes, returns (status, body, everything)."""
    got = send_and_read_to_eof(port, data)
    assert got.startswith(b"HTTP/1.1 "), got
    status = int(got[9:12])
    body = got.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in got else b""
    return status, body, got


REJECTED = [
    # (name, request bytes, status)
    ("cr alone request line", b"GET / HTTP/1.1\rHost: a\r\n\r\n", 400),
    ("cr alone header", b"GET / HTTP/1.1\r\nHost: a\r\r\n", 400),
    ("ctl in fragment", b"GET /a#b\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("tab in target", b"GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("encoded dots above root",
     b"GET /a/%2e%2e/%2E%2E/b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("encoded slash above root",
     b"GET /a%2F..%2F..%2Fetc HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("truncated escape", b"GET /a%4 HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("userinfo", b"GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("port zero", b"GET http://a:0/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("port too big", b"GET http://a:65536/ HTTP/1.1\r\nHost: a\r\n\r\n",
     400),
    ("asterisk not options", b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("authority not connect", b"GET a:80 HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("multi-digit version", b"GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400),
    ("high bit in name", b"GET / HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: b\r\n\r\n",
     400),
    ("del in value", b"GET / HTTP/1.1\r\nHost: a\r\nX: b\x7f\r\n\r\n", 400),
]


@pytest.mark.parametrize("name,data,status", REJECTED,
                         ids=[c[0] for c in REJECTED])
def test_rejected(weir, name, data, status):
    port = start(weir)
    got, _, raw = exchange(port, data)
    assert got == status, (name, raw)
    assert b"\r\nConnection: close\r\n" in raw, (name, raw)


NORMALIZED = [
    # (target, $uri and $args as the location returns them)
    (b"/a/./b/../c", b"u:/a/c a:"),
    (b"/a//b", b"u:/a/b a:"),
    (b"/a/%2e%2E/b", b"u:/b a:"),
    (b"/x%2F..%2Fy", b"u:/y a:"),
    (b"/%41%62c?q=%2e%2e/../", b"u:/Abc a:q=%2e%2e/../"),
    (b"/a%3Fb?c", b"u:/a?b a:c"),
    (b"/a/..", b"u:/ a:"),
    (b"http://a/b/../c?d", b"u:/c a:d"),
    (b"/a/b/.#frag", b"u:/a/b/ a:"),
    (b"/a?b#c", b"u:/a a:b"),
    (b"http://a?b", b"u:/ a:b"),
    (b"http://a:/b", b"u:/b a:"),
]


@pytest.mark.parametrize("target,body", NORMALIZED,
                         ids=[t[0].decode() for t in NORMALIZED])
def test_normalized(weir, target, body):
    port = start(weir)
    status, got, raw = exchange(port, b"GET " + target
                                + b" HTTP/1.1\r\nHost: a\r\n"
                                  b"Connection: close\r\n\r\n")
    assert status == 200, raw
    assert got == body, raw


def test_merge_slashes_off(weir):
    port = start(weir, http_extra="    merge_slashes off;")
    status, got, raw = exchange(port, b"GET /a//b/./c HTTP/1.1\r\n"
                                      b"Host: a\r\nConnection: close\r\n\r\n")
    assert status == 200, raw
    assert got == b"u:/a//b/c a:", raw


def test_split_request_every_few_bytes(weir):
    """The parser resumes where it stopped: one byte per send."""
    port = start(weir)
    data = (b"GET /s/./t?x=1 HTTP/1.1\r\nHost: a\r\nX-A:  b \r\n"
            b"Connection: close\r\n\r\n")
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    got = b""
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(data)):
            s.sendall(data[i:i + 1])
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            r, _, _ = select.select([s], [], [], deadline - time.monotonic())
            if not r:
                break
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    finally:
        s.close()
    assert got.startswith(b"HTTP/1.1 200 "), got
    assert got.endswith(b"u:/s/t a:x=1"), got
