"""Documented HTTP behaviour that had no test beyond `weir -t` (issue 13),
checked from outside against what docs/http/*.md say, with raw clients
and the misbehaving origin of origin.py."""

import email.utils
import os
import socket

import origin as origin_lib
from weirtest import wait_for

from test_proxy import Client


# ---------------------------------------------------------------- helpers

FILE = origin_lib.body_of(1000)


def site(weir, server, http="", main=""):
    """weir with one server on a free port, root <prefix>/html holding
    a.txt (FILE, 1000 bytes); returns (port, html)."""
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    with open(os.path.join(html, "a.txt"), "wb") as f:
        f.write(FILE)
    port = weir.port()
    weir.conf(main +
              "http {\n"
              "    types { text/plain txt; }\n"
              "    default_type application/octet-stream;\n"
              "%s"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        server_name client.example;\n"
              "        root %s;\n"
              "%s"
              "    }\n"
              "}\n" % (http, port, html, server))
    weir.start(check_ports=False)
    up(port)
    return port, html


def up(port):
    def accepts():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(accepts, what="port %d to accept" % port)


def one(port, target="/a.txt", headers=(), method="GET"):
    """One request on a fresh connection; returns the Response."""
    with Client(port) as c:
        return c.request(method, target, headers=list(headers))


def http_date(t):
    return email.utils.formatdate(t, usegmt=True)


# ---------------------------------------------------------------- headers

def test_repeated_if_match_and_if_none_match_are_one_list(weir):
    """If-Match and If-None-Match are lists (RFC 9110 13.1.1, 13.1.2;
    not single-valued in http1.md): several lines are one list, and a
    tag on any line counts."""
    port, _ = site(weir, "        location / { }\n")
    etag = one(port).header("etag")
    assert etag

    r = one(port, headers=[("If-None-Match", '"nope"'),
                           ("If-None-Match", etag)])
    assert (r.status, r.body) == (304, b""), r
    r = one(port, headers=[("If-None-Match", '"nope"'),
                           ("If-None-Match", '"nope2"')])
    assert (r.status, r.body) == (200, FILE), r

    r = one(port, headers=[("If-Match", '"nope"'), ("If-Match", etag)])
    assert (r.status, r.body) == (200, FILE), r
    r = one(port, headers=[("If-Match", '"nope"'), ("If-Match", '"x"')])
    assert r.status == 412, r
