"""One client for the protocol-neutral tests, over HTTP/1.1 or HTTP/2.

A test that takes the `proto` fixture (conftest.py) runs once per
protocol, "h1" then "h2"; for its duration protoclient.PROTO names it.
The test files' own helpers ask this module:

    conf_line()           "        http2 on;\n" when PROTO is "h2", else
                          "": the server block line that enables it
    request(port, method, path, headers, body, tls=False)
                          (status, headers dict with lowercased names,
                          body bytes) of one request on a fresh
                          connection: http.client on HTTP/1.1, h2client
                          (h2c with prior knowledge, or TLS with ALPN h2)
                          on HTTP/2

A "Host" request header becomes :authority on HTTP/2 (and the
connection-specific ones, which HTTP/2 forbids, are left out). Headers
that come more than once: the last one wins, on both protocols.
Every wait is bounded (DEADLINE)."""

import http.client
import ssl

from weirtest import DEADLINE

PROTOS = ["h1", "h2"]
PROTO = "h1"

# RFC 9113 8.2.2: these never go on an HTTP/2 request
_H1_ONLY = ("connection", "keep-alive", "proxy-connection",
            "transfer-encoding", "upgrade")


def conf_line():
    return "        http2 on;\n" if PROTO == "h2" else ""


def request(port, method="GET", path="/", headers=None, body=None,
            tls=False, proto=None):
    if (proto or PROTO) == "h2":
        return _h2(port, method, path, headers or {}, body, tls)
    return _h1(port, method, path, headers or {}, body, tls)


def _h1(port, method, path, headers, body, tls):
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=DEADLINE,
                                        context=ctx)
    else:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    try:
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        c.close()


def _h2(port, method, path, headers, body, tls):
    from h2client import H2Client

    authority = None
    fields = []
    for k, v in headers.items():
        k = k.lower()
        if k == "host":
            authority = v
        elif k not in _H1_ONLY:
            # as http.client sends them: latin-1 bytes
            if not isinstance(v, bytes):
                v = str(v).encode("latin-1")
            fields.append((k.encode("ascii"), v))
    if isinstance(body, str):
        body = body.encode("latin-1")
    # as http.client and curl do
    if body and not any(k == b"content-length" for k, _ in fields):
        fields.append((b"content-length", b"%d" % len(body)))
    c = H2Client(port, tls=tls, authority=authority)
    try:
        if tls and c.alpn != "h2":
            raise AssertionError("ALPN chose %r, not h2" % c.alpn)
        sid = c.request(method, path, headers=fields, body=body)
        r = c.response(sid)
        # a complete response may be followed by RST_STREAM NO_ERROR
        # (RFC 9113 8.1): the server wants no more of the request body
        if not r.ended:
            raise AssertionError("stream %d reset with %s"
                                 % (sid, r.reset))
        hdrs = {}
        for k, v in r.headers:
            if not k.startswith(":"):
                hdrs[k.lower()] = v
        return r.status, hdrs, r.body
    finally:
        c.close()
