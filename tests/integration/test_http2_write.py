"""The HTTP/2 write path (docs/dev/http2.md "The write path and
back-pressure"): a stream that queued enough is written at once, so a
proxied response whose client reads keeps the upstream's buffers
turning over and never spills to a temporary file, as over HTTP/1.1."""

import hashlib

import pytest

from test_http2 import curl, start


def sized(n):
    """n bytes that are not all alike (a lost or repeated piece shows)."""
    block = hashlib.sha256(b"%d" % n).digest() * 128     # 4 KiB
    return (block * (n // len(block) + 1))[:n]


@pytest.mark.parametrize("size", [256 * 1024, 1024 * 1024])
def test_proxied_body_not_spilled(weir, make_origin, size):
    """With small proxy_buffers, a 256 KiB and a 1 MiB response over h2c
    reach a client that reads without any "buffered to a temporary file"
    line: the stream is written as its buffers fill, not once a pass."""
    body = sized(size)
    o = make_origin()
    o.handler = lambda req, w: w.respond(body=body)
    port, _ = start(weir, "        http2 on;\n"
                    "        location / { proxy_pass http://%s;\n"
                    "            proxy_buffers 8 16k; }\n" % o.addr)
    for i in range(3):
        p = curl(["--http2-prior-knowledge", "-o", "-",
                  "http://127.0.0.1:%d/big%d" % (port, i)])
        assert p.returncode == 0, p.stderr
        assert p.stdout == body
    with open(weir.error_log, errors="replace") as f:
        log = f.read()
    assert "buffered to a temporary file" not in log
