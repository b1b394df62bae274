"""HTTP/2 to origins (`proxy_http_version 2`, docs/http/proxy.md and
docs/dev/upstream.md "Sessions"): the session layer under the upstream
core, against a real HTTP/2 origin (h2origin.py, python h2) in
cleartext prior knowledge and over TLS with ALPN h2, and against
`weir-probe origin` for volume.

Clients are curl (HTTP/1.1, and HTTP/2 to weir with
--http2-prior-knowledge), so every cell of client {H1, h2c} x origin
{h2c, H2 TLS} is driven by a real client."""

import concurrent.futures
import os
import socket
import subprocess

import pytest

import tlspki
from h2origin import H2Origin
from weirtest import DEADLINE, wait_for

CURL = "curl"


@pytest.fixture
def h2o():
    made = []

    def make(**kw):
        o = H2Origin(**kw)
        made.append(o)
        return o

    yield make
    for o in made:
        o.close()


def start(weir, pass_to, location="", http="", server="", preamble="",
          version="2"):
    port = weir.port()
    weir.conf(preamble +
              "worker_processes 1;\n"
              "http {\n"
              "    proxy_connect_timeout 3s;\n"
              "    proxy_read_timeout 5s;\n"
              "%s"
              "    server {\n"
              "        listen 127.0.0.1:%d http2;\n"
              "%s"
              "        location / {\n"
              "            proxy_http_version %s;\n"
              "            proxy_pass %s;\n"
              "%s"
              "        }\n"
              "    }\n"
              "}\n" % (http, port, server, version, pass_to, location))
    weir.start(check_ports=False)

    def up():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(up, what="the HTTP port to accept")
    return port


def curl(port, path, client="h1", args=(), check=True):
    cmd = [CURL, "-sS", "--max-time", "20", "-o", "-", "-D", "/dev/stderr"]
    if client == "h2":
        cmd.append("--http2-prior-knowledge")
    cmd += list(args) + ["http://127.0.0.1:%d%s" % (port, path)]
    p = subprocess.run(cmd, capture_output=True, timeout=DEADLINE)
    if check:
        assert p.returncode == 0, (p.returncode, p.stderr)
    return p


def status_of(p):
    lines = [l for l in p.stderr.decode("latin1").split("\r\n")
             if l.startswith("HTTP/")]
    return [int(l.split()[1]) for l in lines]


@pytest.fixture(params=["h2c", "h2tls"])
def origin_kind(request):
    return request.param


def origin_and_pass(h2o, kind, pki):
    if kind == "h2c":
        o = h2o()
        return o, "http://%s" % o.addr, "", ""
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    o = h2o(cert=leaf.chain, key=leaf.key)
    loc = ("proxy_ssl_trusted_certificate %s;\n"
           "proxy_ssl_verify on;\n"
           "proxy_ssl_name localhost;\n" % pki.ca.cert)
    return o, "https://%s" % o.addr, loc, tlspki.ssl_preamble()


@pytest.mark.parametrize("client", ["h1", "h2"])
def test_tiny_get(weir, h2o, pki, origin_kind, client):
    o, url, loc, pre = origin_and_pass(h2o, origin_kind, pki)
    port = start(weir, url, location=loc, preamble=pre)
    p = curl(port, "/tiny?a=1", client)
    assert p.stdout == b"tiny over h2\n"
    assert status_of(p) == [200]
    head = dict(o.requests[0])
    assert head[":method"] == "GET"
    assert head[":path"] == "/tiny?a=1"
    assert head[":scheme"] == ("https" if origin_kind == "h2tls" else "http")
    assert head[":authority"] == o.addr
    # hop-by-hop never crosses
    assert "connection" not in head and "keep-alive" not in head


@pytest.mark.parametrize("buffering", ["on", "off"])
@pytest.mark.parametrize("client", ["h1", "h2"])
def test_post_echo(weir, h2o, pki, origin_kind, client, buffering,
                   tmp_path):
    o, url, loc, pre = origin_and_pass(h2o, origin_kind, pki)
    port = start(weir, url, preamble=pre,
                 location=loc + "proxy_request_buffering %s;\n"
                 "client_max_body_size 4m;\n" % buffering)
    body = os.urandom(1 << 20)
    f = tmp_path / "body"
    f.write_bytes(body)
    p = curl(port, "/echo", client, args=["--data-binary", "@%s" % f])
    assert status_of(p) == [200]
    assert p.stdout == body


def test_chunked_request_body(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr,
                 location="proxy_request_buffering off;\n")
    p = curl(port, "/echo", "h1",
             args=["-H", "Transfer-Encoding: chunked", "--data-binary",
                   "hello chunked"])
    assert p.stdout == b"hello chunked"
    head = dict(o.requests[0])
    assert "transfer-encoding" not in head


def test_trailers_to_h1_chunked_and_h2(weir, h2o, origin_kind, pki):
    o, url, loc, pre = origin_and_pass(h2o, origin_kind, pki)
    port = start(weir, url, location=loc, preamble=pre)
    # HTTP/1.1: a chunked body with the trailer section
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    s.sendall(b"GET /trailers HTTP/1.1\r\nHost: a\r\nTE: trailers\r\n"
              b"Connection: close\r\n\r\n")
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert b"body before trailers\n" in body
    assert b"x-checksum: abc123\r\n" in body.lower()
    assert b"grpc-status: 0\r\n" in body.lower()
    # HTTP/2 client: trailers as a HEADERS frame
    import h2client
    c = h2client.H2Client(port)
    try:
        r = c.response(c.request("GET", "/trailers"))
        assert r.status == 200
        assert r.body == b"body before trailers\n"
        tr = [(k.decode() if isinstance(k, bytes) else k,
               v.decode() if isinstance(v, bytes) else v)
              for k, v in r.trailers]
        assert ("x-checksum", "abc123") in tr
        assert ("grpc-status", "0") in tr
    finally:
        c.close()


def test_interim_relayed(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)
    p = curl(port, "/interim", "h1")
    assert status_of(p) == [103, 200]
    assert b"rel=preload" in p.stderr
    assert p.stdout == b"after the hints\n"


@pytest.mark.parametrize("client", ["h1", "h2"])
def test_origin_reset_mid_body(weir, h2o, client):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)
    p = curl(port, "/reset", client, check=False)
    # H1: the length promised is not delivered (curl 18); H2: the
    # stream is reset (curl 92)
    assert p.returncode in (18, 92), (p.returncode, p.stderr)
    assert 0 < len(p.stdout) < 100000
    weir.wait_log(r"upstream reset the HTTP/2 stream: INTERNAL_ERROR"
                  r"|recv\(\) failed")


def test_timeout_504(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr,
                 location="proxy_read_timeout 500ms;\n")
    p = curl(port, "/hold", "h1")
    assert status_of(p) == [504]
    weir.wait_log(r"upstream timed out")
    # the session survives one stream's timeout
    p = curl(port, "/tiny", "h1")
    assert p.stdout == b"tiny over h2\n"
    assert o.connections == 1


def test_slow_stream_streamed(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr,
                 location="proxy_buffering off;\n")
    p = curl(port, "/slow/10", "h1")
    assert p.stdout == b"s" * 10000


def test_refused_stream_retried_for_post(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)
    p = curl(port, "/refuse", "h1", args=["--data-binary", "payload"])
    assert status_of(p) == [200]
    assert p.stdout == b"second try payload\n"
    weir.wait_log(r"upstream did not process the request, retrying")
    assert len(o.requests) == 2


def test_multiplexed_one_connection(weir, h2o):
    o = h2o()
    port = start(weir, "http://%s" % o.addr)

    def one(i):
        return curl(port, "/slow/3?%d" % i, "h1").stdout

    # the first request opens the session; the rest share it
    assert one(-1) == b"s" * 3000
    with concurrent.futures.ThreadPoolExecutor(20) as ex:
        out = list(ex.map(one, range(20)))
    assert out == [b"s" * 3000] * 20
    assert o.connections == 1
    assert len(o.requests) == 21


def test_alpn_refused_is_502(weir, h2o, pki):
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    o = h2o(cert=leaf.chain, key=leaf.key, alpn=("http/1.1",))
    port = start(weir, "https://%s" % o.addr, preamble=tlspki.ssl_preamble(),
                 location="proxy_ssl_verify off;\n")
    p = curl(port, "/tiny", "h1")
    assert status_of(p) == [502]
    weir.wait_log(r'upstream did not choose "h2" with ALPN')


def test_probe_origin_volume(weir, tmp_path):
    """weir-probe origin (h2c): many keep-alive requests share few
    sessions, bodies intact."""
    import test_probe
    probe = os.path.join(test_probe.weirtest.WEIR_BUILD_DIR, "weir-probe")
    port_o = weir.port()
    po = subprocess.Popen([probe, "origin", "-l", "127.0.0.1:%d" % port_o],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        def listening():
            socket.create_connection(("127.0.0.1", port_o), 1).close()
            return True

        wait_for(listening, what="weir-probe origin")
        port = start(weir, "http://127.0.0.1:%d" % port_o)
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            out = list(ex.map(lambda i: curl(port, "/size/300000").stdout,
                              range(40)))
        assert all(len(b) == 300000 for b in out)
        # the readiness probe, then at most 2 sessions
        assert probe_connections(port) <= 3
    finally:
        po.terminate()
        po.wait(DEADLINE)


def probe_connections(port):
    """The connections weir-probe origin accepted, asked through weir."""
    stats = curl(port, "/stats").stdout.decode()
    return int(stats.split("connections ")[1].split()[0])


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


def test_slow_client_stalls_no_other_stream(weir):
    """One session, 20 streams: one client does not read its 64 MB, the
    other 19 finish their 4 MB at full speed; the slow one's stream holds
    at most its window (the origin is not read for it), so the worker's
    RSS stays far below the 64 MB it would hold without back-pressure;
    the slow client then gets every byte."""
    import test_probe
    probe = os.path.join(test_probe.weirtest.WEIR_BUILD_DIR, "weir-probe")
    port_o = weir.port()
    po = subprocess.Popen([probe, "origin", "-l", "127.0.0.1:%d" % port_o],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    size = 4 << 20
    slow_size = 64 << 20
    try:
        def listening():
            socket.create_connection(("127.0.0.1", port_o), 1).close()
            return True

        wait_for(listening, what="weir-probe origin")
        port = start(weir, "http://127.0.0.1:%d" % port_o,
                     location="proxy_buffering off;\n")
        # the session first, so that the 20 share it (the readiness
        # probe above was a connection too)
        assert curl(port, "/tiny").stdout.startswith(b"weir-probe")
        conns0 = probe_connections(port)
        worker = weir.workers()[0]
        base = rss_kib(worker)

        slow = socket.socket()
        # a small window before connecting: the kernel must not take the
        # whole response for the client
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        slow.settimeout(DEADLINE)
        slow.connect(("127.0.0.1", port))
        slow.sendall(b"GET /size/%d HTTP/1.1\r\nHost: a\r\n"
                     b"Connection: close\r\n\r\n" % slow_size)
        peak = [0]

        def fast(i):
            out = curl(port, "/size/%d?%d" % (size, i)).stdout
            peak[0] = max(peak[0], rss_kib(worker))
            return len(out)

        with concurrent.futures.ThreadPoolExecutor(19) as ex:
            sizes = list(ex.map(fast, range(19)))
        assert sizes == [size] * 19
        # the slow stream is stalled, not drained into weir's memory
        assert peak[0] - base < 24 * 1024, (base, peak[0])
        got = 0
        while True:
            d = slow.recv(1 << 20)
            if not d:
                break
            got += len(d)
        slow.close()
        assert got > slow_size
        assert probe_connections(port) == conns0
    finally:
        po.terminate()
        po.wait(DEADLINE)


@pytest.mark.parametrize("offers", [("h2", "http/1.1"), ("http/1.1",)])
def test_version_auto_follows_alpn(weir, pki, offers):
    """proxy_http_version auto: ALPN h2,http/1.1; the origin's choice is
    spoken, and the connection (session or HTTP/1.1 keep-alive) reused."""
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    o = H2Origin(cert=leaf.chain, key=leaf.key, h1=True, alpn=offers)
    try:
        port = start(weir, "https://%s" % o.addr,
                     preamble=tlspki.ssl_preamble(), version="auto",
                     location="proxy_ssl_verify off;\n")
        want = b"tiny over h2\n" if offers[0] == "h2" else b"tiny over h1\n"
        for _ in range(3):
            assert curl(port, "/tiny").stdout == want
        # POST too, on the same connection
        p = curl(port, "/echo", args=["--data-binary", "posted"])
        assert p.stdout == b"posted"
        assert o.connections == 1
        if offers[0] == "h2":
            assert all(":scheme" in dict(q) for q in o.requests)
    finally:
        o.close()


def test_version_auto_cleartext_is_http11(weir):
    o = H2Origin(h1=True)
    try:
        port = start(weir, "http://%s" % o.addr, version="auto")
        assert curl(port, "/tiny").stdout == b"tiny over h1\n"
    finally:
        o.close()


def test_local_stream_cap_opens_more_sessions(weir, h2o):
    """proxy_http2_max_concurrent_streams 2: five requests in flight
    take three sessions; the origin's own limit is higher."""
    o = h2o()
    port = start(weir, "http://%s" % o.addr,
                 location="proxy_http2_max_concurrent_streams 2;\n")
    assert curl(port, "/tiny").stdout == b"tiny over h2\n"
    with concurrent.futures.ThreadPoolExecutor(5) as ex:
        out = list(ex.map(lambda i: curl(port, "/slow/6?%d" % i).stdout,
                          range(5)))
    assert out == [b"s" * 6000] * 5
    assert o.connections == 3


def test_stream_cap_directive_bounds(weir):
    weir.allow.append(r"\[emerg\]")
    weir.conf("http {\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        proxy_http2_max_concurrent_streams 0;\n"
              "    }\n"
              "}\n" % weir.port())
    p = weir.run(["-t"])
    assert p.returncode != 0
    assert ('"proxy_http2_max_concurrent_streams" directive must be '
            'between 1 and 65536 in %s:7' % weir.path("conf", "weir.conf")
            in p.stderr), p.stderr


def test_request_trailers_reach_the_origin(weir, h2o):
    """A chunked HTTP/1.1 body's trailers, streamed to an HTTP/2 origin,
    arrive as the stream's final HEADERS."""
    o = h2o()
    port = start(weir, "http://%s" % o.addr,
                 location="proxy_request_buffering off;\n")
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: a\r\n"
                  b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        # streamed: the origin has the head before the body is sent (a
        # body read whole with the head would go with its length, and
        # its trailers be dropped, as for an HTTP/1.1 origin)
        wait_for(lambda: o.requests, what="the head at the origin")
        s.sendall(b"5\r\nhello\r\n0\r\nX-Sum: 42\r\nConnection: bad\r\n"
                  b"\r\n")
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    finally:
        s.close()
    assert data.endswith(b"hello"), data
    assert o.req_trailers == [[("x-sum", "42")]]
