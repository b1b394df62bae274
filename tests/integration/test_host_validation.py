"""The Host header and the authority of an absolute-form target: an
RFC 3986 host (reg-name of unreserved and sub-delims characters,
IPv4address, or "[" IPv6 / IPvFuture "]") with an optional port of
digits; anything else is a 400 and the connection is closed. A valid
name is lowercased and loses its trailing dot and port ($host).
docs/http/http1.md, "The Host header"."""

import select
import time

import pytest

from weirtest import DEADLINE, connect, wait_accepting


# ---- helpers

def start(weir):
    port = weir.port()
    weir.conf("http {\n"
              "    default_type text/plain;\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        location / { return 200 \"host=$host\\n\"; }\n"
              "    }\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        server_name example.com;\n"
              "        location / { return 200 \"named=$host\\n\"; }\n"
              "    }\n"
              "}\n" % (port, port))
    weir.start(check_ports=False)

    wait_accepting(port)
    return port


def exchange(port, data):
    """Sends data, reads until the server closes or stays silent for a
    moment after a complete response; returns (status, headers, body,
    closed)."""
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    buf = b""
    closed = False
    try:
        s.sendall(data)
        deadline = time.monotonic() + DEADLINE
        while True:
            left = deadline - time.monotonic()
            assert left > 0, "no complete answer: %r" % buf
            if b"\r\n\r\n" in buf:
                head, rest = buf.split(b"\r\n\r\n", 1)
                n = 0
                for line in head.split(b"\r\n")[1:]:
                    k, v = line.split(b":", 1)
                    if k.strip().lower() == b"content-length":
                        n = int(v)
                if len(rest) >= n:
                    # complete: does the server close now?
                    left = min(left, 2.0 if b"close" in head.lower()
                               else 0.3)
            p = select.poll()
            p.register(s, select.POLLIN)
            if not p.poll(left * 1000):
                break
            try:
                more = s.recv(65536)
            except ConnectionResetError:
                more = b""
            if not more:
                closed = True
                break
            buf += more
    finally:
        s.close()
    assert b"\r\n\r\n" in buf, "no response head: %r" % buf
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    return status, headers, body, closed


def get(host, target=b"/"):
    return (b"GET " + target + b" HTTP/1.1\r\nHost: " + host
            + b"\r\n\r\n")


def assert_rejected(port, data, what):
    status, headers, _, closed = exchange(port, data)
    assert status == 400, what
    assert headers.get("connection") == "close", what
    assert closed, what


# ---- the Host header

BAD_HOSTS = [
    b"a b", b"a@b", b"user@example.com", b"a/b", b"a\\b", b"a?b", b"a#b",
    b"a%41", b"a%2fb", b"a%", b'a"b', b"a<b", b"a>b", b"a{b", b"a|b",
    b"a^b", b"a`b", b"a[b]", b"\xc3\xa9.test", b"a\xffb",
    b"", b".", b"a..b", b":80",
    b"a:b", b"a:80:80", b"a:-1", b"a:+80", b"a:0", b"a:65536",
    b"a:99999999999999999999", b"a:80a",
    b"[::1", b"[::1]x", b"[::1]80", b"[]", b"[zz]", b"[1::2::3]",
    b"[1:2:3:4:5:6:7:8:9]", b"[fe80::1%25eth0]", b"[v1]", b"[v1.]",
    b"[v.x]", b"[v1.a/b]",
]


def test_bad_host_is_400_and_closes(weir):
    port = start(weir)
    for host in BAD_HOSTS:
        assert_rejected(port, get(host), host)


def test_control_bytes_in_host_are_400(weir):
    port = start(weir)
    for c in list(range(0, 0x20)) + [0x7f]:
        if c in (0x09, 0x0a, 0x0d):
            # HTAB around a value is OWS; CR, LF end the line
            continue
        assert_rejected(port, get(b"a" + bytes([c]) + b"b"), c)


GOOD_HOSTS = [
    # (Host, $host)
    (b"example.org", b"example.org"),
    (b"Example.ORG", b"example.org"),
    (b"example.org:8080", b"example.org"),
    (b"example.org.", b"example.org"),
    (b"example.org.:8080", b"example.org"),
    (b"example.org:", b"example.org"),
    (b"example.org:65535", b"example.org"),
    (b"a-b_c~d.test", b"a-b_c~d.test"),
    (b"a!$&'()*+,;=b", b"a!$&'()*+,;=b"),
    (b"127.0.0.1", b"127.0.0.1"),
    (b"127.0.0.1:80", b"127.0.0.1"),
    (b"[::1]", b"[::1]"),
    (b"[::1]:8080", b"[::1]"),
    (b"[::1]:", b"[::1]"),
    (b"[2001:DB8::1]", b"[2001:db8::1]"),
    (b"[::ffff:192.0.2.1]", b"[::ffff:192.0.2.1]"),
    (b"[v1.fe80::a+en1]", b"[v1.fe80::a+en1]"),
]


def test_good_host_is_served(weir):
    port = start(weir)
    for host, name in GOOD_HOSTS:
        status, headers, body, closed = exchange(port, get(host))
        assert (status, body) == (200, b"host=" + name + b"\n"), host
        assert headers.get("connection") == "keep-alive", host
        assert not closed, host


def test_host_selects_server_after_normalizing(weir):
    port = start(weir)
    for host in (b"example.com", b"EXAMPLE.com.", b"example.com:",
                 b"example.com:81"):
        status, _, body, _ = exchange(port, get(host))
        assert (status, body) == (200, b"named=example.com\n"), host


def test_http10_without_host_is_served(weir):
    port = start(weir)
    status, _, body, _ = exchange(port, b"GET / HTTP/1.0\r\n\r\n")
    assert (status, body) == (200, b"host=\n")


# ---- the authority of an absolute-form target

BAD_AUTHORITIES = [
    b"http://a%41/", b"http://a%2f/", b"http://a..b/", b"http://[1::2::3]/",
    b"http://[1:2:3:4:5:6:7:8:9]/", b"http://a@b/", b"http://a:b/",
]


def test_bad_authority_is_400_and_closes(weir):
    port = start(weir)
    for target in BAD_AUTHORITIES:
        # a valid Host does not save an invalid authority
        assert_rejected(port, get(b"example.com", target), target)


def test_authority_wins_over_host(weir):
    port = start(weir)
    for target, name in ((b"http://EXAMPLE.com./x", b"named=example.com"),
                         (b"http://example.com:8080/", b"named=example.com"),
                         (b"http://[::1]:8080/", b"host=[::1]"),
                         (b"http://127.0.0.1/", b"host=127.0.0.1")):
        status, _, body, _ = exchange(port, get(b"other.test", target))
        assert (status, body) == (200, name + b"\n"), target


def test_bad_host_with_good_authority_is_400(weir):
    """The Host header is checked even when the target's authority
    overrides it: a hop that reads Host instead must not see garbage."""
    port = start(weir)
    assert_rejected(port, get(b"a@b", b"http://example.com/"), "a@b")


@pytest.mark.parametrize("host", [b"a@b", b"a b", b"a%41"])
def test_bad_host_does_not_answer_pipelined_request(weir, host):
    port = start(weir)
    status, _, body, closed = exchange(
        port, get(host) + get(b"example.com"))
    assert status == 400
    assert closed
    assert b"HTTP/1.1" not in body
