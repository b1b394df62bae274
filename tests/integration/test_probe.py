"""weir-probe (tools/probe): the benchmark origin answers its paths, the
load generator runs against it for about a second in several modes with
no error and plausible counts, its CSV line has the documented columns,
and it runs against a weir HTTP server too, and over TLS against
`openssl s_server` (when weir was configured with OpenSSL). The origin's
/ws echoes WebSocket frames to a client written here, the client's --ws
and --read-pause modes run against the origin, and `weir-probe hold`
keeps connections idle.

Speeds are never asserted: only that requests happened, errors did not,
and counts agree with the mode (keep-alive reuses connections, --new-conn
does not, a delay bounds the rate)."""

import base64
import hashlib
import http.client
import os
import select
import shutil
import struct
import signal
import socket
import threading
import subprocess
import time

import pytest

import weirtest
from weirtest import DEADLINE, POLL, free_port, wait_for


PROBE = os.path.join(weirtest.WEIR_BUILD_DIR, "weir-probe")

CSV_FIELDS = ("proto,connections,mode,method,body,rate,duration_s,requests,"
              "rps,bytes_read,bytes_written,errors,err_connect,err_timeout,"
              "err_read,err_write,status_other,status_2xx,status_3xx,"
              "status_4xx,status_5xx,p50_us,p90_us,p99_us,p999_us,max_us,"
              "mean_us,cpu_user_s,cpu_sys_s,cpu_pct,streams,"
              "err_refused").split(",")

TEXT_FIELDS = ("proto", "mode", "method")

TINY = b"weir-probe origin: a tiny response of sixty-four bytes, exactly\n"


@pytest.fixture(scope="module", autouse=True)
def probe_binary():
    if not os.access(PROBE, os.X_OK):
        pytest.fail("weir-probe not found: %s (make builds it)" % PROBE,
                    pytrace=False)


class Origin:
    """A running `weir-probe origin` on two free loopback ports."""

    def __init__(self, tls=None):
        self.ports = [free_port(), free_port()]
        cmd = [PROBE, "origin"]
        for p in self.ports:
            cmd += ["-l", "127.0.0.1:%d" % p]
        if tls:
            # the second listener is TLS (ALPN h2 or http/1.1)
            cmd += ["--tls", tls[0], tls[1]]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.out = None
        self.head = b""

        # ready once it printed a "listening on" line per listener (it
        # flushes them together): no probing connection skews the counts
        def listening():
            assert self.proc.poll() is None, "origin exited"
            r, _, _ = select.select([self.proc.stdout], [], [], POLL)
            if r:
                data = os.read(self.proc.stdout.fileno(), 4096)
                assert data, "origin closed its stdout"
                self.head += data
            return self.head.count(b"listening on") == len(self.ports)

        wait_for(listening, what="weir-probe origin to listen")

    def url(self, path, n=0):
        return "http://127.0.0.1:%d%s" % (self.ports[n], path)

    def get(self, path, method="GET", body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.ports[0],
                                       timeout=DEADLINE)
        try:
            c.request(method, path, body=body, headers=headers or {},
                      encode_chunked=headers is not None
                      and "Transfer-Encoding" in headers)
            r = c.getresponse()
            return r.status, r.read(), r
        finally:
            c.close()

    def stats(self):
        status, body, _ = self.get("/stats")
        assert status == 200
        return dict((k, int(v)) for k, v in
                    (line.split() for line in body.decode().splitlines()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError("weir-probe origin ignored SIGTERM")
        self.out = (self.head + out).decode()
        assert self.proc.returncode == 0, (self.proc.returncode, err)
        return self.out


@pytest.fixture
def origin():
    o = Origin()
    try:
        yield o
    finally:
        o.stop()


def probe(*args, expect_rc=0):
    """Runs the client with --csv-header; returns the CSV row as a dict
    (numbers as floats)."""
    cmd = [PROBE] + [str(a) for a in args] + ["--csv-header"]
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=DEADLINE * 3)
    assert r.returncode == expect_rc, (cmd, r.returncode, r.stderr)
    lines = r.stdout.decode().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].split(",") == CSV_FIELDS
    values = lines[1].split(",")
    assert len(values) == len(CSV_FIELDS), lines[1]
    row = {}
    for k, v in zip(CSV_FIELDS, values):
        row[k] = v if k in TEXT_FIELDS else float(v)
    return row


def assert_clean(row):
    assert row["errors"] == 0, row
    assert row["requests"] > 0, row
    assert row["status_2xx"] == row["requests"], row
    assert 0 < row["p50_us"] <= row["p90_us"] <= row["p99_us"] \
        <= row["p999_us"] <= row["max_us"], row


# ---- the origin

def test_origin_paths(origin):
    status, body, r = origin.get("/tiny")
    assert (status, body) == (200, TINY)
    assert len(TINY) == 64

    status, body, r = origin.get("/size/100000")
    assert status == 200 and len(body) == 100000
    assert r.getheader("Content-Length") == "100000"

    status, body, r = origin.get("/chunked/50000")
    assert status == 200 and len(body) == 50000
    assert r.getheader("Transfer-Encoding") == "chunked"

    status, body, _ = origin.get("/size/0")
    assert (status, body) == (200, b"")

    payload = os.urandom(70000)
    status, body, _ = origin.get("/echo", "POST", payload)
    assert (status, body) == (200, payload)

    # a chunked request body comes back chunked
    status, body, r = origin.get("/echo", "POST", iter([b"ab", b"cd" * 5000]),
                                 {"Transfer-Encoding": "chunked"})
    assert (status, body) == (200, b"ab" + b"cd" * 5000)
    assert r.getheader("Transfer-Encoding") == "chunked"

    t = time.monotonic()
    status, body, _ = origin.get("/delay/200/size/7")
    assert (status, body) == (200, b"abcdefg")
    assert time.monotonic() - t >= 0.2

    status, body, _ = origin.get("/delay/50")
    assert (status, body) == (200, TINY)

    status, body, _ = origin.get("/early", "POST", b"x" * 300000)
    assert (status, body) == (200, b"early\n")

    status, _, _ = origin.get("/nothing-here")
    assert status == 404

    before = origin.stats()
    origin.get("/tiny")
    after = origin.stats()
    assert after["connections"] == before["connections"] + 2, after
    assert after["requests"] == before["requests"] + 2, after


def test_origin_early_answers_before_the_body(origin):
    """The answer comes after 8 KiB of a declared 1 MiB body; the rest is
    drained, and the connection serves the next request."""
    s = socket.create_connection(("127.0.0.1", origin.ports[1]),
                                 timeout=DEADLINE)
    try:
        s.sendall(b"POST /early HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 1048576\r\n\r\n" + b"y" * 8192)
        got = b""
        while b"early\n" not in got:
            data = s.recv(4096)
            assert data, "closed before the early answer"
            got += data
        assert got.startswith(b"HTTP/1.1 200 ")
        s.sendall(b"y" * (1048576 - 8192))
        s.sendall(b"GET /tiny HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b""
        while not got.endswith(TINY):
            data = s.recv(4096)
            assert data, "closed after the early answer"
            got += data
    finally:
        s.close()


def test_origin_counts_connections(origin):
    for _ in range(3):
        origin.get("/tiny")
    # the client's close of an earlier connection and the accept of the
    # /stats one may reach the origin in one epoll batch, the accept
    # first: poll until the closes are counted (each poll is one more)
    seen = []

    def settled():
        seen.append(origin.stats())
        return seen[-1]["open"] == 1

    wait_for(settled, what="the origin to count the closed connections")
    n = 3 + len(seen)
    assert seen[-1] == {"connections": n, "requests": n, "open": 1}
    out = origin.stop()
    assert out.endswith("accepted %d connections, %d requests\n"
                        % (n, n)), out


# ---- the client against the origin

def test_client_keepalive(origin):
    before = origin.stats()["connections"]
    row = probe("-c", 4, "-d", 1, "-u", origin.url("/tiny"))
    assert_clean(row)
    assert row["proto"] == "http/1.1" and row["mode"] == "keep-alive"
    assert row["connections"] == 4
    # it measured for -d (and its own run is bounded by probe()'s
    # timeout: how much longer it took is no test's business)
    assert row["duration_s"] >= 0.9
    assert row["bytes_read"] >= row["requests"] * 64
    # four connections carried every request (and /stats is the fifth)
    assert origin.stats()["connections"] == before + 5


def test_client_new_conn(origin):
    before = origin.stats()["connections"]
    row = probe("-c", 2, "-d", 1, "--new-conn", "-u", origin.url("/tiny"))
    assert_clean(row)
    assert row["mode"] == "new-conn"
    # one connection per request, in flight ones at the end included
    assert origin.stats()["connections"] - before >= row["requests"]


def test_client_post_echo(origin):
    row = probe("-c", 3, "-d", 1, "-X", "POST", "-b", 20000,
                "-u", origin.url("/echo"))
    assert_clean(row)
    assert row["method"] == "POST" and row["body"] == 20000
    assert row["bytes_read"] >= row["requests"] * 20000
    assert row["bytes_written"] >= row["requests"] * 20000
    # the method's old letter still works for the two methods it had
    row = probe("-n", 10, "-m", "POST", "-b", 100, "-u", origin.url("/echo"))
    assert_clean(row)
    assert row["method"] == "POST" and row["requests"] == 10


def test_client_chunked_and_urls(origin):
    """Round-robin over URLs on both listeners: chunked and sized."""
    row = probe("-c", 4, "-d", 1, "-u", origin.url("/chunked/100000"),
                "-u", origin.url("/size/65536", 1))
    assert_clean(row)
    assert row["bytes_read"] >= row["requests"] * 65536


def test_client_delay(origin):
    """Eight connections and 100 ms per response: at most ~80 req/s."""
    row = probe("-c", 8, "-d", 1, "-w", 0.3, "-u", origin.url("/delay/100"))
    assert_clean(row)
    assert row["p50_us"] >= 100000
    assert row["requests"] <= 8 * row["duration_s"] / 0.1 + 8


def test_client_total_and_rate(origin):
    row = probe("-c", 2, "-n", 150, "-d", 10, "-u", origin.url("/tiny"))
    assert_clean(row)
    # -n stopped it: -d alone would have made thousands of requests
    assert row["requests"] == 150

    row = probe("-c", 4, "-d", 1, "-r", 100, "-u", origin.url("/tiny"))
    assert_clean(row)
    assert row["rate"] == 100
    # paced: never above the rate (unpaced it makes thousands); below it
    # only a loaded machine, so no floor beyond "it ran"
    assert 0 < row["requests"] <= 110


def test_client_counts_connect_errors():
    """Nothing listens: connect errors, no request, and it still stops."""
    port = free_port()
    t = time.monotonic()
    row = probe("-c", 2, "-d", 0.5, "-u", "http://127.0.0.1:%d/" % port)
    assert time.monotonic() - t < DEADLINE
    assert row["requests"] == 0
    assert row["err_connect"] > 0
    assert row["errors"] == row["err_connect"]


def test_client_text_report(origin):
    r = subprocess.run([PROBE, "-c", "2", "-n", "50",
                        "-u", origin.url("/tiny")],
                       capture_output=True, timeout=DEADLINE)
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    assert "requests   50," in text, text
    assert "errors     0 (connect 0, timeout 0, read 0, write 0, " \
           "refused 0, status 0)" in text, text
    for p in ("p50 ", "p90 ", "p99 ", "p99.9 ", "max "):
        assert p in text, text


def test_client_usage_errors():
    for args in (["-u", "ftp://127.0.0.1/"], ["-c", "0", "-u",
                                               "http://127.0.0.1:1/"],
                 [], ["-m", "PUT", "-u", "http://127.0.0.1:1/"],
                 ["-X", "get", "-u", "http://127.0.0.1:1/"],
                 ["-X", "HEAD", "-u", "http://127.0.0.1:1/"],
                 ["-b", "10", "-u", "http://127.0.0.1:1/"],
                 ["-m", "4", "-u", "http://127.0.0.1:1/"],
                 ["--h2", "--ws", "8", "-u", "http://127.0.0.1:1/"],
                 ["--h2", "--new-conn", "-m", "2", "-u",
                  "http://127.0.0.1:1/"],
                 ["--h2", "-u", "http://127.0.0.1:1/", "-u",
                  "http://127.0.0.1:2/"]):
        r = subprocess.run([PROBE] + args, capture_output=True,
                           timeout=DEADLINE)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr, args


# ---- the client against weir

def test_client_against_weir(weir):
    port = weir.port()
    weir.conf("http {\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        location / { return 200 \"x\"; }\n"
              "    }\n"
              "}\n" % port)
    weir.start(check_ports=False)

    def up():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(up, what="weir's HTTP port to accept")

    row = probe("-c", 4, "-d", 1, "-u", "http://127.0.0.1:%d/" % port)
    assert_clean(row)
    assert row["bytes_read"] >= row["requests"]

    row = probe("-c", 2, "-d", 0.5, "--new-conn",
                "-u", "http://127.0.0.1:%d/" % port)
    assert_clean(row)


# ---- TLS, against openssl s_server

def have_openssl_build():
    path = os.path.join(weirtest.WEIR_BUILD_DIR, "weir_auto_config.h")
    with open(path) as f:
        return "WEIR_HAVE_OPENSSL" in f.read()


def test_client_tls(tmp_path):
    if not have_openssl_build():
        pytest.skip("weir was configured without OpenSSL")
    key, cert = str(tmp_path / "key.pem"), str(tmp_path / "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                    "-subj", "/CN=localhost"], check=True,
                   capture_output=True, timeout=DEADLINE)
    port = free_port()
    # -www: an HTTP/1.0 status page, then close; one client at a time
    server = subprocess.Popen(["openssl", "s_server", "-quiet", "-www",
                               "-accept", "127.0.0.1:%d" % port,
                               "-cert", cert, "-key", key],
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        def up():
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True

        wait_for(up, what="openssl s_server to accept")

        row = probe("-c", 1, "-n", 20, "-d", 5,
                    "-u", "https://localhost:%d/" % port)
        assert_clean(row)
        assert row["proto"] == "tls+http/1.1"
        assert row["requests"] == 20
    finally:
        server.terminate()
        server.wait(timeout=DEADLINE)


# ---- WebSocket: the origin's /ws, with a client written here

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def ws_connect(port, path="/ws", headers=None):
    """Upgrades a new connection; returns (socket, head bytes, leftover)."""
    key = base64.b64encode(os.urandom(16))
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    h = headers if headers is not None else [
        b"Upgrade: websocket", b"Connection: Upgrade",
        b"Sec-WebSocket-Version: 13", b"Sec-WebSocket-Key: " + key]
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
              + b"".join(x + b"\r\n" for x in h) + b"\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        data = s.recv(65536)
        assert data, ("closed during the handshake", got)
        got += data
    head, rest = got.split(b"\r\n\r\n", 1)
    if head.startswith(b"HTTP/1.1 101 "):
        want = base64.b64encode(hashlib.sha1(key + WS_GUID).digest())
        assert b"\r\nSec-WebSocket-Accept: " + want in head, head
    return s, head, rest


def ws_frame(opcode, payload, fin=True, mask=True):
    n = len(payload)
    b0 = (0x80 if fin else 0) | opcode
    m = 0x80 if mask else 0
    if n < 126:
        h = struct.pack("!BB", b0, m | n)
    elif n < 65536:
        h = struct.pack("!BBH", b0, m | 126, n)
    else:
        h = struct.pack("!BBQ", b0, m | 127, n)
    if not mask:
        return h + payload
    key = os.urandom(4)
    return h + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class WsReader:
    def __init__(self, s, rest=b""):
        self.s, self.buf = s, rest

    def need(self, n):
        while len(self.buf) < n:
            data = self.s.recv(262144)
            assert data, "closed in the middle of a frame"
            self.buf += data
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def frame(self):
        """(fin, opcode, payload) of one unmasked frame."""
        b0, b1 = self.need(2)
        assert not b1 & 0x80, "a server frame is masked"
        n = b1 & 0x7f
        if n == 126:
            n = struct.unpack("!H", self.need(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.need(8))[0]
        return bool(b0 & 0x80), b0 & 0x0f, self.need(n)


def assert_closed(s):
    """The peer closes: EOF (or a reset) within the deadline."""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return
    except ConnectionResetError:
        return


def test_origin_ws_echo(origin):
    s, head, rest = ws_connect(origin.ports[0])
    try:
        assert head.startswith(b"HTTP/1.1 101 "), head
        r = WsReader(s, rest)

        for n in (10, 200, 70000):
            payload = os.urandom(n)
            s.sendall(ws_frame(2, payload))
            assert r.frame() == (True, 2, payload), n

        # a text message in three fragments, a ping between them
        s.sendall(ws_frame(1, b"hel", fin=False) + ws_frame(9, b"p1")
                  + ws_frame(0, b"lo ", fin=False) + ws_frame(0, b"ws"))
        assert r.frame() == (False, 1, b"hel")
        assert r.frame() == (True, 10, b"p1")
        assert r.frame() == (False, 0, b"lo ")
        assert r.frame() == (True, 0, b"ws")

        # two frames in one write, one of 64 KiB + 1 (a 64-bit length)
        big = os.urandom(65536)
        s.sendall(ws_frame(2, b"a") + ws_frame(2, big))
        assert r.frame() == (True, 2, b"a")
        assert r.frame() == (True, 2, big)

        s.sendall(ws_frame(9, b"ping!"))
        assert r.frame() == (True, 10, b"ping!")

        s.sendall(ws_frame(8, struct.pack("!H", 1000) + b"bye"))
        assert r.frame() == (True, 8, struct.pack("!H", 1000) + b"bye")
        assert_closed(s)
    finally:
        s.close()


def test_origin_ws_rejects(origin):
    # an unmasked client frame closes the connection
    s, head, _ = ws_connect(origin.ports[0])
    try:
        assert head.startswith(b"HTTP/1.1 101 "), head
        s.sendall(ws_frame(2, b"x" * 10, mask=False))
        assert_closed(s)
    finally:
        s.close()

    # a continuation with no message begun, a fragmented ping
    for bad in (ws_frame(0, b"x"), ws_frame(9, b"x", fin=False)):
        s, head, _ = ws_connect(origin.ports[0])
        try:
            s.sendall(bad)
            assert_closed(s)
        finally:
            s.close()

    # no upgrade: 400
    s, head, _ = ws_connect(origin.ports[0],
                            headers=[b"Sec-WebSocket-Version: 13"])
    try:
        assert head.startswith(b"HTTP/1.1 400 "), head
    finally:
        s.close()

    # the origin still serves
    assert origin.get("/tiny")[:2] == (200, TINY)


def test_client_ws(origin):
    for n in (0, 100, 70000):
        row = probe("-c", 4, "-d", 0.5, "--ws", n, "-u", origin.url("/ws"))
        assert_clean(row)
        assert row["mode"] == "websocket" and row["body"] == n
        assert row["bytes_written"] >= row["requests"] * n
        assert row["bytes_read"] >= row["requests"] * n

    # not a WebSocket endpoint: a status error, no round trip
    row = probe("-c", 1, "-d", 0.3, "--ws", 10, "-u", origin.url("/tiny"))
    assert row["requests"] == 0
    assert row["status_other"] > 0 and row["errors"] > 0, row


def test_client_read_pause(origin):
    """256 KiB read 16 KiB at a time, 8 ms apart: at least 16 pauses."""
    row = probe("-c", 2, "-d", 1, "--read-pause", "16384:8",
                "--rcvbuf", 16384, "-u", origin.url("/size/262144"))
    assert_clean(row)
    assert row["bytes_read"] >= row["requests"] * 262144
    assert row["p50_us"] >= 100000, row

    for bad in ("16384", "x:8", "0:8"):
        r = subprocess.run([PROBE, "--read-pause", bad,
                            "-u", origin.url("/tiny")],
                           capture_output=True, timeout=DEADLINE)
        assert r.returncode == 2 and r.stderr, bad


# ---- weir-probe hold

class Hold:
    def __init__(self, *args):
        self.proc = subprocess.Popen([PROBE, "hold"] + [str(a) for a in args],
                                     stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.out = b""

    def wait_line(self, what):
        def seen():
            if what in self.out:
                return True
            r, _, _ = select.select([self.proc.stdout], [], [], POLL)
            if r:
                data = os.read(self.proc.stdout.fileno(), 4096)
                assert data or what in self.out, ("hold closed stdout",
                                                  self.out)
                self.out += data
            return what in self.out

        wait_for(seen, what="weir-probe hold to print %r" % what)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError("weir-probe hold ignored SIGTERM")
        self.out += out
        return self.proc.returncode, self.out.decode(), err.decode()


def test_hold(origin):
    h = Hold("-c", 300, "-u", origin.url("/tiny"))
    try:
        h.wait_line(b"weir-probe hold: 300 idle\n")
        st = origin.stats()
        # the idle ones, and the one asking for /stats
        assert st["open"] == 301, st
        assert st["requests"] >= 300, st
    finally:
        rc, out, err = h.stop()
    assert rc == 0, err
    assert out.endswith("weir-probe hold: 300 open at end, "
                        "0 closed by peer\n"), out


def test_hold_peer_closes(origin):
    h = Hold("-c", 20, "-u", origin.url("/tiny", 1))
    try:
        h.wait_line(b"weir-probe hold: 20 idle\n")
        # the origin's exit closes them all before hold is told to end
        origin.stop()
    finally:
        rc, out, err = h.stop()
    assert rc == 0, err
    assert "weir-probe hold: 0 open at end, 20 closed by peer\n" in out, out


def test_hold_unreachable():
    port = free_port()
    t = time.monotonic()
    h = Hold("-c", 5, "-T", 3, "-d", 0.2,
             "-u", "http://127.0.0.1:%d/" % port)
    try:
        h.wait_line(b"weir-probe hold: 0 idle\n")
    finally:
        rc, out, err = h.stop()
    assert time.monotonic() - t < DEADLINE
    assert rc == 0, err
    assert "5 of 5 connections failed" in err and "connect 5" in err, err
    assert out.endswith("weir-probe hold: 0 open at end, "
                        "0 closed by peer\n"), out

    r = subprocess.run([PROBE, "hold", "-c", "10"], capture_output=True,
                       timeout=DEADLINE)
    assert r.returncode == 2 and r.stderr


# ---- HTTP/2: the client and the origin, and independent peers

def have_h2_build():
    path = os.path.join(weirtest.WEIR_BUILD_DIR, "weir_auto_config.h")
    with open(path) as f:
        text = f.read()
    return "WEIR_HAVE_NGHTTP2" in text and "WEIR_HAVE_OPENSSL" in text


@pytest.fixture(scope="module")
def h2_cert(tmp_path_factory):
    if not have_h2_build():
        pytest.skip("weir was configured without nghttp2 or OpenSSL")
    d = tmp_path_factory.mktemp("h2cert")
    key, cert = str(d / "key.pem"), str(d / "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                    "-subj", "/CN=localhost"], check=True,
                   capture_output=True, timeout=DEADLINE)
    return cert, key


@pytest.fixture
def h2_origin(h2_cert):
    """The origin with a plain listener (h2c or HTTP/1.1) and a TLS one
    (ALPN h2 or http/1.1)."""
    o = Origin(tls=h2_cert)
    try:
        yield o
    finally:
        o.stop()


def h2_urls(o, path):
    return [("h2", o.url(path)),
            ("tls+h2", "https://localhost:%d%s" % (o.ports[1], path))]


def test_h2_client_against_origin(h2_origin):
    """--h2 with -m 8 over h2c and TLS: GETs and POST echoes of 64 KiB
    and 1 MiB, every stream counted by the origin exactly as the client
    reports it (-n starts no more streams than it needs), on exactly -c
    connections."""
    o = h2_origin
    before = o.stats()
    runs = 0
    for proto, url in h2_urls(o, "/tiny"):
        row = probe("--h2", "-c", 2, "-m", 8, "-n", 400, "-u", url)
        assert_clean(row)
        assert row["proto"] == proto and row["streams"] == 8
        assert row["requests"] == 400 and row["err_refused"] == 0
        assert row["bytes_read"] >= 400 * 64
        runs += 1
    for body, n in ((65536, 160), (1048576, 24)):
        for proto, url in h2_urls(o, "/echo"):
            row = probe("--h2", "-c", 2, "-m", 8, "-n", n, "-X", "POST",
                        "-b", body, "-u", url)
            assert_clean(row)
            assert row["proto"] == proto and row["requests"] == n, row
            assert row["method"] == "POST" and row["body"] == body
            assert row["bytes_read"] >= n * body, row
            assert row["bytes_written"] >= n * body, row
            runs += 1
    after = o.stats()
    assert after["requests"] - before["requests"] \
        == 2 * 400 + 2 * 160 + 2 * 24 + 1, (before, after)
    assert after["connections"] - before["connections"] \
        == 2 * runs + 1, (before, after)


def test_h2_client_modes(h2_origin):
    """--new-conn, -r, -w, -d and -T with --h2, and the text report."""
    o = h2_origin
    url = "https://localhost:%d/tiny" % o.ports[1]
    before = o.stats()["connections"]
    row = probe("--h2", "-c", 2, "-d", 0.5, "--new-conn", "-u", url)
    assert_clean(row)
    assert row["mode"] == "new-conn"
    assert o.stats()["connections"] - before >= row["requests"]

    row = probe("--h2", "-c", 2, "-m", 4, "-d", 1, "-r", 100,
                "-u", o.url("/tiny"))
    assert_clean(row)
    assert 0 < row["requests"] <= 110

    # eight streams of 100 ms: at most ~80 a second, latency >= 100 ms
    row = probe("--h2", "-c", 1, "-m", 8, "-d", 1, "-w", 0.3,
                "-u", o.url("/delay/100"))
    assert_clean(row)
    assert row["p50_us"] >= 100000
    assert row["requests"] <= 8 * row["duration_s"] / 0.1 + 8

    # -T: every stream of a 5 s delay times out, the run still ends
    t = time.monotonic()
    row = probe("--h2", "-c", 1, "-m", 4, "-d", 1, "-T", 0.2,
                "-u", o.url("/delay/5000"))
    assert time.monotonic() - t < DEADLINE
    assert row["requests"] == 0 and row["err_timeout"] >= 4, row
    assert row["errors"] == row["err_timeout"], row

    r = subprocess.run([PROBE, "--h2", "-c", "2", "-m", "4", "-n", "50",
                        "-u", o.url("/size/1000")],
                       capture_output=True, timeout=DEADLINE)
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    assert text.startswith("weir-probe: h2, 2 connections x 4 streams, "
                           "keep-alive, GET, 1 URL"), text
    assert "requests   50," in text, text
    assert "errors     0 (connect 0, timeout 0, read 0, write 0, " \
           "refused 0, status 0)" in text, text

    # 4xx answers are counted by class, as on HTTP/1
    row = probe("--h2", "-c", 1, "-m", 4, "-n", 20, "-u", o.url("/nope"))
    assert row["requests"] == 20 and row["status_4xx"] == 20, row


def test_h2_client_alpn_refused(tmp_path, h2_cert):
    """A TLS server that does not choose h2: connect errors, said once."""
    port = free_port()
    server = subprocess.Popen(["openssl", "s_server", "-quiet", "-www",
                               "-accept", "127.0.0.1:%d" % port,
                               "-cert", h2_cert[0], "-key", h2_cert[1]],
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        def up():
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True

        wait_for(up, what="openssl s_server to accept")
        cmd = [PROBE, "--h2", "-d", "0.3", "--csv-header",
               "-u", "https://localhost:%d/" % port]
        r = subprocess.run(cmd, capture_output=True, timeout=DEADLINE)
        assert r.returncode == 0, r.stderr
        err = r.stderr.decode()
        assert "did not choose h2 by ALPN" in err, err
        assert err.count("did not choose h2") == 1, err
        row = dict(zip(*(l.split(",") for l in
                         r.stdout.decode().splitlines())))
        assert row["requests"] == "0" and int(row["err_connect"]) > 0, row
    finally:
        server.terminate()
        server.wait(timeout=DEADLINE)


class RefusingH2:
    """A raw HTTP/2 server: on each connection it resets stream 1 with
    REFUSED_STREAM, and after the second request sends GOAWAY with
    last-stream-id 1, so every stream of the client is refused."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(POLL)
        self.port = self.sock.getsockname()[1]
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    @staticmethod
    def frame(ftype, flags, sid, payload=b""):
        return (struct.pack(">I", len(payload))[1:]
                + struct.pack(">BBI", ftype, flags, sid) + payload)

    def serve(self, c):
        c.settimeout(DEADLINE)
        buf = b""
        headers = 0
        goaway = False
        c.sendall(self.frame(4, 0, 0))             # SETTINGS
        while not self.stop:
            data = c.recv(65536)
            if not data:
                return
            buf += data
            if buf.startswith(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"):
                buf = buf[24:]
            while len(buf) >= 9:
                n = struct.unpack(">I", b"\0" + buf[:3])[0]
                if len(buf) < 9 + n:
                    break
                ftype, flags, sid = struct.unpack(">BBI", buf[3:9])
                buf = buf[9 + n:]
                if ftype == 4 and not flags & 1:
                    c.sendall(self.frame(4, 1, 0))  # SETTINGS ack
                if ftype == 1:
                    headers += 1
                    if sid == 1:
                        c.sendall(self.frame(3, 0, 1,
                                             struct.pack(">I", 7)))
                    if headers >= 2 and not goaway:
                        goaway = True
                        c.sendall(self.frame(7, 0, 0,
                                             struct.pack(">II", 1, 0)))

    def run(self):
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                self.serve(c)
            except OSError:
                pass
            finally:
                c.close()

    def close(self):
        self.stop = True
        self.sock.close()
        self.thread.join(DEADLINE)


def test_h2_client_counts_refused_streams(h2_cert):
    """REFUSED_STREAM and streams above GOAWAY's last-stream-id are
    counted as "refused", apart from read errors."""
    server = RefusingH2()
    try:
        row = probe("--h2", "-c", 1, "-m", 8, "-d", 0.5,
                    "-u", "http://127.0.0.1:%d/" % server.port)
    finally:
        server.close()
    assert row["requests"] == 0, row
    assert row["err_refused"] >= 8, row
    assert row["errors"] == row["err_refused"], row


def test_h2_origin_against_curl(h2_origin):
    o = h2_origin
    for opt, base in (("--http2-prior-knowledge", o.url("")),
                      ("--http2", "https://localhost:%d" % o.ports[1])):
        def curl(path, *extra):
            r = subprocess.run(["curl", "-sk", opt, "-o", "-", "-w",
                                "\n%{http_version} %{http_code}"]
                               + list(extra) + [base + path],
                               capture_output=True, timeout=DEADLINE)
            assert r.returncode == 0, (path, r.stderr)
            body, _, tail = r.stdout.rpartition(b"\n")
            version, code = tail.split()
            assert version == b"2", (path, tail)
            return int(code), body

        assert curl("/tiny") == (200, TINY)
        code, body = curl("/size/100000")
        assert code == 200 and len(body) == 100000
        code, body = curl("/chunked/50000")
        assert code == 200 and len(body) == 50000
        t = time.monotonic()
        assert curl("/delay/200/size/7") == (200, b"abcdefg")
        assert time.monotonic() - t >= 0.2
        assert curl("/ws")[0] == 400
        assert curl("/nothing-here")[0] == 404
        assert curl("/early", "--data-binary", "x" * 100000) \
            == (200, b"early\n")
        stats = curl("/stats")[1].decode()
        assert stats.startswith("connections "), stats
    # curl falls back to HTTP/1.1 over TLS when it does not offer h2
    r = subprocess.run(["curl", "-sk", "--http1.1", "-o", "/dev/null", "-w",
                        "%{http_version}",
                        "https://localhost:%d/tiny" % o.ports[1]],
                       capture_output=True, timeout=DEADLINE)
    assert r.stdout == b"1.1", r


def test_h2_origin_echo_against_curl(h2_origin, tmp_path):
    o = h2_origin
    payload = os.urandom(1048576 + 17)
    f = tmp_path / "body"
    f.write_bytes(payload)
    for opt, base in (("--http2-prior-knowledge", o.url("")),
                      ("--http2", "https://localhost:%d" % o.ports[1])):
        r = subprocess.run(["curl", "-sk", opt, "--data-binary",
                            "@%s" % f, base + "/echo"],
                           capture_output=True, timeout=DEADLINE)
        assert r.returncode == 0, r.stderr
        assert r.stdout == payload


def need(tool):
    if shutil.which(tool) is None:
        pytest.skip("%s not installed (sh auto/deps --bench)" % tool)


def test_h2_origin_against_nghttp(h2_origin, tmp_path):
    need("nghttp")
    o = h2_origin
    payload = os.urandom(70000)
    f = tmp_path / "body"
    f.write_bytes(payload)
    for base in (o.url(""), "https://localhost:%d" % o.ports[1]):
        r = subprocess.run(["nghttp", base + "/size/100000"],
                           capture_output=True, timeout=DEADLINE)
        assert r.returncode == 0, r.stderr
        assert len(r.stdout) == 100000
        r = subprocess.run(["nghttp", "-d", str(f), base + "/echo"],
                           capture_output=True, timeout=DEADLINE)
        assert r.returncode == 0, r.stderr
        assert r.stdout == payload
        # several streams on one connection
        r = subprocess.run(["nghttp", "-m", "8", "-s", base + "/tiny"],
                           capture_output=True, timeout=DEADLINE)
        assert r.returncode == 0, r.stderr


def test_h2_origin_against_h2load(h2_origin):
    need("h2load")
    o = h2_origin
    before = o.stats()["requests"]
    for url in (o.url("/tiny"), "https://localhost:%d/tiny" % o.ports[1]):
        r = subprocess.run(["h2load", "-n", "1000", "-c", "2", "-m", "8",
                            url], capture_output=True, timeout=DEADLINE * 3)
        assert r.returncode == 0, r.stderr
        out = r.stdout.decode()
        assert "1000 succeeded, 0 failed, 0 errored" in out, out
        assert "status codes: 1000 2xx" in out, out
        if url.startswith("https"):
            assert "Application protocol: h2" in out, out
    assert o.stats()["requests"] - before == 2000 + 1


def test_hold_sends_a_get():
    """The request hold sends on each connection is a well-formed GET
    (a strict server, weir or nginx, answers anything else 400 and the
    connection is not held)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    got = []

    def serve():
        c, _ = srv.accept()
        with c:
            data = b""
            while b"\r\n\r\n" not in data:
                more = c.recv(4096)
                if not more:
                    break
                data += more
            got.append(data)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            c.settimeout(DEADLINE)
            try:
                c.recv(1)
            except OSError:
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    h = Hold("-c", 1, "-u", "http://127.0.0.1:%d/tiny" % port)
    try:
        h.wait_line(b"weir-probe hold: 1 idle\n")
    finally:
        rc, out, err = h.stop()
        srv.close()
        t.join(DEADLINE)
    assert rc == 0, err
    assert got and got[0].startswith(b"GET /tiny HTTP/1.1\r\n"), got


# ---- --proxy: through an HTTP forward proxy (weir's, docs/mitm.md, or
# one written here), and --cacert

MITM_CA_NAME = "weir mitm test CA"      # the CA weir mints leaves with


def probe_text(*args):
    """Runs the client with its text report; returns (stdout, stderr)."""
    cmd = [PROBE] + [str(a) for a in args]
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=DEADLINE * 3)
    assert r.returncode == 0, (cmd, r.returncode, r.stderr)
    return r.stdout.decode(), r.stderr.decode()


def proxy_weir(weir, dns, ports=(), mitm=None):
    """weir as a forward proxy on 127.0.0.1:PORT (CONNECT allowed to
    ports) logging every request to logs/probe.log; mitm: (CA cert, CA
    key, the CA of the origins) to decrypt. Returns PORT once it
    accepts."""
    import tlspki

    port = weir.port()
    fmt = "$connection \"$request\" $status"
    preamble = ""
    lines = ""
    if ports:
        lines += ("        forward_proxy_connect_ports %s;\n"
                  % " ".join(str(p) for p in ports))
    if mitm:
        preamble = tlspki.mitm_preamble()
        fmt = "$connection $mitm $server_protocol \"$request\" $status"
        lines += ("        mitm on;\n"
                  "        mitm_certificate %s;\n"
                  "        mitm_certificate_key %s;\n"
                  "        proxy_ssl_trusted_certificate %s;\n" % mitm)
    weir.conf(preamble +
              "worker_processes 1;\n"
              "http {\n"
              "    resolver %s;\n"
              "    proxy_connect_timeout 3s;\n"
              "    proxy_read_timeout 5s;\n"
              "    log_format probe '%s';\n"
              "    access_log logs/probe.log probe;\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        forward_proxy on;\n"
              "%s"
              "    }\n"
              "}\n" % (dns.addr, fmt, port, lines))
    weir.start(check_ports=False)

    def up():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(up, what="weir's proxy port to accept")
    return port


def mitm_of(weir, pki):
    """weir's interception CA: (cert, key copied 0600 into the prefix,
    the test CA that signs the origins' leaves)."""
    ca = pki.other_ca(MITM_CA_NAME)
    key = weir.path("conf", "probe-mitm-ca.key")
    shutil.copyfile(ca.key, key)
    os.chmod(key, 0o600)
    return ca.cert, key, pki.ca_cert


def log_lines(weir, pattern, n):
    """Waits until logs/probe.log has n lines matching pattern (a regular
    expression); returns all the matching lines."""
    import re

    rx = re.compile(pattern)
    path = weir.path("logs", "probe.log")

    def enough():
        try:
            with open(path, errors="replace") as f:
                got = [l for l in f.read().splitlines() if rx.search(l)]
        except FileNotFoundError:
            return None
        return got if len(got) >= n else None

    return wait_for(enough, what="%d lines of %s matching %r"
                    % (n, path, pattern))


@pytest.fixture
def tls_origin(pki):
    """The origin with a plain listener and a TLS one whose leaf, signed
    by the test PKI's CA, names localhost and 127.0.0.1."""
    if not have_openssl_build():
        pytest.skip("weir was configured without OpenSSL")
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    o = Origin(tls=(leaf.chain, leaf.key))
    try:
        yield o
    finally:
        o.stop()


def test_client_proxy_absolute_form(weir, dns, origin):
    """http:// through --proxy: every request goes to the proxy in
    absolute form (GET http://127.0.0.1:PORT/tiny) on keep-alive
    connections (-c 2: two connections carry them all), no CONNECT; all
    50 reach the origin and are 200."""
    port = proxy_weir(weir, dns)
    before = origin.stats()
    row = probe("-c", 2, "-n", 50, "-d", 10,
                "--proxy", "127.0.0.1:%d" % port, "-u", origin.url("/tiny"))
    assert_clean(row)
    assert row["requests"] == 50 and row["proto"] == "http/1.1", row
    # (+ 1: this /stats; the other connection may have had one more in
    # flight at -n, dropped by the probe)
    after = origin.stats()
    assert 50 + 1 <= after["requests"] - before["requests"] <= 50 + 2, \
        (before, after)
    lines = log_lines(weir, r' "GET http://127\.0\.0\.1:%d/tiny HTTP/1\.1" '
                      r'200$' % origin.ports[0], 50)
    assert 50 <= len(lines) <= 51, lines
    assert len(set(l.split()[0] for l in lines)) == 2, lines

    # the text report says the proxy, which takes an http:// prefix too
    out, _ = probe_text("-n", 5, "--proxy", "http://127.0.0.1:%d/" % port,
                        "-u", origin.url("/tiny"))
    assert "requests   5," in out, out
    assert "errors     0 (" in out, out
    assert "  proxy      http://127.0.0.1:%d/, CONNECT 0\n" % port in out, out


def test_client_proxy_connect_mitm(weir, dns, pki, tls_origin):
    """https:// through --proxy to weir with `mitm on`: a CONNECT per
    connection, then TLS with weir's minted leaf for 127.0.0.1 (an
    iPAddress name) verified with --cacert weir's CA: all requests 200,
    and weir's access log has them decrypted. Keep-alive connections
    CONNECT once (-c 2: 2 CONNECTs), --new-conn once per request (the
    report counts them). --cacert the wrong CA: verification fails,
    connect errors, said on stderr."""
    o = tls_origin
    ca = mitm_of(weir, pki)
    port = proxy_weir(weir, dns, [o.ports[1]], mitm=ca)
    proxy = "127.0.0.1:%d" % port
    url = "https://127.0.0.1:%d/tiny" % o.ports[1]
    before = o.stats()
    row = probe("-c", 2, "-n", 40, "-d", 10, "--proxy", proxy,
                "--cacert", ca[0], "-u", url)
    assert_clean(row)
    assert row["requests"] == 40 and row["proto"] == "tls+http/1.1", row
    after = o.stats()
    assert 40 + 1 <= after["requests"] - before["requests"] <= 40 + 2, \
        (before, after)
    lines = log_lines(weir, r' decrypted HTTP/1\.1 "GET /tiny HTTP/1\.1" '
                      r'200$', 40)
    assert 40 <= len(lines) <= 41, lines
    # logged when each tunnel ends: the probe closed its two at exit
    connects = log_lines(weir, r' intercepted HTTP/1\.1 "CONNECT 127\.0\.0'
                         r'\.1:%d HTTP/1\.1" 200$' % o.ports[1], 2)
    assert len(connects) == 2, connects
    assert sorted(l.split()[0] for l in connects) \
        == sorted(set(l.split()[0] for l in lines)), (connects, lines)

    out, err = probe_text("--new-conn", "-n", 10, "--proxy", proxy,
                          "--cacert", ca[0], "-u", url)
    assert "requests   10," in out, out
    assert "errors     0 (" in out, out
    assert "  proxy      %s, CONNECT 10 (200 10)\n" % proxy in out, out
    assert err == "", err

    # the test CA signed the origin's leaf, not weir's
    cmd = [PROBE, "-d", 0.5, "--proxy", proxy, "--cacert", pki.ca_cert,
           "--csv-header", "-u", url]
    r = subprocess.run([str(a) for a in cmd], capture_output=True,
                       timeout=DEADLINE)
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert "certificate verification failed" in err, err
    row = dict(zip(*(l.split(",") for l in r.stdout.decode().splitlines())))
    assert row["requests"] == "0" and int(row["err_connect"]) > 0, row


def test_client_proxy_connect_mitm_h2(weir, dns, pki, tls_origin):
    """--h2 through --proxy to weir with `mitm on`: CONNECT, TLS with
    ALPN h2 (weir's leaf verified), -m 8 streams on each of 2
    connections: all 200, decrypted HTTP/2 in weir's log."""
    if not have_h2_build():
        pytest.skip("weir was configured without nghttp2 or OpenSSL")
    o = tls_origin
    ca = mitm_of(weir, pki)
    port = proxy_weir(weir, dns, [o.ports[1]], mitm=ca)
    url = "https://127.0.0.1:%d/tiny" % o.ports[1]
    row = probe("--h2", "-c", 2, "-m", 8, "-n", 200, "-d", 10,
                "--proxy", "127.0.0.1:%d" % port, "--cacert", ca[0],
                "-u", url)
    assert_clean(row)
    assert row["requests"] == 200 and row["proto"] == "tls+h2", row
    lines = log_lines(weir, r' decrypted HTTP/2\.0 "GET /tiny HTTP/2\.0" '
                      r'200$', 200)
    assert len(lines) == 200, lines
    assert len(set(l.split()[0] for l in lines)) == 2, lines


def test_client_proxy_new_host(weir, dns, pki):
    """--new-host: every connection's CONNECT, SNI and verified name is
    a host never named before, one label under the URL's (a wildcard
    DNS name and a wildcard origin leaf serve them all): 12 requests,
    --new-conn, 12 distinct intercepted CONNECTs in weir's log, each
    leaf verified for its own name. Without --proxy: a usage error."""
    if not have_openssl_build():
        pytest.skip("weir was configured without OpenSSL")
    leaf = pki.leaf("*.nh.test", "nh.test")
    o = Origin(tls=(leaf.chain, leaf.key))
    try:
        dns.add("*.nh.test", ("A", "127.0.0.1", 60))
        ca = mitm_of(weir, pki)
        port = proxy_weir(weir, dns, [o.ports[1]], mitm=ca)
        row = probe("--new-conn", "--new-host", "-n", 12, "-d", 10,
                    "--proxy", "127.0.0.1:%d" % port, "--cacert", ca[0],
                    "-u", "https://nh.test:%d/tiny" % o.ports[1])
        assert_clean(row)
        assert row["requests"] == 12, row
        lines = log_lines(weir, r' intercepted HTTP/1\.1 "CONNECT '
                          r'n\d+-\d+-\d+\.nh\.test:%d HTTP/1\.1" 200$'
                          % o.ports[1], 12)
        hosts = set(l.split('"')[1].split()[1] for l in lines)
        assert len(lines) == 12 and len(hosts) == 12, lines
    finally:
        o.stop()
    r = subprocess.run([PROBE, "--new-host", "-n", "1", "-u",
                        "https://nh.test:1/"], capture_output=True,
                       timeout=DEADLINE)
    assert r.returncode == 2 and b"--new-host needs --proxy" in r.stderr, \
        r.stderr


def test_client_proxy_connect_refused(weir, dns):
    """A CONNECT weir refuses (the port is not in
    forward_proxy_connect_ports: 403) is a connect error, over HTTP/1.1
    and HTTP/2, retried: the run ends at -d with no request, the report
    has the 403s, stderr says it once with the proxy's status line."""
    if not have_openssl_build():
        pytest.skip("weir was configured without OpenSSL")
    allowed, refused = free_port(), free_port()
    port = proxy_weir(weir, dns, [allowed])
    proxy = "127.0.0.1:%d" % port
    for h2 in ([], ["--h2"]) if have_h2_build() else ([],):
        t = time.monotonic()
        out, err = probe_text(*(h2 + ["-c", 2, "-d", 0.5, "--proxy", proxy,
                                      "-u", "https://127.0.0.1:%d/tiny"
                                      % refused]))
        assert time.monotonic() - t < DEADLINE
        assert "requests   0," in out, out
        errors = [l for l in out.splitlines() if "errors " in l][0]
        n = int(errors.split()[1])
        assert n > 0 and "(connect %d, timeout 0," % n in errors, out
        assert "  proxy      %s, CONNECT %d (403 %d)\n" % (proxy, n, n) \
            in out, out
        assert err == ("weir-probe: proxy %s answered CONNECT 127.0.0.1:%d "
                       "with \"HTTP/1.1 403 Forbidden\": counted as "
                       "connect errors\n" % (proxy, refused)), err


class FakeProxy:
    """A CONNECT proxy written here: it records each request head, sends
    the answer's pieces (bytes, or a float: a pause in seconds), then
    relays the tunnel to 127.0.0.1 at the CONNECT's port (then="relay"),
    keeps the connection silent (then="hold") or closes it
    (then="close")."""

    def __init__(self, answer, then="relay"):
        self.answer = answer
        self.then = then
        self.heads = []
        self.socks = []
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _keep(self, s):
        with self.lock:
            self.socks.append(s)

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self._keep(c)
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            with self.lock:
                self.threads.append(t)
            t.start()

    @staticmethod
    def _pump(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _serve(self, c):
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                more = c.recv(4096)
                if not more:
                    return
                data += more
            head = data[:data.index(b"\r\n\r\n") + 4]
            with self.lock:
                self.heads.append(head)
            for piece in self.answer:
                if isinstance(piece, float):
                    time.sleep(piece)
                else:
                    c.sendall(piece)
            if self.then == "close":
                return
            if self.then == "hold":
                while c.recv(4096):
                    pass
                return
            target = int(head.split(b" ")[1].rsplit(b":", 1)[1])
            o = socket.create_connection(("127.0.0.1", target),
                                         timeout=DEADLINE)
            o.settimeout(None)
            self._keep(o)
            back = threading.Thread(target=self._pump, args=(o, c),
                                    daemon=True)
            back.start()
            self._pump(c, o)
            back.join(DEADLINE)
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        with self.lock:
            socks, threads = list(self.socks), list(self.threads)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        for t in threads:
            t.join(DEADLINE)


@pytest.fixture
def fake_proxy():
    made = []

    def make(answer, then="relay"):
        p = FakeProxy(answer, then)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def test_client_proxy_answer_parsing(pki, fake_proxy):
    """The CONNECT is exactly `CONNECT host:port HTTP/1.1` with its Host,
    once per connection, for a name the probe never resolves (the proxy
    does: .invalid resolves nowhere); the answer may come in pieces, after
    an interim 100, with headers: TLS then starts right after its head
    (SNI and the host check are the URL's name, verified with --cacert),
    over HTTP/1.1 and HTTP/2."""
    if not have_openssl_build():
        pytest.skip("weir was configured without OpenSSL")
    leaf = pki.leaf("probe.invalid")
    o = Origin(tls=(leaf.chain, leaf.key))
    try:
        p = fake_proxy([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 Conn",
                        0.1, b"ection established\r\nVia: 1.1 fake\r\n",
                        0.1, b"\r\n"])
        connect = (b"CONNECT probe.invalid:%d HTTP/1.1\r\n"
                   b"Host: probe.invalid:%d\r\n\r\n"
                   % (o.ports[1], o.ports[1]))
        url = "https://probe.invalid:%d/tiny" % o.ports[1]
        runs = [["-c", 2, "-n", 30]]
        if have_h2_build():
            runs.append(["--h2", "-c", 2, "-m", 4, "-n", 60])
        for args in runs:
            del p.heads[:]
            row = probe(*(args + ["-d", 10, "--proxy",
                                  "127.0.0.1:%d" % p.port,
                                  "--cacert", pki.ca_cert, "-u", url]))
            assert_clean(row)
            assert row["requests"] == args[-1], row
            assert p.heads == [connect, connect], p.heads
    finally:
        o.stop()


def test_client_proxy_failures_are_bounded(fake_proxy):
    """A proxy that never answers the CONNECT: -T bounds it (timeouts,
    the run ends at -d); one that closes without an answer, or answers
    something that is not HTTP: connect errors, counted as "bad"."""
    silent = fake_proxy([], then="hold")
    t = time.monotonic()
    row = probe("-c", 1, "-d", 1, "-T", 0.2, "--proxy",
                "127.0.0.1:%d" % silent.port, "-u", "https://a.test:1/")
    assert time.monotonic() - t < DEADLINE
    assert row["requests"] == 0 and row["err_timeout"] >= 2, row
    assert row["errors"] == row["err_timeout"], row
    assert len(silent.heads) >= 2, silent.heads

    for answer, then, said in (
            ([], "close", "closed CONNECT a.test:1 without an answer"),
            ([b"SSH-2.0-nope\r\n\r\n"], "hold",
             "answered CONNECT a.test:1 with \"SSH-2.0-nope\" (no valid "
             "head)")):
        bad = fake_proxy(answer, then=then)
        proxy = "127.0.0.1:%d" % bad.port
        out, err = probe_text("-c", 1, "-d", 0.3, "--proxy", proxy,
                              "-u", "https://a.test:1/")
        assert "requests   0," in out, out
        errors = [l for l in out.splitlines() if "errors " in l][0]
        n = int(errors.split()[1])
        assert n > 0 and "(connect %d, timeout 0," % n in errors, out
        assert "  proxy      %s, CONNECT %d (bad %d)\n" % (proxy, n, n) \
            in out, out
        assert err == "weir-probe: proxy %s %s: counted as connect " \
                      "errors\n" % (proxy, said), err


def test_client_cacert_direct(tls_origin, pki):
    """--cacert without --proxy: the origin's leaf (localhost and
    127.0.0.1, by the test CA) verifies for both hosts; another CA, or a
    leaf without the URL's host, fails as connect errors."""
    o = tls_origin
    for host in ("localhost", "127.0.0.1"):
        row = probe("-n", 20, "--cacert", pki.ca_cert,
                    "-u", "https://%s:%d/tiny" % (host, o.ports[1]))
        assert_clean(row)
        assert row["requests"] == 20, row

    other = pki.other_ca()
    named = pki.leaf("localhost")       # no IP address in it
    o2 = Origin(tls=(named.chain, named.key))
    try:
        for ca, port, host in ((other.cert, o.ports[1], "localhost"),
                               (pki.ca_cert, o2.ports[1], "127.0.0.1")):
            cmd = [PROBE, "-d", "0.3", "--cacert", ca, "--csv-header",
                   "-u", "https://%s:%d/tiny" % (host, port)]
            r = subprocess.run(cmd, capture_output=True, timeout=DEADLINE)
            assert r.returncode == 0, r.stderr
            err = r.stderr.decode()
            assert "certificate verification failed" in err, (host, err)
            row = dict(zip(*(l.split(",") for l in
                             r.stdout.decode().splitlines())))
            assert row["requests"] == "0", row
            assert int(row["err_connect"]) > 0, row
    finally:
        o2.stop()


def test_client_proxy_usage():
    """Bad --proxy and --cacert values stop with status 2 and a message;
    -h lists both options."""
    for args in (["--proxy", "127.0.0.1", "-u", "http://127.0.0.1:1/"],
                 ["--proxy", "127.0.0.1:0", "-u", "http://127.0.0.1:1/"],
                 ["--proxy", "127.0.0.1:70000", "-u", "http://127.0.0.1:1/"],
                 ["--proxy", "127.0.0.1:8x", "-u", "http://127.0.0.1:1/"],
                 ["--proxy", "[::1", "-u", "http://127.0.0.1:1/"],
                 ["--h2", "--proxy", "127.0.0.1:1",
                  "-u", "http://127.0.0.1:1/"]):
        r = subprocess.run([PROBE] + args, capture_output=True,
                           timeout=DEADLINE)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr, args
    if have_openssl_build():
        r = subprocess.run([PROBE, "--cacert", "/nonexistent/ca.pem",
                            "-u", "https://127.0.0.1:1/"],
                           capture_output=True, timeout=DEADLINE)
        assert r.returncode == 2 and b"--cacert" in r.stderr, r.stderr
    r = subprocess.run([PROBE, "client", "-h"], capture_output=True,
                       timeout=DEADLINE)
    assert r.returncode == 0
    assert b"--proxy HOST:PORT" in r.stdout and b"--cacert FILE" in r.stdout
