"""Documented HTTP behaviour that had no test beyond `weir -t` (issue 13),
security first: workers dropping root (`user`), `client_max_body_size`
on a streamed body, repeated single-valued headers, headers with
underscores; then `max_ranges`, `proxy_ignore_client_abort`,
`lingering_close`, `if_modified_since`, `etag off` and the upstream
`keepalive_time`.

Each test checks from outside what the documentation says
(docs/directives.md, docs/http/core.md, http1.md, bodies.md,
modules.md, proxy.md, upstream.md), with raw clients and the
misbehaving origin of origin.py."""

import calendar
import email.utils
import grp
import json
import os
import pwd
import re
import select
import socket
import threading
import time

import pytest

import origin as origin_lib
from weirtest import DEADLINE, connect, wait_for

from test_proxy import Client, start as start_proxy


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


# ---------------------------------------------------------------- user

def proc_ids(pid):
    """{"Uid": [real, effective, saved, fs], "Gid": [...], "Groups":
    [...]} of a process, from /proc/PID/status."""
    ids = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Uid", "Gid", "Groups"):
                ids[key] = [int(v) for v in value.split()]
    return ids


@pytest.mark.skipif(os.geteuid() != 0,
                    reason="workers drop root only when weir is started "
                           "as root")
@pytest.mark.parametrize("directive,user,group", [
    ("", "nobody", "nogroup"),
    ("user nobody nogroup;\n", "nobody", "nogroup"),
    ("user daemon;\n", "daemon", None),
])
def test_workers_drop_root(weir, directive, user, group):
    """directives.md: started as root, the master keeps root and every
    worker runs as the configured user and group (the user's primary
    group when none is given; nobody/nogroup without the directive),
    real, effective and saved ids alike, with that user's supplementary
    groups and none of root's. A file only root may read is then not
    served: 403, the EACCES logged."""
    pw = pwd.getpwnam(user)
    if group == "nogroup" and not directive:
        try:
            grp.getgrnam(group)
        except KeyError:
            group = "nobody"        # the documented fallback
    gid = grp.getgrnam(group).gr_gid if group else pw.pw_gid
    port, html = site(weir, "        location / { }\n",
                      main=directive + "worker_processes 2;\n")
    secret = os.path.join(html, "secret.txt")
    with open(secret, "w") as f:
        f.write("root only\n")
    os.chmod(secret, 0o600)

    master = proc_ids(weir.master)
    assert master["Uid"] == [0, 0, 0, 0], master
    assert master["Gid"] == [0, 0, 0, 0], master
    workers = weir.workers()
    assert len(workers) == 2
    groups = sorted(set(os.getgrouplist(user, gid)))
    for pid in workers:
        # a worker forked a moment ago may not have dropped root yet
        # (seen under ASan): its ids once they are not root's
        ids = wait_for(lambda: (lambda i: i if i["Uid"] != [0, 0, 0, 0]
                                else None)(proc_ids(pid)),
                       what="worker %d to leave root's ids" % pid)
        assert ids["Uid"] == [pw.pw_uid] * 4, (pid, ids)
        assert ids["Gid"] == [gid] * 4, (pid, ids)
        assert sorted(set(ids["Groups"])) == groups, (pid, ids)
        assert 0 not in ids["Groups"], (pid, ids)

    r = one(port)
    assert (r.status, r.body) == (200, FILE), r
    r = one(port, "/secret.txt")
    assert r.status == 403, r
    assert b"root only" not in r.body
    weir.wait_log(r"\[error\].*open\(\) \"%s\" failed \(13: Permission "
                  r"denied\)" % re.escape(secret))


# ---------------------------------------------------------------- bodies

class ChunkedCounter:
    """Counts the data bytes of a chunked stream fed piece by piece."""

    def __init__(self):
        self.buf = b""
        self.state = "size"
        self.left = 0
        self.data = 0
        self.done = False

    def feed(self, data):
        self.buf += data
        while not self.done:
            if self.state == "size":
                i = self.buf.find(b"\r\n")
                if i < 0:
                    return
                size = int(self.buf[:i].split(b";")[0], 16)
                self.buf = self.buf[i + 2:]
                self.state, self.left = ("data", size) if size else \
                    ("trailer", 0)
            elif self.state == "data":
                n = min(self.left, len(self.buf))
                if n == 0:
                    return
                self.data += n
                self.left -= n
                self.buf = self.buf[n:]
                if self.left == 0:
                    self.state = "crlf"
            elif self.state == "crlf":
                if len(self.buf) < 2:
                    return
                self.buf = self.buf[2:]
                self.state = "size"
            else:
                i = self.buf.find(b"\r\n")
                if i < 0:
                    return
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                if line == b"":
                    self.done = True


def counting_handler(req, w):
    """Reads the request body as it comes, keeping in req.seen how many
    body bytes arrived so far; answers 200 once the body is whole."""
    req.seen = 0
    cl = req.header("content-length")
    counter = ChunkedCounter() if cl is None else None
    data, w.conn.buf = w.conn.buf, b""
    while not w.origin._stopping.is_set():
        if counter is not None:
            counter.feed(data)
            req.seen = counter.data
            whole = counter.done
        else:
            req.seen += len(data)
            whole = req.seen >= int(cl)
        if whole:
            break
        try:
            data = w.conn.recv_some(0.05) or b""
        except origin_lib._Closed:
            req.complete = True
            return
    req.complete = True
    w.respond(200, [("X-Seen", str(req.seen))], b"seen %d\n" % req.seen)


CHUNKED_HEAD = (b"POST /up HTTP/1.1\r\nHost: client.example\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


@pytest.mark.parametrize("buffering", ["on", "off"])
def test_client_max_body_size_on_a_streamed_chunked_body(weir,
                                                         make_origin,
                                                         buffering):
    """bodies.md: a chunked body whose running total exceeds
    client_max_body_size gets 413 as soon as a chunk size line says so,
    before that chunk's data is read. With proxy_request_buffering off
    the body is on its way to the origin already: the origin never
    sees more than the limit and its request is abandoned; with
    buffering the origin sees nothing."""
    o = make_origin(handler=counting_handler)
    port = start_proxy(weir, o,
                       location="client_max_body_size 1000;\n"
                                "proxy_request_buffering %s;\n"
                                % buffering)
    with Client(port) as c:
        c.send(CHUNKED_HEAD + chunk(b"a" * 600))
        if buffering == "off":
            wait_for(lambda: o.requests and o.requests[0].seen >= 600,
                     what="the first chunk at the origin")
        c.send(chunk(b"b" * 600))
        r = c.response()
        assert r.status == 413, r
        assert r.header("connection") == "close", r
        assert c.closed(timeout=DEADLINE)
    weir.wait_log(r"client intended to send too large chunked body: "
                  r"600\+600 bytes")
    if buffering == "off":
        o.wait_closed(1)
        assert len(o.requests) == 1
        assert o.requests[0].seen == 600, o.requests[0].seen
        assert o.peer_closed(1)
    else:
        assert o.accepted == 0, o.requests


@pytest.mark.parametrize("buffering", ["on", "off"])
def test_client_max_body_size_streamed_at_the_limit(weir, make_origin,
                                                    buffering):
    """A chunked body of exactly client_max_body_size passes whole."""
    o = make_origin(handler=counting_handler)
    port = start_proxy(weir, o,
                       location="client_max_body_size 1000;\n"
                                "proxy_request_buffering %s;\n"
                                % buffering)
    with Client(port) as c:
        c.send(CHUNKED_HEAD + chunk(b"a" * 600))
        c.send(chunk(b"b" * 400) + b"0\r\n\r\n")
        r = c.response()
        assert (r.status, r.body) == (200, b"seen 1000\n"), r
    assert o.requests[0].seen == 1000


# ---------------------------------------------------------------- headers

DATE = "Wed, 03 Jan 2024 12:00:00 GMT"

SINGLE = [
    ("Authorization", "Basic dXNlcjpwYXNz", "Basic b3RoZXI6cGFzcw=="),
    ("authorization", "Basic dXNlcjpwYXNz", "Basic dXNlcjpwYXNz"),
    ("Range", "bytes=0-1", "bytes=5-6"),
    ("If-Modified-Since", DATE, DATE),
    ("If-Unmodified-Since", DATE, "Thu, 04 Jan 2024 12:00:00 GMT"),
    ("If-Range", DATE, '"tag"'),
    ("Expect", "100-continue", "100-continue"),
]


@pytest.mark.parametrize("name,first,second", SINGLE,
                         ids=["%s-%d" % (s[0], i)
                              for i, s in enumerate(SINGLE)])
def test_repeated_single_valued_header_is_400(weir, name, first, second):
    """http1.md: a repeated Authorization, If-Modified-Since,
    If-Unmodified-Since, If-Range, Range or Expect (names compare
    without case) gets 400 and the connection is closed; the same
    header once is served."""
    port, _ = site(weir, "        location / { }\n")
    with Client(port) as c:
        r = c.request("GET", "/a.txt", headers=[(name.title(), first),
                                                (name, second)])
        assert r.status == 400, r
        assert r.header("connection") == "close", r
        assert c.closed(timeout=DEADLINE)
    weir.wait_log(r"\[info\].*client sent duplicate header line: "
                  r"\"%s: %s\", previous value: \"%s: %s\""
                  % (re.escape(name), re.escape(second),
                     re.escape(name.title()), re.escape(first)))
    r = one(port, headers=[(name.title(), first)])
    assert r.status in (200, 206, 304, 412), r


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


def underscore_server(port, origin, extra=""):
    return ("    server {\n"
            "        listen 127.0.0.1:%d;\n"
            "%s"
            "        location / { proxy_pass http://%s; }\n"
            "    }\n" % (port, extra, origin.addr))


@pytest.mark.parametrize("extra,passed", [
    ("", False),
    ("        underscores_in_headers on;\n", True),
    ("        ignore_invalid_headers off;\n", True),
])
def test_headers_with_underscores(weir, origin, extra, passed):
    """http1.md: a header name with an underscore is dropped (logged at
    info) unless underscores_in_headers is on; with
    ignore_invalid_headers off it is kept as an ordinary header. So by
    default X_User never reaches the origin to pass for X-User with
    back ends that map both to one name."""
    port = weir.port()
    weir.conf("http {\n%s}\n" % underscore_server(port, origin, extra))
    weir.start(check_ports=False)
    up(port)
    r = one(port, "/headers", headers=[("X_User", "admin"),
                                       ("X-User", "alice")])
    assert r.status == 200, r
    seen = [k for k, _ in json.loads(r.body)["headers"]]
    req = origin.requests[0]
    assert req.header_all("X-User") == ["alice"]
    if passed:
        assert req.header_all("X_User") == ["admin"], seen
    else:
        assert req.header("X_User") is None, seen
        weir.wait_log(r"\[info\].*client sent invalid header line: "
                      r"\"X_User\"")


# ---------------------------------------------------------------- ranges

def test_max_ranges_above_zero(weir):
    """core.md/modules.md: max_ranges N caps the ranges of a request; a
    request with more gets the whole body (200), one within the limit
    its ranges (206)."""
    port, html = site(weir, "        location / { max_ranges 2; }\n")
    r = one(port, headers=[("Range", "bytes=0-0,2-2,4-4")])
    assert (r.status, r.body) == (200, FILE), r
    assert r.header("content-range") is None

    r = one(port)
    assert (r.status, r.header("accept-ranges")) == (200, "bytes"), r

    r = one(port, headers=[("Range", "bytes=0-0,2-2")])
    assert r.status == 206, r
    assert r.header("content-type").startswith("multipart/byteranges")
    assert b"Content-Range: bytes 0-0/1000" in r.body
    assert b"Content-Range: bytes 2-2/1000" in r.body

    r = one(port, headers=[("Range", "bytes=10-19")])
    assert (r.status, r.body) == (206, FILE[10:20]), r
    assert r.header("content-range") == "bytes 10-19/1000"


# --------------------------------------------------------- client abort

ABORT_LOG = ("    log_format abort '$uri|$upstream_status|"
             "$upstream_response_length';\n"
             "    access_log logs/abort.log abort;\n")


def test_proxy_ignore_client_abort(weir, make_origin):
    """proxy.md: with proxy_ignore_client_abort on, a client that closes
    does not end the request to the origin; with off (the default) the
    origin connection is closed. Both clients go away together; once
    weir has closed the origin connection of /off/ it has seen the
    other client go too, and only then does the origin answer /on/."""
    release = threading.Event()
    early = {}

    def handler(req, w):
        # wait for the release, noting whether weir closed first
        early[req.path] = False
        deadline = time.monotonic() + DEADLINE
        while not release.is_set() and time.monotonic() < deadline:
            try:
                w.conn.recv_some(0.02)
            except origin_lib._Closed:
                early[req.path] = True
                req.complete = True
                return
        w.respond(200, [], origin_lib.body_of(64))

    o = make_origin(handler=handler)
    port = start_proxy(
        weir, http=ABORT_LOG,
        server="        location /on/ {\n"
               "            proxy_pass http://%s;\n"
               "            proxy_ignore_client_abort on;\n"
               "        }\n"
               "        location /off/ {\n"
               "            proxy_pass http://%s;\n"
               "        }\n" % (o.addr, o.addr))

    on, off = Client(port), Client(port)
    try:
        on.send(b"GET /on/x HTTP/1.1\r\nHost: client.example\r\n\r\n")
        o.wait_requests(1)
        off.send(b"GET /off/x HTTP/1.1\r\nHost: client.example\r\n\r\n")
        o.wait_requests(2)
    finally:
        on.close()
        off.close()

    wait_for(lambda: early.get("/off/x"), what="weir to close /off/'s "
             "origin connection")
    assert early.get("/on/x") is not True, early
    release.set()

    path = weir.path("logs", "abort.log")

    def logged():
        with open(path) as f:
            got = [line.rstrip("\n").split("|") for line in f]
        return got if len(got) >= 2 else None

    lines = {f[0]: f[1:] for f in wait_for(logged, what="2 log lines")}
    assert lines["/on/x"] == ["200", "64"], lines
    assert lines["/off/x"][1] in ("0", "-"), lines
    assert early["/on/x"] is False, early


# ---------------------------------------------------------------- lingering

def _hexport(field):
    return int(field.rsplit(":", 1)[1], 16)


def weir_end(ports):
    """The inode of weir's end of a client connection (ports: the
    client's (local, remote) ports) from /proc/net/tcp: 0 once weir
    closed it (an orphan in FIN_WAIT2 or TIME_WAIT, or gone), nonzero
    while weir still holds the socket (lingering)."""
    local, remote = ports
    with open("/proc/net/tcp") as f:
        for line in f.read().splitlines()[1:]:
            fields = line.split()
            if (_hexport(fields[1]) == remote
                    and _hexport(fields[2]) == local):
                return int(fields[9])
    return 0


def held(ports):
    return weir_end(ports) != 0


def read_to_eof(s):
    """Reads until the server's FIN (bounded); returns the bytes."""
    data = b""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        r, _, _ = select.select([s], [], [], 0.05)
        if not r:
            continue
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
    raise AssertionError("no EOF from weir; got %r" % data[:300])


def reset_seen(s):
    """Sends a few bytes at a time until the kernel reports the reset
    the peer answered them with (bounded). True when it did."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        try:
            s.send(b"x" * 100)
        except (BrokenPipeError, ConnectionResetError):
            return True
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            return True
        select.select([], [], [], 0.02)
    return False


LINGER_SERVER = ("        location / { }\n"
                 "        location /limited {\n"
                 "            client_max_body_size 10;\n"
                 "            return 200;\n"
                 "        }\n")

TOO_LARGE = (b"POST /limited HTTP/1.1\r\nHost: client.example\r\n"
             b"Content-Length: 100000\r\n\r\n" + b"y" * 1000)

GET_CLOSE = (b"GET /a.txt HTTP/1.1\r\nHost: client.example\r\n"
             b"Connection: close\r\n\r\n")


def linger_conf(weir, mode, extra=""):
    line = "        lingering_close %s;\n" % mode if mode else ""
    port, _ = site(weir, line + extra + LINGER_SERVER)
    return port


def linger_client(port, request, status):
    """Sends request, reads the response (status expected) to weir's
    FIN; returns (socket, ports)."""
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    ports = (s.getsockname()[1], port)
    s.sendall(request)
    data = read_to_eof(s)
    assert data.startswith(b"HTTP/1.1 %d " % status), data[:300]
    return s, ports


def drained_cleanly(s, ports):
    """The client goes on sending, then closes its side: weir, which
    held the connection, reads it all and closes without a reset."""
    for _ in range(20):
        s.sendall(b"z" * 1000)
    s.shutdown(socket.SHUT_WR)
    wait_for(lambda: not held(ports), what="weir to close after the "
             "client's EOF")
    assert s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0


@pytest.mark.parametrize("mode", [None, "on", "always"])
def test_lingering_close_after_an_error_with_unread_body(weir, mode):
    """http1.md: on (the default) or always, after a 413 that left the
    body unread weir shuts its side down and reads what the client
    still sends until the client closes: the response arrives whole and
    the client's late bytes meet no reset."""
    port = linger_conf(weir, mode)
    s, ports = linger_client(port, TOO_LARGE, 413)
    try:
        assert held(ports), "weir closed at once instead of lingering"
        drained_cleanly(s, ports)
    finally:
        s.close()


def test_lingering_close_off_closes_at_once(weir):
    """lingering_close off: weir closes right after the 413 although
    the body is unread, and the client's further bytes are answered
    with a reset."""
    port = linger_conf(weir, "off")
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    ports = (s.getsockname()[1], port)
    try:
        s.sendall(TOO_LARGE)
        data = b""
        try:
            data = read_to_eof(s)
        except ConnectionResetError:
            pass
        assert data == b"" or data.startswith(b"HTTP/1.1 413 "), data
        assert not held(ports)
        assert reset_seen(s), "no reset for bytes sent to a closed socket"
    finally:
        s.close()


@pytest.mark.parametrize("mode,lingers", [("on", False), ("always", True)])
def test_lingering_close_always(weir, mode, lingers):
    """always lingers after every response that closes, on only when the
    client may still be sending: a GET with Connection: close leaves
    nothing unread, so `on` closes at once (late bytes get a reset) and
    `always` drains them."""
    port = linger_conf(weir, mode)
    s, ports = linger_client(port, GET_CLOSE, 200)
    try:
        if lingers:
            assert held(ports), "weir closed at once with always"
            drained_cleanly(s, ports)
        else:
            assert not held(ports), "weir lingers with on and nothing " \
                "left to read"
            assert reset_seen(s)
    finally:
        s.close()


def test_lingering_timeout(weir):
    """lingering_timeout: a client that sends nothing more is waited for
    that long, then weir closes (not before)."""
    port = linger_conf(weir, None, "        lingering_timeout 2s;\n"
                                   "        lingering_time 30s;\n")
    s, ports = linger_client(port, TOO_LARGE, 413)
    try:
        t0 = time.monotonic()
        assert held(ports)
        wait_for(lambda: not held(ports), timeout=DEADLINE + 2,
                 what="the lingering timeout")
        waited = time.monotonic() - t0
        assert waited >= 1.5, "closed after %.2fs of 2s" % waited
        assert s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
    finally:
        s.close()


def test_lingering_time(weir):
    """lingering_time: a client that keeps sending (each pause well
    under lingering_timeout) is read for that long in all, then weir
    closes anyway. weir counts it in whole seconds, as nginx: 3s is
    more than 2s."""
    port = linger_conf(weir, None, "        lingering_timeout 2s;\n"
                                   "        lingering_time 3s;\n")
    s, ports = linger_client(port, TOO_LARGE, 413)
    try:
        t0 = time.monotonic()
        deadline = t0 + DEADLINE + 3
        while held(ports) and time.monotonic() < deadline:
            try:
                s.send(b"k" * 100)
            except (BrokenPipeError, ConnectionResetError):
                break
            select.select([], [], [], 0.2)
        waited = time.monotonic() - t0
        assert not held(ports), "still lingering after %.1fs" % waited
        assert waited >= 1.9, "closed after %.2fs of 3s" % waited
    finally:
        s.close()


# --------------------------------------------------------- conditionals

MTIME = calendar.timegm((2024, 1, 3, 12, 0, 0))


def conditional_site(weir):
    """/a.txt with etag on; /exact/, /before/, /off/ and /noetag/ serve
    the same file with if_modified_since exact/before/off and etag off;
    its mtime is MTIME."""
    html = weir.path("html")
    port, _ = site(weir,
                      "        location / { }\n"
                      "        location /exact/ {\n"
                      "            alias %s/;\n"
                      "            if_modified_since exact;\n"
                      "        }\n"
                      "        location /before/ {\n"
                      "            alias %s/;\n"
                      "            if_modified_since before;\n"
                      "        }\n"
                      "        location /off/ {\n"
                      "            alias %s/;\n"
                      "            if_modified_since off;\n"
                      "        }\n"
                      "        location /noetag/ {\n"
                      "            alias %s/;\n"
                      "            etag off;\n"
                      "        }\n" % ((html,) * 4))
    os.utime(os.path.join(html, "a.txt"), (MTIME, MTIME))
    return port


@pytest.mark.parametrize("when,exact,before,default", [
    (MTIME, 304, 304, 304),
    (MTIME + 3600, 200, 304, 200),
    (MTIME - 3600, 200, 200, 200),
])
def test_if_modified_since(weir, when, exact, before, default):
    """core.md: if_modified_since compares If-Modified-Since with the
    file's mtime: exact (the default) needs the same time, before takes
    any time not earlier than the mtime, off never answers 304."""
    port = conditional_site(weir)
    ims = [("If-Modified-Since", http_date(when))]
    r = one(port, "/a.txt")
    assert r.header("last-modified") == http_date(MTIME)
    for path, want in (("/a.txt", default), ("/exact/a.txt", exact),
                       ("/before/a.txt", before), ("/off/a.txt", 200)):
        r = one(port, path, ims)
        assert r.status == want, (path, http_date(when), r)
        assert r.body == (b"" if want == 304 else FILE), (path, r)


def test_etag_off(weir):
    """core.md/modules.md: with etag off static files have no ETag, and
    If-None-Match cannot match (only *, which needs no tag); the dates
    still work."""
    port = conditional_site(weir)
    r = one(port, "/a.txt")
    etag, lm = r.header("etag"), r.header("last-modified")
    assert etag == '"%x-%x"' % (MTIME, len(FILE)), etag

    r = one(port, "/noetag/a.txt")
    assert (r.status, r.body) == (200, FILE), r
    assert r.header("etag") is None, r
    assert r.header("last-modified") == lm

    for inm in (etag, "W/" + etag):
        r = one(port, "/noetag/a.txt", [("If-None-Match", inm)])
        assert (r.status, r.body) == (200, FILE), (inm, r)
        # a tag that is not honoured still outranks the date (RFC 9110
        # 13.2.2): no 304 from If-Modified-Since either
        r = one(port, "/noetag/a.txt", [("If-None-Match", inm),
                                         ("If-Modified-Since", lm)])
        assert r.status == 200, (inm, r)
    r = one(port, "/noetag/a.txt", [("If-Modified-Since", lm)])
    assert (r.status, r.body) == (304, b""), r
    # the same tag on the location with etag on: 304
    assert one(port, "/a.txt", [("If-None-Match", etag)]).status == 304


# ------------------------------------------------------- keepalive_time

def test_upstream_keepalive_time(weir, make_origin):
    """upstream.md: keepalive_time is the longest an origin connection
    is used; an older one is closed after its current request instead
    of going back to the pool. Requests go every 0.1s to two groups,
    one with keepalive_time 1s and one with the default (1h): the
    first moves to a new connection once the old is a second old (and
    not before), the second keeps its one connection."""
    short, long_ = make_origin(name="short"), make_origin(name="long")
    port = start_proxy(
        weir,
        upstream="    upstream short { server %s; keepalive_time 1s; }\n"
                 "    upstream long { server %s; }\n"
                 % (short.addr, long_.addr),
        server="        location /short { proxy_pass http://short; }\n"
               "        location /long { proxy_pass http://long; }\n")

    done = []                       # (seconds since the first, conn id)
    t0 = time.monotonic()
    with Client(port) as c:
        while short.accepted < 2 and time.monotonic() - t0 < DEADLINE:
            r = c.request("GET", "/short")
            assert r.status == 200, r
            done.append((time.monotonic() - t0, int(r.header("x-conn"))))
            r = c.request("GET", "/long")
            assert (r.status, r.header("x-conn")) == (200, "1"), r
            select.select([], [], [], 0.1)
        r = c.request("GET", "/short")
        done.append((time.monotonic() - t0, int(r.header("x-conn"))))

    assert short.accepted == 2, done
    on_first = [at for at, conn in done if conn == 1]
    assert [conn for _, conn in done] == \
        [1] * len(on_first) + [2] * (len(done) - len(on_first)), done
    # reused until then; the request that found the first connection
    # older than 1s when it ended still went on it, and it was closed
    # after that one (0.9: weir's clock is cached per event loop pass)
    assert len(on_first) >= 5, done
    assert on_first[-1] >= 0.9, done
    short.wait_closed(1)
    assert short.peer_closed(1)
    assert long_.accepted == 1 and long_.closed == 0
