"""Request targets nginx accepts that RFC 9112 3.2 frowns on
(docs/http/parser.md, "Request line"): a fragment is dropped, an
absolute-form target without a path before its query gets the path
"/", an empty port is no port. Checked through the proxy: what the
origin is asked for, and what $uri, $args, $request_uri and $host were
(sent to it with proxy_set_header)."""

import pytest

from test_proxy import Client, start as proxy_start


VARS = ("            proxy_set_header X-Uri $uri;\n"
        "            proxy_set_header X-Args $args;\n"
        "            proxy_set_header X-Request-Uri $request_uri;\n"
        "            proxy_set_header X-Host $host;\n")


def ask(port, target, host="client.example"):
    with Client(port) as c:
        c.send(b"GET " + target + b" HTTP/1.1\r\nHost: " + host.encode()
               + b"\r\nConnection: close\r\n\r\n")
        return c.response()


CASES = [
    # (target, origin target, $uri, $args, $request_uri, $host)
    (b"/foo/bar/.#frag", "/foo/bar/.", "/foo/bar/", "", "/foo/bar/.",
     "client.example"),
    (b"/a.html#x?y=1", "/a.html", "/a.html", "", "/a.html",
     "client.example"),
    (b"/a?b=1#c?d=2/e#f", "/a?b=1", "/a", "b=1", "/a?b=1",
     "client.example"),
    (b"/#", "/", "/", "", "/", "client.example"),
    (b"http://localhost?args", "/?args", "/", "args", "?args",
     "localhost"),
    (b"http://localhost?a=1#f", "/?a=1", "/", "a=1", "?a=1", "localhost"),
    (b"http://localhost#f", "/", "/", "", "", "localhost"),
    (b"http://localhost:/", "/", "/", "", "/", "localhost"),
    (b"http://localhost:/p?q", "/p?q", "/p", "q", "/p?q", "localhost"),
    (b"http://localhost:?q", "/?q", "/", "q", "?q", "localhost"),
    (b"http://[::1]:/x", "/x", "/x", "", "/x", "[::1]"),
]


@pytest.mark.parametrize("target,up,uri,args,request_uri,host", CASES,
                         ids=[c[0].decode() for c in CASES])
def test_target(weir, origin, target, up, uri, args, request_uri, host):
    port = proxy_start(weir, origin, location=VARS)
    r = ask(port, target)
    assert r.status == 200, r.headers
    req = origin.wait_requests(1)[0]
    assert req.target == up
    assert "#" not in req.raw_head.decode("latin-1")
    assert req.header("X-Uri") == uri
    assert req.header("X-Args", "") == args
    assert req.header("X-Request-Uri", "") == request_uri
    assert req.header("X-Host") == host


def test_fragment_with_uri_part(weir, origin):
    """proxy_pass with a URI part rebuilds the target from $uri and
    $args: the fragment is not in either."""
    port = proxy_start(weir, None, server=(
        "        location /foo/ {\n"
        "            proxy_pass http://%s/x/;\n"
        "        }\n" % origin.addr))
    r = ask(port, b"/foo/bar/.#frag")
    assert r.status == 200
    r = ask(port, b"/foo/b?c=1#frag")
    assert r.status == 200
    reqs = origin.wait_requests(2)
    assert [q.target for q in reqs] == ["/x/bar/", "/x/b?c=1"]


REJECTED = [
    b"/a#b\x01c",
    b"/a#b\x7f",
    b"http://localhost:x/",
    b"http://localhost::/",
]


@pytest.mark.parametrize("target", REJECTED,
                         ids=[t.decode("latin-1") for t in REJECTED])
def test_target_rejected(weir, origin, target):
    port = proxy_start(weir, origin)
    r = ask(port, target)
    assert r.status == 400
    assert origin.requests == []


def test_connect_needs_port(weir, origin):
    port = proxy_start(weir, origin)
    with Client(port) as c:
        c.send(b"CONNECT localhost: HTTP/1.1\r\nHost: localhost\r\n\r\n")
        r = c.response()
    assert r.status == 400
