"""HTTP/2 and the graceful shutdown under load (issue 14): reloads and
QUIT while HTTP/2 clients keep requesting on long-lived connections.

A worker that shuts down sends GOAWAY (the largest stream id, then the
real last one after a PING round trip), finishes the streams it took
and refuses the others. The clients here do what browsers do: several
streams in flight on one connection; at a GOAWAY no new stream on it,
the streams above its last-stream-id (and any reset REFUSED_STREAM) are
retried on a new connection, the others must be answered whole. A retry
is counted apart; anything else (a reset, an EOF or a timeout on a
stream the server took, a wrong answer, a failed connect) is a failure.

python3-h2 refuses HEADERS and DATA once it has received a GOAWAY (its
connection state goes CLOSED) and drops what it has not sent yet, so
the client feeds it one frame at a time, sends its data before a GOAWAY
and puts the state back after it: the streams in flight finish, and the
client itself opens no new one there.
"""

import re
import socket
import ssl
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.events

import tlspki
from origin import body_of
from weirtest import DEADLINE, wait_for

PATHS = [("/ret", b"returned\n"), ("/tiny", body_of(64)),
         ("/size/20000", body_of(20000))]


def write_conf(weir, ports, origin, leaf, value, workers=2,
               shutdown="20s"):
    tport, hport, sport = ports
    weir.conf(tlspki.ssl_preamble()
              + "worker_processes %d;\n"
                "worker_shutdown_timeout %s;\n"
                "test_value %d;\n"
                "test_listen 127.0.0.1:%d;\n"
                "http {\n"
                "    proxy_connect_timeout 2s;\n"
                "    proxy_read_timeout 10s;\n"
                "    server {\n"
                "        listen 127.0.0.1:%d;\n"
                "        listen 127.0.0.1:%d ssl;\n"
                "        http2 on;\n"
                "        ssl_certificate %s;\n"
                "        ssl_certificate_key %s;\n"
                "        location /ret { return 200 \"returned\\n\"; }\n"
                "        location / { proxy_pass http://%s; }\n"
                "    }\n"
                "}\n" % (workers, shutdown, value, tport, hport, sport,
                         leaf.chain, leaf.key, origin.addr),
              module=True)


def start(weir, origin, pki, **kw):
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    ports = (weir.port(), weir.port(), weir.port())
    write_conf(weir, ports, origin, leaf, 1, **kw)
    weir.start()
    return ports, leaf


class Conn:
    """One HTTP/2 connection of a retrying client (h2c prior knowledge,
    or TLS with ALPN h2)."""

    def __init__(self, port, tls):
        raw = socket.create_connection(("127.0.0.1", port),
                                       timeout=DEADLINE)
        if tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            raw = ctx.wrap_socket(raw, server_hostname="localhost")
            assert raw.selected_alpn_protocol() == "h2"
        self.sock = raw
        self.scheme = "https" if tls else "http"
        self.authority = "localhost:%d" % port
        cfg = h2.config.H2Configuration(client_side=True,
                                        header_encoding="utf-8")
        self.h2 = h2.connection.H2Connection(config=cfg)
        self.h2.initiate_connection()
        self.buf = b""
        self.goaway = None          # the last GOAWAY's last-stream-id
        self.goaways = []
        self.broken = False
        self.streams = {}           # sid: [path, want, status, body]
        self.flush()

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                # the server closed (after its last GOAWAY, maybe still
                # unread): what it sent is read, then the EOF tells
                self.broken = True

    def request(self, path, want):
        sid = self.h2.get_next_available_stream_id()
        self.h2.send_headers(sid, [(":method", "GET"), (":path", path),
                                   (":scheme", self.scheme),
                                   (":authority", self.authority)],
                             end_stream=True)
        self.streams[sid] = [path, want, None, b""]
        self.flush()
        return sid

    def read(self, timeout):
        """Reads once; returns the events, or None at EOF."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except (ConnectionResetError, ssl.SSLError):
            data = b""
        if not data:
            return None
        self.buf += data
        events = []
        while len(self.buf) >= 9:
            n = 9 + int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < n:
                break
            frame, self.buf = self.buf[:n], self.buf[n:]
            state = self.h2.state_machine.state
            if frame[3] == 7:
                # h2 drops its unsent data at a GOAWAY (PING and
                # SETTINGS acknowledgements): out with it first
                self.flush()
            for ev in self.h2.receive_data(frame):
                if isinstance(ev, h2.events.ConnectionTerminated):
                    self.goaway = ev.last_stream_id
                    self.goaways.append((ev.error_code, ev.last_stream_id))
                    self.h2.state_machine.state = state
                elif isinstance(ev, h2.events.DataReceived):
                    self.h2.acknowledge_received_data(
                        ev.flow_controlled_length, ev.stream_id)
                events.append(ev)
        self.flush()
        return events

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = 0
        self.retries = 0
        self.failures = []
        self.goaways = 0
        self.conns = 0

    def add(self, **kw):
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)

    def fail(self, what):
        with self.lock:
            self.failures.append(what)


def client(port, tls, stats, stop, inflight=4, deadline=None):
    """Keeps `inflight` streams on a long-lived connection until stop;
    a request refused (above GOAWAY's last-stream-id, REFUSED_STREAM)
    goes again on a new connection."""
    todo = []
    k = 0
    while time.monotonic() < deadline and (not stop.is_set() or todo):
        try:
            c = Conn(port, tls)
        except OSError as exc:
            stats.fail("connect: %r" % exc)
            continue
        stats.add(conns=1)
        try:
            while time.monotonic() < deadline:
                while (c.goaway is None and not c.broken
                       and (todo or not stop.is_set())
                       and len(c.streams) < inflight):
                    if todo:
                        path, want = todo.pop()
                    else:
                        path, want = PATHS[k % len(PATHS)]
                        k += 1
                    c.request(path, want)
                if c.goaway is not None or c.broken or stop.is_set():
                    if not c.streams:
                        break
                try:
                    events = c.read(DEADLINE)
                except socket.timeout:
                    stats.fail("timeout, streams %s" % sorted(c.streams))
                    break
                if events is None:
                    for sid, (path, want, _, _) in c.streams.items():
                        if c.goaway is not None and sid > c.goaway:
                            stats.add(retries=1)
                            todo.append((path, want))
                        else:
                            stats.fail("EOF on stream %d (%s), goaway %r"
                                       % (sid, path, c.goaways))
                    c.streams.clear()
                    break
                for ev in events:
                    sid = getattr(ev, "stream_id", None)
                    s = c.streams.get(sid)
                    if isinstance(ev, h2.events.ConnectionTerminated):
                        stats.add(goaways=1)
                        if ev.error_code != h2.errors.ErrorCodes.NO_ERROR:
                            stats.fail("GOAWAY %r" % ev)
                        for sid in [x for x in c.streams if x > c.goaway]:
                            path, want = c.streams.pop(sid)[:2]
                            stats.add(retries=1)
                            todo.append((path, want))
                    elif s is None:
                        continue
                    elif isinstance(ev, h2.events.ResponseReceived):
                        s[2] = dict(ev.headers)[":status"]
                    elif isinstance(ev, h2.events.DataReceived):
                        s[3] += ev.data
                    elif isinstance(ev, h2.events.StreamEnded):
                        del c.streams[sid]
                        if s[2] != "200" or s[3] != s[1]:
                            stats.fail("stream %d %s: %s, %d bytes"
                                       % (sid, s[0], s[2], len(s[3])))
                        else:
                            stats.add(ok=1)
                    elif isinstance(ev, h2.events.StreamReset):
                        del c.streams[sid]
                        if ev.error_code == \
                                h2.errors.ErrorCodes.REFUSED_STREAM:
                            stats.add(retries=1)
                            todo.append((s[0], s[1]))
                        else:
                            stats.fail("stream %d %s reset %r"
                                       % (sid, s[0], ev.error_code))
        except Exception as exc:    # a protocol error is a failure too
            stats.fail("client: %r, goaways %r" % (exc, c.goaways))
        finally:
            c.close()


def run_clients(ports, stats, stop, n=2, inflight=4):
    deadline = time.monotonic() + DEADLINE * 30
    threads = [threading.Thread(target=client, daemon=True,
                                args=(ports[1 + i % 2], i % 2 == 1, stats,
                                      stop, inflight, deadline))
               for i in range(2 * n)]
    for t in threads:
        t.start()
    return threads


def join(threads, stats):
    for t in threads:
        t.join(timeout=DEADLINE * 2)
    assert not [t for t in threads if t.is_alive()], \
        "client threads did not stop (failures %s)" % stats.failures[:5]


def test_reloads_under_h2_load_lose_nothing(weir, origin, pki):
    ports, leaf = start(weir, origin, pki)
    stats = Stats()
    stop = threading.Event()
    threads = run_clients(ports, stats, stop)
    reloads = 50
    try:
        for value in range(2, 2 + reloads):
            before = stats.ok
            wait_for(lambda: stats.ok >= before + 40 or stats.failures,
                     what="requests between two reloads")
            old = weir.workers()
            write_conf(weir, ports, origin, leaf, value)
            assert weir.reload()["value"] == value
            if value % 10 == 0:
                weir.wait_gone(old, timeout=DEADLINE * 2)
    finally:
        stop.set()
        join(threads, stats)
    print("h2 reloads: %d, requests ok %d, retried %d, goaways %d, "
          "connections %d, failed %d" % (reloads, stats.ok, stats.retries,
                                         stats.goaways, stats.conns,
                                         len(stats.failures)))
    assert stats.failures == [], "%d failed requests of %d: %s" % (
        len(stats.failures), stats.ok, stats.failures[:5])
    assert stats.goaways >= reloads, stats.goaways
    weir.settle()


def test_quit_with_streams_in_flight(weir, origin, pki):
    # every stream taken before the QUIT finishes (the origin answers
    # after 800 ms), and the master and workers are gone long before
    # worker_shutdown_timeout
    ports, leaf = start(weir, origin, pki, shutdown="30s")
    conns = [Conn(ports[1], False), Conn(ports[2], True)]
    want = body_of(64)
    for c in conns:
        for _ in range(3):
            c.request("/delay-head/800", want)
    wait_for(lambda: len(origin.requests) == 6, what="the origin's requests")
    tree = weir.workers() + [weir.master]
    t0 = time.monotonic()
    weir.signal(3)
    done = {}
    for c in conns:
        deadline = time.monotonic() + DEADLINE
        got = {}
        while c.streams and time.monotonic() < deadline:
            events = c.read(DEADLINE)
            if events is None:
                break
            for ev in events:
                s = c.streams.get(getattr(ev, "stream_id", None))
                if isinstance(ev, h2.events.DataReceived):
                    got[ev.stream_id] = got.get(ev.stream_id, b"") + ev.data
                elif isinstance(ev, h2.events.StreamEnded) and s:
                    done[(id(c), ev.stream_id)] = got.get(ev.stream_id)
                    del c.streams[ev.stream_id]
                elif isinstance(ev, h2.events.StreamReset):
                    raise AssertionError("stream reset %r" % ev)
        assert not c.streams, "unanswered %s" % c.streams
        # the connection closes once its streams are done, after the
        # GOAWAY with the real last stream (this client acknowledges the
        # PING only when it reads: maybe after the streams ended)
        for _ in range(100):
            if c.read(DEADLINE) is None:
                break
        assert c.goaways == [(0, 2 ** 31 - 1), (0, 5)], c.goaways
        c.close()
    assert list(done.values()) == [want] * 6
    weir.wait_gone(tree)
    assert time.monotonic() - t0 < 10, "exit took %.1f s" % (
        time.monotonic() - t0)
    assert re.search(r"exiting", weir.log())


def test_long_response_in_flight_at_reload(weir, origin, pki):
    # a slow origin: half the body before the reload, the rest after;
    # it arrives whole on both h2c and TLS, and the old workers exit
    release = threading.Event()
    size = 1 << 20

    def handler(req, w):
        if req.path == "/slow":
            body = body_of(size)
            w.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                       % size + body[:size // 2])
            release.wait(DEADLINE)
            w.send_raw(body[size // 2:])
            return
        w.canned(req)

    origin.handler = handler
    ports, leaf = start(weir, origin, pki)
    conns = [Conn(ports[1], False), Conn(ports[2], True)]
    got = [b"", b""]
    ended = [False, False]
    try:
        for c in conns:
            c.request("/slow", None)
        wait_for(lambda: len(origin.requests) == 2,
                 what="the origin's requests")
        old = weir.workers()
        write_conf(weir, ports, origin, leaf, 2)
        assert weir.reload()["value"] == 2
        release.set()
        for i, c in enumerate(conns):
            deadline = time.monotonic() + DEADLINE
            while not ended[i] and time.monotonic() < deadline:
                events = c.read(DEADLINE)
                assert events is not None, "EOF after %d bytes" % len(got[i])
                for ev in events:
                    if isinstance(ev, h2.events.DataReceived):
                        got[i] += ev.data
                    elif isinstance(ev, h2.events.StreamEnded):
                        ended[i] = True
                    elif isinstance(ev, h2.events.StreamReset):
                        raise AssertionError("reset %r" % ev)
            assert ended[i] and got[i] == body_of(size), len(got[i])
            assert c.goaways[-1] == (0, 1), c.goaways
    finally:
        release.set()
        for c in conns:
            c.close()
    weir.wait_gone(old)
    weir.settle()
