"""The first HTTP modules: return, static (conditional requests and byte
ranges), index, access_log/log_format, add_header, allow/deny and
stub_status. Each test writes its configuration inline and talks to weir
with http.client or a raw socket on loopback; the tests that take the
`proto` fixture run over HTTP/1.1 and HTTP/2 (protoclient.py)."""

import calendar
import http.client
import json
import os
import re
import signal
import socket
import time

import pytest

import protoclient
from weirtest import DEADLINE, connect, ipv6_available, read_all, wait_for


# ---- helpers


def http_conf(weir, port, server, http_extra="", root=True):
    """Writes a configuration with one server on 127.0.0.1:port whose
    root is <prefix>/html; returns the html directory."""
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    body = ("http {\n"
            "    types { text/html html; text/plain txt; }\n"
            "    default_type application/octet-stream;\n"
            "%s\n"
            "    server {\n"
            "        listen 127.0.0.1:%d;\n"
            "%s"
            "%s"
            "%s\n"
            "    }\n"
            "}\n" % (http_extra, port, protoclient.conf_line(),
                     ("        root %s;\n" % html) if root else "", server))
    weir.conf(body)
    return html


def start(weir, port):
    """Starts weir and waits until the HTTP port accepts."""
    weir.start(check_ports=False)

    def up():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            return False
        s.close()
        return True

    wait_for(up, what="the HTTP port to accept")


def request(port, method="GET", path="/", headers=None, body=None):
    """One request on a fresh connection, over the protocol of the test
    (protoclient.PROTO): (status, headers dict with lowercased names,
    body bytes)."""
    return protoclient.request(port, method, path, headers, body)


def raw(port, data, limit=65536):
    """Sends raw bytes and reads until the server closes."""
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(data)
        return read_all(s, limit)
    finally:
        s.close()


def file_text(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


# ---- return


def test_return_text_with_variables(weir, proto):
    port = weir.port()
    http_conf(weir, port, """
        location /t { return 200 "uri=$uri args=$args"; }
        location /empty { return 204; }
        location /gone { return 404; }
        location /teapot { return 418 "short and stout"; }
    """)
    start(weir, port)

    status, hdrs, body = request(port, path="/t/x?a=1")
    assert status == 200
    assert body == b"uri=/t/x args=a=1"
    assert hdrs["content-length"] == str(len(body))

    status, _, body = request(port, path="/empty")
    assert status == 204 and body == b""

    status, _, _ = request(port, path="/gone")
    assert status == 404

    status, _, body = request(port, path="/teapot")
    assert status == 418 and body == b"short and stout"

    status, hdrs, body = request(port, "HEAD", "/t")
    assert status == 200 and body == b""
    assert hdrs["content-length"] == str(len("uri=/t args="))


def test_return_redirects(weir, proto):
    port = weir.port()
    http_conf(weir, port, """
        location /perm { return 301 http://example.com/new$uri; }
        location /url { return https://example.com/x; }
        location /see { return 303 /other; }
    """)
    start(weir, port)

    status, hdrs, _ = request(port, path="/perm/a")
    assert status == 301
    assert hdrs["location"] == "http://example.com/new/perm/a"

    status, hdrs, _ = request(port, path="/url")
    assert status == 302
    assert hdrs["location"] == "https://example.com/x"

    status, hdrs, _ = request(port, path="/see")
    assert status == 303
    assert hdrs["location"].endswith("/other")


def test_return_in_server_runs_before_locations(weir, proto):
    port = weir.port()
    http_conf(weir, port, """
        return 200 "server";
        location / { return 200 "location"; }
    """)
    start(weir, port)
    assert request(port, path="/x")[2] == b"server"


def test_return_444_closes_without_answer(weir):
    port = weir.port()
    http_conf(weir, port, "location / { return 444; }")
    start(weir, port)
    data = raw(port, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    assert data == b""


def test_return_invalid_code(weir):
    weir.conf("http {\n server {\n listen 127.0.0.1:%d;\n"
              " location / { return abc; }\n }\n}\n" % weir.port())
    weir.allow.append(r"invalid return code")
    r = weir.run(["-t"])
    assert r.returncode == 1
    assert 'invalid return code "abc" in %s:' % weir.conf_path in r.stderr


# ---- static files


def make_site(html):
    with open(os.path.join(html, "a.html"), "w") as f:
        f.write("<p>hello</p>\n")
    with open(os.path.join(html, "digits.txt"), "w") as f:
        f.write("0123456789")
    os.makedirs(os.path.join(html, "dir"), exist_ok=True)
    with open(os.path.join(html, "dir", "b.txt"), "w") as f:
        f.write("b")
    with open(os.path.join(html, "blob"), "wb") as f:
        f.write(b"\x00\x01")


def test_static_get_head_and_types(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, "location / { }")
    make_site(html)
    start(weir, port)

    status, hdrs, body = request(port, path="/a.html")
    assert status == 200
    assert body == b"<p>hello</p>\n"
    assert hdrs["content-type"].startswith("text/html")
    assert hdrs["content-length"] == "13"
    assert hdrs["accept-ranges"] == "bytes"
    mtime = os.stat(os.path.join(html, "a.html")).st_mtime
    assert hdrs["last-modified"] == time.strftime(
        "%a, %d %b %Y %H:%M:%S GMT", time.gmtime(mtime))
    assert re.match(r'^"[0-9a-f]+-d"$', hdrs["etag"])

    status, hdrs, body = request(port, "HEAD", "/a.html")
    assert status == 200 and body == b""
    assert hdrs["content-length"] == "13"

    status, hdrs, body = request(port, path="/blob")
    assert status == 200 and body == b"\x00\x01"
    assert hdrs["content-type"] == "application/octet-stream"

    assert request(port, path="/dir/b.txt")[2] == b"b"


def test_static_errors(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, "location / { }")
    make_site(html)
    secret = os.path.join(html, "secret.txt")
    with open(secret, "w") as f:
        f.write("x")
    os.chmod(secret, 0)
    weir.allow.append(r"open\(\) .* failed")
    start(weir, port)

    assert request(port, path="/missing.html")[0] == 404
    assert request(port, path="/a.html/x")[0] == 404

    status, hdrs, _ = request(port, path="/dir?x=1")
    assert status == 301
    assert hdrs["location"].endswith("/dir/?x=1")

    assert request(port, "POST", "/a.html", body=b"x")[0] == 405
    assert request(port, "DELETE", "/a.html")[0] == 405

    # as root the suite runs workers as an unprivileged user: 000 is
    # unreadable for them either way
    assert request(port, path="/secret.txt")[0] == 403


def test_conditional_requests(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, "location / { }")
    make_site(html)
    start(weir, port)

    _, hdrs, _ = request(port, path="/a.html")
    etag, lm = hdrs["etag"], hdrs["last-modified"]

    status, hdrs, body = request(port, path="/a.html",
                                 headers={"If-Modified-Since": lm})
    assert status == 304 and body == b""
    assert hdrs["etag"] == etag

    older = "Mon, 01 Jan 2001 00:00:00 GMT"
    assert request(port, path="/a.html",
                   headers={"If-Modified-Since": older})[0] == 200

    assert request(port, path="/a.html",
                   headers={"If-None-Match": etag})[0] == 304
    assert request(port, path="/a.html",
                   headers={"If-None-Match": '"x", W/%s' % etag})[0] == 304
    assert request(port, path="/a.html",
                   headers={"If-None-Match": "*"})[0] == 304
    # If-None-Match wins over If-Modified-Since
    assert request(port, path="/a.html",
                   headers={"If-None-Match": '"other"',
                            "If-Modified-Since": lm})[0] == 200

    assert request(port, path="/a.html",
                   headers={"If-Match": etag})[0] == 200
    assert request(port, path="/a.html",
                   headers={"If-Match": '"other"'})[0] == 412
    assert request(port, path="/a.html",
                   headers={"If-Match": "W/" + etag})[0] == 412
    assert request(port, path="/a.html",
                   headers={"If-Unmodified-Since": older})[0] == 412
    assert request(port, path="/a.html",
                   headers={"If-Unmodified-Since": lm})[0] == 200


def test_byte_ranges(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, "location / { }")
    make_site(html)
    start(weir, port)

    def rng(value, extra=None):
        h = {"Range": value}
        h.update(extra or {})
        return request(port, path="/digits.txt", headers=h)

    status, hdrs, body = rng("bytes=0-4")
    assert status == 206 and body == b"01234"
    assert hdrs["content-range"] == "bytes 0-4/10"
    assert hdrs["content-length"] == "5"

    status, hdrs, body = rng("bytes=7-")
    assert (status, body) == (206, b"789")
    assert hdrs["content-range"] == "bytes 7-9/10"

    status, hdrs, body = rng("bytes=-3")
    assert (status, body) == (206, b"789")

    status, hdrs, body = rng("bytes=5-100")
    assert (status, body) == (206, b"56789")
    assert hdrs["content-range"] == "bytes 5-9/10"

    status, hdrs, body = rng("bytes=-100")
    assert (status, body) == (206, b"0123456789")

    status, hdrs, _ = rng("bytes=10-")
    assert status == 416
    assert hdrs["content-range"] == "bytes */10"

    # syntax errors: the range is ignored
    for bad in ("bytes=x-1", "bytes=5-1", "items=0-1", "bytes=--1"):
        status, _, body = rng(bad)
        assert (status, body) == (200, b"0123456789"), bad

    # If-Range: a matching validator gets the range, another the whole
    _, hdrs, _ = request(port, path="/digits.txt")
    status, _, body = rng("bytes=0-1", {"If-Range": hdrs["etag"]})
    assert (status, body) == (206, b"01")
    status, _, body = rng("bytes=0-1", {"If-Range": hdrs["last-modified"]})
    assert (status, body) == (206, b"01")
    status, _, body = rng("bytes=0-1", {"If-Range": '"stale"'})
    assert (status, body) == (200, b"0123456789")

    # a date is a date whatever its weekday: "Wed, ..." is not a W/ tag
    for day in (3, 4):                  # 2024-01-03 Wednesday, 04 Thursday
        t = calendar.timegm((2024, 1, day, 12, 0, 0))
        os.utime(os.path.join(html, "digits.txt"), (t, t))
        _, hdrs, _ = request(port, path="/digits.txt")
        assert hdrs["last-modified"] == time.strftime(
            "%a, %d %b %Y %H:%M:%S GMT", time.gmtime(t))
        status, _, body = rng("bytes=0-1",
                              {"If-Range": hdrs["last-modified"]})
        assert (status, body) == (206, b"01"), hdrs["last-modified"]
        status, _, body = rng("bytes=0-1",
                              {"If-Range": "Wed, 01 Jan 2020 00:00:00 GMT"})
        assert (status, body) == (200, b"0123456789")


def test_multipart_ranges(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, "location / { }")
    make_site(html)
    start(weir, port)

    status, hdrs, body = request(port, path="/digits.txt",
                                 headers={"Range": "bytes=0-1,5-6,-1"})
    assert status == 206
    m = re.match(r"^multipart/byteranges; boundary=(\S+)$",
                 hdrs["content-type"])
    assert m, hdrs["content-type"]
    b = m.group(1).encode()
    assert int(hdrs["content-length"]) == len(body)

    expected = b""
    for (s, e, data) in ((0, 1, b"01"), (5, 6, b"56"), (9, 9, b"9")):
        expected += (b"\r\n--" + b + b"\r\nContent-Type: text/plain\r\n"
                     b"Content-Range: bytes %d-%d/10\r\n\r\n" % (s, e)
                     + data)
    expected += b"\r\n--" + b + b"--\r\n"
    assert body == expected


def test_ranges_off_and_head(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, "location / { max_ranges 0; }")
    make_site(html)
    start(weir, port)
    status, hdrs, body = request(port, path="/digits.txt",
                                 headers={"Range": "bytes=0-1"})
    assert (status, body) == (200, b"0123456789")
    assert "accept-ranges" not in hdrs


# ---- index


def test_index(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, """
        location / { }
        location /multi/ { index missing.html second.html; }
        location /abs/ { index nothere.html /a.html; }
    """)
    make_site(html)
    with open(os.path.join(html, "index.html"), "w") as f:
        f.write("root index")
    os.makedirs(os.path.join(html, "multi"))
    with open(os.path.join(html, "multi", "second.html"), "w") as f:
        f.write("second")
    os.makedirs(os.path.join(html, "abs"))
    weir.allow.append(r"is not found")
    start(weir, port)

    status, hdrs, body = request(port, path="/")
    assert (status, body) == (200, b"root index")
    assert hdrs["content-type"].startswith("text/html")

    assert request(port, path="/multi/")[2] == b"second"
    assert request(port, path="/abs/")[2] == b"<p>hello</p>\n"

    # a directory without an index file, and a missing directory
    assert request(port, path="/dir/")[0] == 403
    assert request(port, path="/nodir/")[0] == 404


# ---- access log


COMBINED = (
    r'^127\.0\.0\.1 - (\S+) \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] '
    r'"GET /a\.html\?q=1 %s" 200 13 "http://ref/" "ua/1\.0"$')


def test_access_log_default_combined(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, "location / { }")
    make_site(html)
    start(weir, port)

    request(port, path="/a.html?q=1",
            headers={"Referer": "http://ref/", "User-Agent": "ua/1.0",
                     "Authorization": "Basic dXNlcjpwYXNz"})
    log = weir.path("logs", "access.log")

    def line():
        text = file_text(log).decode()
        return text if text.endswith("\n") else None

    text = wait_for(line, what="the access log line")
    version = {"h1": r"HTTP/1\.1", "h2": r"HTTP/2\.0"}[proto]
    m = re.match(COMBINED % version, text.splitlines()[-1])
    assert m, text
    assert m.group(1) == "user"


def test_access_log_formats_and_escaping(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, """
        access_log logs/j.log j;
        access_log logs/d.log d;
        location / { }
        location /quiet { access_log off; return 200; }
    """, http_extra="""
    log_format j escape=json '{"uri":"$uri","ua":"$http_user_agent",'
                             '"missing":"$http_x_none","status":$status}';
    log_format d '$status "$http_user_agent" $http_x_none $http2';
    """)
    make_site(html)
    start(weir, port)

    # the parser refuses control bytes in headers: quotes, backslashes and
    # obs-text are what reaches the log
    ua = 'a"b\\c\xe9'
    request(port, path="/a.html", headers={"User-Agent": ua.encode(
        "latin-1").decode("latin-1")})
    request(port, path="/quiet")

    def have(path):
        def check():
            t = file_text(weir.path("logs", path))
            return t if t.endswith(b"\n") else None
        return wait_for(check, what=path)

    jline = have("j.log").splitlines()
    assert len(jline) == 1
    rec = json.loads(jline[0].decode("utf-8", "surrogateescape"))
    assert rec["uri"] == "/a.html"
    assert rec["missing"] == ""
    assert rec["status"] == 200
    assert rec["ua"].startswith('a"b\\c')

    dline = have("d.log").splitlines()
    http2 = {"h1": b"", "h2": b"h2c"}[proto]     # empty, not "-"
    assert dline == [b'200 "a\\x22b\\x5Cc\\xE9" - ' + http2]


def test_access_log_buffer_flush_timer_and_exit(weir):
    port = weir.port()
    html = http_conf(weir, port, """
        access_log logs/t.log combined buffer=64k flush=200ms;
        location /slow { access_log logs/x.log combined buffer=64k; }
        location /hour { access_log logs/h.log combined flush=1h; }
        location / { }
    """)
    make_site(html)
    start(weir, port)

    request(port, path="/a.html")
    wait_for(lambda: file_text(weir.path("logs", "t.log")).endswith(b"\n"),
             what="the timer flush")

    request(port, path="/slow/x")
    assert request(port, path="/slow/y")[0] == 404
    # no timer and the buffer is far from full: only exit writes it
    assert file_text(weir.path("logs", "x.log")) == b""
    # a pending flush timer does not hold off a graceful stop
    request(port, path="/hour")
    started = time.monotonic()
    weir.stop()
    assert time.monotonic() - started < DEADLINE / 2
    assert b"GET /hour" in file_text(weir.path("logs", "h.log"))
    lines = file_text(weir.path("logs", "x.log")).splitlines()
    assert len(lines) == 2
    assert b'"GET /slow/x HTTP/1.1" 404' in lines[0]


def test_access_log_reopen(weir):
    port = weir.port()
    html = http_conf(weir, port, "location / { }")
    make_site(html)
    start(weir, port)

    log = weir.path("logs", "access.log")
    request(port, path="/a.html")
    wait_for(lambda: file_text(log).endswith(b"\n"), what="first line")
    os.rename(log, log + ".1")
    weir.signal(signal.SIGUSR1)
    wait_for(lambda: os.path.exists(log), what="the reopened log")
    request(port, path="/digits.txt")
    wait_for(lambda: b"/digits.txt" in file_text(log), what="line after USR1")
    assert b"/digits.txt" not in file_text(log + ".1")


def test_access_log_errors(weir):
    port = weir.port()
    weir.allow.append(r"log_format|log format")
    weir.conf("http {\n log_format a '$uri';\n log_format a '$uri';\n"
              " server { listen 127.0.0.1:%d; }\n}\n" % port)
    r = weir.run(["-t"])
    assert r.returncode == 1
    assert 'duplicate "log_format" name "a"' in r.stderr

    weir.conf("http {\n server { listen 127.0.0.1:%d;\n"
              " access_log logs/a.log nosuch; }\n}\n" % port)
    r = weir.run(["-t"])
    assert r.returncode == 1
    assert 'unknown log format "nosuch"' in r.stderr


# ---- add_header


def test_add_header(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, """
        add_header X-Server s;
        add_header X-Always yes always;
        location / { }
        location /own/ { add_header X-Own $uri; return 200 "own"; }
        location /err { add_header X-Ok ok; add_header X-Al al always;
                        return 500; }
    """)
    make_site(html)
    start(weir, port)

    _, hdrs, _ = request(port, path="/a.html")
    assert hdrs["x-server"] == "s" and hdrs["x-always"] == "yes"

    _, hdrs, _ = request(port, path="/missing")
    assert "x-server" not in hdrs
    assert hdrs["x-always"] == "yes"

    _, hdrs, _ = request(port, path="/own/p")
    assert hdrs["x-own"] == "/own/p"
    assert "x-server" not in hdrs   # not inherited: the level has its own

    status, hdrs, _ = request(port, path="/err")
    assert status == 500
    assert "x-ok" not in hdrs and hdrs["x-al"] == "al"


# ---- allow / deny


def test_allow_deny(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, """
        location /open/ { }
        location /closed/ { deny all; }
        location /lo/ { allow 127.0.0.1; deny all; }
        location /net/ { deny 127.0.0.0/8; allow all; }
        location /other/ { allow 10.0.0.0/8; deny all; }
        location /v6/ { deny ::1; allow all; }
        location /ret { deny all; return 200 "rewrite runs first"; }
    """)
    names = ("open", "closed", "lo", "net", "other", "v6")
    for name in names:
        os.makedirs(os.path.join(html, name))
        with open(os.path.join(html, name, "f.txt"), "w") as f:
            f.write(name)
    weir.allow.append(r"access forbidden by rule")
    start(weir, port)

    def get(name):
        return request(port, path="/%s/f.txt" % name)

    assert get("open")[2] == b"open"
    assert get("closed")[0] == 403
    assert get("lo")[2] == b"lo"
    assert get("net")[0] == 403
    assert get("other")[0] == 403
    assert get("v6")[2] == b"v6"
    # as in nginx, "return" (rewrite phase) answers before access rules
    assert request(port, path="/ret")[2] == b"rewrite runs first"
    weir.wait_log(r"\[error\].*access forbidden by rule")


def test_allow_deny_ipv6(weir):
    # ipv6_available() is None when [::1] works, else why it does not
    reason = ipv6_available()
    if reason:
        pytest.skip(reason)
    port = weir.port(socket.AF_INET6)
    weir.conf("http {\n server {\n listen [::1]:%d;\n"
              " root %s;\n"
              " location /a/ { deny ::1; }\n"
              " location /b/ { allow ::/0; deny all; }\n"
              " location /c/ { deny 127.0.0.1; }\n"
              " }\n}\n" % (port, weir.path("html")))
    for name in "abc":
        weir.write("html/%s/f.txt" % name, name)
    weir.allow.append(r"access forbidden by rule")
    weir.start(check_ports=False)

    def get(path):
        def once():
            try:
                c = http.client.HTTPConnection("::1", port, timeout=DEADLINE)
                c.request("GET", path)
                r = c.getresponse()
                out = (r.status, r.read())
                c.close()
                return out
            except OSError:
                return None
        return wait_for(once, what="an answer on [::1]")

    assert get("/a/f.txt")[0] == 403
    assert get("/b/f.txt") == (200, b"b")
    assert get("/c/f.txt") == (200, b"c")


def test_allow_deny_invalid(weir):
    port = weir.port()
    weir.allow.append(r"invalid parameter")
    for bad in ("300.1.1.1", "1.2.3.4/33", "::1/129", "foo"):
        weir.conf("http {\n server {\n listen 127.0.0.1:%d;\n"
                  " allow %s;\n }\n}\n" % (port, bad))
        r = weir.run(["-t"])
        assert r.returncode == 1, bad
        assert 'invalid parameter "%s" in %s:' % (bad, weir.conf_path) \
            in r.stderr, r.stderr


# ---- stub_status


STATUS = re.compile(r"^Active connections: (\d+) \n"
                    r"server accepts handled requests\n"
                    r" (\d+) (\d+) (\d+) \n"
                    r"Reading: (\d+) Writing: (\d+) Waiting: (\d+) \n$")


def test_stub_status(weir, proto):
    port = weir.port()
    http_conf(weir, port, "location = /status { stub_status; }")
    start(weir, port)

    status, hdrs, body = request(port, path="/status")
    assert status == 200
    assert hdrs["content-type"].startswith("text/plain")
    m = STATUS.match(body.decode())
    assert m, body
    active, accepts, handled, requests = map(int, m.groups()[:4])
    assert active >= 1 and accepts >= 1 and handled >= 1 and requests >= 1
    assert int(m.group(6)) >= 1      # this request is writing

    for _ in range(3):
        request(port, path="/status")
    m2 = STATUS.match(request(port, path="/status")[2].decode())
    assert int(m2.group(4)) >= requests + 4
    assert int(m2.group(2)) >= accepts + 4

    assert request(port, "POST", "/status", body=b"x")[0] == 405


# ---- larger bodies, keep-alive, sendfile


def recv_response(s, buf):
    """Reads one response (Content-Length framed) from s; returns (status,
    headers, body, rest of buf)."""
    deadline = time.monotonic() + DEADLINE
    while b"\r\n\r\n" not in buf:
        assert time.monotonic() < deadline, "response head timed out"
        chunk = s.recv(65536)
        assert chunk, "closed before the head: %r" % buf
        buf += chunk
    head, _, buf = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    n = int(hdrs.get("content-length", "0"))
    while len(buf) < n:
        assert time.monotonic() < deadline, "response body timed out"
        chunk = s.recv(1 << 20)
        assert chunk, "closed in the body"
        buf += chunk
    return status, hdrs, buf[:n], buf[n:]


@pytest.mark.parametrize("sendfile", ["on", "off"])
def test_big_file_ranges_keepalive(weir, sendfile):
    port = weir.port()
    html = http_conf(weir, port, "sendfile %s;\nlocation / { }" % sendfile)
    data = bytes(range(256)) * (8 * 4096)          # 8 MiB
    with open(os.path.join(html, "big.bin"), "wb") as f:
        f.write(data)
    start(weir, port)

    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    try:
        reqs = [
            ("GET", ""),
            ("GET", "Range: bytes=1000000-2999999\r\n"),
            ("HEAD", "Range: bytes=0-9\r\n"),
            ("GET", "Range: bytes=0-0,4000000-4000009,-5\r\n"),
            ("GET", "Range: bytes=%d-\r\n" % len(data)),
            ("GET", "If-None-Match: *\r\n"),
        ]
        # pipelined: all requests at once, the answers in order
        s.sendall(b"".join(b"%s /big.bin HTTP/1.1\r\nHost: a\r\n%s\r\n"
                           % (m.encode(), h.encode()) for m, h in reqs))
        buf = b""

        st, hd, body, buf = recv_response(s, buf)
        assert st == 200 and body == data

        st, hd, body, buf = recv_response(s, buf)
        assert st == 206 and body == data[1000000:3000000]
        assert hd["content-range"] == "bytes 1000000-2999999/%d" % len(data)

        # HEAD: the headers of the 206, no body
        deadline = time.monotonic() + DEADLINE
        while b"\r\n\r\n" not in buf:
            assert time.monotonic() < deadline
            buf += s.recv(65536)
        head, _, buf = buf.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 206")
        assert b"Content-Range: bytes 0-9/" in head

        st, hd, body, buf = recv_response(s, buf)
        assert st == 206
        assert hd["content-type"].startswith("multipart/byteranges")
        assert data[0:1] in body and data[4000000:4000010] in body
        assert body.endswith(b"--\r\n")

        st, hd, body, buf = recv_response(s, buf)
        assert st == 416

        st, hd, body, buf = recv_response(s, buf)
        assert st == 304 and body == b""
        assert buf == b""
    finally:
        s.close()


@pytest.mark.parametrize("sendfile", ["on", "off"])
def test_big_file_ranges_h2(weir, sendfile):
    """The HTTP/2 counterpart of test_big_file_ranges_keepalive: the same
    requests as streams of one connection, opened all at once."""
    from h2client import H2Client

    port = weir.port()
    html = http_conf(weir, port, "http2 on;\nsendfile %s;\nlocation / { }"
                     % sendfile)
    data = bytes(range(256)) * (8 * 4096)          # 8 MiB
    with open(os.path.join(html, "big.bin"), "wb") as f:
        f.write(data)
    start(weir, port)

    c = H2Client(port)
    try:
        reqs = [
            ("GET", []),
            ("GET", [("range", "bytes=1000000-2999999")]),
            ("HEAD", [("range", "bytes=0-9")]),
            ("GET", [("range", "bytes=0-0,4000000-4000009,-5")]),
            ("GET", [("range", "bytes=%d-" % len(data))]),
            ("GET", [("if-none-match", "*")]),
        ]
        sids = [c.request(m, "/big.bin", headers=h) for m, h in reqs]
        r = [c.response(sid) for sid in sids]
        assert [x.reset for x in r] == [None] * len(r)

        assert r[0].status == 200 and r[0].body == data
        assert r[1].status == 206 and r[1].body == data[1000000:3000000]
        assert r[1].header("content-range") == \
            "bytes 1000000-2999999/%d" % len(data)
        assert r[2].status == 206 and r[2].body == b""
        assert r[2].header("content-range") == "bytes 0-9/%d" % len(data)
        assert r[3].status == 206
        assert r[3].header("content-type").startswith("multipart/byteranges")
        assert data[0:1] in r[3].body and data[4000000:4000010] in r[3].body
        assert r[3].body.endswith(b"--\r\n")
        assert int(r[3].header("content-length")) == len(r[3].body)
        assert r[4].status == 416
        assert r[5].status == 304 and r[5].body == b""
    finally:
        c.close()


def test_alias_and_static(weir, proto):
    port = weir.port()
    html = http_conf(weir, port, "location /files/ { alias %s/dir/; }"
                     % weir.path("html"))
    make_site(html)
    start(weir, port)
    assert request(port, path="/files/b.txt")[2] == b"b"
    status, hdrs, _ = request(port, path="/files/b.txt",
                              headers={"Range": "bytes=0-0"})
    assert status == 206 and hdrs["content-range"] == "bytes 0-0/1"


def test_access_log_flushed_on_reload(weir):
    port = weir.port()
    html = http_conf(weir, port, """
        access_log logs/r.log combined buffer=32k;
        location / { }
    """)
    make_site(html)
    start(weir, port)

    request(port, path="/a.html")
    assert file_text(weir.path("logs", "r.log")) == b""
    weir.signal(signal.SIGHUP)
    # the old worker writes its buffer out when it exits
    wait_for(lambda: b"/a.html" in file_text(weir.path("logs", "r.log")),
             what="the buffer flushed by the retired worker")


def test_access_log_bad_requests(weir):
    port = weir.port()
    html = http_conf(weir, port, "location / { }")
    make_site(html)
    weir.allow.append(r"client sent")
    start(weir, port)

    data = raw(port, b"GET /a b c\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 400")
    data = raw(port, b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 400")
    log = weir.path("logs", "access.log")
    wait_for(lambda: file_text(log).count(b"\n") >= 2, what="two lines")
    lines = file_text(log).splitlines()
    assert all(b'" 400 ' in line for line in lines), lines


def test_chains_show_the_modules(weir):
    """weir -V lists where the modules sit (the order this file relies
    on, nginx's: conditional requests, then add_header, then ranges, so
    If-Range sees a Last-Modified or ETag that add_header replaced)."""
    weir.conf("")
    r = weir.run(["-V"])
    assert r.returncode == 0
    out = r.stdout + r.stderr
    phases = dict(re.findall(r"^  (\w+): (.*)$", out, re.M))
    assert "return(100)" in phases["server_rewrite"]
    assert "return(100)" in phases["rewrite"]
    assert "access(100)" in phases["access"]
    assert re.search(r"index\(800\) static\(900\)", phases["content"])
    assert "log(100)" in phases["log"]
    hf = re.search(r"^header filters: (.*)$", out, re.M).group(1).split()
    assert hf.index("not_modified") < hf.index("headers") < hf.index("range")
    bf = re.search(r"^body filters: (.*)$", out, re.M).group(1).split()
    assert "range" in bf
