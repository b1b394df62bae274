"""A PING before reusing a long-idle HTTP/2 session
(`proxy_http2_ping_idle`, docs/http/proxy.md): a session that has had no
stream for that long sends a PING with the next stream; an origin that
does not answer within proxy_connect_timeout has gone without a word,
the session fails and the request is retried on a fresh connection,
as on a stale kept-alive HTTP/1.1 connection.

The origin (h2origin.py) goes silent after "/mute": the connection stays
open and nothing more is read or answered. The idle time is what is
under test, so the tests wait it out (a fraction of a second)."""

import time

from test_proxy_h2 import curl, h2o, start, status_of  # noqa: F401

IDLE = 0.3      # seconds: past proxy_http2_ping_idle 200ms


def conf(ping_idle, read_timeout="5s"):
    return ("proxy_http2_ping_idle %s;\n"
            "proxy_connect_timeout 1s;\n"
            "proxy_read_timeout %s;\n" % (ping_idle, read_timeout))


def test_silent_session_fails_on_ping_and_request_is_retried(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr, location=conf("200ms"))
    p = curl(port, "/mute")
    assert p.stdout == b"muted\n"
    time.sleep(IDLE)
    t = time.monotonic()
    p = curl(port, "/tiny")
    took = time.monotonic() - t
    assert status_of(p) == [200] and p.stdout == b"tiny over h2\n"
    # the PING's timeout (1 s), not the read timeout (5 s)
    assert took < 4, took
    assert o.connections == 2
    log = weir.log()
    assert "no answer to a PING after an idle time" in log, log[-2000:]
    assert "retrying on another connection" in log


def test_contrast_without_ping_the_request_waits_for_read_timeout(weir,
                                                                  h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr,
                 location=conf("0", read_timeout="1s"))
    assert curl(port, "/mute").stdout == b"muted\n"
    time.sleep(IDLE)
    p = curl(port, "/tiny")
    assert status_of(p) == [504]
    assert o.pings == 0


def test_answered_ping_keeps_the_session(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr, location=conf("200ms"))
    assert curl(port, "/tiny").stdout == b"tiny over h2\n"
    time.sleep(IDLE)
    assert curl(port, "/tiny").stdout == b"tiny over h2\n"
    assert o.pings == 1
    assert o.connections == 1


def test_busy_session_sends_no_ping(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr, location=conf("10s"))
    for _ in range(3):
        assert curl(port, "/tiny").stdout == b"tiny over h2\n"
    assert o.pings == 0
    assert o.connections == 1
