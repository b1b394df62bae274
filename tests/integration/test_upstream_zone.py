"""The upstream `zone` directive: the run-time state of a group's peers
(failures, connection counts, smooth weights) in shared memory, the same
for every worker; without it each worker keeps its own.

The behaviour tests run two workers, each with its own listening socket
(`reuseport`), so that fresh client connections, whose source ports
differ, are spread over both by the kernel. Every response says which
worker served it (`X-Pid: $pid`) and which peers it tried
(`X-Upstream: $upstream_addr`). The configuration errors are `weir -t`
runs."""

import http.client
import re
import signal
import socket
import threading

import pytest

from weirtest import DEADLINE, free_port, run_weir, wait_for


# bounds on the requests a test sends to see both workers answer (the
# kernel spreads connections by a hash of their addresses: a handful is
# enough, these are hang guards)
MAX_REQUESTS = 400
# answers from the worker that did not see a failure itself
OTHER = 16

REFUSED = r"connect\(\) .*failed \(111: Connection refused\)"


# ---- helpers


def dead_addr():
    """An address nothing listens on: connect() is refused."""
    return "127.0.0.1:%d" % free_port()


def start(weir, upstream, origins=""):
    """Two workers, a proxy server on a free port (reuseport) whose
    location / proxies to the group `u` (upstream: the block's body) and
    adds X-Pid and X-Upstream; origins: more server blocks. Returns the
    port."""
    port = weir.port()
    weir.conf("worker_processes 2;\n"
              "http {\n"
              "    proxy_connect_timeout 2s;\n"
              "    proxy_read_timeout 10s;\n"
              "    upstream u {\n"
              "%s"
              "    }\n"
              "%s"
              "    server {\n"
              "        listen 127.0.0.1:%d reuseport;\n"
              "        location / {\n"
              "            proxy_pass http://u;\n"
              "            add_header X-Pid $pid;\n"
              "            add_header X-Upstream $upstream_addr;\n"
              "        }\n"
              "    }\n"
              "}\n" % (upstream, origins, port))
    weir.start(check_ports=False)

    def up():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(up, what="the HTTP port to accept")
    return port


def live_origin(port, name="live"):
    """A server block of the same weir that answers its name."""
    return ("    server {\n"
            "        listen 127.0.0.1:%d;\n"
            "        location / { return 200 \"%s\"; }\n"
            "    }\n" % (port, name))


def get(port, path="/"):
    """One GET on a fresh connection: (status, pid, upstream, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        return (r.status, int(r.getheader("X-Pid")),
                r.getheader("X-Upstream"), body)
    finally:
        c.close()


def refused(weir):
    return [line for line in weir.log().splitlines()
            if re.search(REFUSED, line)]


def until_both_workers(weir, port, after=None):
    """Sends requests until both workers answered one (after the
    predicate after(answers) holds, if given); returns every answer as
    (pid, upstream), in order."""
    workers = set(weir.workers())
    assert len(workers) == 2
    answers = []
    seen = set()
    for _ in range(MAX_REQUESTS):
        status, pid, ups, _ = get(port)
        assert status == 200
        assert pid in workers
        answers.append((pid, ups))
        if after is not None and not after(answers):
            continue
        seen.add(pid)
        if seen == workers:
            return answers
    raise AssertionError("not both workers answered in %d requests: %s"
                         % (MAX_REQUESTS, answers))


# ---- one failure is seen by every worker


BALANCERS = [
    ("round_robin", ""),
    ("least_conn", "        least_conn;\n"),
    ("random", "        random;\n"),
    ("random_two", "        random two;\n"),
    ("hash", "        hash $remote_port;\n"),
    ("hash_consistent", "        hash $remote_port consistent;\n"),
]


@pytest.mark.parametrize("balancer", [b[1] for b in BALANCERS],
                         ids=[b[0] for b in BALANCERS])
def test_zone_failure_seen_by_every_worker(weir, balancer):
    dead = dead_addr()
    live = free_port()
    port = start(weir,
                 "        zone u 64k;\n"
                 "%s"
                 "        server %s max_fails=1 fail_timeout=30s;\n"
                 "        server 127.0.0.1:%d max_fails=1 "
                 "fail_timeout=30s;\n" % (balancer, dead, live),
                 origins=live_origin(live))

    workers = set(weir.workers())
    assert len(workers) == 2

    # until some worker tried the dead server (round robin and
    # least_conn begin with it, the others draw it soon), then until the
    # other worker answered OTHER requests: random and hash would draw
    # the dead server about every second time if that worker had not
    # seen the failure
    answers = []
    failed_by = None
    others = 0
    for _ in range(MAX_REQUESTS):
        status, pid, ups, _ = get(port)
        assert status == 200 and pid in workers
        if failed_by is None:
            if dead in ups:
                failed_by = pid
                assert ups == "%s, 127.0.0.1:%d" % (dead, live)
            continue
        answers.append((pid, ups))
        if pid != failed_by:
            others += 1
            if others == OTHER:
                break
    assert others == OTHER, "the other worker answered %d times in %d " \
        "requests" % (others, MAX_REQUESTS)

    # one failure in one worker took it out for every worker: nobody
    # tried it again, the other worker included
    assert [ups for _, ups in answers if dead in ups] == []
    assert len(refused(weir)) == 1


def test_without_zone_each_worker_tries_the_dead_server(weir):
    """The same group without zone: per-worker state, so the other
    worker's first request tries the dead server too (what the test
    above would see if the zone were not shared)."""
    dead = dead_addr()
    live = free_port()
    port = start(weir,
                 "        server %s max_fails=1 fail_timeout=30s;\n"
                 "        server 127.0.0.1:%d max_fails=1 "
                 "fail_timeout=30s;\n" % (dead, live),
                 origins=live_origin(live))

    answers = until_both_workers(weir, port)
    tried = [(pid, ups) for pid, ups in answers if dead in ups]
    # round robin begins with the dead server in each worker: one
    # attempt per worker, each the worker's first request
    assert sorted(pid for pid, _ in tried) == sorted(set(weir.workers()))
    for pid, _ in tried:
        assert [ups for p, ups in answers if p == pid][0] == \
            "%s, 127.0.0.1:%d" % (dead, live)
    wait_for(lambda: len(refused(weir)) == 2,
             what="one refused connect per worker")


def test_zone_state_starts_afresh_on_reload(weir):
    """A reload maps a new zone (as nginx: no peer state survives): the
    dead server is tried once more, by one of the new workers only."""
    dead = dead_addr()
    live = free_port()
    port = start(weir,
                 "        zone u 64k;\n"
                 "        server %s max_fails=1 fail_timeout=30s;\n"
                 "        server 127.0.0.1:%d max_fails=1 "
                 "fail_timeout=30s;\n" % (dead, live),
                 origins=live_origin(live))

    until_both_workers(weir, port)
    assert len(refused(weir)) == 1

    old = set(weir.workers())
    weir.signal(signal.SIGHUP)
    wait_for(lambda: len(set(weir.workers()) - old) == 2
             and not (set(weir.workers()) & old),
             what="two new workers, the old ones gone")

    answers = until_both_workers(weir, port)
    tried = [ups for _, ups in answers if dead in ups]
    assert len(tried) == 1
    assert answers[0][1] == "%s, 127.0.0.1:%d" % (dead, live)
    assert len(refused(weir)) == 2


# ---- max_conns counts the connections of every worker


def holding_origin(make_origin):
    """An origin whose first request waits until release is set (its
    connection stays active); the others are answered at once. Returns
    (origin, release, held): held is set once the first request is in."""
    release = threading.Event()
    held = threading.Event()
    lock = threading.Lock()
    first = []

    def handler(req, w):
        with lock:
            mine = not first
            first.append(req)
        if mine:
            held.set()
            release.wait(DEADLINE)
        w.canned(req)

    return make_origin(name="a", handler=handler), release, held


@pytest.mark.parametrize("zone", [True, False], ids=["zone", "no_zone"])
def test_max_conns_across_workers(weir, make_origin, zone):
    a, release, held = holding_origin(make_origin)
    b = free_port()
    port = start(weir,
                 "%s"
                 "        server %s max_conns=1;\n"
                 "        server 127.0.0.1:%d;\n"
                 % ("        zone u 64k;\n" if zone else "", a.addr, b),
                 origins=live_origin(b, "b"))

    # the first request goes to a (round robin begins with it) and
    # stays there: a has its one connection
    result = {}

    def hold():
        result["answer"] = get(port)

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    try:
        assert held.wait(DEADLINE), "the first request did not reach a"

        answers = until_both_workers(weir, port)
    finally:
        release.set()
        t.join(DEADLINE)
    assert not t.is_alive()
    status, holder, ups, _ = result["answer"]
    assert status == 200 and ups == a.addr

    other = [ups for pid, ups in answers if pid != holder]
    assert other, answers
    if zone:
        # max_conns=1 counts the holder's connection in every worker
        assert a.addr not in [ups for _, ups in answers]
        assert a.accepted == 1
    else:
        # the other worker counts only its own: its first request goes
        # to a, which has a connection from the holder already
        assert other[0] == a.addr
        assert a.accepted == 2


# ---- configuration errors (weir -t)


HEAD = "error_log logs/error.log info;\nevents {\n}\n"
# the first line of the http block's body (HEAD is 3 lines, "http {" 4)
FIRST = 5


def conf_text(body):
    return HEAD + "http {\n" + body + "}\n"


def t_run(weir, text):
    path = weir.conf(text, preamble=False, events=False)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    return path, res


def expect(weir, body, reason, line):
    weir.allow.append(r"\[emerg\]")
    path, res = t_run(weir, conf_text(body))
    lines = res.stderr.splitlines()
    assert res.returncode == 1, res.stderr
    want = "weir: [emerg] %s in %s:%d" % (reason, path, line)
    assert want in lines, "want %r in:\n%s" % (want, res.stderr)
    return res


def block(name, *lines):
    return ("    upstream %s {\n" % name
            + "".join("        %s\n" % ln for ln in lines)
            + "    }\n")


def test_zone_valid(weir):
    body = (block("a", "zone shared 64k;", "server 127.0.0.1:8081;",
                  "server 127.0.0.1:8082 backup;")
            # a second group in the same zone, the size given once
            + block("b", "server 127.0.0.1:8083;", "zone shared;",
                    "least_conn;")
            + block("c", "hash $uri consistent;", "zone other 32k;",
                    "server 127.0.0.1:8084 max_conns=5;"))
    path, res = t_run(weir, conf_text(body))
    assert res.returncode == 0, res.stderr
    assert "test is successful" in res.stderr


ERRORS = [
    ("no_args", block("u", "zone;", "server 127.0.0.1;"),
     'invalid number of arguments in "zone" directive', FIRST + 1),
    ("three_args", block("u", "zone u 64k x;", "server 127.0.0.1;"),
     'invalid number of arguments in "zone" directive', FIRST + 1),
    ("empty_name", block("u", 'zone "" 64k;', "server 127.0.0.1;"),
     'invalid zone name ""', FIRST + 1),
    ("bad_size", block("u", "zone u lots;", "server 127.0.0.1;"),
     'invalid zone size "lots"', FIRST + 1),
    ("below_8_pages", block("u", "zone u 16k;", "server 127.0.0.1;"),
     'zone "u" is too small', FIRST + 1),
    ("duplicate", block("u", "zone u 64k;", "zone v 64k;",
                        "server 127.0.0.1;"),
     '"zone" directive is duplicate', FIRST + 2),
    ("outside_upstream", "    zone u 64k;\n",
     '"zone" directive is not allowed here', FIRST),
    ("sizes_conflict",
     block("a", "zone z 64k;", "server 127.0.0.1;")
     + block("b", "zone z 128k;", "server 127.0.0.1;"),
     'the size 131072 of shared memory zone "z" conflicts with already '
     'declared size 65536', FIRST + 5),
    # no group gives the size: named at the first group's directive
    ("no_size",
     block("a", "server 127.0.0.1;", "zone z;")
     + block("b", "zone z;", "server 127.0.0.1;"),
     'zero size shared memory zone "z"', FIRST + 2),
]


@pytest.mark.parametrize("body,reason,line", [e[1:] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])
def test_zone_errors(weir, body, reason, line):
    expect(weir, body, reason, line)


def test_zone_too_small_for_its_groups(weir):
    """A zone without room for its groups' state is an error at the
    directive of the group that does not fit, with the size needed; that
    size is enough."""
    servers = ["server 127.0.0.1:%d;" % (10000 + i) for i in range(600)]
    body = (block("a", "zone z 32k;", "server 127.0.0.1:9999;")
            + block("b", "zone z;", *servers))
    # "a" fits alone; "b" (its zone at line FIRST + 5) does not
    weir.allow.append(r"\[emerg\]")
    path, res = t_run(weir, conf_text(body))
    assert res.returncode == 1, res.stderr
    m = re.search(r'weir: \[emerg\] zone "z" is too small for upstream "b" '
                  r'\(at least (\d+) bytes are needed\) in (\S+):(\d+)$',
                  res.stderr, re.M)
    assert m, res.stderr
    assert m.group(2) == path and int(m.group(3)) == FIRST + 5
    need = int(m.group(1))
    assert need > 32768

    path, res = t_run(weir, conf_text(body.replace("zone z 32k;",
                                                   "zone z %d;" % need)))
    assert res.returncode == 0, res.stderr

    # one page less than that is too small again
    small = need - 4096
    path, res = t_run(weir, conf_text(body.replace("zone z 32k;",
                                                   "zone z %d;" % small)))
    assert res.returncode == 1, res.stderr


def test_zone_name_taken_by_another_use(weir):
    """The zone of an upstream and, say, a TLS session cache are
    different uses of shared memory: one name cannot serve both."""
    import tlspki
    body = (tlspki.ssl_preamble()
            + HEAD + "http {\n"
            + "    ssl_session_cache shared:z:1m;\n"
            + block("u", "zone z 64k;", "server 127.0.0.1;")
            + "}\n")
    weir.allow.append(r"\[emerg\]")
    path = weir.conf(body, preamble=False, events=False)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 1, res.stderr
    assert re.search(r'\[emerg\] the shared memory zone "z" is already '
                     r'declared for a different use in ', res.stderr), \
        res.stderr
