"""A reload loses no request that a client has already sent.

On a reload (or a graceful stop) an old worker does not close its idle
keep-alive connections at once: a request may already be on its way on
one, and an HTTP/1.1 client that does not retry would see a reset or an
EOF instead of an answer. It keeps them for keepalive_drain_timeout
(bounded by worker_shutdown_timeout), answers the next request on each
with "Connection: close" and closes those that stay silent.

Every weir here proxies to origin.py, with the test module's
test_listen beside it so that weir.reload() knows when the new
generation serves.
"""

import re
import select
import socket
import threading
import time

from weirtest import DEADLINE, connect, run_weir, wait_for


def write_conf(weir, tport, port, origin, value, drain=None,
               shutdown=None, workers=2, keepalive=None):
    main = "worker_processes %d;\n" % workers
    if shutdown is not None:
        main += "worker_shutdown_timeout %s;\n" % shutdown
    srv = ""
    if drain is not None:
        srv += "        keepalive_drain_timeout %s;\n" % drain
    if keepalive is not None:
        srv += "        keepalive_timeout %s;\n" % keepalive
    weir.conf(main
              + "test_value %d;\n"
                "test_listen 127.0.0.1:%d;\n"
                "http {\n"
                "    proxy_connect_timeout 2s;\n"
                "    proxy_read_timeout 5s;\n"
                "    server {\n"
                "        listen 127.0.0.1:%d;\n"
                "%s"
                "        location / {\n"
                "            proxy_pass http://%s;\n"
                "        }\n"
                "    }\n"
                "}\n" % (value, tport, port, srv, origin.addr),
              module=True)


def start(weir, origin, **kw):
    tport, port = weir.port(), weir.port()
    write_conf(weir, tport, port, origin, 1, **kw)
    weir.start()
    return tport, port


def reload(weir, tport, port, origin, value, **kw):
    """Reloads to generation `value`; returns the old workers' pids once
    each has begun its graceful shutdown (it logs so on QUIT)."""
    old = weir.workers()
    write_conf(weir, tport, port, origin, value, **kw)
    assert weir.reload()["value"] == value

    def quitting():
        log = weir.log()
        return all(re.search(r"\] %d#\d+: gracefully shutting down" % pid,
                             log) for pid in old)

    wait_for(quitting, what="the old workers to begin their shutdown")
    return old


class Conn:
    """One raw HTTP/1.1 client connection, as a client that never
    retries sees it: every read is bounded, an EOF or a reset is an
    error unless the previous response said "Connection: close"."""

    def __init__(self, port):
        self.s = connect(("127.0.0.1", port), timeout=DEADLINE)
        self.buf = b""

    def close(self):
        self.s.close()

    def _more(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("no answer in time (have %r)"
                                 % self.buf[:200])
        r, _, _ = select.select([self.s], [], [], left)
        if not r:
            raise AssertionError("no answer in time (have %r)"
                                 % self.buf[:200])
        data = self.s.recv(65536)
        if not data:
            raise EOFError("EOF (have %r)" % self.buf[:200])
        self.buf += data

    def response(self, timeout=DEADLINE):
        """Reads one response; returns (status, {name: value}, body)."""
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in self.buf:
            self._more(deadline)
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        n = int(headers.get("content-length", "0"))
        while len(self.buf) < n:
            self._more(deadline)
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, headers, body

    def get(self, path, timeout=DEADLINE):
        self.s.sendall(b"GET %s HTTP/1.1\r\nHost: drain.example\r\n\r\n"
                       % path.encode())
        return self.response(timeout)

    def eof_within(self, timeout):
        """Waits for the server to close; returns the time it did, or
        None when it did not within timeout. Data instead fails."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.s], [], [], left)
            if not r:
                return None
            try:
                data = self.s.recv(4096)
            except ConnectionResetError:
                data = b""
            assert data == b"", "unexpected data %r" % data[:200]
            return time.monotonic()


def test_directive_contexts_and_errors(weir):
    def t(body):
        path = weir.conf("http {\n%s}\n" % body)
        return run_weir(["-t", "-c", path], prefix=weir.prefix,
                        env=weir.env())

    ok = t("    keepalive_drain_timeout 500ms;\n"
           "    server {\n"
           "        listen 127.0.0.1:%d;\n"
           "        keepalive_drain_timeout 0;\n"
           "        location / { keepalive_drain_timeout 2s; }\n"
           "    }\n" % weir.port())
    assert ok.returncode == 0, ok.stderr

    weir.allow.append(r"\[emerg\]")
    bad = t("    keepalive_drain_timeout soon;\n")
    want = ('weir: [emerg] "keepalive_drain_timeout" directive invalid '
            'value in %s:' % weir.conf_path)
    assert want in bad.stderr and bad.returncode == 1, bad.stderr
    bad = t("    keepalive_drain_timeout 1s 2s;\n")
    assert ('invalid number of arguments in "keepalive_drain_timeout" '
            'directive' in bad.stderr), bad.stderr


def test_idle_keepalive_answered_after_reload(weir, origin):
    # the race, made deterministic: the requests are sent only once the
    # old workers are shutting down; each must get its whole response
    # with "Connection: close", then the connection closes
    tport, port = start(weir, origin, drain="5s")
    conns = [Conn(port) for _ in range(8)]
    try:
        for c in conns:
            status, headers, body = c.get("/tiny")
            assert status == 200 and len(body) == 64
            assert headers.get("connection") == "keep-alive"

        reload(weir, tport, port, origin, 2, drain="5s")

        for c in conns:
            status, headers, body = c.get("/tiny")
            assert status == 200 and len(body) == 64
            assert headers.get("connection") == "close"
            assert c.eof_within(DEADLINE) is not None
    finally:
        for c in conns:
            c.close()
    weir.settle()


def test_silent_idle_connection_closed_after_drain(weir, origin):
    tport, port = start(weir, origin, drain="1s", shutdown="30s")
    c = Conn(port)
    try:
        assert c.get("/tiny")[0] == 200
        t0 = time.monotonic()
        old = reload(weir, tport, port, origin, 2, drain="1s",
                     shutdown="30s")
        t1 = c.eof_within(DEADLINE * 2)
        assert t1 is not None, "the drained connection was never closed"
        # not at once (the drain), and long before keepalive_timeout
        # (75 s) or worker_shutdown_timeout (30 s)
        assert t1 - t0 >= 0.9, "closed %.3f s after the reload" % (t1 - t0)
    finally:
        c.close()
    weir.wait_gone(old)


def test_drain_off_closes_idle_at_once(weir, origin):
    # keepalive_drain_timeout 0: nginx's behaviour, the idle connection
    # goes with the QUIT (not after keepalive_timeout, 75 s)
    tport, port = start(weir, origin, drain="0")
    c = Conn(port)
    try:
        assert c.get("/tiny")[0] == 200
        old = reload(weir, tport, port, origin, 2, drain="0")
        assert c.eof_within(DEADLINE) is not None
    finally:
        c.close()
    weir.wait_gone(old)


def test_drain_bounded_by_worker_shutdown_timeout(weir, origin):
    tport, port = start(weir, origin, drain="60s", shutdown="1s")
    c = Conn(port)
    try:
        assert c.get("/tiny")[0] == 200
        t0 = time.monotonic()
        old = reload(weir, tport, port, origin, 2, drain="60s",
                     shutdown="1s")
        t1 = c.eof_within(DEADLINE * 2)
        assert t1 is not None, "the drain outlived worker_shutdown_timeout"
        assert t1 - t0 >= 0.9, "closed %.3f s after the reload" % (t1 - t0)
    finally:
        c.close()
    weir.wait_gone(old)


def test_drain_shorter_than_keepalive_timeout(weir, origin):
    # a connection idle before the reload keeps no more than what is
    # left of its keepalive_timeout: the drain never lengthens it
    tport, port = start(weir, origin, drain="30s", keepalive="1s",
                        shutdown="30s")
    c = Conn(port)
    try:
        assert c.get("/tiny")[0] == 200
        old = reload(weir, tport, port, origin, 2, drain="30s",
                     keepalive="1s", shutdown="30s")
        assert c.eof_within(DEADLINE * 2) is not None, \
            "kept past keepalive_timeout"
    finally:
        c.close()
    weir.wait_gone(old)


def test_response_in_flight_then_pipelined_request(weir, origin):
    # a response whose head went out with keep-alive before the reload,
    # finished after it, with the next request already pipelined behind
    # it: both are answered, the second with "Connection: close"
    release = threading.Event()

    def handler(req, w):
        if req.path == "/hold":
            w.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n"
                       b"0123456789")
            release.wait(DEADLINE)
            w.send_raw(b"abcdefghij")
            return
        w.canned(req)

    origin.handler = handler
    tport, port = start(weir, origin, drain="5s", workers=1)
    c = Conn(port)
    try:
        c.s.sendall(b"GET /hold HTTP/1.1\r\nHost: drain.example\r\n\r\n"
                    b"GET /tiny HTTP/1.1\r\nHost: drain.example\r\n\r\n")
        wait_for(lambda: select.select([c.s], [], [], 0)[0],
                 what="the head of the held response")
        reload(weir, tport, port, origin, 2, drain="5s", workers=1)
        release.set()

        status, headers, body = c.response()
        assert status == 200 and body == b"0123456789abcdefghij"
        assert headers.get("connection") == "keep-alive"

        status, headers, body = c.response()
        assert status == 200 and len(body) == 64
        assert headers.get("connection") == "close"
        assert c.eof_within(DEADLINE) is not None
    finally:
        release.set()
        c.close()
    weir.settle(1)


def test_reloads_under_keepalive_load_lose_nothing(weir, origin):
    # clients that never retry: any EOF, reset or short answer is an
    # error; a "Connection: close" answer is followed by a new connection
    tport, port = start(weir, origin)
    stop = threading.Event()
    failures = []
    counts = [0] * 8
    deadline = time.monotonic() + DEADLINE * 12

    def client(slot):
        c = None
        n = 0
        while (not stop.is_set() and n < 200000
               and time.monotonic() < deadline):
            n += 1
            try:
                if c is None:
                    c = Conn(port)
                status, headers, body = c.get("/tiny")
                if status != 200 or len(body) != 64:
                    failures.append("%d %r" % (status, body[:100]))
                counts[slot] += 1
                if headers.get("connection") == "close":
                    c.close()
                    c = None
            except (OSError, EOFError, AssertionError) as exc:
                failures.append(repr(exc))
                if c is not None:
                    c.close()
                c = None
        if c is not None:
            c.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(len(counts))]
    for t in threads:
        t.start()
    try:
        for value in range(2, 12):
            before = sum(counts)
            wait_for(lambda: sum(counts) >= before + 50,
                     what="requests between two reloads")
            write_conf(weir, tport, port, origin, value)
            assert weir.reload()["value"] == value
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=DEADLINE)
    assert not [t for t in threads if t.is_alive()], \
        "client threads did not stop"
    assert failures == [], "%d failed requests of %d: %s" % (
        len(failures), sum(counts), failures[:5])
    assert min(counts) > 0, counts
    weir.settle()
