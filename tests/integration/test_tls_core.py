"""What the core and the HTTP core do for TLS: "listen ... ssl" and
proxy_pass https:// need the ssl module (built in, or loaded with
load_module) and say so at their file:line when it is missing; one
address cannot be TLS on one listen and plain on another; "http2" and
"quic" stay refused; plain connections keep their scheme ("http", $https
empty, absolute redirects to http://).

With the module (the last part, which needs it): the core's I/O paths on
a TLS connection: pipelined requests decrypted together, files with
sendfile on (never used through TLS), https:// redirects, and a request
body spooled to a file sent to a TLS origin.

SNI, 421 for a Host of another server block, the ssl variables and the
proxy_ssl_* directives are in test_tls.py and test_tls_upstream.py."""

import hashlib
import http.client
import os
import socket
import ssl
import threading

import pytest

import tlspki
from weirtest import DEADLINE, run_weir, wait_for


NO_SSL_LISTEN = ('the "ssl" parameter requires the ssl module (configure '
                 '--with-http_ssl_module, or load_module '
                 'modules/weir_http_ssl_module.so)')

NO_SSL_PROXY = ('https in "proxy_pass" requires the ssl module (configure '
                '--with-http_ssl_module, or load_module '
                'modules/weir_http_ssl_module.so)')


def ssl_build():
    """"static", "dynamic" or None (neither: a build without the
    module)."""
    try:
        return tlspki.ssl_build()
    except AssertionError:
        return None


def t_result(weir, text):
    """`weir -t` on text (written verbatim, "events { }" added): the path
    and the result."""
    weir.allow.append(r"\[emerg\]")
    path = weir.conf(text, preamble=False, events=True)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    return path, res


def emerg(reason, path, line):
    return "weir: [emerg] %s in %s:%d" % (reason, path, line)


# ---- the ssl module missing


@pytest.mark.parametrize("listen", ["127.0.0.1:%d ssl",
                                    "127.0.0.1:%d default_server ssl",
                                    "[::1]:%d ssl"])
def test_listen_ssl_without_the_module(weir, listen):
    """Without the module (not built in, no load_module) "ssl" is an
    error at the listen's line naming both ways to get it; with the
    module built in that error never appears."""
    text = ("http {\n"
            "    server {\n"
            "        listen " + listen % weir.port() + ";\n"
            "    }\n"
            "}\n")
    path, res = t_result(weir, text)
    lines = res.stderr.splitlines()
    if ssl_build() == "static":
        assert NO_SSL_LISTEN not in res.stderr, res.stderr
        return
    assert res.returncode == 1, res.stderr
    assert emerg(NO_SSL_LISTEN, path, 3) in lines, res.stderr


@pytest.mark.parametrize("url", ["https://127.0.0.1",
                                 "https://127.0.0.1:8443/x",
                                 "https://$host$request_uri"])
def test_proxy_pass_https_without_the_module(weir, url):
    text = ("http {\n"
            "    server {\n"
            "        listen 127.0.0.1:%d;\n"
            "        location / { proxy_pass %s; }\n"
            "    }\n"
            "}\n" % (weir.port(), url))
    path, res = t_result(weir, text)
    if ssl_build() == "static":
        assert res.returncode == 0, res.stderr
        return
    assert res.returncode == 1, res.stderr
    assert emerg(NO_SSL_PROXY, path, 4) in res.stderr.splitlines(), \
        res.stderr


def test_plain_configuration_without_the_module(weir):
    """A configuration that uses no TLS is unaffected by the module
    being absent (or present): weir -t passes."""
    text = ("http {\n"
            "    server {\n"
            "        listen 127.0.0.1:%d;\n"
            "        location / { proxy_pass http://127.0.0.1:%d; }\n"
            "    }\n"
            "}\n" % (weir.port(), weir.port()))
    path, res = t_result(weir, text)
    assert res.returncode == 0, res.stderr


# ---- listen options


@pytest.mark.parametrize("first,second", [("", " ssl"), (" ssl", "")],
                         ids=["plain_then_ssl", "ssl_then_plain"])
def test_ssl_and_plain_on_one_address(weir, first, second):
    """One socket is TLS or not: "ssl" on either listen of an address
    makes it TLS for both servers (as nginx), so both need a
    certificate; the first without one is named. Without the module the
    "ssl" listen fails. (test_compat_server.py serves such a pair.)"""
    build = ssl_build()
    port = weir.port()
    preamble = ""
    if build == "dynamic":
        preamble = "load_module %s;\n" % tlspki.ssl_module_path()
    text = (preamble +
            "http {\n"
            "    server {\n"
            "        listen 127.0.0.1:%d%s;\n"
            "    }\n"
            "    server {\n"
            "        server_name b;\n"
            "        listen 127.0.0.1:%d%s;\n"
            "    }\n"
            "}\n" % (port, first, port, second))
    off = 1 if preamble else 0
    path, res = t_result(weir, text)
    lines = res.stderr.splitlines()
    assert res.returncode == 1, res.stderr
    if build is None:
        line = 3 if first else 7
        assert emerg(NO_SSL_LISTEN, path, line) in lines, res.stderr
        return
    reason = ('no "ssl_certificate" is defined for the "listen ... ssl" '
              'directive')
    assert emerg(reason, path, 2 + off) in lines, res.stderr


@pytest.mark.parametrize("param", ["quic"])
def test_quic_not_yet(weir, param):
    text = ("http {\n"
            "    server {\n"
            "        listen 127.0.0.1:%d %s;\n"
            "    }\n"
            "}\n" % (weir.port(), param))
    path, res = t_result(weir, text)
    reason = ('the "%s" parameter of the "listen" directive is not '
              'supported yet' % param)
    assert res.returncode == 1, res.stderr
    assert emerg(reason, path, 3) in res.stderr.splitlines(), res.stderr


# ---- plain connections keep "http"


def test_plain_scheme_and_redirects(weir):
    """On a plain connection $scheme is "http", $https empty, and a
    relative Location is made absolute with http:// (the port written
    when it is not 80)."""
    port = weir.port()
    weir.conf("http {\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        server_name www.test;\n"
              "        location = /s { return 200 \"[$scheme|$https]\"; }\n"
              "        location = /r { return 302 /there; }\n"
              "    }\n"
              "}\n" % port)
    weir.start()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/s", headers={"Host": "www.test"})
        resp = conn.getresponse()
        assert resp.status == 200
        assert resp.read() == b"[http|]"

        conn.request("GET", "/r", headers={"Host": "www.test"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 302
        assert resp.getheader("Location") == \
            "http://www.test:%d/there" % port
    finally:
        conn.close()


# ---- the core's I/O paths on TLS connections (needs the module)


def tls_client(port, host="www.test"):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    return ctx.wrap_socket(raw, server_hostname=host)


def read_responses(s, n):
    """n HTTP/1.1 responses with Content-Length from s: [(status,
    headers, body)]."""
    f = s.makefile("rb")
    out = []
    for _ in range(n):
        status = int(f.readline().split()[1])
        headers = {}
        while True:
            line = f.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        body = f.read(int(headers.get("content-length", "0")))
        out.append((status, headers, body))
    f.close()
    return out


def tls_server(weir, ssl_preamble, pki, extra="", http_extra=""):
    cert = pki.leaf("www.test")
    port = weir.port()
    weir.conf(ssl_preamble +
              "http {\n" + http_extra +
              "    server {\n"
              "        listen 127.0.0.1:%d ssl;\n"
              "        server_name www.test;\n"
              "        ssl_certificate %s;\n"
              "        ssl_certificate_key %s;\n"
              "        location = /s { return 200 \"[$scheme|$https]\"; }\n"
              "        location = /r { return 302 /there; }\n"
              "        location ~ ^/n/ { return 200 \"$uri\"; }\n"
              "%s"
              "    }\n"
              "}\n" % (port, cert.chain, cert.key, extra))
    weir.start(check_ports=False)

    def accepts():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(accepts, what="the TLS port to accept")
    return port


def test_tls_scheme_redirect_and_pipelining(weir, ssl_preamble, pki):
    """$scheme https, $https on, an absolute redirect to https:// with the
    port; then 20 requests written at once: their bytes are decrypted
    together, most of them before weir looks for the next request (no
    socket event comes for them), and each is answered in order."""
    port = tls_server(weir, ssl_preamble, pki)
    s = tls_client(port)
    try:
        s.sendall(b"GET /s HTTP/1.1\r\nHost: www.test\r\n\r\n"
                  b"GET /r HTTP/1.1\r\nHost: www.test\r\n\r\n")
        (st1, _, b1), (st2, h2, _) = read_responses(s, 2)
        assert (st1, b1) == (200, b"[https|on]")
        assert st2 == 302
        assert h2["location"] == "https://www.test:%d/there" % port

        n = 20
        s.sendall(b"".join(b"GET /n/%d HTTP/1.1\r\nHost: www.test\r\n\r\n"
                           % i for i in range(n)))
        got = read_responses(s, n)
        assert [b for _, _, b in got] == [b"/n/%d" % i for i in range(n)]
    finally:
        s.close()


def test_tls_file_with_sendfile_on(weir, ssl_preamble, pki):
    """sendfile on is ignored on a TLS connection: a 3 MB file arrives
    whole and intact (read into memory and encrypted)."""
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    data = hashlib.sha256(b"seed").digest() * (3 * 1024 * 1024 // 32 + 7)
    with open(os.path.join(html, "big.bin"), "wb") as f:
        f.write(data)
    port = tls_server(weir, ssl_preamble, pki,
                      extra="        location /f/ { alias %s/; }\n" % html,
                      http_extra="    sendfile on;\n")
    s = tls_client(port)
    try:
        s.sendall(b"GET /f/big.bin HTTP/1.1\r\nHost: www.test\r\n\r\n"
                  b"GET /s HTTP/1.1\r\nHost: www.test\r\n\r\n")
        (st, _, body), (st2, _, b2) = read_responses(s, 2)
        assert st == 200 and len(body) == len(data)
        assert body == data
        assert (st2, b2) == (200, b"[https|on]")
    finally:
        s.close()


class EchoTLSOrigin:
    """A TLS origin on 127.0.0.1 that answers each request with the
    sha256 and length of its body (Content-Length bodies only)."""

    def __init__(self, cert):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert.chain, cert.key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.stopping = False
        self.errors = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            try:
                raw, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                raw.settimeout(DEADLINE)
                s = self.ctx.wrap_socket(raw, server_side=True)
                self._serve(s)
                s.close()
            except (OSError, ValueError, ssl.SSLError) as exc:
                self.errors.append(repr(exc))
                raw.close()

    def _serve(self, s):
        f = s.makefile("rb")
        while True:
            line = f.readline()
            if not line:
                return
            n = 0
            while True:
                h = f.readline()
                if h in (b"\r\n", b""):
                    break
                k, _, v = h.decode("latin-1").partition(":")
                if k.strip().lower() == "content-length":
                    n = int(v)
            body = f.read(n)
            text = ("%s %d" % (hashlib.sha256(body).hexdigest(),
                               len(body))).encode()
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                      % (len(text), text))

    def stop(self):
        self.stopping = True
        self.sock.close()
        self.thread.join(DEADLINE)


def test_body_from_a_file_to_a_tls_origin(weir, ssl_preamble, pki):
    """A request body larger than client_body_buffer_size is spooled to
    a file; to a TLS origin it is read back in pieces and encrypted (no
    sendfile): the origin gets it intact, twice on one pooled
    connection."""
    origin = EchoTLSOrigin(pki.leaf("origin.test"))
    try:
        port = weir.port()
        weir.conf(ssl_preamble +
                  "http {\n"
                  "    client_body_buffer_size 8k;\n"
                  "    client_max_body_size 10m;\n"
                  "    upstream o { server %s; keepalive 4; }\n"
                  "    server {\n"
                  "        listen 127.0.0.1:%d;\n"
                  "        location / { proxy_pass https://o; }\n"
                  "    }\n"
                  "}\n" % (origin.addr, port))
        weir.start(check_ports=False)

        def accepts():
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True

        wait_for(accepts, what="the HTTP port to accept")
        body = os.urandom(700 * 1024 + 13)
        want = "%s %d" % (hashlib.sha256(body).hexdigest(), len(body))
        for _ in range(2):
            conn = http.client.HTTPConnection("127.0.0.1", port,
                                              timeout=DEADLINE)
            try:
                conn.request("POST", "/up", body=body)
                resp = conn.getresponse()
                assert resp.status == 200
                assert resp.read().decode() == want
            finally:
                conn.close()
        assert not origin.errors, origin.errors
    finally:
        origin.stop()
