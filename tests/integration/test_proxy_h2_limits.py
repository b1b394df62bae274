"""HTTP/2 origins are not trusted (`proxy_http_version 2`,
docs/http/proxy.md): a malformed response is a 502 with a log line
naming what was wrong (nghttp2's checks: connection-specific fields, a
content-length the DATA contradicts; weir's: :status, the head's size,
proxy_buffer_size); a flood of frames that carry no progress ends the
session with GOAWAY ENHANCE_YOUR_CALM; a GOAWAY from the origin retries
the streams above its last stream id on another connection, and lets
the ones below it finish."""

import concurrent.futures
import os
import subprocess
import time

import pytest

import weirtest
from h2origin import H2Origin
from test_proxy_h2 import curl, h2o, start, status_of       # noqa: F401
from weirtest import DEADLINE

PROBE = os.path.join(weirtest.WEIR_BUILD_DIR, "weir-probe")


def test_connection_specific_field_502(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)
    p = curl(port, "/badhdr")
    assert status_of(p) == [502]
    weir.wait_log(r"upstream sent an invalid HTTP/2 response")


def test_bad_status_502(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)
    p = curl(port, "/bigstatus")
    assert status_of(p) == [502]


def test_too_big_header_502(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)
    p = curl(port, "/bighdr")
    assert status_of(p) == [502]
    weir.wait_log(r"upstream sent too big header")


def test_content_length_contradicted(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)
    p = curl(port, "/badlen", check=False)
    # the head went out with the length: the body is cut short
    assert p.returncode == 18, (p.returncode, p.stderr)
    weir.wait_log(r"upstream sent an invalid HTTP/2 response")


def test_ping_flood_ends_the_session(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)
    p = curl(port, "/pings", check=False)
    assert status_of(p) == [502]
    weir.wait_log(r"upstream HTTP/2 flood on session \*\d+: more than 1000 "
                  r"PING or SETTINGS frames in a second")
    # the next request gets a new session
    p = curl(port, "/tiny")
    assert p.stdout == b"tiny over h2\n"
    assert o.connections == 2


@pytest.mark.parametrize("path,what", [
    ("/windows", "WINDOW_UPDATE frames"),
    ("/resets", "RST_STREAM frames"),
    ("/tinydata", "tiny DATA frames"),
])
def test_frame_floods_end_the_session(weir, h2o, path, what):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)
    curl(port, path, check=False)
    weir.wait_log(r"upstream HTTP/2 flood on session \*\d+: more than 1000 "
                  + what + " in a second")
    p = curl(port, "/tiny")
    assert p.stdout == b"tiny over h2\n"
    assert o.connections == 2


def test_tiny_answers_of_many_streams_are_no_flood(weir):
    """gRPC unary answers (a tiny DATA, then trailers) at well over 1000
    a second on one session: progress, not a flood (weir-probe origin's
    /grpc, weir-probe client)."""
    origin = subprocess.Popen([PROBE, "origin", "-l", "127.0.0.1:0"],
                              stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        line = origin.stdout.readline()
        assert "listening on 127.0.0.1:" in line, line
        oport = int(line.rsplit(":", 1)[1])
        # (keepalive_requests: no client connection ends mid-run)
        port = start(weir, "http://127.0.0.1:%d" % oport,
                     http="    keepalive_requests 100000;\n")
        p = subprocess.run(
            [PROBE, "client", "--h2", "-m", "8", "-c", "2", "-n", "6000",
             "-d", "20", "-X", "POST", "-b", "21",
             "-H", "content-type: application/grpc", "-H", "te: trailers",
             "-u", "http://127.0.0.1:%d/grpc.Bench/Unary" % port],
            capture_output=True, text=True, timeout=DEADLINE * 2)
        assert p.returncode == 0, p.stderr
        out = p.stdout
        assert "requests   6000," in out, out
        assert "errors     0 " in out, out
        rate = float(out.split("requests   6000,")[1].split()[0])
        if rate < 1500:
            pytest.skip("%.0f requests/s: too slow to pass 1000 a second"
                        % rate)
        assert "flood" not in weir.log()
    finally:
        origin.kill()
        origin.wait()


def test_goaway_retries_streams_above_last_id(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)
    assert curl(port, "/tiny").stdout == b"tiny over h2\n"
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        first = ex.submit(curl, port, "/goaway?1")
        deadline = time.time() + 10
        while o.goaways < 1 and time.time() < deadline:
            time.sleep(0.01)
        # a POST: retried even so, the origin never saw it processed
        second = ex.submit(curl, port, "/goaway?2", "h1",
                           ["--data-binary", "x"])
        assert first.result().stdout == b"first, before the GOAWAY\n"
        assert second.result().stdout == b"retried after the GOAWAY\n"
    weir.wait_log(r"upstream did not process the request, retrying")
    assert o.connections == 2
