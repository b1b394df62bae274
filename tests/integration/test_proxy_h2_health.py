"""Passive health over HTTP/2 sessions (docs/http/proxy.md, "A failed
session counts once against max_fails, not once per stream";
docs/dev/upstream.md "Sessions"): many requests share one session to an
origin, so the death of that session is one failure of the server, not
one per stream that was on it.

Origin A is a raw HTTP/2 server (python h2, `CutOrigin` below) that,
while armed, holds the streams of a connection unanswered and closes the
TCP connection abruptly (RST) once K of them are open at once; disarmed
(after one cut), it answers every stream "A". Origin B answers "B".
weir balances the two round robin with max_fails=2: the K streams of
A's dead session are retried, all clients get a 200, and A, with one
failure, stays in rotation. With max_fails=1 the same event takes A out
for fail_timeout (the contrast that shows the test can fail).

For GETs only the stream that opened the session tells round robin it
failed: the K - 1 that joined it are retried once on the same peer
(weir_http_upstream_cached_retry), which the balancer never hears of.
Streams that cannot be resent (a streamed request body) each report
their failure to the balancer; the last test shows that the session's
failure is still counted once."""

import concurrent.futures
import socket
import struct
import subprocess
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import pytest

import test_proxy_h2 as proxy_h2
from weirtest import DEADLINE, wait_for

K = 6           # streams open at once on A's session when A cuts it


class CutOrigin:
    """An h2c origin named `name`; arm(k) makes the next connection that
    gets k streams open at once die with an RST, unanswered."""

    def __init__(self, name):
        self.name = name
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.cut_at = None          # armed: cut a session at this many
        self.cuts = 0               # sessions cut
        self.connections = 0
        self.requests = []          # (connection number, path)
        self.answered = 0
        self.stopping = False
        self.conns = []
        self.threads = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self.threads.append(t)

    def arm(self, k):
        with self.lock:
            self.cut_at = k

    def open_streams(self):
        """Streams received and not answered, over all connections."""
        with self.lock:
            return len(self.requests) - self.answered

    def _accept(self):
        while not self.stopping:
            try:
                s, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                n = self.connections
                self.conns.append(s)
            t = threading.Thread(target=self._serve, args=(s, n),
                                 daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, s, n):
        conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False))
        held = []
        try:
            conn.initiate_connection()
            s.sendall(conn.data_to_send())
            s.settimeout(0.1)
            # a held stream is answered after DEADLINE at the latest, so
            # that a test whose streams never reach k fails, not hangs
            deadline = None
            while not self.stopping:
                try:
                    data = s.recv(65536)
                except socket.timeout:
                    data = None
                if data == b"":
                    return
                if data:
                    for ev in conn.receive_data(data):
                        if isinstance(ev, h2.events.RequestReceived):
                            path = dict(ev.headers).get(b":path", b"")
                            with self.lock:
                                self.requests.append((n, path.decode()))
                        elif isinstance(ev, h2.events.StreamEnded):
                            held.append(ev.stream_id)
                        elif isinstance(ev, h2.events.DataReceived):
                            conn.acknowledge_received_data(
                                ev.flow_controlled_length, ev.stream_id)
                with self.lock:
                    armed = self.cut_at is not None
                    cut = armed and len(held) >= self.cut_at
                    if cut:
                        self.cut_at = None      # one session only
                        self.cuts += 1
                if cut:
                    # abrupt: RST, no GOAWAY, no answer
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
                    return
                if armed and held:
                    if deadline is None:
                        deadline = time.monotonic() + DEADLINE
                    if time.monotonic() < deadline:
                        s.sendall(conn.data_to_send())
                        continue
                for sid in held:
                    body = b"%s\n" % self.name.encode()
                    conn.send_headers(sid, [(":status", "200"),
                                            ("content-length",
                                             str(len(body)))])
                    conn.send_data(sid, body, end_stream=True)
                    with self.lock:
                        self.answered += 1
                held = []
                s.sendall(conn.data_to_send())
        except (OSError, h2.exceptions.ProtocolError):
            pass
        finally:
            try:
                s.close()
            except OSError:
                pass

    def close(self):
        self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        with self.lock:
            conns = list(self.conns)
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self.threads:
            t.join(5)


@pytest.fixture
def origins():
    a, b = CutOrigin("A"), CutOrigin("B")
    yield a, b
    a.close()
    b.close()


def start(weir, a, b, max_fails, location=""):
    """test_proxy_h2's weir, proxying to the group of A and B."""
    return proxy_h2.start(
        weir, "http://both",
        http="    log_format up '$request_uri $status $upstream_addr "
             "$upstream_status';\n"
             "    access_log logs/access.log up;\n"
             "    upstream both {\n"
             "        server %s max_fails=%d fail_timeout=30s;\n"
             "        server %s max_fails=%d fail_timeout=30s;\n"
             "    }\n" % (a.addr, max_fails, b.addr, max_fails),
        location="            proxy_next_upstream error timeout;\n"
                 + location)


def get(port, path, args=()):
    """(status, body) of a GET (or what args make it) through weir, with
    curl."""
    p = subprocess.run(["curl", "-sS", "--max-time", "20", "-o", "-",
                        "-w", "\n%{http_code}"] + list(args)
                       + ["http://127.0.0.1:%d%s" % (port, path)],
                       capture_output=True, timeout=DEADLINE)
    assert p.returncode == 0, (p.returncode, p.stderr)
    body, _, code = p.stdout.rpartition(b"\n")
    return int(code), body.strip()


def burst(port, a, args=()):
    """2K requests, round robin A, B, A, ...: the first alone, until A
    holds it (its session is up and pooled), then the other 2K - 1 at
    once, K - 1 of which join that session; A cuts it at K streams."""
    a.arm(K)
    with concurrent.futures.ThreadPoolExecutor(2 * K) as ex:
        first = ex.submit(get, port, "/burst/0", args)
        wait_for(lambda: a.open_streams() >= 1,
                 what="A to hold the first stream")
        rest = [ex.submit(get, port, "/burst/%d" % i, args)
                for i in range(1, 2 * K)]
        out = [first.result()] + [f.result() for f in rest]
    assert a.cuts == 1, "A never had %d streams open at once" % K
    # A's first connection carried K streams when it died
    assert sum(1 for n, _ in a.requests if n == 1) == K
    return out


def rotation(port, n=4):
    """Who answers n sequential requests."""
    return [get(port, "/seq/%d" % i) for i in range(n)]


def test_session_failure_counts_once(weir, origins):
    a, b = origins
    port = start(weir, a, b, max_fails=2)
    out = burst(port, a)
    # the stream that opened the session goes to B (proxy_next_upstream);
    # the K - 1 that joined it are retried on A, which answers now
    # (weir_http_upstream_cached_retry)
    assert all(code == 200 for code, _ in out), out
    weir.wait_log(r"upstream HTTP/2 session \*\d+: recv\(\) failed")
    weir.wait_log(r"upstream session failed before it answered, retrying "
                  r"on another connection")
    # one failure of A (< max_fails=2): A is still in rotation
    seq = rotation(port)
    assert (200, b"A") in seq and (200, b"B") in seq, seq
    assert "temporarily disabled" not in weir.log()


def test_contrast_max_fails_1_takes_a_out(weir, origins):
    """The same event with max_fails=1: A is out for fail_timeout (30 s),
    so only B answers."""
    a, b = origins
    port = start(weir, a, b, max_fails=1)
    out = burst(port, a)
    assert all(code == 200 for code, _ in out), out
    weir.wait_log(r"upstream server temporarily disabled: %s in upstream "
                  r"\"both\" for 30s after 1 failures" % a.addr)
    assert rotation(port) == [(200, b"B")] * 4


def test_streams_that_cannot_be_retried_count_once(weir, origins,
                                                    tmp_path):
    """Streams whose failure does reach the balancer: a streamed request
    body (proxy_request_buffering off, larger than what weir keeps) is
    gone once sent, so neither the same-peer retry of a joined stream
    nor proxy_next_upstream can resend it, and each of the K streams of
    A's dead session ends in a 502 told to round robin as a failure.
    That is still one failure of the session: A must stay in rotation
    with max_fails=2."""
    a, b = origins
    body = tmp_path / "body"
    body.write_bytes(b"x" * 300000)
    port = start(weir, a, b, max_fails=2,
                 location="            proxy_request_buffering off;\n")
    out = burst(port, a, ["--data-binary", "@%s" % body])
    codes = sorted(code for code, _ in out)
    assert codes == [200] * K + [502] * K, out
    weir.wait_log(r"upstream HTTP/2 session \*\d+: recv\(\) failed")
    seq = rotation(port)
    assert (200, b"A") in seq and (200, b"B") in seq, seq
    assert "temporarily disabled" not in weir.log()
