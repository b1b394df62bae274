"""The forward proxy (`forward_proxy on`, docs/http/forward-proxy.md): a
request whose target is an absolute URI (what curl -x, a browser or any
client configured with an HTTP proxy sends) goes to that URI's host,
named by weir's resolver, with the hop-by-hop headers of the proxy leg
(Proxy-Connection, Proxy-Authorization) removed; locations still match
the path, so a location with its own content handler answers instead
of the origin; origin-form requests are served as by any server.

Names are answered by dnsserver.DNSServer on loopback."""

import re
import socket
import subprocess

import pytest

from weirtest import DEADLINE, wait_for

CURL = "curl"


def start(weir, dns, server="", http="", forward="on", top=""):
    port = weir.port()
    weir.conf(top + "worker_processes 1;\n"
              "http {\n"
              "    resolver %s;\n"
              "    proxy_connect_timeout 3s;\n"
              "    proxy_read_timeout 5s;\n"
              "%s"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        forward_proxy %s;\n"
              "%s"
              "    }\n"
              "}\n" % (dns.addr, http, port, forward, server))
    weir.start(check_ports=False)

    def up():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(up, what="the proxy port to accept")
    return port


def conf_error(weir, directive, reason):
    """weir -t refuses an http block with directive (on its line 4) with
    "[emerg] reason in FILE:4" and exit status 1."""
    from weirtest import run_weir
    weir.allow.append(r"\[emerg\]")
    path = weir.conf("events {\n}\nhttp {\n    %s\n}\n" % directive,
                     preamble=False, events=False)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 1, res.stderr
    assert "[emerg] %s in %s:4" % (reason, path) in res.stderr, res.stderr


def via_proxy(port, url, args=()):
    cmd = [CURL, "-sS", "--max-time", "20", "-o", "-", "-D", "/dev/stderr",
           "-x", "http://127.0.0.1:%d" % port] + list(args) + [url]
    p = subprocess.run(cmd, capture_output=True, timeout=DEADLINE)
    assert p.returncode == 0, (p.returncode, p.stderr)
    return p


def status_of(p):
    lines = [l for l in p.stderr.decode("latin1").split("\r\n")
             if l.startswith("HTTP/")]
    return [int(l.split()[1]) for l in lines]


def test_absolute_form_goes_to_the_named_host(weir, origin, dns):
    dns.add("www.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns)
    p = via_proxy(port, "http://www.test:%d/a/b?c=d" % origin.port,
                  args=["-H", "Proxy-Authorization: Basic dTpw",
                        "--proxy-header", "Proxy-Connection: keep-alive"])
    assert status_of(p) == [200]
    assert p.stdout == b"origin GET /a/b?c=d\n"
    req = origin.requests[0]
    assert req.target == "/a/b?c=d"
    assert req.header("Host") == "www.test:%d" % origin.port
    assert req.header("Proxy-Connection") is None
    assert req.header("Proxy-Authorization") is None


def test_origin_connections_are_kept_alive_per_origin(weir, make_origin,
                                                      dns):
    o = make_origin()
    o2 = make_origin(name="other")
    dns.add("k.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns)
    for i in range(3):
        p = via_proxy(port, "http://k.test:%d/%d" % (o.port, i))
        assert p.stdout == b"origin GET /%d\n" % i
    p = via_proxy(port, "http://k.test:%d/x" % o2.port)
    assert p.stdout == b"other GET /x\n"
    # three client connections, one origin connection each per origin
    assert o.accepted == 1 and o2.accepted == 1


def test_location_with_its_own_handler_answers(weir, origin, dns):
    dns.add("www.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, server=(
        "        location /blocked/ {\n"
        "            return 403 \"blocked by weir\\n\";\n"
        "        }\n"
        "        location / {\n"
        "            add_header X-Seen-By weir;\n"
        "        }\n"))
    p = via_proxy(port, "http://www.test:%d/blocked/x" % origin.port)
    assert status_of(p) == [403] and p.stdout == b"blocked by weir\n"
    p = via_proxy(port, "http://www.test:%d/ok" % origin.port)
    assert status_of(p) == [200] and p.stdout == b"origin GET /ok\n"
    assert "x-seen-by: weir" in p.stderr.decode().lower()
    assert len(origin.requests) == 1


def test_origin_form_is_served_as_by_any_server(weir, origin, dns):
    port = start(weir, dns, server=(
        "        location = /hello {\n"
        "            return 200 \"I am the proxy\\n\";\n"
        "        }\n"))
    p = subprocess.run([CURL, "-sS", "http://127.0.0.1:%d/hello" % port],
                       capture_output=True, timeout=DEADLINE)
    assert p.stdout == b"I am the proxy\n"
    assert origin.requests == []


def test_forward_proxy_off_does_not_forward(weir, origin, dns):
    dns.add("www.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, forward="off")
    p = via_proxy(port, "http://www.test:%d/x" % origin.port)
    assert status_of(p) == [404]
    assert origin.requests == []


def test_unknown_host_is_502_naming_it(weir, origin, dns):
    port = start(weir, dns)
    p = via_proxy(port, "http://nowhere.test:%d/x" % origin.port)
    assert status_of(p) == [502]
    assert "nowhere.test could not be resolved (Domain name not found)" \
        in weir.log()


def test_upstream_block_of_the_same_name_is_not_used(weir, make_origin,
                                                      dns):
    # a client's target names a host, never a configured group
    inner = make_origin(name="inner")
    outer = make_origin(name="outer")
    dns.add("grp.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, http=("    upstream grp.test {\n"
                                  "        server %s;\n"
                                  "    }\n" % inner.addr))
    p = via_proxy(port, "http://grp.test:%d/x" % outer.port)
    assert p.stdout == b"outer GET /x\n"
    assert inner.requests == []


def test_post_body_is_relayed(weir, origin, dns):
    dns.add("www.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns)
    p = via_proxy(port, "http://www.test:%d/echo" % origin.port,
                  args=["--data-binary", "x" * 100000])
    assert status_of(p) == [200] and p.stdout == b"x" * 100000


# ---- CONNECT


class Echo:
    """A TCP server on loopback that echoes every byte back and closes
    its side once the peer has closed its own (half-close seen)."""

    def __init__(self):
        import threading
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.got_eof = False
        self._stop = False
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            c.settimeout(10)
            try:
                while True:
                    data = c.recv(65536)
                    if not data:
                        self.got_eof = True
                        break
                    c.sendall(data)
            except OSError:
                pass
            c.close()

    def stop(self):
        self._stop = True
        self._t.join(5)
        self.sock.close()


@pytest.fixture
def echo():
    e = Echo()
    try:
        yield e
    finally:
        e.stop()


def connect_head(s, limit=4096):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < limit:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.decode("latin1"), rest


def read_to_eof(s, limit=1 << 20):
    data = b""
    while len(data) < limit:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_connect_tunnels_bytes_untouched_with_half_close(weir, echo, dns):
    dns.add("echo.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, server="        forward_proxy_connect_ports %d;\n"
                 % echo.port)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    payload = bytes(range(256)) * 64 + b"\r\n\r\nGET / HTTP/1.1\r\n\r\n"
    # the first bytes of the tunnel come in the same write as the head:
    # none may be lost
    s.sendall(b"CONNECT echo.test:%d HTTP/1.1\r\nHost: echo.test:%d\r\n"
              b"Proxy-Connection: keep-alive\r\n\r\n" % (echo.port, echo.port)
              + payload[:100])
    head, rest = connect_head(s)
    assert head.startswith("HTTP/1.1 200 Connection established"), head
    low = head.lower()
    assert "content-length" not in low and "transfer-encoding" not in low
    assert "connection:" not in low
    s.sendall(payload[100:])
    s.shutdown(socket.SHUT_WR)
    got = rest + read_to_eof(s)
    s.close()
    assert got == payload
    assert echo.got_eof
    # logged when the tunnel ends, which may be just after the client
    # saw its end
    weir.wait_log(re.escape("CONNECT echo.test:%d HTTP/1.1\" 200"
                            % echo.port),
                  path=weir.path("logs", "access.log"))


def test_curl_proxytunnel(weir, origin, dns):
    dns.add("www.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, server="        forward_proxy_connect_ports %d;\n"
                 % origin.port)
    p = via_proxy(port, "http://www.test:%d/through" % origin.port,
                  args=["-p"])
    assert p.stdout == b"origin GET /through\n"
    assert status_of(p) == [200, 200]


def test_connect_port_not_allowed_is_403(weir, echo, dns):
    dns.add("echo.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns)             # the default: 443 only
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"CONNECT echo.test:%d HTTP/1.1\r\nHost: x\r\n\r\n"
              % echo.port)
    head, _ = connect_head(s)
    s.close()
    assert head.startswith("HTTP/1.1 403"), head
    assert ("CONNECT to \"echo.test:%d\" refused: port %d is not in "
            "forward_proxy_connect_ports" % (echo.port, echo.port)) \
        in weir.log()
    assert dns.count("echo.test") == 0


def test_connect_without_forward_proxy_is_405(weir, echo, dns):
    port = start(weir, dns, forward="off")
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n"
              % echo.port)
    head, _ = connect_head(s)
    s.close()
    assert head.startswith("HTTP/1.1 405"), head


@pytest.mark.parametrize("target", ["nowhere.test", "127.0.0.1"])
def test_connect_to_unreachable_origin_is_502(weir, dns, target):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    cport = closed.getsockname()[1]
    closed.close()
    port = start(weir, dns, server="        forward_proxy_connect_ports %d;\n"
                 % cport)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: x\r\n\r\n"
              % (target.encode(), cport))
    head, _ = connect_head(s)
    s.close()
    assert head.startswith("HTTP/1.1 502"), head


@pytest.mark.parametrize("args, reason", [
    ("0", "invalid port \"0\""),
    ("70000", "invalid port \"70000\""),
    ("9-1", "invalid port \"9-1\""),
    ("x", "invalid port \"x\""),
])
def test_connect_ports_errors(weir, args, reason):
    conf_error(weir, "forward_proxy_connect_ports %s;" % args, reason)


def test_https_through_connect_sees_the_origin_certificate(weir, dns, pki):
    # no decryption: the client's TLS goes to the origin untouched
    leaf = pki.leaf("tls.test")
    oport = weir.port()
    srv = subprocess.Popen(["openssl", "s_server", "-quiet", "-www",
                            "-accept", "127.0.0.1:%d" % oport,
                            "-cert", leaf.cert, "-key", leaf.key],
                           stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        def up():
            socket.create_connection(("127.0.0.1", oport), timeout=1).close()
            return True
        wait_for(up, what="openssl s_server")
        dns.add("tls.test", ("A", "127.0.0.1", 60))
        port = start(weir, dns, server="        forward_proxy_connect_ports"
                     " %d;\n" % oport)
        p = via_proxy(port, "https://tls.test:%d/" % oport,
                      args=["--cacert", pki.ca_cert, "-v"])
        assert b"s_server" in p.stdout
        # curl -v names the certificate it verified: the origin's own
        # leaf, issued by the test CA (no certificate of weir's)
        err = p.stderr.decode()
        subject = [l for l in err.splitlines() if "subject:" in l]
        issuer = [l for l in err.splitlines() if "issuer:" in l]
        assert subject and subject[0].endswith("CN=tls.test"), err
        assert issuer and "weir test CA" in issuer[0], err
    finally:
        srv.terminate()
        srv.wait(10)


# ---- destinations refused


def test_deny_list_refuses_the_destination(weir, origin, dns):
    dns.add("inside.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, server=("        forward_proxy_deny 10.0.0.0/8 "
                                    "127.0.0.0/8 ::1;\n"
                                    "        forward_proxy_connect_ports"
                                    " %d;\n" % origin.port))
    p = via_proxy(port, "http://inside.test:%d/x" % origin.port)
    assert status_of(p) == [403]
    p = via_proxy(port, "http://127.0.0.1:%d/x" % origin.port)
    assert status_of(p) == [403]
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"CONNECT inside.test:%d HTTP/1.1\r\nHost: x\r\n\r\n"
              % origin.port)
    head, _ = connect_head(s)
    s.close()
    assert head.startswith("HTTP/1.1 403"), head
    assert origin.requests == [] and origin.accepted == 0
    assert ("inside.test (127.0.0.1:%d) refused: the address is in "
            "forward_proxy_deny" % origin.port) in weir.log()


def test_a_request_to_weir_itself_is_refused(weir, dns):
    port = weir.port()
    dns.add("me.test", ("A", "127.0.0.1", 60))
    start_port = start(weir, dns, server=(
        "        forward_proxy_connect_ports 1-65535;\n"
        "        listen 127.0.0.1:%d;\n" % port))
    for target in (start_port, port):
        p = via_proxy(start_port, "http://me.test:%d/loop" % target)
        assert status_of(p) == [403]
        s = socket.create_connection(("127.0.0.1", start_port), timeout=10)
        s.sendall(b"CONNECT me.test:%d HTTP/1.1\r\nHost: x\r\n\r\n" % target)
        head, _ = connect_head(s)
        s.close()
        assert head.startswith("HTTP/1.1 403"), head
    assert "refused: the address is weir's own listening address (a loop)" \
        in weir.log()
    # one request each: none came back in through the proxy
    log = open(weir.path("logs", "access.log")).read()
    assert log.count("/loop") == 2, log


def test_forward_deny_errors(weir):
    conf_error(weir, "forward_proxy_deny 10.0.0.0/33;",
               'invalid address "10.0.0.0/33"')


# ---- https:// origins: verified by default in a forward proxy


@pytest.mark.parametrize("trusted, verify, status", [
    (False, None, 502), (True, None, 200), (False, "off", 200)],
    ids=["system-store", "trusted", "verify-off"])
def test_absolute_form_https_verifies_the_origin(weir, dns, pki, ssl_preamble,
                                                 trusted, verify, status):
    """Where proxy_ssl_verify is not set, a forward proxy's request to an
    https:// origin verifies it: against the system store (which does not
    know the test CA: 502), against proxy_ssl_trusted_certificate (200),
    or not at all with proxy_ssl_verify off (200)."""
    from h2origin import H2Origin

    leaf = pki.leaf("tls.test")
    o = H2Origin(cert=leaf.chain, key=leaf.key, alpn=("http/1.1",), h1=True)
    try:
        dns.add("tls.test", ("A", "127.0.0.1", 60))
        extra = ""
        if trusted:
            extra += ("        proxy_ssl_trusted_certificate %s;\n"
                      % pki.ca_cert)
        if verify:
            extra += "        proxy_ssl_verify %s;\n" % verify
        port = start(weir, dns, server=extra, top=ssl_preamble)
        # curl sends https:// URLs through CONNECT: the absolute form is
        # written by hand
        s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
        try:
            s.sendall(b"GET https://tls.test:%d/tiny HTTP/1.1\r\n"
                      b"Host: tls.test:%d\r\nConnection: close\r\n\r\n"
                      % (o.port, o.port))
            data = read_to_eof(s)
        finally:
            s.close()
        assert data.startswith(b"HTTP/1.1 %d " % status), data[:200]
        if status == 502:
            weir.wait_log(r"upstream SSL certificate verify error")
    finally:
        o.close()


# ---- CONNECT over HTTP/2 (RFC 9113 8.5)


class H2Tunnel:
    """A CONNECT stream of an h2c (prior knowledge) connection to weir,
    with python h2: status() is the answer's :status; send() and recv()
    move DATA; close() ends the stream."""

    def __init__(self, port, authority):
        import h2.config
        import h2.connection

        self.s = socket.create_connection(("127.0.0.1", port),
                                          timeout=DEADLINE)
        # python h2 wants :scheme and :path even on a CONNECT
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding="utf-8",
            validate_outbound_headers=False))
        self.conn.initiate_connection()
        self.sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(self.sid, [(":method", "CONNECT"),
                                          (":authority", authority)])
        self.s.sendall(self.conn.data_to_send())
        self.headers = None
        self.data = b""
        self.ended = False
        self.reset = None

    def _pump(self):
        import h2.events

        chunk = self.s.recv(65536)
        if not chunk:
            raise EOFError
        for ev in self.conn.receive_data(chunk):
            if isinstance(ev, h2.events.ResponseReceived):
                self.headers = dict(ev.headers)
            elif isinstance(ev, h2.events.DataReceived):
                self.data += ev.data
                self.conn.acknowledge_received_data(
                    ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                self.ended = True
            elif isinstance(ev, h2.events.StreamReset):
                self.reset = ev.error_code
        self.s.sendall(self.conn.data_to_send())

    def status(self):
        wait_for(lambda: self._pump() or self.headers is not None,
                 what="the CONNECT's answer")
        return int(self.headers[":status"])

    def send(self, data, end=False):
        self.conn.send_data(self.sid, data, end_stream=end)
        self.s.sendall(self.conn.data_to_send())

    def recv(self, n):
        wait_for(lambda: self._pump() or len(self.data) >= n,
                 what="%d bytes through the tunnel" % n)
        return self.data

    def wait_end(self):
        wait_for(lambda: self._pump() or self.ended or self.reset is not None,
                 what="the end of the tunnel's stream")

    def close(self):
        self.s.close()


def test_connect_over_http2_tunnels_bytes(weir, echo, dns):
    """A CONNECT stream of an HTTP/2 connection gets 200 and then carries
    the bytes both ways; the client's END_STREAM half-closes the origin
    connection and the origin's close ends the stream."""
    dns.add("echo.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, server="        http2 on;\n"
                 "        forward_proxy_connect_ports %d;\n" % echo.port)
    t = H2Tunnel(port, "echo.test:%d" % echo.port)
    try:
        assert t.status() == 200
        assert "content-length" not in t.headers
        t.send(b"hello through h2")
        assert t.recv(16) == b"hello through h2"
        t.send(b"!", end=True)
        t.wait_end()
        assert t.data == b"hello through h2!"
        assert t.ended and t.reset is None
        wait_for(lambda: echo.got_eof, what="the origin to see the EOF")
    finally:
        t.close()


@pytest.mark.parametrize("case, status", [
    ("port", 403), ("no-forward", 405), ("authority", 400)])
def test_connect_over_http2_refused(weir, echo, dns, case, status):
    """Over HTTP/2 as over HTTP/1.1: a port not allowed is 403, a server
    without forward_proxy answers 405, a target that is no host:port is
    400."""
    dns.add("echo.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, server="        http2 on;\n",
                 forward="off" if case == "no-forward" else "on")
    target = "echo.test" if case == "authority" else \
        "echo.test:%d" % echo.port
    t = H2Tunnel(port, target)
    try:
        assert t.status() == status
    finally:
        t.close()


@pytest.mark.parametrize("directive, accepted", [
    ("named_peers_keepalive 8 requests=2;", 3),
    ("named_peers_keepalive 0;", 6)], ids=["requests", "off"])
def test_named_peers_keepalive(weir, make_origin, dns, directive, accepted):
    """named_peers_keepalive sets the pool of the origins a forward proxy
    names: requests=2 takes a connection out after its second request
    (6 requests, 3 connections), 0 keeps none (one per request)."""
    o = make_origin()
    dns.add("k.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, http="    %s\n" % directive)
    for i in range(6):
        p = via_proxy(port, "http://k.test:%d/%d" % (o.port, i))
        assert p.stdout == b"origin GET /%d\n" % i
    wait_for(lambda: o.accepted == accepted,
             what="%d origin connections" % accepted)
    assert o.accepted == accepted


@pytest.mark.parametrize("args, reason", [
    ("x", 'invalid number of connections "x"'),
    ("8 requests=0", 'invalid parameter "requests=0"'),
    ("8 timeout=soon", 'invalid parameter "timeout=soon"'),
    ("8 other=1", 'invalid parameter "other=1"')])
def test_named_peers_keepalive_errors(weir, args, reason):
    conf_error(weir, "named_peers_keepalive %s;" % args, reason)
