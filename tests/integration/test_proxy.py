"""The reverse proxy's behaviour against a real (misbehaving) origin
(origin.py): the exact request the origin receives, the response relayed
to the client, keep-alive to the origin, failover and passive health,
timeouts, the 502 paths, request smuggling and client aborts.

Configuration errors and the URI rewriting table are in
test_proxy_conf.py."""

import hashlib
import os
import re
import select
import socket
import threading
import time

import pytest

import protoclient
from weirtest import DEADLINE, connect, free_port, wait_for
from origin import body_of


# ---- weir

TIMEOUTS = ("    proxy_connect_timeout 2s;\n"
            "    proxy_send_timeout 3s;\n"
            "    proxy_read_timeout 3s;\n")

LOG_FORMAT = ("    log_format up '$status|$upstream_status|$upstream_addr|"
              "$upstream_response_time|$request';\n"
              "    access_log logs/up.log up;\n")


def start(weir, pass_to=None, location="", server="", http="",
          upstream=""):
    """Starts weir with one server on a free port whose location /
    proxies to pass_to ("127.0.0.1:PORT", an Origin, or a group name),
    with short timeouts, the access log logs/up.log in the format
    "status|upstream_status|upstream_addr|upstream_response_time|request".
    location: more directives in location /; server: more locations;
    http: more http-level directives; upstream: upstream blocks.
    Returns the port."""
    port = weir.port()
    loc = ""
    if pass_to is not None:
        if hasattr(pass_to, "addr"):
            pass_to = pass_to.addr
        loc = ("        location / {\n"
               "            proxy_pass http://%s;\n"
               "%s"
               "        }\n" % (pass_to, location))
    weir.conf("http {\n"
              "%s%s%s%s"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        server_name client.example;\n"
              "%s%s%s"
              "    }\n"
              "}\n" % (TIMEOUTS, LOG_FORMAT, http, upstream, port,
                       protoclient.conf_line(), loc, server))
    weir.start(check_ports=False)

    def up():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(up, what="the HTTP port to accept")
    return port


def access_lines(weir, n):
    """Waits for n lines in logs/up.log; returns them split on "|"."""
    path = weir.path("logs", "up.log")

    def lines():
        with open(path) as f:
            got = [line.rstrip("\n").split("|") for line in f]
        return got if len(got) >= n else None

    return wait_for(lines, what="%d access log lines" % n)


def log_lines(weir, pattern):
    return [line for line in weir.log().splitlines()
            if re.search(pattern, line)]


def wait_log_line(weir, pattern):
    """Waits for an error log line matching pattern; returns it."""
    def found():
        got = log_lines(weir, pattern)
        return got[0] if got else None

    return wait_for(found, what="error log line %r" % pattern)


def dead_addr():
    """An address nothing listens on (connect: refused)."""
    return "127.0.0.1:%d" % free_port()


# ---- a client

class Response:
    def __init__(self):
        self.version = None
        self.status = None
        self.headers = []           # [(name, value)] in order
        self.body = b""
        self.trailers = []
        self.interim = []           # [(status, headers)] of 1xx heads
        self.raw_body = b""
        self.complete = True        # the body was whole (by its framing)

    def header(self, name, default=None):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def header_all(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def __repr__(self):
        return "<Response %s %r %r>" % (self.status, self.headers,
                                        self.body[:200])


class Client:
    """One client connection to weir, with bounded reads."""

    def __init__(self, port, timeout=DEADLINE):
        self.s = connect(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.timeout = timeout
        self.eof = False

    def close(self):
        self.s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.s.sendall(data)

    def _more(self, timeout=None):
        if self.eof:
            return False
        timeout = self.timeout if timeout is None else timeout
        r, _, _ = select.select([self.s], [], [], timeout)
        if not r:
            raise AssertionError("no data from weir in %.1fs (have %r)"
                                 % (timeout, self.buf[:300]))
        try:
            data = self.s.recv(262144)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def _line(self):
        while b"\r\n" not in self.buf:
            if not self._more():
                raise AssertionError("closed in a line: %r" % self.buf)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n, resp):
        while len(self.buf) < n:
            if not self._more():
                resp.complete = False
                data, self.buf = self.buf, b""
                return data
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _head(self):
        while b"\r\n\r\n" not in self.buf:
            if not self._more():
                raise AssertionError("closed before a response head; got "
                                     "%r" % self.buf)
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        version, status = lines[0].split(" ", 2)[:2]
        headers = []
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers.append((k, v.strip()))
        return version, int(status), headers

    def response(self, method="GET"):
        resp = Response()
        while True:
            version, status, headers = self._head()
            if 100 <= status < 200 and status != 101:
                resp.interim.append((status, headers))
                continue
            break
        resp.version, resp.status, resp.headers = version, status, headers
        if method == "HEAD" or status in (204, 304) or status == 101:
            return resp
        te = ",".join(resp.header_all("transfer-encoding")).lower()
        if "chunked" in te:
            while True:
                line = self._line()
                resp.raw_body += line + b"\r\n"
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    break
                data = self._exact(size, resp)
                resp.body += data
                if not resp.complete:
                    return resp
                assert self._exact(2, resp) == b"\r\n"
            while True:
                line = self._line()
                if line == b"":
                    break
                k, _, v = line.decode("latin-1").partition(":")
                resp.trailers.append((k, v.strip()))
            return resp
        cl = resp.header("content-length")
        if cl is not None:
            resp.body = self._exact(int(cl), resp)
            return resp
        while self._more():
            pass
        resp.body, self.buf = self.buf, b""
        return resp

    def request(self, method="GET", target="/", headers=None, body=None,
                version="HTTP/1.1", host="client.example", chunked=False):
        """Sends one request and reads its response."""
        hs = []
        if host is not None:
            hs.append(("Host", host))
        hs += list(headers or [])
        data = b""
        if body is not None:
            if isinstance(body, str):
                body = body.encode()
            if chunked:
                hs.append(("Transfer-Encoding", "chunked"))
                if body:
                    data = b"%x\r\n%s\r\n" % (len(body), body)
                data += b"0\r\n\r\n"
            else:
                hs.append(("Content-Length", str(len(body))))
                data = body
        head = "%s %s %s\r\n" % (method, target, version)
        head += "".join("%s: %s\r\n" % kv for kv in hs) + "\r\n"
        self.send(head.encode("latin-1") + data)
        return self.response(method)

    def closed(self, timeout=None):
        """True when weir closes the connection with nothing more sent."""
        while self._more(timeout):
            pass
        return self.buf == b""


def get(port, target="/", **kw):
    """One request on a new connection, over the protocol of the test
    (protoclient.PROTO)."""
    if protoclient.PROTO == "h2":
        return get_h2(port, target, **kw)
    with Client(port) as c:
        return c.request(target=target, **kw)


def get_h2(port, target="/", method="GET", headers=None, body=None,
           host="client.example", chunked=False):
    """get() over HTTP/2 (h2c): host is the :authority, a body goes
    with a content-length unless chunked (then without one, as the
    HTTP/2 form of a body of unknown length)."""
    from h2client import H2Client

    fields = [(k.lower(), v) for k, v in headers or []]
    if isinstance(body, str):
        body = body.encode()
    if body and not chunked:
        fields.append(("content-length", str(len(body))))
    c = H2Client(port, authority=host)
    try:
        sid = c.request(method, target, headers=fields, body=body)
        got = c.response(sid)
    finally:
        c.close()
    assert got.ended, "stream %d reset with %s" % (sid, got.reset)
    resp = Response()
    resp.version = "HTTP/2"
    resp.status = got.status
    resp.headers = [(k, v) for k, v in got.headers if not k.startswith(":")]
    resp.body = got.body
    resp.trailers = list(got.trailers)
    resp.interim = [(int(dict(h)[":status"]),
                     [(k, v) for k, v in h if not k.startswith(":")])
                    for h in got.interim]
    return resp


def seen_by(origin, n=1):
    """The first n requests the origin received (waits for them)."""
    return origin.wait_requests(n)


# ---- the harness itself

def test_origin_records_and_stops(make_origin):
    o = make_origin(name="self")
    s = socket.create_connection(("127.0.0.1", o.port), timeout=DEADLINE)
    try:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"
                  b"X-T: t\r\n\r\nGET /tiny HTTP/1.1\r\nHost: h\r\n\r\n")
        o.wait_requests(2)
        req = o.wait_complete(1)
        assert req.method == "POST" and req.body == b"abc"
        assert req.headers[:2] == [("Host", "h"), ("X-A", "1")]
        assert req.trailers == [("X-T", "t")]
        assert o.conn_ids() == [1]
    finally:
        s.close()
    o.wait_closed(1)


# ---- the request the origin receives

def test_request_line_and_default_host(weir, origin, proto):
    port = start(weir, origin)
    r = get(port, "/path/x?a=1&b=%20")
    assert r.status == 200
    req = seen_by(origin)[0]
    assert req.method == "GET"
    assert req.target == "/path/x?a=1&b=%20"
    assert req.version == "HTTP/1.1"
    # $proxy_host: "host:port" when the port is not 80
    assert req.header_all("host") == ["127.0.0.1:%d" % origin.port]
    # keep-alive to the origin by default: no "Connection: close"
    assert "close" not in ",".join(req.header_all("connection")).lower()
    assert not req.bare_lf
    assert req.raw_head.endswith(b"\r\n\r\n")


def test_proxy_set_header_host(weir, origin, proto):
    port = start(weir, origin, server=(
        "        location /h { proxy_pass http://%s;\n"
        "            proxy_set_header Host $host; }\n"
        "        location /f { proxy_pass http://%s;\n"
        "            proxy_set_header Host fixed.example; }\n"
        % (origin.addr, origin.addr)))
    assert get(port, "/h", host="client.example").status == 200
    assert get(port, "/f", host="client.example").status == 200
    first, second = seen_by(origin, 2)
    assert first.header_all("host") == ["client.example"]
    assert second.header_all("host") == ["fixed.example"]


HOP_BY_HOP = ["connection", "keep-alive", "te", "trailer",
              "transfer-encoding", "upgrade", "proxy-connection",
              "proxy-authorization", "x-listed-in-connection"]


def test_hop_by_hop_headers_removed(weir, origin):
    port = start(weir, origin)
    r = get(port, "/hop", headers=[
        ("X-First", "1"),
        ("Connection", "keep-alive, X-Listed-In-Connection"),
        ("X-Listed-In-Connection", "secret"),
        ("Keep-Alive", "timeout=5"),
        ("TE", "trailers"),
        ("Trailer", "X-Foo"),
        ("Proxy-Connection", "keep-alive"),
        ("Proxy-Authorization", "Basic dXNlcjpwYXNz"),
        ("X-Last", "2")])
    assert r.status == 200
    req = seen_by(origin)[0]
    for name in HOP_BY_HOP:
        assert name not in req.names(), (name, req.headers)
    assert req.header("x-first") == "1" and req.header("x-last") == "2"


def test_upgrade_header_not_passed_by_default(weir, origin):
    port = start(weir, origin)
    r = get(port, "/up", headers=[("Connection", "upgrade"),
                                  ("Upgrade", "websocket"),
                                  ("X-After", "1")])
    assert r.status == 200
    req = seen_by(origin)[0]
    assert "upgrade" not in req.names()
    assert "connection" not in req.names()
    assert req.header("x-after") == "1"


def test_chunked_request_body_reframed(weir, origin):
    port = start(weir, origin)
    body = body_of(5000)
    with Client(port) as c:
        r = c.request("POST", "/echo", body=body, chunked=True,
                      headers=[("X-Before", "b")])
    assert r.status == 200 and r.body == body
    req = seen_by(origin)[0]
    assert "transfer-encoding" not in req.names(), req.headers
    assert req.header_all("content-length") == [str(len(body))]
    assert req.body == body


def test_client_headers_passed_in_order(weir, origin, proto):
    port = start(weir, origin)
    sent = [("X-A", "1"), ("User-Agent", "test-agent/1.0"), ("X-B", "2"),
            ("Cookie", "c=1"), ("X-A", "3"), ("Accept", "*/*"),
            ("X-Mixed-Case", "Value With  Spaces")]
    assert get(port, "/order", headers=sent).status == 200
    req = seen_by(origin)[0]
    got = [(k.lower(), v) for k, v in req.headers
           if k.lower() not in ("host", "connection", "content-length")]
    want = [(k.lower(), v) for k, v in sent]
    if proto == "h2":
        # the crumbs of an HTTP/2 cookie are joined into one Cookie,
        # after the other fields (docs/http/http2.md), as nginx does
        want = ([kv for kv in want if kv[0] != "cookie"]
                + [kv for kv in want if kv[0] == "cookie"])
    assert got == want


def test_proxy_set_header_add_override_remove(weir, origin, proto):
    port = start(weir, origin, location=(
        "            proxy_set_header X-Added added;\n"
        "            proxy_set_header X-Override new;\n"
        "            proxy_set_header User-Agent \"\";\n"
        "            proxy_set_header X-Uri $uri;\n"))
    assert get(port, "/set?q=1", headers=[("X-Override", "old"),
                                          ("User-Agent", "ua"),
                                          ("X-Kept", "k")]).status == 200
    req = seen_by(origin)[0]
    assert req.header_all("x-added") == ["added"]
    assert req.header_all("x-override") == ["new"]
    assert req.header_all("x-uri") == ["/set"]
    assert "user-agent" not in req.names()
    assert req.header_all("x-kept") == ["k"]


def test_proxy_set_header_inherited_only_without_own(weir, origin, proto):
    port = start(weir, http="    proxy_set_header X-Level http;\n",
                 server=(
                     "        location /inherit { proxy_pass http://%s; }\n"
                     "        location /own { proxy_pass http://%s;\n"
                     "            proxy_set_header X-Own own; }\n"
                     % (origin.addr, origin.addr)))
    assert get(port, "/inherit").status == 200
    assert get(port, "/own").status == 200
    first, second = seen_by(origin, 2)
    assert first.header_all("x-level") == ["http"]
    assert "x-own" not in first.names()
    assert second.header_all("x-own") == ["own"]
    assert "x-level" not in second.names()
    # the defaults are there either way
    assert second.header_all("host") == ["127.0.0.1:%d" % origin.port]


def test_pass_request_headers_off(weir, origin, proto):
    port = start(weir, origin, location=(
        "            proxy_pass_request_headers off;\n"
        "            proxy_set_header X-Set set;\n"))
    assert get(port, "/nohdr", headers=[("X-Custom", "1"),
                                        ("User-Agent", "ua")]).status == 200
    req = seen_by(origin)[0]
    assert "x-custom" not in req.names()
    assert "user-agent" not in req.names()
    assert req.header_all("x-set") == ["set"]
    assert req.header_all("host") == ["127.0.0.1:%d" % origin.port]


def test_pass_request_body_off(weir, origin):
    port = start(weir, origin, location=(
        "            proxy_pass_request_body off;\n"))
    with Client(port) as c:
        r = c.request("POST", "/echo", body=b"hello body")
        assert r.status == 200
        assert r.body == b""
        # the client's body was read and dropped: the connection goes on
        r = c.request("GET", "/after")
        assert r.status == 200 and r.body.endswith(b"GET /after\n")
    req = seen_by(origin)[0]
    assert req.body == b""
    assert req.header("content-length", "0") == "0"
    assert "transfer-encoding" not in req.names()


def test_proxy_method(weir, origin, proto):
    port = start(weir, origin, location="            proxy_method POST;\n")
    assert get(port, "/m").status == 200
    assert seen_by(origin)[0].method == "POST"


def test_proxy_http_version_10(weir, origin, proto):
    port = start(weir, origin,
                 location="            proxy_http_version 1.0;\n")
    for _ in range(2):
        r = get(port, "/v10")
        assert r.status == 200
    first, second = seen_by(origin, 2)
    assert first.version == "HTTP/1.0"
    assert first.header_all("connection") == ["close"]
    assert first.conn_id != second.conn_id


def test_x_forwarded_for(weir, origin, proto):
    port = start(weir, origin, location=(
        "            proxy_set_header X-Forwarded-For "
        "$proxy_add_x_forwarded_for;\n"
        "            proxy_set_header X-Forwarded-Proto $scheme;\n"
        "            proxy_set_header X-Forwarded-Host $host;\n"))
    assert get(port, "/xff").status == 200
    assert get(port, "/xff", headers=[("X-Forwarded-For",
                                       "10.0.0.1")]).status == 200
    first, second = seen_by(origin, 2)
    assert first.header_all("x-forwarded-for") == ["127.0.0.1"]
    assert second.header_all("x-forwarded-for") == ["10.0.0.1, 127.0.0.1"]
    assert first.header_all("x-forwarded-proto") == ["http"]
    assert first.header_all("x-forwarded-host") == ["client.example"]


def test_forwarded(weir, origin, proto):
    port = start(weir, origin, location=(
        "            proxy_set_header Forwarded $proxy_add_forwarded;\n"))
    assert get(port, "/fwd").status == 200
    assert get(port, "/fwd", headers=[("Forwarded",
                                       "for=192.0.2.60")]).status == 200
    first, second = seen_by(origin, 2)
    own = "for=127.0.0.1;proto=http;host=client.example"
    assert first.header_all("forwarded") == [own]
    assert second.header_all("forwarded") == ["for=192.0.2.60, " + own]


def test_proxy_via(make_origin, weir, proto):
    def handler(req, w):
        w.respond(200, [("Via", "1.1 origin-proxy")] if req.path == "/ov"
                  else [], b"via\n")

    origin = make_origin(handler=handler)
    port = start(weir, origin, location="            proxy_via on;\n")
    def via(msg):
        return ", ".join(msg.header_all("via"))

    r = get(port, "/v")
    assert r.status == 200
    assert via(r) == "1.1 weir"
    r = get(port, "/ov", headers=[("Via", "1.0 client-proxy")])
    assert via(r) == "1.1 origin-proxy, 1.1 weir"
    first, second = seen_by(origin, 2)
    # the version of the message received: the client's
    mine = {"h1": "1.1 weir", "h2": "2 weir"}[proto]
    assert via(first) == mine
    assert via(second) == "1.0 client-proxy, " + mine


def test_proxy_via_off_by_default(weir, origin, proto):
    port = start(weir, origin)
    r = get(port, "/v")
    assert r.header("via") is None
    assert "via" not in seen_by(origin)[0].names()


# ---- the response

def test_status_and_headers_relayed(make_origin, weir, proto):
    def handler(req, w):
        w.respond(201, [("Content-Type", "text/x-test"),
                        ("X-One", "1"), ("X-Two", "a"), ("X-Two", "b"),
                        ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"),
                        ("Server", "origin-server/1.0"),
                        ("Date", "Mon, 01 Jan 2001 00:00:00 GMT"),
                        ("X-Pad", "avoid browser bug"),
                        ("ETag", "\"e1\""),
                        ("Last-Modified", "Mon, 01 Jan 2001 00:00:00 GMT")],
                  b"created\n", reason="Made It")

    origin = make_origin(handler=handler)
    port = start(weir, origin)
    r = get(port, "/s")
    assert r.status == 201
    assert r.body == b"created\n"
    assert r.header_all("content-type") == ["text/x-test"]
    assert r.header_all("x-one") == ["1"]
    assert r.header_all("x-two") == ["a", "b"]
    assert r.header_all("set-cookie") == ["a=1", "b=2"]
    assert r.header_all("etag") == ["\"e1\""]
    assert r.header_all("last-modified") == ["Mon, 01 Jan 2001 00:00:00 GMT"]
    # weir's own Date and Server; X-Pad hidden
    assert r.header_all("x-pad") == []
    assert len(r.header_all("date")) == 1
    assert r.header("date") != "Mon, 01 Jan 2001 00:00:00 GMT"
    assert r.header_all("server") != ["origin-server/1.0"]
    assert r.header_all("x-origin") == ["origin"]


def test_hide_and_pass_header(make_origin, weir, proto):
    def handler(req, w):
        w.respond(200, [("Server", "origin-server/1.0"),
                        ("X-Secret", "s"), ("X-Public", "p")], b"ok\n")

    origin = make_origin(handler=handler)
    port = start(weir, server=(
        "        location /hide { proxy_pass http://%s;\n"
        "            proxy_hide_header X-Secret; }\n"
        "        location /pass { proxy_pass http://%s;\n"
        "            proxy_pass_header Server; }\n"
        % (origin.addr, origin.addr)))
    r = get(port, "/hide")
    assert r.header_all("x-secret") == []
    assert r.header_all("x-public") == ["p"]
    assert r.header_all("server") != ["origin-server/1.0"]
    r = get(port, "/pass")
    assert r.header_all("server") == ["origin-server/1.0"]
    assert r.header_all("x-secret") == ["s"]


def redirect_origin(make_origin):
    """An origin that answers /loc/... with a 302 whose Location is
    http://<its proxy host>/new/place and /ref/... with a Refresh."""
    holder = {}

    def handler(req, w):
        base = "http://127.0.0.1:%d" % holder["o"].port
        if req.path.startswith("/other"):
            base = "http://backend.example"
        if "ref" in req.path:
            w.respond(200, [("Refresh", "3; url=%s/new/place" % base)],
                      b"refresh\n")
        else:
            w.respond(302, [("Location", "%s/new/place" % base)],
                      b"moved\n")

    holder["o"] = make_origin(handler=handler)
    return holder["o"]


def relative(location, path):
    """Location is path, or path made absolute with weir's own host (not
    the origin's)."""
    return re.match(r"^(http://client\.example(:\d+)?)?%s$"
                    % re.escape(path), location) is not None


def test_proxy_redirect_default_off_custom(make_origin, weir, proto):
    origin = redirect_origin(make_origin)
    port = start(weir, server=(
        "        location /app/ { proxy_pass http://%s/; }\n"
        "        location /raw/ { proxy_pass http://%s/;\n"
        "            proxy_redirect off; }\n"
        "        location /cus/ { proxy_pass http://%s/other/;\n"
        "            proxy_redirect http://backend.example/ /mapped/; }\n"
        % (origin.addr, origin.addr, origin.addr)))

    r = get(port, "/app/loc")
    assert r.status == 302
    assert relative(r.header("location"), "/app/new/place"), r.headers
    r = get(port, "/app/ref")
    assert re.match(r"^3; url=(http://client\.example(:\d+)?)?"
                    r"/app/new/place$", r.header("refresh")), r.headers

    r = get(port, "/raw/loc")
    assert r.header("location") == ("http://127.0.0.1:%d/new/place"
                                    % origin.port)

    r = get(port, "/cus/loc")
    assert relative(r.header("location"), "/mapped/new/place"), r.headers
    r = get(port, "/cus/ref")
    assert re.match(r"^3; url=(http://client\.example(:\d+)?)?"
                    r"/mapped/new/place$", r.header("refresh")), r.headers


def test_intercept_errors(weir, origin, proto):
    port = start(weir, server=(
        "        location /i/ { proxy_pass http://%s/;\n"
        "            proxy_intercept_errors on;\n"
        "            error_page 404 /err404; }\n"
        "        location /noerrpage/ { proxy_pass http://%s/;\n"
        "            proxy_intercept_errors on; }\n"
        "        location /off/ { proxy_pass http://%s/;\n"
        "            error_page 404 /err404; }\n"
        "        location = /err404 { return 200 \"intercepted\\n\"; }\n"
        % (origin.addr, origin.addr, origin.addr)))
    r = get(port, "/i/status/404")
    assert r.status == 404
    assert r.body == b"intercepted\n"
    # a status without an error_page is relayed as it is
    r = get(port, "/i/status/500")
    assert r.status == 500 and r.body == b"status 500\n"
    r = get(port, "/noerrpage/status/404")
    assert r.status == 404 and r.body == b"status 404\n"
    r = get(port, "/off/status/404")
    assert r.status == 404 and r.body == b"status 404\n"
    assert len(seen_by(origin, 4)) == 4


def test_1xx_relayed_to_http11_not_to_http10(weir, origin):
    port = start(weir, origin)
    with Client(port) as c:
        r = c.request("GET", "/1xx")
        assert [s for s, _ in r.interim] == [103]
        link = [v for k, v in r.interim[0][1] if k.lower() == "link"]
        assert link == ["</style.css>; rel=preload; as=style"]
        assert r.status == 200 and r.body == body_of(64)
        # the connection goes on after it
        assert c.request("GET", "/tiny").body == body_of(64)
    with Client(port) as c:
        r = c.request("GET", "/1xx", version="HTTP/1.0")
        assert r.interim == []
        assert r.status == 200 and r.body == body_of(64)


def test_trailers_relayed_to_http11(weir, origin):
    port = start(weir, origin)
    with Client(port) as c:
        r = c.request("GET", "/trailers")
        assert r.status == 200
        assert "chunked" in r.header("transfer-encoding", "")
        assert r.body == b"hello trailers\n"
        assert r.trailers == [("X-Checksum", "abc123"),
                              ("X-Trailer-Two", "2")]
        assert c.request("GET", "/tiny").status == 200


def test_trailers_not_relayed_when_off(weir, origin):
    port = start(weir, origin,
                 location="            proxy_pass_trailers off;\n")
    with Client(port) as c:
        r = c.request("GET", "/trailers")
        assert r.status == 200 and r.body == b"hello trailers\n"
        assert r.trailers == []


def test_head(weir, origin):
    port = start(weir, origin)
    with Client(port) as c:
        r = c.request("HEAD", "/size/100")
        assert r.status == 200
        assert r.header("content-length") == "100"
        # no body bytes leaked into the next response
        r = c.request("GET", "/tiny")
        assert r.status == 200 and r.body == body_of(64)
    assert seen_by(origin)[0].method == "HEAD"


@pytest.mark.parametrize("status", [204, 304])
def test_no_body_statuses(weir, origin, status):
    port = start(weir, origin)
    with Client(port) as c:
        r = c.request("GET", "/status/%d" % status)
        assert r.status == status
        assert r.header("transfer-encoding") is None
        if status == 204:
            assert r.header("content-length") is None
        r = c.request("GET", "/tiny")
        assert r.status == 200 and r.body == body_of(64)


def test_reframing(weir, origin):
    port = start(weir, origin)
    with Client(port) as c:
        # a chunked origin body to an HTTP/1.1 client
        r = c.request("GET", "/chunked/1000")
        assert r.status == 200 and r.body == body_of(1000)
        # a length to a length
        r = c.request("GET", "/size/3000")
        assert r.header("content-length") == "3000"
        assert r.body == body_of(3000)
        # a close-delimited origin body: framed for the client, which
        # keeps its connection
        r = c.request("GET", "/close/2000")
        assert r.status == 200 and r.body == body_of(2000)
        assert r.complete
        assert c.request("GET", "/tiny").status == 200
    # a chunked origin body to an HTTP/1.0 client: close-delimited
    with Client(port) as c:
        r = c.request("GET", "/chunked/1000", version="HTTP/1.0")
        assert r.status == 200
        assert r.header("transfer-encoding") is None
        assert r.header("content-length") is None
        assert r.body == body_of(1000)
        assert c.eof


@pytest.mark.parametrize("buffering", ["on", "off"])
def test_large_bodies_both_ways(weir, origin, buffering, proto):
    port = start(weir, origin, http="    client_max_body_size 8m;\n",
                 location=("            proxy_buffering %s;\n"
                           "            proxy_request_buffering %s;\n"
                           % (buffering, buffering)))
    with Client(port) as c:
        def req(method, target, **kw):
            # over HTTP/2 a stream each, chunked=True: no content-length
            if proto == "h2":
                return get(port, target, method=method, **kw)
            return c.request(method, target, **kw)

        r = req("GET", "/size/3000000")
        assert r.status == 200
        assert hashlib.md5(r.body).hexdigest() == \
            hashlib.md5(body_of(3000000)).hexdigest()
        body = os.urandom(2000000)
        r = req("POST", "/echo", body=body)
        assert r.status == 200
        assert r.header("x-body-length") == str(len(body))
        assert r.body == body
        r = req("POST", "/echo", body=body, chunked=True)
        assert r.status == 200 and r.body == body


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


@pytest.mark.parametrize("mode", ["buffering-no-temp", "buffering-off",
                                  "temp-file"])
def test_slow_client_memory_bounded(make_origin, weir, mode):
    size = 64 << 20
    progress = {"sent": 0}
    piece = body_of(1 << 16)

    def handler(req, w):
        w.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        while progress["sent"] < size:
            w.send_raw(piece)
            progress["sent"] += len(piece)

    origin = make_origin(handler=handler)
    loc = {"buffering-no-temp": "proxy_max_temp_file_size 0;",
           "buffering-off": "proxy_buffering off;",
           "temp-file": ""}[mode]
    port = start(weir, origin, location="            %s\n" % loc)
    worker = weir.workers()[0]
    base = rss_kb(worker)

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.settimeout(DEADLINE)
    s.connect(("127.0.0.1", port))
    try:
        s.sendall(b"GET /big HTTP/1.1\r\nHost: client.example\r\n\r\n")
        seen = []

        def stalled():
            # the origin sent something, then stopped making progress
            seen.append(progress["sent"])
            del seen[:-10]
            return (len(seen) == 10 and len(set(seen)) == 1
                    and seen[0] > 0)

        if mode == "temp-file":
            # weir takes it all into a temporary file
            wait_for(lambda: progress["sent"] == size,
                     what="the origin to send everything")
        else:
            wait_for(stalled, what="the origin to stall")
            assert progress["sent"] < size // 2, progress
        assert rss_kb(worker) - base < 16 << 10, (base, rss_kb(worker))
        # now the client reads it all
        got = 0
        h = hashlib.md5()
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += s.recv(65536)
        head, buf = buf.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200")
        h.update(buf)
        got = len(buf)
        while got < size:
            data = s.recv(1 << 20)
            assert data, "closed after %d bytes" % got
            h.update(data)
            got += len(data)
        assert got == size
    finally:
        s.close()
    expect = hashlib.md5()
    for _ in range(size // len(piece)):
        expect.update(piece)
    assert h.hexdigest() == expect.hexdigest()
    assert rss_kb(worker) - base < 16 << 10


def test_upstream_variables_in_access_log(weir, origin, proto):
    port = start(weir, origin)
    assert get(port, "/tiny").status == 200
    line = access_lines(weir, 1)[0]
    assert line[0] == "200"
    assert line[1] == "200"
    assert line[2] == origin.addr
    assert re.match(r"^\d+\.\d{3}$", line[3]), line
    assert line[4] == "GET /tiny " + {"h1": "HTTP/1.1",
                                      "h2": "HTTP/2.0"}[proto]


# ---- keep-alive to the origin

def test_keepalive_one_client_many_requests(weir, origin):
    port = start(weir, origin)
    with Client(port) as c:
        for i in range(20):
            r = c.request("GET", "/size/%d" % (100 + i))
            assert r.status == 200 and r.body == body_of(100 + i)
    seen_by(origin, 20)
    assert origin.conn_ids() == [1]
    assert origin.accepted == 1


def test_keepalive_many_clients_one_connection(weir, origin):
    port = start(weir, origin)
    for i in range(20):
        with Client(port) as c:
            r = c.request("GET", "/chunked/%d" % (100 + i))
            assert r.status == 200 and r.body == body_of(100 + i)
    seen_by(origin, 20)
    assert origin.conn_ids() == [1]
    assert origin.accepted == 1


def test_stale_pooled_connection_is_retried(make_origin, weir):
    origin = make_origin(idle_close_ms=100)
    port = start(weir, origin)
    statuses = []
    for i in range(3):
        with Client(port) as c:
            r = c.request("GET", "/tiny")
            statuses.append(r.status)
        # the origin closes the idle pooled connection after 100 ms
        origin.wait_closed(i + 1, timeout=3)
    with Client(port) as c:
        r = c.request("POST", "/echo", body=b"posted after idle")
        statuses.append(r.status)
        assert r.body == b"posted after idle"
    assert statuses == [200] * 4
    assert origin.idle_closed >= 3


def test_pooled_connection_closed_on_reuse_is_retried(make_origin, weir):
    # the race the pool cannot see: the origin closes a reused
    # connection when the next request arrives, without answering; the
    # request is retried once on a fresh connection, whatever the method
    # and proxy_next_upstream
    def handler(req, w):
        if req.index > 1:
            w.close()
            return
        w.canned(req)

    origin = make_origin(handler=handler)
    port = start(weir, origin,
                 location="            proxy_next_upstream off;\n")
    with Client(port) as c:
        assert c.request("GET", "/tiny").status == 200
        r = c.request("GET", "/tiny")
        assert r.status == 200 and r.body == body_of(64)
        r = c.request("POST", "/echo", body=b"once")
        assert r.status == 200 and r.body == b"once"
    posts = [q for q in origin.requests if q.method == "POST"]
    # the POST reached a fresh connection once and was answered there
    assert len([q for q in posts if q.index == 1]) == 1


def test_origin_connection_close_not_reused(make_origin, weir):
    origin = make_origin(close_after=True)
    port = start(weir, origin)
    with Client(port) as c:
        for _ in range(3):
            r = c.request("GET", "/tiny")
            assert r.status == 200 and r.body == body_of(64)
    assert origin.accepted == 3
    # closed by the origin, never handed to the next request
    assert [q.index for q in origin.requests] == [1, 1, 1]


def test_http10_origin_not_reused(make_origin, weir):
    def handler(req, w):
        w.send_raw(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nold")

    origin = make_origin(handler=handler)
    port = start(weir, origin)
    for _ in range(2):
        r = get(port, "/old")
        assert r.status == 200 and r.body == b"old"
    assert len(seen_by(origin, 2)) == 2
    assert origin.accepted == 2


def test_origin_sends_more_than_its_length(make_origin, weir):
    def handler(req, w):
        w.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
                   b"hello, and more")

    origin = make_origin(handler=handler)
    port = start(weir, origin)
    with Client(port) as c:
        r = c.request("GET", "/more")
        assert r.status == 200 and r.body == b"hello"
        r = c.request("GET", "/more")
        assert r.status == 200 and r.body == b"hello"
    # the extra bytes make the connection unusable
    assert origin.accepted == 2


def test_upstream_keepalive_requests_and_off(make_origin, weir):
    a = make_origin(name="a")
    b = make_origin(name="b")
    port = start(weir, "u",
                 upstream=(upstream("u", a.addr,
                                    extra="        keepalive_requests 3;\n")
                           + upstream("off", b.addr,
                                      extra="        keepalive 0;\n")),
                 server="        location /off/ { proxy_pass http://off; }\n")
    with Client(port) as c:
        for _ in range(7):
            assert c.request("GET", "/tiny").status == 200
        for _ in range(3):
            assert c.request("GET", "/off/x").status == 200
    assert a.accepted == 3
    assert [q.index for q in a.requests] == [1, 2, 3, 1, 2, 3, 1]
    assert b.accepted == 3


# ---- failover and passive health

def upstream(name, *servers, extra=""):
    lines = "".join("        server %s;\n" % s for s in servers)
    return "    upstream %s {\n%s%s    }\n" % (name, lines, extra)


def test_failover_to_second_when_first_refused(make_origin, weir):
    b = make_origin(name="b")
    port = start(weir, "u", upstream=upstream("u", dead_addr(), b.addr))
    for _ in range(6):
        r = get(port, "/x")
        assert r.status == 200 and r.header("x-origin") == "b"
    refused = r"connect\(\) .*failed \(111: Connection refused\)"
    wait_log_line(weir, refused + r",? while connecting to upstream")
    # max_fails=1 fail_timeout=10s by default: the dead peer was tried
    # once, not by every request
    assert len(log_lines(weir, refused)) == 1
    first = access_lines(weir, 6)[0]
    assert first[0] == "200"
    # nginx's $upstream_status: 502 for the attempt that failed
    assert first[1] == "502, 200", first
    assert first[2].endswith(", " + b.addr), first


def test_max_fails_and_fail_timeout(make_origin, weir):
    def fail(req, w):
        w.close()

    a = make_origin(name="a", handler=fail)
    b = make_origin(name="b")
    port = start(weir, "u", upstream=upstream(
        "u", "%s max_fails=1 fail_timeout=1s" % a.addr, b.addr))
    # until a was tried once (round robin begins with it)
    for _ in range(2):
        r = get(port, "/x")
        assert r.status == 200 and r.header("x-origin") == "b"
        if a.accepted:
            break
    assert a.accepted == 1
    failed_at = time.monotonic()
    wait_log_line(weir, r"upstream prematurely closed connection,? while "
                  r"reading response header from upstream")
    wait_log_line(weir, r"upstream server temporarily disabled")
    # within fail_timeout a is not tried again; after it (fail_timeout
    # counts in whole seconds, as nginx's does: up to 2s here) one
    # request probes it again
    probed_at = None
    while time.monotonic() - failed_at < 4:
        r = get(port, "/x")
        assert r.status == 200 and r.header("x-origin") == "b"
        if a.accepted > 1:
            probed_at = time.monotonic() - failed_at
            break
        time.sleep(0.02)
    assert probed_at is not None, "a was not tried again after 4s"
    assert probed_at > 0.9
    assert a.accepted == 2


def test_backup_only_when_primaries_down(make_origin, weir):
    a = make_origin(name="a")
    bk = make_origin(name="bk")
    bk2 = make_origin(name="bk2")
    port = start(weir, "u", upstream=(
        upstream("u", a.addr, "%s backup" % bk.addr)
        + upstream("d", dead_addr(), "%s backup" % bk2.addr)),
        server="        location /d/ { proxy_pass http://d; }\n")
    for _ in range(5):
        r = get(port, "/x")
        assert r.status == 200 and r.header("x-origin") == "a"
    assert bk.accepted == 0
    for _ in range(3):
        r = get(port, "/d/x")
        assert r.status == 200 and r.header("x-origin") == "bk2"


def test_down_server_never_used(make_origin, weir):
    a = make_origin(name="a")
    b = make_origin(name="b")
    port = start(weir, "u", upstream=upstream("u", "%s down" % a.addr,
                                              b.addr))
    for _ in range(6):
        r = get(port, "/x")
        assert r.status == 200 and r.header("x-origin") == "b"
    assert a.accepted == 0


def status_origin(make_origin, name, status):
    def handler(req, w):
        w.read_body()
        w.respond(status, [], b"%s says %d\n" % (name.encode(), status))

    return make_origin(name=name, handler=handler)


@pytest.mark.parametrize("status", [500, 502])
def test_next_upstream_on_status(make_origin, weir, status, proto):
    a = status_origin(make_origin, "a", status)
    b = make_origin(name="b")
    port = start(weir, "u", upstream=upstream("u", a.addr, b.addr),
                 location=("            proxy_next_upstream error timeout "
                           "http_%d;\n" % status))
    for _ in range(4):
        r = get(port, "/x")
        assert r.status == 200 and r.header("x-origin") == "b"
    assert len(a.requests) >= 1


def test_next_upstream_off_relays_the_error(make_origin, weir):
    a = status_origin(make_origin, "a", 500)
    b = make_origin(name="b")
    port = start(weir, "u", upstream=upstream("u", a.addr, b.addr),
                 location="            proxy_next_upstream off;\n")
    statuses = [get(port, "/x").status for _ in range(4)]
    assert statuses[0] == 500
    assert statuses.count(500) == len(a.requests)
    assert len(b.requests) == statuses.count(200)


def test_next_upstream_default_does_not_retry_502(make_origin, weir):
    a = status_origin(make_origin, "a", 502)
    b = make_origin(name="b")
    port = start(weir, "u", upstream=upstream("u", a.addr, b.addr))
    r = get(port, "/x")
    assert r.status == 502 and r.body == b"a says 502\n"
    assert len(b.requests) == 0


def test_non_idempotent_not_retried_after_sent(make_origin, weir, proto):
    a = make_origin(name="a")                     # /close-mid-head
    b = make_origin(name="b", handler=lambda req, w: (
        w.read_body(), w.respond(200, [], b"b answered\n")))
    a2 = make_origin(name="a2")
    b2 = make_origin(name="b2", handler=lambda req, w: (
        w.read_body(), w.respond(200, [], b"b2 answered\n")))
    port = start(weir, "u",
                 upstream=(upstream("u", a.addr, b.addr)
                           + upstream("n", a2.addr, b2.addr)),
                 server=("        location /n/ { proxy_pass http://n/;\n"
                         "            proxy_next_upstream error timeout "
                         "non_idempotent; }\n"))
    r = get(port, "/close-mid-head", method="POST", body=b"pay once")
    assert r.status == 502
    assert len(a.requests) == 1 and a.requests[0].body == b"pay once"
    assert b.requests == []
    wait_log_line(weir, r"upstream prematurely closed connection,? while "
                  r"reading response header from upstream")
    # a GET is retried
    r = get(port, "/close-mid-head")
    assert r.status == 200 and r.body == b"b answered\n"
    # with non_idempotent, so is a POST
    r = get(port, "/n/close-mid-head", method="POST", body=b"pay twice")
    assert r.status == 200 and r.body == b"b2 answered\n"
    assert [q.body for q in b2.requests] == [b"pay twice"]


def test_next_upstream_tries(make_origin, weir):
    b = make_origin(name="b")
    b2 = make_origin(name="b2")
    port = start(weir, "u",
                 upstream=(upstream("u", dead_addr(), dead_addr(), b.addr)
                           + upstream("t", dead_addr(), dead_addr(),
                                      b2.addr)),
                 location="            proxy_next_upstream_tries 1;\n",
                 server=("        location /t/ { proxy_pass http://t; }\n"))
    assert get(port, "/x").status == 502
    # without a limit every peer is tried
    r = get(port, "/t/x")
    assert r.status == 200 and r.header("x-origin") == "b2"


def test_next_upstream_timeout(make_origin, weir):
    def hang(req, w):
        w.read_body()
        w.wait_peer_close(timeout=DEADLINE)
        w.close()

    a = make_origin(name="a", handler=hang)
    b = make_origin(name="b")
    a2 = make_origin(name="a2", handler=hang)
    b2 = make_origin(name="b2")
    port = start(weir, "u",
                 upstream=(upstream("u", a.addr, b.addr)
                           + upstream("v", a2.addr, b2.addr)),
                 location=("            proxy_read_timeout 400ms;\n"
                           "            proxy_next_upstream_timeout 200ms;\n"),
                 server=("        location /v/ { proxy_pass http://v;\n"
                         "            proxy_read_timeout 400ms; }\n"))
    # the first attempt timed out after the retry deadline: no retry
    r = get(port, "/x")
    assert r.status == 504
    assert b.requests == []
    # without the deadline the timeout is retried on the next peer
    r = get(port, "/v/x")
    assert r.status == 200 and r.header("x-origin") == "b2"
    assert len(a2.requests) == 1


# ---- timeouts

def test_connect_timeout(weir, blackhole):
    port = start(weir, blackhole,
                 location="            proxy_connect_timeout 300ms;\n")
    t0 = time.monotonic()
    r = get(port, "/ct")
    assert r.status == 504
    # the 300ms, not the 60s default (a hang guard, not a speed check)
    assert time.monotonic() - t0 < DEADLINE
    line = wait_log_line(weir, r"upstream timed out .*while connecting to "
                         r"upstream")
    assert 'upstream: "http://%s/ct"' % blackhole.addr in line


def test_read_timeout_head(weir, origin):
    port = start(weir, origin,
                 location="            proxy_read_timeout 300ms;\n")
    t0 = time.monotonic()
    r = get(port, "/delay-head/5000")
    assert r.status == 504
    # before the origin's 5 s: the 300ms timeout, not the origin, ended it
    assert time.monotonic() - t0 < 5
    line = wait_log_line(weir, r"upstream timed out .*while reading "
                         r"response header from upstream")
    assert "/delay-head/5000" in line
    # the timed-out connection is not reused
    assert get(port, "/tiny").status == 200
    assert origin.requests[1].conn_id != origin.requests[0].conn_id


def test_read_timeout_mid_body(weir, origin):
    port = start(weir, origin,
                 location="            proxy_read_timeout 300ms;\n")
    with Client(port) as c:
        r = c.request("GET", "/delay-body/5000")
        assert r.status == 200
        assert r.header("content-length") == "20"
        assert not r.complete
        assert r.body == body_of(20)[:10]
        assert c.eof
    wait_log_line(weir, r"upstream timed out .*while reading upstream")


def test_send_timeout(make_origin, weir):
    origin = make_origin(rcvbuf=4096)
    port = start(weir, origin, http="    client_max_body_size 16m;\n",
                 location="            proxy_send_timeout 300ms;\n")
    body = b"s" * (8 << 20)
    t0 = time.monotonic()
    with Client(port, timeout=DEADLINE) as c:
        r = c.request("POST", "/no-read", body=body)
    assert r.status in (504, 502)
    assert time.monotonic() - t0 < DEADLINE
    wait_log_line(weir, r"upstream timed out .*while sending request to "
                  r"upstream")


# ---- invalid origin responses: 502

BAD_RESPONSES = [
    ("/garbage", r"upstream sent (no valid HTTP/1\.\S+ header|invalid "
                 r"header).*while reading response header from upstream"),
    ("/close-mid-head", r"upstream prematurely closed connection,? while "
                        r"reading response header from upstream"),
    ("/cl-te", r"upstream sent .*while reading response header from "
               r"upstream"),
    ("/bad-cl", r"upstream sent .*while reading response header from "
                r"upstream"),
    ("/big-head/4000", r"upstream sent too big header,? while reading "
                       r"response header from upstream"),
]


@pytest.mark.parametrize("path,pattern", BAD_RESPONSES,
                         ids=[p for p, _ in BAD_RESPONSES])
def test_invalid_response_is_502(weir, origin, path, pattern):
    port = start(weir, origin,
                 location="            proxy_buffer_size 1k;\n")
    with Client(port) as c:
        r = c.request("GET", path)
        assert r.status == 502
    line = wait_log_line(weir, pattern)
    assert 'upstream: "http://%s%s"' % (origin.addr, path) in line
    assert "[error]" in line
    # the origin connection is not reused after an invalid response
    assert get(port, "/tiny").status == 200
    first, second = seen_by(origin, 2)
    assert second.conn_id != first.conn_id
    assert get(port, "/tiny").status == 200
    assert origin.requests[2].conn_id == second.conn_id


def test_refused_is_502(weir):
    dead = dead_addr()
    port = start(weir, dead)
    r = get(port, "/refused")
    assert r.status == 502
    line = wait_log_line(weir, r"connect\(\) .*failed \(111: Connection "
                         r"refused\),? while connecting to upstream")
    assert 'upstream: "http://%s/refused"' % dead in line


def test_close_mid_body_ends_response_short(weir, origin):
    port = start(weir, origin)
    with Client(port) as c:
        r = c.request("GET", "/close-mid-body")
        assert r.status == 200
        assert not r.complete
        assert r.body == body_of(10)
        assert c.eof
    wait_log_line(weir, r"upstream prematurely closed connection,? while "
                  r"reading upstream")


def test_early_response_relayed(weir, origin):
    port = start(weir, origin, http="    client_max_body_size 16m;\n",
                 location="            proxy_request_buffering off;\n")
    # the origin answers before it reads the body; the client sends the
    # body from a thread while the test reads the answer
    body = b"e" * (4 << 20)
    with Client(port) as c:
        def send():
            try:
                c.send(b"POST /early HTTP/1.1\r\nHost: client.example\r\n"
                       b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            except OSError:
                pass

        t = threading.Thread(target=send, daemon=True)
        t.start()
        try:
            r = c.response("POST")
            assert r.status == 200 and r.body == b"early\n"
        finally:
            c.s.shutdown(socket.SHUT_RDWR)
            t.join(DEADLINE)
        assert not t.is_alive()
    assert seen_by(origin)[0].path == "/early"


# ---- request smuggling

SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: client.example\r\n\r\n"

BAD_REQUESTS = [
    ("cl-and-te",
     b"POST /echo HTTP/1.1\r\nHost: client.example\r\nContent-Length: %d\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" % (5 + len(SMUGGLED))
     + SMUGGLED),
    ("bad-chunk-size",
     b"POST /echo HTTP/1.1\r\nHost: client.example\r\n"
     b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"
     + SMUGGLED),
    ("bare-lf-chunks",
     b"POST /echo HTTP/1.1\r\nHost: client.example\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n" + SMUGGLED),
    ("chunked-identity",
     b"POST /echo HTTP/1.1\r\nHost: client.example\r\n"
     b"Transfer-Encoding: chunked, identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
     + SMUGGLED),
    ("two-content-lengths",
     b"POST /echo HTTP/1.1\r\nHost: client.example\r\nContent-Length: 5\r\n"
     b"Content-Length: 5\r\n\r\nhello" + SMUGGLED),
]


@pytest.mark.parametrize("data", [d for _, d in BAD_REQUESTS],
                         ids=[n for n, _ in BAD_REQUESTS])
def test_smuggling_rejected(weir, origin, data):
    port = start(weir, origin)
    with Client(port) as c:
        c.send(data)
        r = c.response()
        assert r.status == 400
        assert c.closed()
    # a request after it: when the origin has it, it has everything
    # weir would have sent before
    assert get(port, "/barrier").status == 200
    reqs = [q for q in origin.requests if q.path != "/barrier"]
    assert len(reqs) <= 1
    assert [q for q in origin.requests if q.path == "/smuggled"] == []


@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_request_in_body_stays_body(weir, origin, chunked):
    port = start(weir, origin)
    with Client(port) as c:
        r = c.request("POST", "/echo", body=SMUGGLED, chunked=chunked)
        assert r.status == 200 and r.body == SMUGGLED
        assert c.request("GET", "/barrier").status == 200
    paths = [q.path for q in origin.requests]
    assert paths == ["/echo", "/barrier"]
    assert origin.requests[0].body == SMUGGLED


# ---- client abort

def test_client_abort_while_waiting_for_head(weir, origin):
    port = start(weir, origin)
    c = Client(port)
    try:
        c.send(b"GET /hang HTTP/1.1\r\nHost: client.example\r\n\r\n")
        seen_by(origin)
    finally:
        c.close()
    # weir closes the origin connection (the origin sees EOF)
    origin.wait_closed(1)
    assert origin.peer_closed(1)
    line = access_lines(weir, 1)[0]
    assert line[0] == "499"
    assert line[4] == "GET /hang HTTP/1.1"
