"""The balancers besides round robin (least_conn, hash, hash consistent,
random, random two) and the keep-alive pool of origin connections.

Origins are either server blocks of the same weir that `return 200`
their own name (the balancer tests read which peer answered from the
body), or `weir-probe origin` processes whose /stats count accepted
connections and requests (the keep-alive tests count connections, the
least_conn test finds the peer holding a slow request). One worker, so
that per-worker balancer state and pools are deterministic."""

import http.client
import os
import select
import signal
import socket
import subprocess
import threading
import time

import pytest

import weirtest
from weirtest import DEADLINE, EARLY, POLL, free_port, wait_for


PROBE = os.path.join(weirtest.WEIR_BUILD_DIR, "weir-probe")


# ---- helpers


class Probe:
    """A `weir-probe origin` on one free loopback port."""

    def __init__(self):
        self.port = free_port()
        self.proc = subprocess.Popen([PROBE, "origin", "-l",
                                      "127.0.0.1:%d" % self.port],
                                     stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.head = b""

        def listening():
            assert self.proc.poll() is None, "origin exited"
            r, _, _ = select.select([self.proc.stdout], [], [], POLL)
            if r:
                data = os.read(self.proc.stdout.fileno(), 4096)
                assert data, "origin closed its stdout"
                self.head += data
            return b"listening on" in self.head

        wait_for(listening, what="weir-probe origin to listen")

    def stats(self):
        """connections, requests, open: each /stats query is one more
        connection and request, counted in what it answers."""
        status, body = get(self.port, "/stats")
        assert status == 200
        return dict((k, int(v)) for k, v in
                    (line.split() for line in body.decode().splitlines()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError("weir-probe origin ignored SIGTERM")


@pytest.fixture
def probes():
    started = []

    def make(n=1):
        new = [Probe() for _ in range(n)]
        started.extend(new)
        return new

    yield make

    for p in started:
        p.stop()


def get(port, path="/", headers=None):
    """One GET on a fresh connection: (status, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def proxy_conf(weir, port, upstream, names=(), origin_ports=None,
               http_extra=""):
    """A configuration with `upstream backend { <upstream> }`, a proxy
    server on port, and one origin server block per name answering its
    name. Returns {name: origin port}."""
    if origin_ports is None:
        origin_ports = dict((n, free_port()) for n in names)
    origins = ""
    for n in names:
        origins += ("    server {\n"
                    "        listen 127.0.0.1:%d;\n"
                    "        location / { return 200 \"%s\"; }\n"
                    "    }\n" % (origin_ports[n], n))
    body = ("worker_processes 1;\n"
            "http {\n"
            "%s"
            "    upstream backend {\n"
            "%s"
            "    }\n"
            "    server {\n"
            "        listen 127.0.0.1:%d;\n"
            "        location / { proxy_pass http://backend; }\n"
            "    }\n"
            "%s"
            "}\n" % (http_extra, upstream, port, origins))
    weir.conf(body)
    return origin_ports


def servers(ports, names, extra=None):
    extra = extra or {}
    return "".join("        server 127.0.0.1:%d%s;\n"
                   % (ports[n], extra.get(n, "")) for n in names)


def start(weir, port):
    weir.start(check_ports=False)

    def up():
        try:
            return get(port, "/")[0] > 0
        except OSError:
            return False

    wait_for(up, what="the proxy to answer")


def reload_workers(weir):
    """HUP, then wait until none of the workers from before is left (a
    bare settle() right after HUP may see the old worker alone, before
    the master has started the new one)."""
    old = set(weir.workers())
    weir.reload(wait=False)
    wait_for(lambda: not (set(weir.workers()) & old),
             what="the old workers to be replaced")
    weir.settle()


def answers(port, paths):
    out = []
    for p in paths:
        status, body = get(port, p)
        assert status == 200, (p, status, body)
        out.append(body.decode())
    return out


# ---- balancers


def test_round_robin_weights(weir):
    port = free_port()
    names = ("A", "B")
    ports = dict((n, free_port()) for n in names)
    proxy_conf(weir, port, servers(ports, names, {"A": " weight=3"}),
               names, ports)
    start(weir, port)

    got = answers(port, ["/"] * 40)
    assert got.count("A") == 30 and got.count("B") == 10, got


def test_least_conn_prefers_idle_peer(weir, probes):
    a, b = probes(2)
    port = free_port()
    proxy_conf(weir, port,
               "        least_conn;\n"
               "        server 127.0.0.1:%d;\n"
               "        server 127.0.0.1:%d;\n" % (a.port, b.port))
    start(weir, port)

    before = [a.stats()["requests"], b.stats()["requests"]]

    slow = {}

    def run_slow():
        slow["answer"] = get(port, "/delay/3000")

    t = threading.Thread(target=run_slow)
    t.start()
    try:
        # the peer that got the slow request: one more request than the
        # stats query itself
        def busy():
            now = [a.stats()["requests"], b.stats()["requests"]]
            d = [now[0] - before[0] - 1, now[1] - before[1] - 1]
            before[0], before[1] = now
            if d == [1, 0]:
                return "a"
            if d == [0, 1]:
                return "b"
            assert d == [0, 0], d
            return None

        held = wait_for(busy, what="the slow request to reach a peer")
        mark = [a.stats()["requests"], b.stats()["requests"]]

        got = answers(port, ["/tiny"] * 10)
        assert len(got) == 10

        end = [a.stats()["requests"], b.stats()["requests"]]
        fast = [end[0] - mark[0] - 1, end[1] - mark[1] - 1]

        # every fast request went to the idle peer
        assert fast == ([0, 10] if held == "a" else [10, 0]), (held, fast)
    finally:
        t.join(DEADLINE)

    assert slow["answer"][0] == 200


def test_hash_same_key_same_peer(weir):
    port = free_port()
    names = ("A", "B", "C")
    ports = dict((n, free_port()) for n in names)
    proxy_conf(weir, port, "        hash $arg_k;\n" + servers(ports, names),
               names, ports)
    start(weir, port)

    keys = ["key%d" % i for i in range(30)]
    first = answers(port, ["/?k=%s" % k for k in keys])
    second = answers(port, ["/?k=%s" % k for k in reversed(keys)])
    second.reverse()

    assert first == second
    # 30 keys over 3 peers: more than one peer is used
    assert len(set(first)) > 1, first


def test_hash_consistent_keeps_most_keys(weir):
    port = free_port()
    names = ("A", "B", "C", "D")
    ports = dict((n, free_port()) for n in names)
    proxy_conf(weir, port,
               "        hash $arg_k consistent;\n" + servers(ports, names),
               names, ports)
    start(weir, port)

    keys = ["user-%d" % i for i in range(100)]
    paths = ["/?k=%s" % k for k in keys]
    before = answers(port, paths)
    assert len(set(before)) == 4, sorted(set(before))
    assert before == answers(port, paths)

    # D leaves the group (its server block stays: nothing else changes)
    proxy_conf(weir, port,
               "        hash $arg_k consistent;\n"
               + servers(ports, ("A", "B", "C")), names, ports)
    reload_workers(weir)

    after = answers(port, paths)
    assert "D" not in after

    kept = sum(1 for x, y in zip(before, after) if x == y)
    assert kept >= 60, (kept, before, after)
    # only the keys of the removed peer moved
    for x, y in zip(before, after):
        assert x == y or x == "D", (x, y)


def test_hash_without_key_value_uses_round_robin(weir):
    port = free_port()
    names = ("A", "B")
    ports = dict((n, free_port()) for n in names)
    proxy_conf(weir, port, "        hash $arg_k;\n" + servers(ports, names),
               names, ports)
    start(weir, port)

    got = answers(port, ["/"] * 10)
    assert got.count("A") == 5 and got.count("B") == 5, got


@pytest.mark.parametrize("method", ["random", "random two",
                                    "random two least_conn"])
def test_random_spreads(weir, method):
    port = free_port()
    names = ("A", "B", "C")
    ports = dict((n, free_port()) for n in names)
    proxy_conf(weir, port, "        %s;\n" % method + servers(ports, names),
               names, ports)
    start(weir, port)

    got = answers(port, ["/"] * 60)
    for n in names:
        assert got.count(n) > 0, (n, got)


def test_down_peer_never_chosen_by_balancers(weir):
    port = free_port()
    names = ("A", "B")
    ports = dict((n, free_port()) for n in names)
    for method in ("least_conn", "hash $arg_k", "random two"):
        proxy_conf(weir, port,
                   "        %s;\n" % method
                   + servers(ports, names, {"B": " down"}), names, ports)
        if weir.master is None:
            start(weir, port)
        else:
            reload_workers(weir)
        got = answers(port, ["/?k=%d" % i for i in range(20)])
        assert set(got) == {"A"}, (method, got)


# ---- configuration errors


@pytest.mark.parametrize("upstream, error", [
    ("hash $arg_k;\n server 127.0.0.1:1 backup;",
     "support parameter \"backup\""),
    ("server 127.0.0.1:1 backup;\n hash $arg_k;",
     "support parameter \"backup\""),
    ("random;\n server 127.0.0.1:1 backup;",
     "support parameter \"backup\""),
    ("hash $arg_k foo;\n server 127.0.0.1:1;",
     "invalid parameter \"foo\""),
    ("random three;\n server 127.0.0.1:1;",
     "invalid parameter \"three\""),
    ("random two most_conn;\n server 127.0.0.1:1;",
     "invalid parameter \"most_conn\""),
    ("keepalive many;\n server 127.0.0.1:1;",
     "invalid value"),
    ("keepalive_timeout forever;\n server 127.0.0.1:1;",
     "invalid value"),
    ("keepalive 2;\n keepalive 3;\n server 127.0.0.1:1;",
     "is duplicate"),
    ("least_conn 1;\n server 127.0.0.1:1;",
     "invalid number of arguments"),
    # allocated per worker at the first request: refused at -t, not with
    # a 500 for every request
    ("keepalive 999999999999;\n server 127.0.0.1:1;",
     "\"keepalive\" directive must be between 0 and 65536"),
    # 160 points per unit of weight: the allocation that fails names the
    # group and its place
    ("hash $arg_k consistent;\n server 127.0.0.1:1 weight=1000000;\n"
     " server 127.0.0.1:2 weight=1000000;\n server 127.0.0.1:3 "
     "weight=1000000;\n server 127.0.0.1:4 weight=1000000;\n"
     " server 127.0.0.1:5 weight=1000000;\n server 127.0.0.1:6 "
     "weight=1000000;\n server 127.0.0.1:7 weight=1000000;\n"
     " server 127.0.0.1:8 weight=1000000;\n server 127.0.0.1:9 "
     "weight=1000000;\n server 127.0.0.1:10 weight=1000000;",
     "total weight 10000000 of upstream \"backend\" in "),
])
def test_balancer_conf_errors(weir, upstream, error):
    weir.conf("http {\n upstream backend {\n %s\n }\n}\n" % upstream)
    r = weir.run(["-t"])
    assert r.returncode != 0
    assert error in r.stderr, r.stderr
    assert "weir.conf:" in r.stderr, r.stderr
    weir.allow.append(r"\[emerg\]")


def test_balancer_conf_valid(weir):
    weir.conf("http {\n"
              " upstream a { least_conn; server 127.0.0.1:1 backup;"
              " server 127.0.0.1:2; keepalive 4; keepalive_timeout 5s;"
              " keepalive_requests 10; keepalive_time 10m; }\n"
              " upstream b { hash $remote_addr$uri consistent;"
              " server 127.0.0.1:1 weight=2; server 127.0.0.1:2; }\n"
              " upstream c { random two least_conn; server 127.0.0.1:1;"
              " server 127.0.0.1:2 max_conns=5; }\n"
              " upstream d { keepalive 0; server 127.0.0.1:1; }\n"
              "}\n")
    r = weir.run(["-t"])
    assert r.returncode == 0, r.stderr


# ---- the keep-alive pool


def proxied_connections(o, port, n, path="/tiny"):
    """The connections the origin accepted for n sequential requests
    through the proxy (each from a new client connection)."""
    before = o.stats()["connections"]
    got = answers(port, [path] * n)
    assert len(got) == n
    # minus the second stats query's own connection
    return o.stats()["connections"] - before - 1


def test_keepalive_reuses_one_connection(weir, probes):
    o, = probes(1)
    port = free_port()
    proxy_conf(weir, port, "        server 127.0.0.1:%d;\n" % o.port)
    weir.start(check_ports=False)
    wait_for(lambda: _accepts(port), what="the proxy port")
    assert proxied_connections(o, port, 20) == 1


def _accepts(port):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
    except OSError:
        return False
    s.close()
    return True


def test_keepalive_off(weir, probes):
    o, = probes(1)
    port = free_port()
    proxy_conf(weir, port,
               "        server 127.0.0.1:%d;\n        keepalive 0;\n"
               % o.port)
    weir.start(check_ports=False)
    wait_for(lambda: _accepts(port), what="the proxy port")
    assert proxied_connections(o, port, 20) == 20


def test_keepalive_requests(weir, probes):
    o, = probes(1)
    port = free_port()
    proxy_conf(weir, port,
               "        server 127.0.0.1:%d;\n"
               "        keepalive_requests 5;\n" % o.port)
    weir.start(check_ports=False)
    wait_for(lambda: _accepts(port), what="the proxy port")
    assert proxied_connections(o, port, 20) == 4


def test_keepalive_timeout(weir, probes):
    o, = probes(1)
    port = free_port()
    proxy_conf(weir, port,
               "        server 127.0.0.1:%d;\n"
               "        keepalive_timeout 1s;\n" % o.port)
    weir.start(check_ports=False)
    wait_for(lambda: _accepts(port), what="the proxy port")

    assert proxied_connections(o, port, 5) == 1
    idle_since = time.monotonic()

    # the pool closes its idle connection after about a second: the
    # origin then has only the stats query's connection open
    wait_for(lambda: o.stats()["open"] <= 1,
             what="the pool to close its idle connection")
    assert time.monotonic() - idle_since >= 1 - EARLY

    assert proxied_connections(o, port, 5) == 1


def test_origin_closing_idle_connections(make_weir):
    origin = make_weir()
    oport = free_port()
    sport = free_port()
    origin.conf("worker_processes 1;\n"
                "http {\n"
                "    keepalive_timeout 1s;\n"
                "    server {\n"
                "        listen 127.0.0.1:%d;\n"
                "        location / { return 200 \"origin\"; }\n"
                "    }\n"
                "    server {\n"
                "        listen 127.0.0.1:%d;\n"
                "        keepalive_timeout 0;\n"
                "        location / { stub_status; }\n"
                "    }\n"
                "}\n" % (oport, sport))
    origin.start(check_ports=False)
    wait_for(lambda: _accepts(oport) and _accepts(sport),
             what="the origin ports")

    proxy = make_weir()
    port = free_port()
    proxy_conf(proxy, port, "        server 127.0.0.1:%d;\n" % oport)
    proxy.start(check_ports=False)
    wait_for(lambda: _accepts(port), what="the proxy port")

    def active():
        status, body = get(sport, "/")
        assert status == 200
        return int(body.split(b"\n")[0].split(b":")[1])

    for _ in range(3):
        assert answers(port, ["/"] * 5) == ["origin"] * 5
        # the origin closes the idle pooled connection after 1s; only the
        # stub_status query's own connection is left
        wait_for(lambda: active() <= 1,
                 what="the origin to close the idle connection")

    assert answers(port, ["/"] * 5) == ["origin"] * 5
    assert "[error]" not in proxy.log(), proxy.log()


# ---- the pool's connections and the worker's life (review r2)


def pooled_conf(weir, port, probes, extra_main="", extra_up=""):
    proxy_conf(weir, port,
               "".join("        server 127.0.0.1:%d;\n" % o.port
                       for o in probes) + extra_up)
    if extra_main:
        text = weir.conf_text
        if "events {" in extra_main:
            text = text.replace("events {\n}\n", "")
        weir.conf(extra_main + text, preamble=False, events=False)


def open_at(origins):
    # each stats query counts its own connection
    return sum(o.stats()["open"] - 1 for o in origins)


@pytest.mark.parametrize("master", ["on", "off"])
def test_quit_with_idle_pooled_connections(weir, probes, master):
    # idle pooled connections (keepalive_timeout 60s) do not hold a
    # worker, or a single process, that is told to stop gracefully
    origins = probes(3)
    port = free_port()
    pooled_conf(weir, port, origins,
                extra_main="master_process %s;\n" % master)
    weir.start(check_ports=False)
    wait_for(lambda: _accepts(port), what="the proxy port")

    assert len(answers(port, ["/tiny"] * 6)) == 6
    assert open_at(origins) == 3

    # stop() fails after DEADLINE, well before the 60s the idle
    # connections would hold a worker that waited for them
    weir.stop()
    wait_for(lambda: open_at(origins) == 0,
             what="the pooled connections to be closed")


def test_pool_gives_connections_back_when_worker_is_full(weir, probes):
    # more idle pooled connections than the worker can hold with the
    # requests: the oldest idle ones are closed to make room, no request
    # fails
    origins = probes(8)
    port = free_port()
    pooled_conf(weir, port, origins,
                extra_main="events {\n    worker_connections 9;\n}\n")
    weir.allow.append(r"worker_connections are not enough")
    weir.start(check_ports=False)
    wait_for(lambda: _accepts(port), what="the proxy port")

    for _ in range(4):
        assert len(answers(port, ["/tiny"] * 8)) == 8
    # never more open than the worker has room for
    assert open_at(origins) <= 8
    assert "reusing connections" in weir.log()
    for bad in ("[alert]", "[crit]", "[error]"):
        assert bad not in weir.log(), weir.log()


def test_single_process_reload_with_pooled_connections(weir, probes):
    # master_process off: a reload closes the old cycle's pooled
    # connections (their log and pool belong to the old cycle); the new
    # cycle pools its own
    origins = probes(2)
    port = free_port()
    pooled_conf(weir, port, origins, extra_main="master_process off;\n")
    weir.start(check_ports=False)
    wait_for(lambda: _accepts(port), what="the proxy port")

    assert len(answers(port, ["/tiny"] * 4)) == 4
    assert open_at(origins) == 2

    for n in (1, 2):
        weir.reload(wait=False)
        wait_for(lambda: weir.log().count("reconfiguring") >= n
                 and _accepts(port), what="the reload")
        wait_for(lambda: open_at(origins) == 0 or
                 len(answers(port, ["/tiny"])) == 1,
                 what="requests after the reload")
        assert len(answers(port, ["/tiny"] * 4)) == 4

    assert open_at(origins) == 2
    for bad in ("[alert]", "[crit]", "[error]"):
        assert bad not in weir.log(), weir.log()
