"""Opening sessions to HTTP/2 origins (docs/dev/upstream.md "Sessions"):
while one attempt opens a session (connect, TLS), the attempts that come
for the same origin wait for it instead of opening a connection each;
its failure is theirs, counted once; its client going away hands the
opening to a waiter.

The origin (h2origin.py) waits before each TLS handshake, so the
requests of a burst all arrive while the first connection is being
opened."""

import concurrent.futures
import subprocess
import time

import pytest

import tlspki
from test_proxy_h2 import CURL, curl, h2o, start, status_of  # noqa: F401
from weirtest import DEADLINE, wait_for


def tls_origin(h2o, pki, **kw):
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    return h2o(cert=leaf.chain, key=leaf.key, **kw)


def burst(port, n, path="/tiny"):
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        return list(ex.map(lambda i: curl(port, "%s?%d" % (path, i),
                                          check=False),
                           range(n)))


@pytest.mark.parametrize("cap, sessions", [(None, 1), (5, 4)])
def test_burst_waits_for_the_session_being_opened(weir, h2o, pki, cap,
                                                  sessions):
    """20 requests at once to a fresh origin: one connection (at most 100
    streams are expected of a session not yet up), or, with a local cap
    of 5 streams, one per 5 of them."""
    o = tls_origin(h2o, pki, handshake_delay=1.0)
    loc = "proxy_ssl_verify off;\n"
    if cap:
        loc += "proxy_http2_max_concurrent_streams %d;\n" % cap
    port = start(weir, "https://%s" % o.addr, location=loc,
                 preamble=tlspki.ssl_preamble())
    out = burst(port, 20)
    assert [p.stdout for p in out] == [b"tiny over h2\n"] * 20
    assert o.connections == sessions
    assert len(o.requests) == 20


def failing_pair(weir, h2o, pki, max_fails):
    """A (its handshake fails after 0.5 s) and B, round robin."""
    a = tls_origin(h2o, pki, handshake_delay=0.5, fail_handshake=True)
    b = tls_origin(h2o, pki)
    port = start(weir, "https://up",
                 http="    upstream up {\n"
                      "        server %s max_fails=%d fail_timeout=30s;\n"
                      "        server %s;\n"
                      "    }\n" % (a.addr, max_fails, b.addr),
                 location="proxy_ssl_verify off;\n",
                 preamble=tlspki.ssl_preamble())
    return a, port


def test_opener_failure_fails_the_waiters_counted_once(weir, h2o, pki):
    """A fails its handshake: the requests waiting for its session go to
    B with the one that opened it, and A has one failure, not one per
    request (max_fails=2: still in rotation, tried again)."""
    a, port = failing_pair(weir, h2o, pki, 2)
    out = burst(port, 10)
    assert [p.stdout for p in out] == [b"tiny over h2\n"] * 10
    assert a.connections == 1
    # one failure of two: A is chosen again within a few requests
    for i in range(4):
        assert curl(port, "/tiny?after%d" % i).stdout == b"tiny over h2\n"
        if a.connections == 2:
            break
    assert a.connections == 2


def test_opener_failure_max_fails_1_takes_the_peer_out(weir, h2o, pki):
    """The contrast: with max_fails=1 the same failure takes A out for
    fail_timeout, so it is not tried again."""
    a, port = failing_pair(weir, h2o, pki, 1)
    out = burst(port, 10)
    assert [p.stdout for p in out] == [b"tiny over h2\n"] * 10
    for i in range(4):
        assert curl(port, "/tiny?after%d" % i).stdout == b"tiny over h2\n"
    assert a.connections == 1


def test_waiters_time_out_with_the_opener(weir, h2o, pki):
    """The handshake outlasts proxy_connect_timeout: the opener and its
    waiters all answer 504, over one connection."""
    o = tls_origin(h2o, pki, handshake_delay=4.0)
    port = start(weir, "https://%s" % o.addr,
                 location="proxy_ssl_verify off;\n"
                          "proxy_connect_timeout 1s;\n",
                 preamble=tlspki.ssl_preamble())
    t0 = time.monotonic()
    out = burst(port, 6)
    assert [status_of(p) for p in out] == [[504]] * 6
    assert time.monotonic() - t0 < 3.5
    assert o.connections == 1
    weir.wait_log(r"upstream timed out")


def test_opener_client_gone_hands_the_opening_on(weir, h2o, pki):
    """The client of the request opening the session goes away: a waiter
    opens another one, and every waiter is answered."""
    o = tls_origin(h2o, pki, handshake_delay=1.0)
    port = start(weir, "https://%s" % o.addr,
                 location="proxy_ssl_verify off;\n",
                 preamble=tlspki.ssl_preamble())
    first = subprocess.Popen([CURL, "-sS", "--max-time", "0.5", "-o",
                              "/dev/null", "http://127.0.0.1:%d/tiny" % port],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: o.connections == 1, what="the first connection")
        out = burst(port, 5)
    finally:
        first.wait(DEADLINE)
    assert first.returncode != 0
    assert [p.stdout for p in out] == [b"tiny over h2\n"] * 5
    assert o.connections == 2


def test_version_auto_burst_waits_for_the_session_being_opened(weir, h2o,
                                                               pki):
    """proxy_http_version auto to an origin that chooses h2: a burst of 20
    requests waits for the first one's session as with version 2 (one
    connection), rather than open a connection per request before ALPN
    says whether a session comes of it."""
    o = tls_origin(h2o, pki, handshake_delay=1.0, h1=True,
                   alpn=("h2", "http/1.1"))
    port = start(weir, "https://%s" % o.addr, version="auto",
                 location="proxy_ssl_verify off;\n",
                 preamble=tlspki.ssl_preamble())
    out = burst(port, 20)
    assert [p.stdout for p in out] == [b"tiny over h2\n"] * 20
    assert o.connections == 1
    assert len(o.requests) == 20


def test_version_auto_http11_origin_lets_the_waiters_connect(weir, h2o, pki):
    """The same burst to an origin that chooses http/1.1: once the first
    attempt learns it (no session comes), the others it held connect at
    once, each on its own, not one after another: 10 requests with a 1 s
    handshake take about 2 s, not 10."""
    o = tls_origin(h2o, pki, handshake_delay=1.0, h1=True,
                   alpn=("http/1.1",))
    port = start(weir, "https://%s" % o.addr, version="auto",
                 location="proxy_ssl_verify off;\n",
                 preamble=tlspki.ssl_preamble())
    t0 = time.monotonic()
    out = burst(port, 10)
    elapsed = time.monotonic() - t0
    assert [p.stdout for p in out] == [b"tiny over h1\n"] * 10
    assert elapsed < 5.0, elapsed
    assert 2 <= o.connections <= 10
