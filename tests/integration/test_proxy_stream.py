"""The proxy under streaming load: large bodies both ways with bounded
worker memory, chunked and early-answered request bodies, WebSocket
tunnels (wsorigin.py), reloads under proxied load, and many clients on a
slow origin sharing the keep-alive pool.

Origins: StreamOrigin below (a threaded HTTP/1.1 origin that serves big
predictable bodies and counts, checksums and times the bodies it is
sent), wsorigin.WsOrigin, and `weir-probe origin` (built next to weir)
for the load tests.

Sizes: the big bodies are 1 GiB on the normal build and 128 MiB on the
sanitizer build (WEIR_SANITIZER=1), where everything is several times
slower; the memory bound is looser there too (ASan's own bookkeeping
and quarantine grow a process's RSS).
"""

import os
import random
import re
import signal
import socket
import subprocess
import threading
import time
import zlib

import pytest

import weirtest
from weirtest import DEADLINE, SANITIZER, connect, wait_for
from wsorigin import (OP_BINARY, OP_CLOSE, OP_PING, OP_PONG, OP_TEXT,
                      OP_CONT, WsClient, WsOrigin, parse_head, read_head)


KiB = 1 << 10
MiB = 1 << 20

# 1 GiB; 128 MiB under the sanitizers (several times slower there)
BIG = (128 if SANITIZER else 1024) * MiB
# how much a worker's RSS may grow over its idle size during a transfer
RSS_SLACK = (96 if SANITIZER else 32) * MiB
# the client (or origin) reads slowly for this many bytes, then fast
SLOW_PART = 16 * MiB
SLOW_PIECE = 64 * KiB
SLOW_PAUSE = 0.002

PROBE = os.path.join(weirtest.WEIR_BUILD_DIR, "weir-probe")

# the big bodies are this block repeated (not periodic in 8 KiB, so a
# lost or doubled buffer changes the checksum)
BLOCK = random.Random(4).randbytes(MiB)

_crcs = {}


def expected_crc(size):
    """The CRC-32 of the first size bytes of BLOCK repeated."""
    if size not in _crcs:
        crc = 0
        left = size
        while left >= MiB:
            crc = zlib.crc32(BLOCK, crc)
            left -= MiB
        _crcs[size] = zlib.crc32(BLOCK[:left], crc)
    return _crcs[size]


# ---------------------------------------------------------------- origin

class _Conn:
    """Buffered reads off an origin-side socket."""

    def __init__(self, sock):
        self.s = sock
        self.buf = bytearray()

    def fill(self):
        data = self.s.recv(256 * KiB)
        if not data:
            raise EOFError("weir closed the origin connection")
        self.buf += data

    def head(self):
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > 64 * KiB:
                raise ValueError("request head too large")
            self.fill()
        i = self.buf.index(b"\r\n\r\n")
        head = bytes(self.buf[:i])
        del self.buf[:i + 4]
        return head

    def line(self):
        while b"\r\n" not in self.buf:
            if len(self.buf) > 4 * KiB:
                raise ValueError("line too long")
            self.fill()
        i = self.buf.index(b"\r\n")
        line = bytes(self.buf[:i])
        del self.buf[:i + 2]
        return line

    def read(self, n, sink, slow=None):
        """Passes exactly n bytes to sink(memoryview); slow(n_done) says
        whether to read the next piece in small, paused reads."""
        if self.buf:
            take = min(n, len(self.buf))
            sink(memoryview(self.buf)[:take])
            del self.buf[:take]
            n -= take
        big = bytearray(MiB)
        view = memoryview(big)
        while n > 0:
            if slow is not None and slow():
                got = self.s.recv_into(view, min(n, SLOW_PIECE))
                time.sleep(SLOW_PAUSE)
            else:
                got = self.s.recv_into(view, min(n, MiB))
            if got == 0:
                raise EOFError("weir closed in the middle of the body")
            sink(view[:got])
            n -= got


class Received:
    """What the origin saw of one request."""

    def __init__(self, line, headers):
        self.line = line
        self.headers = headers
        self.head_at = time.monotonic()
        self.first_body_at = None
        self.length = 0
        self.crc = 0
        self.body = bytearray()    # kept while under 4 MiB
        self.chunk_sizes = []      # as framed on the wire, chunked only
        self.done = False

    def take(self, view):
        if self.first_body_at is None and len(view):
            self.first_body_at = time.monotonic()
        self.length += len(view)
        self.crc = zlib.crc32(view, self.crc)
        if self.length <= 4 * MiB:
            self.body += view


class StreamOrigin:
    """HTTP/1.1 origin on 127.0.0.1 (free port), a thread per connection,
    keep-alive. Paths:

        GET  /big/N                200, N bytes (BLOCK repeated), length
        POST /count                reads the body (length or chunked),
                                   answers "count=N crc=C\\n"
        POST /count/slow           the same, the first SLOW_PART bytes in
                                   small paused reads
        POST /hold                 waits for release() before reading the
                                   body, then as /count
        POST /early/STATUS/MODE    answers STATUS after 8 KiB of the body;
                                   MODE drain: reads the rest, keeps the
                                   connection; close: "Connection: close",
                                   half-closes, reads until weir closes
        GET  anything else         200 "ok\\n"
    """

    def __init__(self):
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(256)
        self.ls.settimeout(0.1)
        self.port = self.ls.getsockname()[1]
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.released = threading.Event()
        self.socks = []
        self.threads = []
        self.connections = 0
        self.received = []
        self.errors = []
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    def release(self):
        self.released.set()

    def stop(self):
        self.stopping.set()
        self.released.set()
        self.accepter.join(timeout=5)
        with self.lock:
            socks = list(self.socks)
            threads = list(self.threads)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        for t in threads:
            t.join(timeout=5)
        self.ls.close()
        assert not [t for t in threads if t.is_alive()], \
            "origin threads did not stop"

    def _accept(self):
        while not self.stopping.is_set():
            try:
                s, _ = self.ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            s.settimeout(DEADLINE * 6)
            t = threading.Thread(target=self._serve, args=(s,), daemon=True)
            with self.lock:
                self.connections += 1
                self.socks.append(s)
                self.threads.append(t)
            t.start()

    def _serve(self, s):
        c = _Conn(s)
        try:
            while not self.stopping.is_set():
                try:
                    head = c.head()
                except (EOFError, ConnectionResetError):
                    # between requests weir may close a connection it
                    # gave up on (an early response) with bytes unread:
                    # the kernel turns that close into a reset
                    return
                line, headers = parse_head(head)
                rec = Received(line, headers)
                with self.lock:
                    self.received.append(rec)
                if not self._answer(c, rec):
                    return
        except (OSError, EOFError, ValueError) as exc:
            if not self.stopping.is_set():
                with self.lock:
                    self.errors.append(repr(exc))
        finally:
            s.close()

    def _body(self, c, rec, slow=False, limit=None):
        """Reads the request body into rec; with limit, only that many
        bytes (the rest stays unread). True when all of it was read."""
        h = rec.headers
        slow_fn = (lambda: rec.length < SLOW_PART) if slow else None
        if "chunked" in h.get("transfer-encoding", "").lower():
            while True:
                size = int(c.line().split(b";")[0], 16)
                if size == 0:
                    while c.line():
                        pass
                    break
                rec.chunk_sizes.append(size)
                c.read(size, rec.take, slow_fn)
                if c.line() != b"":
                    raise ValueError("no CRLF after chunk data")
            rec.done = True
            return True
        n = int(h.get("content-length", "0"))
        if limit is not None and limit < n:
            c.read(limit, rec.take)
            return False
        c.read(n, rec.take, slow_fn)
        rec.done = True
        return True

    @staticmethod
    def _send(s, status, body, close=False):
        s.sendall(b"HTTP/1.1 %d X\r\nContent-Type: text/plain\r\n"
                  b"Content-Length: %d\r\n%s\r\n%s"
                  % (status, len(body),
                     b"Connection: close\r\n" if close else b"", body))

    def _answer(self, c, rec):
        """Serves one request; False to close the connection."""
        parts = rec.line.split(" ")
        method, path = parts[0], parts[1]
        s = c.s
        if method == "GET" and path.startswith("/big/"):
            n = int(path[5:])
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/"
                      b"octet-stream\r\nContent-Length: %d\r\n\r\n" % n)
            view = memoryview(BLOCK)
            while n > 0:
                take = min(n, MiB)
                s.sendall(view[:take])
                n -= take
            return True
        if path in ("/count", "/count/slow", "/hold"):
            if path == "/hold":
                self.released.wait(DEADLINE * 3)
            self._body(c, rec, slow=path == "/count/slow")
            self._send(s, 200, b"count=%d crc=%d\n" % (rec.length, rec.crc))
            return True
        m = re.match(r"^/early/(\d+)/(drain|close)$", path)
        if m:
            status, mode = int(m.group(1)), m.group(2)
            all_read = self._body(c, rec, limit=8 * KiB)
            if mode == "close":
                # read until weir closes (bounded), so no reset can eat
                # the answer before weir read it; weir may have closed
                # (or reset) first
                try:
                    self._send(s, status, b"early\n", close=True)
                    s.shutdown(socket.SHUT_WR)
                    deadline = time.monotonic() + DEADLINE
                    while time.monotonic() < deadline:
                        if not s.recv(256 * KiB):
                            break
                except OSError:
                    pass
                return False
            self._send(s, status, b"early\n")
            if not all_read:
                # weir may stop sending the body once it has the answer
                # (and then close): both are fine
                rest = int(rec.headers["content-length"]) - rec.length
                try:
                    c.read(rest, rec.take)
                except (EOFError, ConnectionResetError):
                    return False
                rec.done = True
            return True
        self._body(c, rec)
        self._send(s, 200, b"ok\n")
        return True

    def last(self, path):
        with self.lock:
            for rec in reversed(self.received):
                if rec.line.split(" ")[1] == path:
                    return rec
        return None


@pytest.fixture
def origin():
    o = StreamOrigin()
    yield o
    o.stop()
    assert o.errors == [], "origin errors: %s" % o.errors[:5]


@pytest.fixture
def ws_origin():
    o = WsOrigin()
    yield o
    o.stop()
    assert o.errors == [], "websocket origin errors: %s" % o.errors[:5]


class ProbeOrigin:
    """`weir-probe origin` on a free port; stop() ends it."""

    def __init__(self):
        assert os.access(PROBE, os.X_OK), "weir-probe not built: %s" % PROBE
        self.proc = subprocess.Popen([PROBE, "origin", "-l", "127.0.0.1:0"],
                                     stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m is None:
            self.stop()
            raise AssertionError("weir-probe origin did not start: %r"
                                 % line)
        self.port = int(m.group(1))

    def stats(self):
        s = connect(self.port, timeout=DEADLINE)
        try:
            s.sendall(b"GET /stats HTTP/1.1\r\nHost: o\r\n"
                      b"Connection: close\r\n\r\n")
            data = weirtest.read_all(s, 65536).decode()
        finally:
            s.close()
        return {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", data)}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=DEADLINE)
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture
def probe_origin():
    o = ProbeOrigin()
    yield o
    o.stop()


# ---------------------------------------------------------------- weir

def proxy_conf(weir, port, server, http_extra="", main="", module=False,
               servers="", workers=1):
    """One HTTP server on port whose body is `server`."""
    return weir.conf(main +
                     "worker_processes %d;\n" % workers +
                     "http {\n"
                     "    access_log off;\n"
                     "%s"
                     "    server {\n"
                     "        listen 127.0.0.1:%d;\n"
                     "%s"
                     "    }\n"
                     "%s"
                     "}\n" % (http_extra, port, server, servers),
                     module=module)


def start_http(weir, *ports):
    weir.start(check_ports=False)

    for port in ports:
        def up():
            connect(port, timeout=1).close()
            return True

        wait_for(up, what="port %d to accept" % port)


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * KiB
    raise ValueError("no VmRSS for %d" % pid)


class RssSampler:
    """Samples the RSS of the workers every 20 ms in a thread; peak()
    is the largest seen per pid."""

    def __init__(self, pids):
        self.pids = list(pids)
        self.base = {p: rss(p) for p in self.pids}
        self.max = dict(self.base)
        self.stopping = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stopping.wait(0.02):
            for p in self.pids:
                try:
                    self.max[p] = max(self.max[p], rss(p))
                except (OSError, ValueError):
                    pass

    def stop(self):
        self.stopping.set()
        self.t.join(timeout=5)

    def check(self, slack=RSS_SLACK):
        for p in self.pids:
            grew = self.max[p] - self.base[p]
            assert grew <= slack, (
                "worker %d RSS grew by %.1f MiB (from %.1f MiB) during the "
                "transfer; the bound is %d MiB"
                % (p, grew / MiB, self.base[p] / MiB, slack // MiB))


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body


class Client:
    """HTTP/1.1 requests over one keep-alive connection."""

    def __init__(self, port, timeout=DEADLINE):
        self.port = port
        self.s = connect(port, timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.used = 0      # responses read on this connection

    def close(self):
        self.s.close()

    def _fill(self):
        data = self.s.recv(256 * KiB)
        if not data:
            raise EOFError("connection closed by weir")
        self.buf += data

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        i = self.buf.index(b"\r\n")
        line = bytes(self.buf[:i])
        del self.buf[:i + 2]
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def send(self, method, path, body=None, headers=()):
        req = "%s %s HTTP/1.1\r\nHost: weir\r\n" % (method, path)
        for h in headers:
            req += h + "\r\n"
        if body is not None:
            req += "Content-Length: %d\r\n" % len(body)
        self.s.sendall(req.encode("latin-1") + b"\r\n" + (body or b""))

    def response(self, method="GET"):
        while True:
            while b"\r\n\r\n" not in self.buf:
                self._fill()
            i = self.buf.index(b"\r\n\r\n")
            line, headers = parse_head(bytes(self.buf[:i]))
            del self.buf[:i + 4]
            status = int(line.split(" ")[1])
            if status >= 200 or status == 101:
                break
        self.used += 1
        if method == "HEAD" or status in (101, 204, 304):
            return Response(status, headers, b"")
        if "chunked" in headers.get("transfer-encoding", ""):
            body = bytearray()
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line():
                        pass
                    break
                body += self._exact(size)
                self._line()
            return Response(status, headers, bytes(body))
        if "content-length" in headers:
            return Response(status, headers,
                            self._exact(int(headers["content-length"])))
        body = bytearray(self.buf)
        self.buf.clear()
        while True:
            data = self.s.recv(256 * KiB)
            if not data:
                break
            body += data
        return Response(status, headers, bytes(body))

    def request(self, method, path, body=None, headers=()):
        self.send(method, path, body, headers)
        return self.response(method)


def workers_warm(weir, port):
    """The workers' pids after one small proxied request (so the worker
    made its one-time allocations before the RSS baseline)."""
    c = Client(port)
    try:
        r = c.request("GET", "/big/100000")
        assert r.status == 200 and r.body == BLOCK[:100000], r.status
    finally:
        c.close()
    return weir.workers()


# ---------------------------------------------------------------- 1.

@pytest.mark.parametrize("mode", ["unbuffered", "buffered-no-temp",
                                  "buffered-temp"])
def test_big_response_to_slow_reader(weir, origin, mode):
    port = weir.port()
    extra = {
        "unbuffered": "proxy_buffering off;",
        "buffered-no-temp": "proxy_buffering on; "
                            "proxy_max_temp_file_size 0;",
        "buffered-temp": "proxy_buffering on; "
                         "proxy_max_temp_file_size 2048m;",
    }[mode]
    proxy_conf(weir, port,
               "        location / {\n"
               "            proxy_pass http://127.0.0.1:%d;\n"
               "            %s\n"
               "        }\n" % (origin.port, extra))
    start_http(weir, port)
    pids = workers_warm(weir, port)
    sampler = RssSampler(pids)
    temp_seen = []

    s = connect(port, timeout=DEADLINE * 3)
    started = time.monotonic()
    try:
        s.sendall(b"GET /big/%d HTTP/1.1\r\nHost: weir\r\n\r\n" % BIG)
        head, rest = read_head(s)
        line, headers = parse_head(head)
        assert line.split(" ")[1] == "200", line
        assert headers.get("content-length") == str(BIG), headers

        count = len(rest)
        crc = zlib.crc32(rest)
        buf = bytearray(MiB)
        view = memoryview(buf)
        while count < BIG:
            if count < SLOW_PART:
                n = s.recv_into(view, min(SLOW_PIECE, BIG - count))
                time.sleep(SLOW_PAUSE)
                if mode == "buffered-temp" and not temp_seen:
                    temp_seen += deleted_files(pids)
            else:
                n = s.recv_into(view, min(MiB, BIG - count))
            assert n > 0, "weir closed after %d of %d bytes" % (count, BIG)
            crc = zlib.crc32(view[:n], crc)
            count += n
        elapsed = time.monotonic() - started
    finally:
        sampler.stop()
        s.close()

    assert count == BIG
    assert crc == expected_crc(BIG), "the body arrived corrupted"
    sampler.check()
    print("%s: %d MiB in %.1f s, RSS %s -> %s, temp files seen: %s"
          % (mode, BIG // MiB, elapsed, sampler.base, sampler.max,
             temp_seen))


def deleted_files(pids):
    """Paths of deleted regular files the processes hold open (the
    unlinked temporary files)."""
    found = []
    for p in pids:
        d = "/proc/%d/fd" % p
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            try:
                target = os.readlink(os.path.join(d, n))
            except OSError:
                continue
            if target.endswith(" (deleted)") and target.startswith("/"):
                found.append(target)
    return found


def open_temp_files(pids, needle):
    """(path, size) of the open unlinked files whose path has needle."""
    found = []
    for p in pids:
        d = "/proc/%d/fd" % p
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            path = os.path.join(d, n)
            try:
                target = os.readlink(path)
                size = os.stat(path).st_size
            except OSError:
                continue
            if needle in target and target.endswith(" (deleted)"):
                found.append((target, size))
    return found


# ---------------------------------------------------------------- 2.

def test_big_upload_streams_to_slow_origin(weir, origin):
    port = weir.port()
    proxy_conf(weir, port,
               "        client_max_body_size 0;\n"
               "        location / {\n"
               "            proxy_pass http://127.0.0.1:%d;\n"
               "            proxy_request_buffering off;\n"
               "        }\n" % origin.port)
    start_http(weir, port)
    pids = workers_warm(weir, port)
    sampler = RssSampler(pids)

    s = connect(port, timeout=DEADLINE * 3)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    started = time.monotonic()
    try:
        s.sendall(b"POST /count/slow HTTP/1.1\r\nHost: weir\r\n"
                  b"Content-Length: %d\r\n\r\n" % BIG)
        view = memoryview(BLOCK)
        sent = 0
        streamed = None
        while sent < BIG:
            take = min(MiB, BIG - sent)
            s.sendall(view[:take])
            sent += take
            if streamed is None and sent >= 64 * MiB:
                # the origin must be reading already: weir streams the
                # body instead of buffering all of it first
                rec = wait_for(
                    lambda: (origin.last("/count/slow") is not None
                             and origin.last("/count/slow").length > 0
                             and origin.last("/count/slow")),
                    what="the origin to receive body bytes while the "
                         "client is still sending")
                streamed = rec.length
        sent_at = time.monotonic()
        body = b""
        head, rest = read_head(s)
        line, headers = parse_head(head)
        n = int(headers.get("content-length", "-1"))
        body = rest
        while len(body) < n:
            data = s.recv(65536)
            assert data, "weir closed before the whole response"
            body += data
    finally:
        sampler.stop()
        s.close()

    assert line.split(" ")[1] == "200", (line, body)
    rec = origin.last("/count/slow")
    assert rec.first_body_at < sent_at
    assert body == b"count=%d crc=%d\n" % (BIG, expected_crc(BIG)), body
    assert rec.headers.get("content-length") == str(BIG), rec.headers
    sampler.check()
    print("upload: %d MiB in %.1f s; the origin had %d bytes when the "
          "client had sent 64 MiB; RSS %s -> %s"
          % (BIG // MiB, sent_at - started, streamed, sampler.base,
             sampler.max))


def test_buffered_upload_goes_to_temp_file(weir, origin):
    size = 32 * MiB
    port = weir.port()
    proxy_conf(weir, port,
               "        client_max_body_size 64m;\n"
               "        location / {\n"
               "            proxy_pass http://127.0.0.1:%d;\n"
               "            proxy_request_buffering on;\n"
               "        }\n" % origin.port)
    start_http(weir, port)
    pids = workers_warm(weir, port)

    s = connect(port, timeout=DEADLINE * 3)
    try:
        s.sendall(b"POST /hold HTTP/1.1\r\nHost: weir\r\n"
                  b"Content-Length: %d\r\n\r\n" % size)
        view = memoryview(BLOCK)
        for _ in range(size // MiB):
            s.sendall(view)
        # the whole body lands in the client body temp file before the
        # origin is asked (the origin holds the body unread meanwhile)
        files = wait_for(
            lambda: [f for f in open_temp_files(pids, "client_body_temp")
                     if f[1] == size],
            what="a %d-byte client body temp file in the worker" % size)
        rec = wait_for(lambda: origin.last("/hold"),
                       what="the request at the origin")
        assert rec.length == 0
        origin.release()
        head, rest = read_head(s)
        line, headers = parse_head(head)
        body = rest
        while len(body) < int(headers["content-length"]):
            data = s.recv(65536)
            assert data
            body += data
    finally:
        origin.release()
        s.close()

    assert line.split(" ")[1] == "200", line
    assert body == b"count=%d crc=%d\n" % (size, expected_crc(size))
    assert rec.headers.get("content-length") == str(size), rec.headers
    assert "transfer-encoding" not in rec.headers, rec.headers
    print("temp file:", files)


# ---------------------------------------------------------------- 3.

CHUNKS = [1, 2, 100, 8191, 8192, 8193, 70000, 3, 150000, 17]


@pytest.mark.parametrize("buffering", ["off", "on"])
def test_chunked_upload(weir, origin, buffering):
    port = weir.port()
    proxy_conf(weir, port,
               "        location / {\n"
               "            proxy_pass http://127.0.0.1:%d;\n"
               "            proxy_request_buffering %s;\n"
               "        }\n" % (origin.port, buffering))
    start_http(weir, port)

    data = random.Random(3).randbytes(sum(CHUNKS))
    wire = bytearray()
    pos = 0
    for n in CHUNKS:
        wire += b"%x\r\n" % n + data[pos:pos + n] + b"\r\n"
        pos += n
    wire += b"0\r\n\r\n"

    c = Client(port)
    try:
        c.s.sendall(b"POST /count HTTP/1.1\r\nHost: weir\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n")
        # in pieces, with pauses, so a streaming proxy sees it arrive
        for i in range(0, len(wire), 50000):
            c.s.sendall(wire[i:i + 50000])
            time.sleep(0.01)
        r = c.response()
        # the connection goes on
        r2 = c.request("GET", "/after")
    finally:
        c.close()

    assert r.status == 200, (r.status, r.body)
    assert r.body == b"count=%d crc=%d\n" % (len(data), zlib.crc32(data))
    assert r2.status == 200 and r2.body == b"ok\n"
    rec = origin.last("/count")
    assert bytes(rec.body) == data
    assert rec.line.endswith(" HTTP/1.1"), rec.line
    if buffering == "off":
        assert rec.headers.get("transfer-encoding") == "chunked", \
            rec.headers
        assert "content-length" not in rec.headers, rec.headers
    else:
        assert rec.headers.get("content-length") == str(len(data)), \
            rec.headers
        assert "transfer-encoding" not in rec.headers, rec.headers


# ---------------------------------------------------------------- 4.

@pytest.mark.parametrize("status,mode", [(200, "drain"), (413, "close")])
def test_early_response(weir, origin, status, mode):
    port = weir.port()
    proxy_conf(weir, port,
               "        location / {\n"
               "            proxy_pass http://127.0.0.1:%d;\n"
               "            proxy_request_buffering off;\n"
               "        }\n" % origin.port)
    start_http(weir, port)

    size = MiB
    c = Client(port)
    send_error = []

    def sender():
        try:
            view = memoryview(BLOCK)
            for i in range(0, size, 64 * KiB):
                c.s.sendall(view[i:i + 64 * KiB])
        except OSError as exc:
            send_error.append(exc)

    c.s.sendall(b"POST /early/%d/%s HTTP/1.1\r\nHost: weir\r\n"
                b"Content-Length: %d\r\n\r\n" % (status, mode.encode(), size))
    t = threading.Thread(target=sender, daemon=True)
    t.start()
    try:
        r = c.response()
        assert r.status == status, (r.status, r.body)
        assert r.body == b"early\n"
        t.join(timeout=DEADLINE * 2)
        assert not t.is_alive(), "the client's body send never ended"
        # then: either weir closed the client connection, or (having
        # read the whole body) it goes on with the next request
        # (the half-close ends a lingering close at once)
        try:
            c.send("GET", "/next")
            c.s.shutdown(socket.SHUT_WR)
            r2 = c.response()
        except (EOFError, ConnectionResetError, BrokenPipeError):
            kept = False
        else:
            kept = True
            assert r2.status == 200 and r2.body == b"ok\n", \
                (r2.status, r2.body)
    finally:
        c.close()

    rec = origin.last("/early/%d/%s" % (status, mode))
    assert rec is not None and rec.length >= 8 * KiB
    # and weir still serves
    c = Client(port)
    try:
        r3 = c.request("GET", "/big/1000")
        assert r3.status == 200 and r3.body == BLOCK[:1000]
    finally:
        c.close()
    print("early %d/%s: client connection %s, send error %s"
          % (status, mode, "kept" if kept else "closed", send_error))


# ---------------------------------------------------------------- 5.

WS_LOCATION = ("            proxy_pass http://127.0.0.1:%d;\n"
               "            proxy_http_version 1.1;\n"
               "            proxy_set_header Upgrade $http_upgrade;\n"
               "            proxy_set_header Connection "
               "$connection_upgrade;\n")


def ws_weir(weir, ws_origin, idle_port=None):
    port = weir.port()
    servers = ""
    if idle_port:
        servers = ("    server {\n"
                   "        listen 127.0.0.1:%d;\n"
                   "        location / {\n%s"
                   "            proxy_read_timeout 1s;\n"
                   "        }\n"
                   "    }\n" % (idle_port, WS_LOCATION % ws_origin.port))
    proxy_conf(weir, port,
               "        location / {\n%s"
               "        }\n" % (WS_LOCATION % ws_origin.port),
               servers=servers)
    start_http(weir, port, *([idle_port] if idle_port else []))
    return port


def ws_connect(port, path):
    s = connect(port, timeout=DEADLINE)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ws = WsClient(s)
    status, headers = ws.handshake(path)
    assert status == 101, (status, headers, ws.body_start)
    return ws


def test_websocket_echo(weir, ws_origin):
    port = ws_weir(weir, ws_origin)
    ws = ws_connect(port, "/echo")
    try:
        line, headers = ws_origin.requests[-1]
        assert line.startswith("GET /echo HTTP/1.1"), line
        assert headers.get("upgrade") == "websocket", headers
        assert "upgrade" in headers.get("connection", "").lower(), headers

        ws.send_text("hello")
        assert ws.recv_message() == (OP_TEXT, b"hello")
        ws.send_binary(b"\x00\xff\x01binary")
        assert ws.recv_message() == (OP_BINARY, b"\x00\xff\x01binary")

        big = random.Random(5).randbytes(MiB)
        ws.send_binary(big)
        op, payload = ws.recv_message()
        assert op == OP_BINARY and payload == big

        # 1000 small ones, sent in batches ahead of the answers
        for batch in range(10):
            for i in range(100):
                ws.send_text("message %d" % (batch * 100 + i))
            for i in range(100):
                assert ws.recv_message() == (
                    OP_TEXT, b"message %d" % (batch * 100 + i))

        # fragments, and a ping in between
        ws.send(OP_TEXT, b"frag", fin=False)
        ws.send(OP_PING, b"p")
        ws.send(OP_CONT, b"mented")
        fin, op, payload = ws.recv_frame()
        assert (op, payload) == (OP_PONG, b"p")
        assert ws.recv_message() == (OP_TEXT, b"fragmented")

        # the client closes: the close comes back, then the connection
        # ends
        reply = ws.close(1000, b"done")
        assert reply[:2] == b"\x03\xe8", reply
        assert ws.wait_eof(DEADLINE), "weir kept the tunnel open"
    finally:
        ws.s.close()
    wait_for(lambda: ("close-received", "/echo", b"\x03\xe8done")
             in ws_origin.events, what="the origin to get the close")


def test_websocket_server_first_and_server_close(weir, ws_origin):
    port = ws_weir(weir, ws_origin)
    ws = ws_connect(port, "/hello")
    try:
        assert ws.recv_message() == (OP_TEXT, b"hello from origin")
        ws.send_text("after hello")
        assert ws.recv_message() == (OP_TEXT, b"after hello")
    finally:
        ws.s.close()

    ws = ws_connect(port, "/server-close")
    try:
        ws.send_text("one")
        assert ws.recv_message() == (OP_TEXT, b"one")
        op, payload = ws.recv_message()
        assert op == OP_CLOSE and payload[:2] == b"\x03\xe9", (op, payload)
        ws.send(OP_CLOSE, payload[:2])
        assert ws.wait_eof(DEADLINE), "weir kept the tunnel open"
    finally:
        ws.s.close()
    wait_for(lambda: ("close-received", "/server-close", b"\x03\xe9")
             in ws_origin.events, what="the origin to get the close")


def test_websocket_idle_timeout(weir, ws_origin):
    idle_port = weir.port()
    ws_weir(weir, ws_origin, idle_port=idle_port)
    ws = ws_connect(idle_port, "/echo")
    try:
        # traffic keeps the tunnel open past the 1 s timeout
        for i in range(5):
            if i:
                time.sleep(0.4)
            ws.send_text("tick %d" % i)
            assert ws.recv_message() == (OP_TEXT, b"tick %d" % i)
        idle_from = time.monotonic()
        assert ws.wait_eof(1.0 + DEADLINE), \
            "the idle tunnel was not closed"
        idle = time.monotonic() - idle_from
    finally:
        ws.s.close()
    # a timer may be kept when re-armed within a moment of its old time
    # (as nginx's lazy timer updates do): allow it to fire a bit early
    assert idle >= 0.5, "closed after %.2f s idle, before the timeout" % idle
    assert idle <= 3.0 * (3 if SANITIZER else 1), \
        "closed %.2f s after it went idle (proxy_read_timeout 1s)" % idle
    wait_for(lambda: ("eof", "/echo") in ws_origin.events,
             what="the origin side to be closed too")


def test_upgrade_refused_is_normal_response(weir, ws_origin):
    port = ws_weir(weir, ws_origin)
    c = Client(port)
    try:
        c.send("GET", "/plain", headers=(
            "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13"))
        r = c.response()
        assert r.status == 200, (r.status, r.headers)
        assert r.body == b"not a websocket: /plain\n"
        assert "upgrade" not in r.headers, r.headers
        # an ordinary connection afterwards
        r2 = c.request("GET", "/again")
        assert r2.status == 200 and r2.body == b"not a websocket: /again\n"
    finally:
        c.close()
    line, headers = ws_origin.requests[0]
    assert headers.get("upgrade") == "websocket", headers
    line, headers = ws_origin.requests[1]
    assert "upgrade" not in headers, headers


# ---------------------------------------------------------------- 6.

def reload_conf(weir, test_port, port, origin_port, value):
    proxy_conf(weir, port,
               "        location / {\n"
               "            proxy_pass http://127.0.0.1:%d;\n"
               "        }\n" % origin_port,
               main="test_listen 127.0.0.1:%d;\ntest_value %d;\n"
                    % (test_port, value),
               module=True, workers=2)


def test_reload_under_proxied_load(weir, probe_origin):
    port = weir.port()
    test_port = weir.port()
    reload_conf(weir, test_port, port, probe_origin.port, 0)
    weir.start()
    wait_for(lambda: connect(port, timeout=1).close() or True,
             what="the HTTP port")

    failures = []
    done = [0, 0, 0, 0]
    stop = threading.Event()
    deadline = time.monotonic() + DEADLINE * 12
    post_body = random.Random(6).randbytes(3000)

    def one(c, kind):
        if kind in (0, 1):
            r = c.request("GET", "/tiny")
            ok = r.status == 200 and len(r.body) == 64
        else:
            r = c.request("POST", "/echo", body=post_body)
            ok = r.status == 200 and r.body == post_body
        if not ok:
            raise AssertionError("bad answer %d %r" % (r.status,
                                                       r.body[:100]))
        return r

    def client(kind):
        keepalive = kind in (0, 2)
        c = None
        n = 0
        while (not stop.is_set() and n < 100000
               and time.monotonic() < deadline):
            n += 1
            try:
                if c is None:
                    c = Client(port)
                r = one(c, kind)
            except (OSError, EOFError) as exc:
                # an old worker drains its idle keep-alive connections
                # (keepalive_drain_timeout): not even a request on a
                # reused connection may fail, no retry is allowed
                failures.append("kind %d (%s connection): %r"
                                % (kind, "reused" if c is not None
                                   and c.used else "new", exc))
                if c is not None:
                    c.close()
                c = None
                continue
            except AssertionError as exc:
                failures.append("kind %d: %s" % (kind, exc))
                c.close()
                c = None
                continue
            done[kind] += 1
            if r.headers.get("connection") == "close" and c is not None:
                c.close()
                c = None
            if not keepalive and c is not None:
                c.close()
                c = None
        if c is not None:
            c.close()

    threads = [threading.Thread(target=client, args=(k,), daemon=True)
               for k in range(4)]
    for t in threads:
        t.start()
    try:
        for value in range(1, 11):
            reload_conf(weir, test_port, port, probe_origin.port, value)
            answer = weir.reload()
            assert answer["value"] == value
            time.sleep(0.05)  # let some requests run on each generation
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=DEADLINE)
    assert not [t for t in threads if t.is_alive()], \
        "client threads did not stop"
    assert failures == [], "%d failed requests: %s" % (len(failures),
                                                       failures[:5])
    assert min(done) > 10, done
    weir.settle()
    print("requests per client kind: %s" % done)


# ---------------------------------------------------------------- 7.

def test_slow_origin_many_clients(weir, probe_origin):
    clients = 64
    rounds = 3
    port = weir.port()
    proxy_conf(weir, port,
               "        location / {\n"
               "            proxy_pass http://slow;\n"
               "        }\n",
               http_extra="    upstream slow {\n"
                          "        server 127.0.0.1:%d;\n"
                          "        keepalive %d;\n"
                          "    }\n" % (probe_origin.port, clients))
    start_http(weir, port)
    before = probe_origin.stats()["connections"]

    failures = []
    ok = []
    barrier = threading.Barrier(clients, timeout=DEADLINE * 2)

    def client(i):
        try:
            c = Client(port, timeout=DEADLINE * 2)
        except OSError as exc:
            failures.append(repr(exc))
            barrier.abort()
            return
        try:
            for _ in range(rounds):
                barrier.wait()
                r = c.request("GET", "/delay/50/tiny")
                if r.status != 200 or len(r.body) != 64:
                    failures.append("status %d, %d bytes"
                                    % (r.status, len(r.body)))
                else:
                    ok.append(i)
        except (OSError, EOFError, threading.BrokenBarrierError) as exc:
            failures.append(repr(exc))
            barrier.abort()
        finally:
            c.close()

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=DEADLINE * 3)
    elapsed = time.monotonic() - started
    assert not [t for t in threads if t.is_alive()], "clients hang"
    assert failures == [], "%d failures: %s" % (len(failures),
                                                failures[:5])
    assert len(ok) == clients * rounds
    # the stats request itself is one more connection
    used = probe_origin.stats()["connections"] - before - 1
    assert used <= clients + 4, (
        "%d origin connections for %d requests from %d clients: the "
        "keep-alive pool was not reused" % (used, clients * rounds,
                                            clients))
    print("%d requests in %.2f s over %d origin connections"
          % (clients * rounds, elapsed, used))
