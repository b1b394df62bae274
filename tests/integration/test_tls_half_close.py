"""A half close under TLS: weir ends what it sends with close_notify
before the FIN, so that a peer can tell the end of the stream from a cut
(OpenSSL 3 takes a bare FIN as a truncation attack). Lingering close is
the half close of the HTTP/1 client side; the Upgrade tunnel's, both
sides, is in test_tls_review.py (test_tunnel_tls_both_sides).

The clients here are strict: OP_IGNORE_UNEXPECTED_EOF cleared and ragged
EOFs not suppressed, so a FIN without close_notify raises an SSLError
("unexpected eof while reading") where a clean end reads as b"" (or
SSLZeroReturnError)."""

import socket
import ssl
import time

import pytest

from weirtest import DEADLINE, wait_for


def start(weir, ssl_preamble, pki, location, server=""):
    cert = pki.leaf("www.test")
    port = weir.port()
    weir.conf(ssl_preamble +
              "http {\n"
              "    server {\n"
              "        listen 127.0.0.1:%d ssl;\n"
              "        server_name www.test;\n"
              "        ssl_certificate %s;\n"
              "        ssl_certificate_key %s;\n"
              "        lingering_timeout 5s;\n"
              "%s"
              "        location / {\n"
              "%s"
              "        }\n"
              "    }\n"
              "}\n" % (port, cert.chain, cert.key, server, location))
    weir.start(check_ports=False)

    def accepts():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(accepts, what="the TLS port to accept")
    return port


def strict_client(port, version):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.options &= ~getattr(ssl, "OP_IGNORE_UNEXPECTED_EOF", 0)
    v = getattr(ssl.TLSVersion, version)
    ctx.minimum_version = ctx.maximum_version = v
    raw = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    try:
        return ctx.wrap_socket(raw, server_hostname="www.test",
                               suppress_ragged_eofs=False)
    except BaseException:
        raw.close()
        raise


def read_to_end(s):
    """Everything until weir's end of stream; fails on a ragged EOF."""
    data = b""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        try:
            d = s.recv(65536)
        except ssl.SSLZeroReturnError:
            return data
        except ssl.SSLError as exc:
            # OpenSSL 3: "unexpected eof while reading"
            raise AssertionError("FIN without close_notify after %r: %r"
                                 % (data[-200:], exc))
        if not d:
            return data
        data += d
    raise AssertionError("no end of stream in time: %r" % data[-200:])


@pytest.mark.parametrize("version", ["TLSv1_2", "TLSv1_3"])
def test_lingering_close_always_sends_close_notify(weir, ssl_preamble, pki,
                                                   version):
    port = start(weir, ssl_preamble, pki,
                 "            lingering_close always;\n"
                 "            return 200 \"lingered\";\n")
    s = strict_client(port, version)
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: www.test\r\n"
                  b"Connection: close\r\n\r\n")
        data = read_to_end(s)
    finally:
        s.close()
    assert data.startswith(b"HTTP/1.1 200 "), data[:200]
    assert data.endswith(b"\r\n\r\nlingered"), data[-200:]


@pytest.mark.parametrize("version", ["TLSv1_2", "TLSv1_3"])
def test_lingering_close_after_unread_body(weir, ssl_preamble, pki,
                                           version):
    # 413 before the body is read: weir lingers to read and drop it, and
    # the client, which may still be sending, must see the end of the
    # response as a clean one
    port = start(weir, ssl_preamble, pki,
                 "            client_max_body_size 1k;\n"
                 "            return 200 \"never\";\n")
    s = strict_client(port, version)
    body = b"x" * (256 * 1024)
    try:
        # weir answers after the head and reads the rest while it
        # lingers, so the whole body goes out before anything is read
        s.sendall(b"POST / HTTP/1.1\r\nHost: www.test\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        data = read_to_end(s)
    finally:
        s.close()
    assert data.startswith(b"HTTP/1.1 413 "), data[:200]
    assert b"Connection: close\r\n" in data, data[:300]
