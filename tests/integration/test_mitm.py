"""TLS interception (MITM) in the forward proxy (docs/mitm.md): with
`mitm on`, a CONNECT to a host selected for decryption is answered
"200 Connection established", then weir itself does the TLS handshake
with the client, with a leaf it mints from its CA carrying the origin
certificate's names (and the CONNECT host), and the requests inside are
proxied to the CONNECT target over TLS like any request: locations match
the decrypted path, add_header, return, proxy_set_header, allow/deny and
error_page work on them, and the access log sees them. ALPN is mirrored:
weir offers the origin what the client offered and gives the client the
origin's choice. `mitm_hosts` / `mitm_bypass` choose what is decrypted;
the rest is tunnelled untouched (the client sees the origin's own
certificate). The origin's certificate is verified by default
(proxy_ssl_trusted_certificate is the test CA here); a failure is a 502
inside a handshake that still completes.

Origins: h2origin.H2Origin over TLS with a leaf of the session's test
PKI (tlspki.py), speaking HTTP/2 and HTTP/1.1 (its /tiny body says which:
"tiny over h2" / "tiny over h1"). weir's CA is a second root of the PKI
("weir mitm test CA", its key copied 0600 into the prefix), except in
the tests of the CA weir generates itself. Names resolve through the
`dns` fixture (dnsserver.py); clients are curl, openssl s_client, python
http.client and raw sockets with python ssl."""

import hashlib
import http.client
import os
import re
import select
import shutil
import socket
import ssl
import stat
import subprocess
import tempfile
import time

import pytest

import tlspki
from test_forward_proxy import connect_head
# the factory of H2Origin, each closed at teardown (a fixture)
from test_proxy_h2 import h2o  # noqa: F401
from weirtest import DEADLINE, EARLY, wait_for
from wsorigin import OP_TEXT, WsClient, WsOrigin

CURL = "curl"
OPENSSL = "openssl"

MITM_CA_NAME = "weir mitm test CA"        # the CA weir mints with
ROGUE_CA_NAME = "weir rogue origin CA"    # a CA weir does not trust
TEST_CA_NAME = "weir test CA"             # pki.ca: origins' leaves
GENERATED_CA_CN = "weir interception CA"  # the CA weir makes itself


# ---------------------------------------------------------------- fixtures

def tls_origin(h2o, pki, names=("a.test",), alpn=("h2", "http/1.1"),
               leaf=None):
    """An H2Origin over TLS with a leaf for names (signed by the test CA
    unless leaf is given), speaking HTTP/1.1 too."""
    leaf = leaf or pki.leaf(*names)
    return h2o(cert=leaf.chain, key=leaf.key, alpn=alpn, h1=True)


def add_names(dns, *names):
    for n in names:
        dns.add(n, ("A", "127.0.0.1", 60))


# ---------------------------------------------------------------- weir

def mitm_ca(pki):
    """weir's interception CA (a tlspki Cert: .cert, .key, 0644)."""
    return pki.other_ca(MITM_CA_NAME)


def private_key_copy(weir, pki, mode=0o600):
    """The CA's key copied into the prefix with mode (weir refuses a CA
    key others can read); returns its path."""
    key = weir.path("conf", "mitm-ca.key")
    shutil.copyfile(mitm_ca(pki).key, key)
    os.chmod(key, mode)
    return key


def write_conf(weir, dns, pki, ports, server="", http="", ca=True,
               mitm="on", workers=1):
    """Writes a forward proxy with `mitm` on 127.0.0.1:PORT; returns
    PORT. ports: the CONNECT ports allowed. ca=True: mitm_certificate and
    mitm_certificate_key are the PKI's "weir mitm test CA"; ca=False:
    none (weir makes its own). The origins' certificates are checked
    against the test CA."""
    port = weir.port()
    ca_lines = ""
    if ca:
        ca_lines = ("        mitm_certificate %s;\n"
                    "        mitm_certificate_key %s;\n"
                    % (mitm_ca(pki).cert, private_key_copy(weir, pki)))
    weir.conf(tlspki.mitm_preamble() +
              "worker_processes %d;\n"
              "http {\n"
              "    resolver %s;\n"
              "    proxy_connect_timeout 3s;\n"
              "    proxy_read_timeout 5s;\n"
              "%s"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        forward_proxy on;\n"
              "        forward_proxy_connect_ports %s;\n"
              "        mitm %s;\n"
              "%s"
              "        proxy_ssl_trusted_certificate %s;\n"
              "%s"
              "    }\n"
              "}\n" % (workers, dns.addr, http, port,
                       " ".join(str(p) for p in ports), mitm, ca_lines,
                       pki.ca_cert, server))
    return port


def wait_port(port):
    def up():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(up, what="the proxy port to accept")


def start(weir, dns, pki, ports, **kw):
    """write_conf, then starts weir and waits for its port."""
    port = write_conf(weir, dns, pki, ports, **kw)
    weir.start(check_ports=False)
    wait_port(port)
    return port


def wait_line(weir, *patterns, path=None):
    """Waits for one line of the error log (or of path) matching every
    regular expression; returns the line."""
    rxs = [re.compile(p) for p in patterns]

    def found():
        try:
            with open(path or weir.error_log, errors="replace") as f:
                text = f.read()
        except FileNotFoundError:
            return None
        for line in text.splitlines():
            if all(r.search(line) for r in rxs):
                return line
        return None

    return wait_for(found, what="a log line matching all of %r"
                    % (patterns,))


# ---------------------------------------------------------------- curl

class Curl:
    """One curl run: rc, body (stdout), heads (the -D file: the CONNECT's
    head, then each response's), err (stderr: -v and -w output)."""

    def __init__(self, proc, heads):
        self.rc = proc.returncode
        self.body = proc.stdout
        self.err = proc.stderr.decode("latin1", "replace")
        self.heads = heads

    def statuses(self):
        """The status of every response inside the tunnel (the CONNECT's
        "200 Connection established" left out)."""
        out = []
        for line in self.heads.splitlines():
            m = re.match(r"HTTP/[\d.]+ (\d{3})(.*)", line)
            if m and "connection established" not in m.group(2).lower():
                out.append(int(m.group(1)))
        return out

    def header(self, name):
        """The values of header name in the last response head."""
        blocks = [b for b in self.heads.split("\r\n\r\n") if b.strip()]
        values = []
        for line in blocks[-1].split("\r\n")[1:] if blocks else []:
            k, _, v = line.partition(":")
            if k.strip().lower() == name.lower():
                values.append(v.strip())
        return values

    @property
    def version(self):
        """curl's %{http_version} of the last transfer ("1.1", "2")."""
        found = re.findall(r"^weir-http-version=(\S*)$", self.err, re.M)
        return found[-1] if found else None

    def cert_field(self, field):
        """What curl -v printed for the server certificate's field
        ("subject", "issuer", "subjectAltName")."""
        for line in self.err.splitlines():
            m = re.match(r"^\*\s+%s:\s*(.*)$" % re.escape(field), line)
            if m:
                return m.group(1)
        return None


def curl(port, urls, ca=None, client="h1", args=(), check=True):
    """curl through the proxy on port; client "h1" (--http1.1) or "h2"
    (--http2, ALPN h2 and http/1.1); ca: the --cacert (weir's CA to
    trust what it mints). urls: one URL or a list (one connection)."""
    fd, heads = tempfile.mkstemp(prefix="weir-curl-", suffix=".heads")
    os.close(fd)
    if isinstance(urls, str):
        urls = [urls]
    try:
        cmd = [CURL, "-sS", "--max-time", "20", "-o", "-", "-D", heads,
               "-w", "%{stderr}\nweir-http-version=%{http_version}\n",
               "-x", "http://127.0.0.1:%d" % port,
               "--http2" if client == "h2" else "--http1.1"]
        if ca:
            cmd += ["--cacert", ca]
        cmd += list(args) + list(urls)
        p = subprocess.run(cmd, capture_output=True, timeout=DEADLINE)
        with open(heads, "rb") as f:
            got = Curl(p, f.read().decode("latin1"))
    finally:
        os.unlink(heads)
    if check:
        assert got.rc == 0, (got.rc, got.err)
    return got


def tiny_body(origin_speaks_h2):
    return b"tiny over h2\n" if origin_speaks_h2 else b"tiny over h1\n"


# ---------------------------------------------------------------- sockets

def open_tunnel(port, host, oport):
    """A socket to the proxy on which CONNECT host:oport got its 200."""
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
                  % (host.encode(), oport, host.encode(), oport))
        head, rest = connect_head(s)
        assert head.startswith("HTTP/1.1 200"), head
        assert rest == b"", rest
    except BaseException:
        s.close()
        raise
    return s


def client_context(cafiles, alpn=("http/1.1",)):
    """A verifying client context trusting the cafiles only."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    for f in cafiles:
        ctx.load_verify_locations(f)
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    return ctx


def tls_through(port, host, oport, cafiles, alpn=("http/1.1",)):
    """TLS over a CONNECT tunnel to host:oport, verifying the name host
    against the cafiles; returns the SSLSocket."""
    s = open_tunnel(port, host, oport)
    try:
        return client_context(cafiles, alpn).wrap_socket(
            s, server_hostname=host)
    except BaseException:
        s.close()
        raise


def issuer_cn(cert):
    """The issuer's CN of a getpeercert() dict."""
    for rdn in cert.get("issuer", ()):
        for k, v in rdn:
            if k == "commonName":
                return v
    return None


def sans(cert):
    return set(cert.get("subjectAltName", ()))


def read_response(conn, limit=1 << 20):
    """(status, {lowercased name: value}, body) of one HTTP/1.1 response
    read off conn (anything with recv): Content-Length, chunked, or to
    EOF. Every read is bounded by conn's timeout, the total by limit."""
    got = [0]

    def more():
        d = conn.recv(65536)
        if not d:
            raise AssertionError("closed before the end of the response")
        got[0] += len(d)
        if got[0] > limit:
            raise AssertionError("response larger than %d bytes" % limit)
        return d

    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += more()
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if status in (204, 304) or status < 200:
        return status, headers, b""
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            rest += more()
        return status, headers, rest[:n]
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += more()
            line, _, rest = rest.partition(b"\r\n")
            size = int(line.split(b";")[0], 16)
            if size == 0:
                return status, headers, body
            while len(rest) < size + 2:
                rest += more()
            body += rest[:size]
            rest = rest[size + 2:]
    while got[0] <= limit:
        d = conn.recv(65536)
        if not d:
            break
        got[0] += len(d)
        rest += d
    return status, headers, rest


def get(conn, path, host):
    conn.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                 % (path.encode(), host.encode()))
    return read_response(conn)


class BioTLS:
    """The client side of TLS over a plain socket through MemoryBIOs, so
    that the first flight (the ClientHello) can be sent in the same write
    as other bytes (the CONNECT head). recv/sendall like a socket."""

    def __init__(self, sock, ctx, hostname):
        self.s = sock
        self.inc = ssl.MemoryBIO()
        self.out = ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out,
                                server_hostname=hostname)

    def first_flight(self):
        try:
            self.obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        return self.out.read()

    def _flush(self):
        data = self.out.read()
        if data:
            self.s.sendall(data)

    def _fill(self):
        data = self.s.recv(65536)
        if data:
            self.inc.write(data)
        else:
            self.inc.write_eof()
        return data

    def handshake(self, already=b""):
        if already:
            self.inc.write(already)
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                self.obj.do_handshake()
                self._flush()
                return
            except ssl.SSLWantReadError:
                self._flush()
            assert time.monotonic() < deadline, "handshake too long"
            assert self._fill(), "closed during the handshake"

    def getpeercert(self):
        return self.obj.getpeercert()

    def sendall(self, data):
        self.obj.write(data)
        self._flush()

    def recv(self, n):
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                return self.obj.read(n)
            except ssl.SSLWantReadError:
                self._flush()
                if not self._fill():
                    return b""
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""
        raise AssertionError("nothing to read for %.0fs" % DEADLINE)


# ---------------------------------------------------------------- openssl

def openssl(*args, input=None):
    p = subprocess.run([OPENSSL] + list(args), input=input,
                       capture_output=True, timeout=DEADLINE)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p.stdout.decode("latin1")


def s_client(args, request, until):
    """Runs openssl s_client ARGS, writes request, reads its output until
    `until` shows (bounded by DEADLINE), then closes its stdin (s_client
    ends at EOF). Returns (stdout, stderr, exit code)."""
    proc = subprocess.Popen([OPENSSL, "s_client"] + list(args),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    out = b""
    try:
        proc.stdin.write(request)
        proc.stdin.flush()
        deadline = time.monotonic() + DEADLINE
        while until not in out:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([proc.stdout], [], [], left)
            if not r:
                break
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out += chunk
        # communicate() closes stdin: s_client ends at its EOF
        rest, err = proc.communicate(timeout=DEADLINE)
        out += rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(DEADLINE)
    return out.decode("latin1"), err.decode("latin1"), proc.returncode


def sha256_fingerprint(pem_path):
    """"AB:CD:..." (upper case) of a PEM certificate."""
    out = openssl("x509", "-in", pem_path, "-noout", "-fingerprint",
                  "-sha256")
    return out.strip().split("=", 1)[1].upper()


# ================================================================ tests

# ---- decryption, seen by the clients


def test_http11_inside_gets_the_origin_body_and_a_minted_leaf(weir, dns,
                                                              pki, h2o):
    """curl (HTTP/1.1 inside) gets /tiny's body through the decrypted
    tunnel; the certificate it verified is issued by weir's CA and names
    the origin's host."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port])
    r = curl(port, "https://a.test:%d/tiny" % o.port, ca=mitm_ca(pki).cert,
             args=["-v"])
    assert r.body == b"tiny over h1\n"
    assert r.version == "1.1"
    assert MITM_CA_NAME in (r.cert_field("issuer") or ""), r.err
    assert "a.test" in (r.cert_field("subject") or ""), r.err
    assert re.search(r"subjectAltName: host \"a\.test\" matched", r.err), \
        r.err
    assert len(o.requests) == 1
    assert dict(o.requests[0])[":path"] == "/tiny"


@pytest.mark.parametrize("origin_alpn, client, version, body", [
    (("h2", "http/1.1"), "h2", "2", b"tiny over h2\n"),
    (("http/1.1",), "h2", "1.1", b"tiny over h1\n"),
    (("h2", "http/1.1"), "h1", "1.1", b"tiny over h1\n"),
], ids=["h2-origin-h2-client", "h1-origin-h2-client",
        "h2-origin-h1-client"])
def test_alpn_is_mirrored(weir, dns, pki, h2o, origin_alpn, client,
                          version, body):
    """The client meets HTTP/2 only when the origin speaks it: weir
    offers the origin the client's ALPN list and completes the client's
    handshake with the origin's choice ($mitm_origin_alpn), and speaks
    that protocol to the origin (its body says which)."""
    o = tls_origin(h2o, pki, alpn=origin_alpn)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port], server=(
        "        add_header X-Mitm $mitm;\n"
        "        add_header X-Origin-Alpn $mitm_origin_alpn;\n"))
    r = curl(port, "https://a.test:%d/tiny" % o.port, ca=mitm_ca(pki).cert,
             client=client)
    assert r.statuses() == [200]
    assert r.version == version
    assert r.body == body
    assert r.header("X-Mitm") == ["decrypted"]
    assert r.header("X-Origin-Alpn") == ["h2" if version == "2"
                                         else "http/1.1"]


@pytest.mark.parametrize("origin_alpn, body", [
    (("h2", "http/1.1"), b"tiny over h2\n"),
    (("http/1.1",), b"tiny over h1\n"),
], ids=["h2-origin", "h1-origin"])
def test_h2_client_after_an_h1_client(weir, dns, pki, h2o, origin_alpn,
                                      body):
    """An HTTP/1.1-only client comes first: the look offers the origin
    http/1.1 alone, and the origin's answer says nothing of h2. An
    HTTP/2 client of the same host after it (the leaf cached) gets h2
    from weir, and its requests offer the origin both: h2 when the
    origin speaks it, HTTP/1.1 when it does not. The first client's own
    requests stay HTTP/1.1."""
    o = tls_origin(h2o, pki, alpn=origin_alpn)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port])
    url = "https://a.test:%d/tiny" % o.port
    r = curl(port, url, ca=mitm_ca(pki).cert, client="h1")
    assert (r.statuses(), r.version, r.body) == ([200], "1.1",
                                                 b"tiny over h1\n")
    r = curl(port, [url, url], ca=mitm_ca(pki).cert, client="h2")
    assert r.statuses() == [200, 200]
    assert r.version == "2"
    assert r.body == body * 2


def test_openssl_s_client_verifies_the_minted_leaf(weir, dns, pki, h2o):
    """openssl s_client -proxy: the chain verifies against weir's CA
    (return code 0); the leaf is issued by that CA and its SAN carries
    every name of the origin's certificate."""
    o = tls_origin(h2o, pki, names=("a.test", "www.a.test"))
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port])
    out, err, rc = s_client(
        ["-proxy", "127.0.0.1:%d" % port, "-connect", "a.test:%d" % o.port,
         "-servername", "a.test", "-CAfile", mitm_ca(pki).cert,
         "-verify_return_error", "-showcerts"],
        b"GET /tiny HTTP/1.1\r\nHost: a.test:%d\r\n"
        b"Connection: close\r\n\r\n" % o.port, until=b"tiny over h1")
    assert rc == 0, (out, err)
    assert "Verify return code: 0 (ok)" in out, out
    assert "tiny over h1" in out, out
    m = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----"
                  r"\n", out, re.S)
    assert m, out
    leaf = openssl("x509", "-noout", "-issuer", "-ext", "subjectAltName",
                   "-nameopt", "RFC2253", input=m.group(0).encode())
    assert "CN=%s" % MITM_CA_NAME in leaf, leaf
    assert "DNS:a.test" in leaf and "DNS:www.a.test" in leaf, leaf


def test_python_http_client_set_tunnel(weir, dns, pki, h2o):
    """http.client.HTTPSConnection with set_tunnel: two requests on one
    decrypted connection; the peer certificate is weir's, for a.test."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port])
    ctx = client_context([mitm_ca(pki).cert])
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=DEADLINE,
                                       context=ctx)
    try:
        conn.set_tunnel("a.test", o.port)
        for _ in range(2):
            conn.request("GET", "/tiny")
            resp = conn.getresponse()
            assert resp.status == 200
            assert resp.read() == b"tiny over h1\n"
        cert = conn.sock.getpeercert()
    finally:
        conn.close()
    assert issuer_cn(cert) == MITM_CA_NAME, cert
    assert ("DNS", "a.test") in sans(cert), cert
    assert [dict(r)[":path"] for r in o.requests] == ["/tiny", "/tiny"]


def test_mitm_off_tunnels(weir, dns, pki, h2o):
    """mitm off (with a CA configured): CONNECT is tunnelled untouched,
    the client sees the origin's own certificate."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port], mitm="off")
    r = curl(port, "https://a.test:%d/tiny" % o.port, ca=pki.ca_cert,
             args=["-v"])
    assert r.body == b"tiny over h1\n"
    assert TEST_CA_NAME in (r.cert_field("issuer") or ""), r.err


# ---- what is decrypted


def test_bypassed_host_sees_the_origin_certificate(weir, dns, pki, h2o):
    """mitm_bypass a.test: the tunnel is not decrypted: curl trusting
    only the test CA verifies the origin's own leaf, and weir's
    add_header does not reach the response (weir never saw it)."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port], server=(
        "        mitm_bypass a.test;\n"
        "        add_header X-Intercepted yes;\n"))
    r = curl(port, "https://a.test:%d/tiny" % o.port, ca=pki.ca_cert,
             args=["-v"])
    assert r.body == b"tiny over h1\n"
    assert TEST_CA_NAME in (r.cert_field("issuer") or ""), r.err
    assert MITM_CA_NAME not in r.err
    assert r.header("X-Intercepted") == []


def test_host_not_in_mitm_hosts_is_tunnelled(weir, dns, pki, h2o):
    """mitm_hosts b.test: b.test is decrypted (weir's CA), a.test, not
    listed, is tunnelled (the origin's CA), both to the same origin."""
    o = tls_origin(h2o, pki, names=("a.test", "b.test"))
    add_names(dns, "a.test", "b.test")
    port = start(weir, dns, pki, [o.port],
                 server="        mitm_hosts b.test;\n")
    r = curl(port, "https://b.test:%d/tiny" % o.port, ca=mitm_ca(pki).cert,
             args=["-v"])
    assert r.body == b"tiny over h1\n"
    assert MITM_CA_NAME in (r.cert_field("issuer") or ""), r.err
    r = curl(port, "https://a.test:%d/tiny" % o.port, ca=pki.ca_cert,
             args=["-v"])
    assert r.body == b"tiny over h1\n"
    assert TEST_CA_NAME in (r.cert_field("issuer") or ""), r.err


PATTERN_NAMES = ("a.test", "x.a.test", "xa.test", "api1.test", "api.test")

# (pattern, CONNECT host, does the pattern select it)
PATTERNS = [
    ("a.test", "a.test", True),
    ("a.test", "x.a.test", False),
    ("*.a.test", "x.a.test", True),
    ("*.a.test", "a.test", False),
    (".a.test", "a.test", True),
    (".a.test", "x.a.test", True),
    (".a.test", "xa.test", False),
    ("~^api[0-9]+\\.test$", "api1.test", True),
    ("~^api[0-9]+\\.test$", "api.test", False),
    ("127.0.0.1", "127.0.0.1", True),
    ("127.0.0.1", "a.test", True),          # the address connected to
    ("127.0.0.0/8", "a.test", True),
    ("127.0.0.0/8", "127.0.0.1", True),
    ("10.0.0.0/8", "a.test", False),
    ("10.0.0.0/8", "127.0.0.1", False),
]


@pytest.mark.parametrize("directive", ["mitm_hosts", "mitm_bypass"])
@pytest.mark.parametrize("pattern, host, selected", PATTERNS,
                         ids=["%s-%s" % (p, h) for p, h, _ in PATTERNS])
def test_host_patterns(weir, dns, pki, h2o, directive, pattern, host,
                       selected):
    """Exact names, "*.x" (sub-names only), ".x" (x and its sub-names),
    "~regex", an IP and a CIDR (the literal CONNECT host or the address
    connected to) select hosts: decrypted when mitm_hosts selects them or
    mitm_bypass does not. Which one it was shows in the issuer of the
    certificate the client verified (weir's CA or the origin's)."""
    o = tls_origin(h2o, pki, leaf=pki.leaf(*PATTERN_NAMES,
                                           ips=["127.0.0.1"]))
    add_names(dns, *PATTERN_NAMES)
    port = start(weir, dns, pki, [o.port],
                 server="        %s %s;\n" % (directive, pattern))
    decrypted = selected if directive == "mitm_hosts" else not selected
    tls = tls_through(port, host, o.port, [mitm_ca(pki).cert, pki.ca_cert])
    try:
        cert = tls.getpeercert()
        status, _, body = get(tls, "/tiny", "%s:%d" % (host, o.port))
    finally:
        tls.close()
    assert issuer_cn(cert) == (MITM_CA_NAME if decrypted else TEST_CA_NAME)
    assert (status, body) == (200, b"tiny over h1\n")
    if decrypted and host == "127.0.0.1":
        assert ("IP Address", "127.0.0.1") in sans(cert), cert


def test_bypass_wins_over_hosts(weir, dns, pki, h2o):
    """mitm_hosts .a.test with mitm_bypass x.a.test: a.test is
    decrypted, x.a.test (in both) is tunnelled."""
    o = tls_origin(h2o, pki, leaf=pki.leaf(*PATTERN_NAMES,
                                           ips=["127.0.0.1"]))
    add_names(dns, *PATTERN_NAMES)
    port = start(weir, dns, pki, [o.port], server=(
        "        mitm_hosts .a.test;\n"
        "        mitm_bypass x.a.test;\n"))
    for host, want in (("a.test", MITM_CA_NAME), ("x.a.test", TEST_CA_NAME)):
        tls = tls_through(port, host, o.port,
                          [mitm_ca(pki).cert, pki.ca_cert])
        try:
            assert issuer_cn(tls.getpeercert()) == want, host
            assert get(tls, "/tiny", host)[0] == 200
        finally:
            tls.close()


# ---- the origin's certificate


@pytest.mark.parametrize("problem", ["untrusted", "wrong-name"])
def test_origin_certificate_failure_is_502_inside(weir, dns, pki, h2o,
                                                  problem):
    """An origin whose certificate fails verification (signed by a CA
    not in proxy_ssl_trusted_certificate, or for another name): the
    client's handshake with weir completes, every request inside is a
    502 whose body says "certificate", and the error log names the host
    and the verification error. The origin sees no request."""
    if problem == "untrusted":
        leaf = pki.leaf("a.test", ca=pki.other_ca(ROGUE_CA_NAME))
        # OpenSSL's words for an issuer not trusted (20 with a chain,
        # 21 for a lone leaf)
        why = (r"unable to get local issuer certificate"
               r"|unable to verify the first certificate")
    else:
        leaf = pki.leaf("wrong.test")
        why = r"does not match|hostname mismatch"
    o = tls_origin(h2o, pki, leaf=leaf)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port])
    r = curl(port, ["https://a.test:%d/tiny" % o.port,
                    "https://a.test:%d/other" % o.port],
             ca=mitm_ca(pki).cert)
    assert r.statuses() == [502, 502], r.heads
    assert b"certificate" in r.body, r.body
    line = wait_line(weir, r"a\.test", why)
    assert "certificate" in line, line
    assert o.requests == []


@pytest.mark.parametrize("problem", ["untrusted", "wrong-name"])
def test_proxy_ssl_verify_off_accepts_any_origin(weir, dns, pki, h2o,
                                                 problem):
    """proxy_ssl_verify off (lab use): the same origins are accepted;
    the minted leaf still carries the CONNECT host, so the client's
    check of a.test passes even when the origin's leaf names another."""
    if problem == "untrusted":
        leaf = pki.leaf("a.test", ca=pki.other_ca(ROGUE_CA_NAME))
    else:
        leaf = pki.leaf("wrong.test")
    o = tls_origin(h2o, pki, leaf=leaf)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port],
                 server="        proxy_ssl_verify off;\n")
    r = curl(port, "https://a.test:%d/tiny" % o.port, ca=mitm_ca(pki).cert)
    assert r.statuses() == [200]
    assert r.body == b"tiny over h1\n"


# ---- interception rules on decrypted requests

RULES = ("        location / {\n"
         "            add_header X-Intercepted yes;\n"
         "            proxy_set_header X-Seen yes;\n"
         "        }\n"
         "        location = /answer {\n"
         "            return 200 \"answered by weir\\n\";\n"
         "        }\n"
         "        location /private/ {\n"
         "            deny all;\n"
         "        }\n"
         "        location /missing {\n"
         "            proxy_intercept_errors on;\n"
         "            error_page 404 /weir-404.html;\n"
         "        }\n"
         "        location = /weir-404.html {\n"
         "            return 200 \"the page of weir\\n\";\n"
         "        }\n")


@pytest.fixture
def rules(weir, dns, pki, h2o):
    """weir with RULES in front of an origin speaking h2 and http/1.1:
    (origin, proxy port, weir's CA certificate)."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port], server=RULES)
    return o, port, mitm_ca(pki).cert


def rules_curl(rules, path, client):
    o, port, ca = rules
    r = curl(port, "https://a.test:%d%s" % (o.port, path), ca=ca,
             client=client)
    # HTTP/2 inside: the origin speaks h2 too
    assert r.version == ("2" if client == "h2" else "1.1"), r.err
    return r


def origin_paths(o):
    return [dict(r)[":path"] for r in o.requests]


@pytest.mark.parametrize("client", ["h1", "h2"])
def test_add_header_on_decrypted_response(rules, client):
    """add_header in the location matching the decrypted path is on the
    origin's response."""
    o = rules[0]
    r = rules_curl(rules, "/tiny", client)
    assert r.statuses() == [200]
    assert r.body == tiny_body(client == "h2")
    assert r.header("X-Intercepted") == ["yes"]
    assert origin_paths(o) == ["/tiny"]


@pytest.mark.parametrize("client", ["h1", "h2"])
def test_return_answers_without_the_origin(rules, client):
    """A location with `return` answers the decrypted request; the
    origin gets no request."""
    o = rules[0]
    r = rules_curl(rules, "/answer", client)
    assert r.statuses() == [200]
    assert r.body == b"answered by weir\n"
    assert "/answer" not in origin_paths(o)


@pytest.mark.parametrize("client", ["h1", "h2"])
def test_proxy_set_header_reaches_the_origin(rules, client):
    """proxy_set_header X-Seen yes: the origin receives it on the
    decrypted request."""
    o = rules[0]
    r = rules_curl(rules, "/tiny", client)
    assert r.statuses() == [200]
    assert len(o.requests) == 1
    assert dict(o.requests[0]).get("x-seen") == "yes", o.requests


@pytest.mark.parametrize("client", ["h1", "h2"])
def test_deny_in_a_location_is_403(rules, client):
    """deny all in the location of the decrypted path: 403, the origin
    gets no request."""
    o = rules[0]
    r = rules_curl(rules, "/private/x", client)
    assert r.statuses() == [403]
    assert not any(p.startswith("/private/") for p in origin_paths(o))


@pytest.mark.parametrize("client", ["h1", "h2"])
def test_error_page_replaces_the_origin_404(rules, client):
    """proxy_intercept_errors + error_page 404: the origin's 404 on the
    decrypted request is answered with weir's own page (status 404)."""
    o = rules[0]
    r = rules_curl(rules, "/missing", client)
    assert r.statuses() == [404]
    assert r.body == b"the page of weir\n"
    assert "/missing" in origin_paths(o)


# ---- logs and variables

LOG_FORMAT = ("    log_format mitm '[$mitm] [$mitm_origin_alpn] "
              "$request_method $scheme://$http_host$request_uri $status "
              "host=$host';\n"
              "    access_log logs/mitm.log mitm;\n")


@pytest.mark.parametrize("client", ["h1", "h2"])
def test_access_log_of_a_decrypted_request(weir, dns, pki, h2o, client):
    """The access log of a decrypted request: $mitm "decrypted",
    $mitm_origin_alpn the origin's choice, $scheme https and the Host
    curl sent (with the port): https://a.test:OPORT/tiny; $host is the
    name alone."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port], http=LOG_FORMAT)
    curl(port, "https://a.test:%d/tiny?q=1" % o.port, ca=mitm_ca(pki).cert,
         client=client)
    alpn = "h2" if client == "h2" else "http/1.1"
    wait_line(weir, r"^%s$" % re.escape(
        "[decrypted] [%s] GET https://a.test:%d/tiny?q=1 200 host=a.test"
        % (alpn, o.port)), path=weir.path("logs", "mitm.log"))


def test_access_log_of_a_tunnel_and_of_a_plain_request(weir, dns, pki,
                                                       h2o):
    """A CONNECT that was tunnelled (mitm_bypass) logs $mitm "tunnel"
    (when the tunnel ends); an absolute-form http:// request, outside
    any CONNECT, has $mitm and $mitm_origin_alpn "" (which the access
    log writes "-", as for any empty variable)."""
    o = tls_origin(h2o, pki)
    plain = h2o(h1=True)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port], http=LOG_FORMAT,
                 server="        mitm_bypass a.test;\n")
    curl(port, "https://a.test:%d/tiny" % o.port, ca=pki.ca_cert)
    r = curl(port, "http://a.test:%d/tiny" % plain.port)
    assert r.body == b"tiny over h1\n"
    log = weir.path("logs", "mitm.log")
    wait_line(weir, r"^\[tunnel\] \[[^\]]*\] CONNECT ", path=log)
    wait_line(weir, r"^%s$" % re.escape(
        "[-] [-] GET http://a.test:%d/tiny 200 host=a.test" % plain.port),
        path=log)


# ---- the CA weir makes itself


def fingerprints_logged(weir, pem):
    """The SHA-256 fingerprints on the [notice] lines naming pem."""
    rx = re.compile(r"SHA-256 fingerprint\W*((?:[0-9A-Fa-f]{2}:){31}"
                    r"[0-9A-Fa-f]{2})")
    out = []
    for line in weir.log().splitlines():
        if "[notice]" in line and pem in line:
            m = rx.search(line)
            if m:
                out.append(m.group(1).upper())
    return out


def test_generated_ca_is_created_once_and_reused(weir, dns, pki, h2o):
    """Without mitm_certificate, weir creates its CA in
    mitm_ca_directory on first start: weir-ca.pem and weir-ca.key (mode
    0600), subject "CN=weir interception CA", its path and SHA-256
    fingerprint logged at notice; clients trusting it verify the minted
    leaves. After a restart with the same directory the same CA is used
    (the files unchanged, any fingerprint logged the same)."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    cadir = weir.path("ca-store")
    pem = os.path.join(cadir, "weir-ca.pem")
    key = os.path.join(cadir, "weir-ca.key")
    port = start(weir, dns, pki, [o.port], ca=False,
                 server="        mitm_ca_directory %s;\n" % cadir)
    assert os.path.exists(pem) and os.path.exists(key)
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    fp = sha256_fingerprint(pem)
    wait_for(lambda: fingerprints_logged(weir, pem),
             what="the CA's fingerprint at notice")
    assert fingerprints_logged(weir, pem) == [fp], weir.log()
    subject = openssl("x509", "-in", pem, "-noout", "-subject", "-nameopt",
                      "RFC2253")
    assert "CN=%s" % GENERATED_CA_CN in subject, subject
    r = curl(port, "https://a.test:%d/tiny" % o.port, ca=pem, args=["-v"])
    assert r.body == b"tiny over h1\n"
    assert GENERATED_CA_CN in (r.cert_field("issuer") or ""), r.err

    with open(pem, "rb") as f:
        pem_bytes = f.read()
    with open(key, "rb") as f:
        key_digest = hashlib.sha256(f.read()).hexdigest()
    weir.stop()
    weir.start(check_ports=False)
    wait_port(port)
    with open(pem, "rb") as f:
        assert f.read() == pem_bytes
    with open(key, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == key_digest
    assert sha256_fingerprint(pem) == fp
    assert set(fingerprints_logged(weir, pem)) == {fp}
    r = curl(port, "https://a.test:%d/tiny" % o.port, ca=pem)
    assert r.body == b"tiny over h1\n"


def test_generated_ca_default_directory(weir, dns, pki, h2o):
    """Without mitm_certificate nor mitm_ca_directory the CA is made in
    "mitm" under the prefix, and clients trusting it get through."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port], ca=False)
    pem = weir.path("mitm", "weir-ca.pem")
    key = weir.path("mitm", "weir-ca.key")
    assert os.path.exists(pem), os.listdir(weir.prefix)
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    r = curl(port, "https://a.test:%d/tiny" % o.port, ca=pem)
    assert r.body == b"tiny over h1\n"


@pytest.mark.parametrize("mode", [0o644, 0o604, 0o640],
                         ids=["0644", "0604", "0640"])
def test_ca_key_readable_by_others_is_refused(weir, dns, pki, mode):
    """A mitm_certificate_key readable by group or others: `weir -t`
    fails with an [emerg] naming the file; the same key at 0600 passes."""
    write_conf(weir, dns, pki, [443])
    key = weir.path("conf", "mitm-ca.key")
    res = weir.run(["-t"])
    assert res.returncode == 0, res.stderr
    os.chmod(key, mode)
    weir.allow.append(r"\[emerg\]")
    res = weir.run(["-t"])
    assert res.returncode != 0, res.stderr
    emerg = [l for l in res.stderr.splitlines() if "[emerg]" in l]
    assert emerg and key in emerg[0], res.stderr
    if mode & 0o004:
        assert "readable by others" in emerg[0], res.stderr
    else:
        assert "readable by" in emerg[0], res.stderr


# ---- the bytes of the CONNECT


def test_client_hello_in_the_same_write_as_the_connect_head(weir, dns, pki,
                                                           h2o):
    """The CONNECT head and the ClientHello in one send: none of the
    ClientHello is lost, the handshake completes against weir's CA, and
    a GET inside gets the origin's answer."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port])
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    try:
        tls = BioTLS(s, client_context([mitm_ca(pki).cert]), "a.test")
        hello = tls.first_flight()
        assert hello[:1] == b"\x16"
        s.sendall(b"CONNECT a.test:%d HTTP/1.1\r\nHost: a.test:%d\r\n\r\n"
                  % (o.port, o.port) + hello)
        head, rest = connect_head(s)
        assert head.startswith("HTTP/1.1 200"), head
        tls.handshake(rest)
        assert issuer_cn(tls.getpeercert()) == MITM_CA_NAME
        status, _, body = get(tls, "/tiny", "a.test:%d" % o.port)
    finally:
        s.close()
    assert (status, body) == (200, b"tiny over h1\n")


def test_plain_http_inside_connect_is_proxied_as_http(weir, dns, pki, h2o):
    """A CONNECT whose first byte is not a TLS handshake is handled as
    HTTP: "GET /tiny" inside goes to http://TARGET/tiny and gets the
    origin's answer, through weir's rules (add_header)."""
    plain = h2o(h1=True)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [plain.port],
                 server="        add_header X-Intercepted yes;\n")
    s = open_tunnel(port, "a.test", plain.port)
    try:
        status, headers, body = get(s, "/tiny", "a.test:%d" % plain.port)
    finally:
        s.close()
    assert (status, body) == (200, b"tiny over h1\n")
    assert headers.get("x-intercepted") == "yes", headers
    assert origin_paths(plain) == ["/tiny"]


# ---- clients that do not finish


def test_client_rejecting_the_certificate_is_logged(weir, dns, pki, h2o):
    """A client that does not trust weir's CA (curl trusting only the
    test CA) refuses the minted leaf; weir logs it at info with the
    host ("rejected")."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    # the preamble of weir.conf has `error_log logs/error.log info;`
    port = start(weir, dns, pki, [o.port])
    r = curl(port, "https://a.test:%d/tiny" % o.port, ca=pki.ca_cert,
             check=False)
    assert r.rc == 60, (r.rc, r.err)
    wait_line(weir, r"\[info\]", r"rejected", r"a\.test")
    assert o.requests == []


@pytest.mark.parametrize("sent", ["nothing", "half-hello"])
def test_handshake_timeout_closes_a_silent_client(weir, dns, pki, h2o,
                                                  sent):
    """mitm_handshake_timeout 1s: a client that gets its 200 and then
    sends nothing (or half a ClientHello) is closed after about a second
    (not by proxy_read_timeout, 30s here)."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port], server=(
        "        mitm_handshake_timeout 1s;\n"
        "        proxy_read_timeout 30s;\n"))
    s = open_tunnel(port, "a.test", o.port)
    try:
        if sent == "half-hello":
            hello = BioTLS(s, client_context([mitm_ca(pki).cert]),
                           "a.test").first_flight()
            s.sendall(hello[:len(hello) // 2])
        t0 = time.monotonic()
        got = b""
        while time.monotonic() - t0 < DEADLINE:
            try:
                chunk = s.recv(4096)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
            assert len(got) < 4096, got
        else:
            raise AssertionError("not closed within %.0fs" % DEADLINE)
        elapsed = time.monotonic() - t0
    finally:
        s.close()
    assert elapsed >= 1 - EARLY, elapsed


# ---- WebSocket


class TLSWsOrigin(WsOrigin):
    """wsorigin.WsOrigin behind TLS (ALPN http/1.1): each accepted
    connection is wrapped before WsOrigin serves it; the TLS socket is
    put in socks so that stop() shuts it down. Failed handshakes are in
    tls_errors."""

    def __init__(self, cert):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert.chain, cert.key)
        self.ctx.set_alpn_protocols(["http/1.1"])
        self.tls_errors = []
        super().__init__()

    def _serve(self, s):
        try:
            t = self.ctx.wrap_socket(s, server_side=True)
        except (OSError, ssl.SSLError) as exc:
            # kept apart from errors: a peer may open and drop a
            # connection without it being a WebSocket error
            with self.lock:
                self.tls_errors.append(repr(exc))
            s.close()
            return
        with self.lock:
            self.socks.append(t)
        super()._serve(t)


@pytest.fixture
def wss_origin(pki):
    o = TLSWsOrigin(pki.leaf("a.test"))
    yield o
    o.stop()
    assert o.errors == [], "websocket origin errors: %s" % o.errors[:5]


def test_websocket_over_wss_through_connect(weir, dns, pki, wss_origin):
    """wss:// through CONNECT: the Upgrade inside the decrypted tunnel
    reaches the TLS WebSocket origin, the 101 comes back, and messages
    are echoed both ways until a clean close."""
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [wss_origin.port], server=(
        "        proxy_set_header Upgrade $http_upgrade;\n"
        "        proxy_set_header Connection $connection_upgrade;\n"))
    tls = tls_through(port, "a.test", wss_origin.port, [mitm_ca(pki).cert])
    try:
        assert issuer_cn(tls.getpeercert()) == MITM_CA_NAME
        ws = WsClient(tls)
        status, _ = ws.handshake("/echo",
                                 host="a.test:%d" % wss_origin.port)
        assert status == 101
        ws.send_text("through weir")
        assert ws.recv_message() == (OP_TEXT, b"through weir")
        ws.close()
    finally:
        tls.close()
    assert wss_origin.requests[0][0].startswith("GET /echo ")


# ---- the certificate cache of a worker


def test_concurrent_first_visits_mint_once_then_the_cache_serves(weir, dns,
                                                               pki, h2o):
    """Eight clients that CONNECT to a name weir has not seen, at once,
    wait for one look at the origin and one mint (single-flight in the
    worker); a later client is served from the cache, without a look:
    the origin sees no further TLS connection before its requests."""
    o = tls_origin(h2o, pki, names=("c.test",))
    add_names(dns, "c.test")
    port = start(weir, dns, pki, [o.port])
    url = "https://c.test:%d/tiny" % o.port
    cmd = [CURL, "-sS", "--max-time", "20", "-o", "/dev/null",
           "-w", "%{http_code}", "--cacert", mitm_ca(pki).cert,
           "-x", "http://127.0.0.1:%d" % port, url]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(8)]
    try:
        outs = [p.communicate(timeout=DEADLINE) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [out for out, _ in outs] == [b"200"] * 8, outs
    minted = re.findall(r'minted a certificate for "c\.test"', weir.log())
    assert len(minted) == 1, weir.log()

    r = curl(port, url, ca=mitm_ca(pki).cert)
    assert r.statuses() == [200]
    line = wait_line(weir, r'minted a certificate for "c\.test"')
    assert "minted 1" in line
    assert len(re.findall(r'minted a certificate for "c\.test"',
                          weir.log())) == 1


# ---- the certificate cache shared by the workers


def leaf_der(port, host, oport, ca):
    """The DER of the leaf weir serves for host (one tunnel)."""
    s = tls_through(port, host, oport, [ca])
    try:
        return s.getpeercert(binary_form=True)
    finally:
        s.close()


def visit_all(port, pki, hosts, origin_port, n):
    """n curls per host at once through the proxy on port (each its own
    connection, weir's CA trusted): every one is a 200."""
    base = [CURL, "-sS", "--max-time", "20", "-o", "/dev/null",
            "-w", "%{http_code}\n", "--cacert", mitm_ca(pki).cert,
            "-x", "http://127.0.0.1:%d" % port]
    procs = []
    try:
        for h in hosts:
            for _ in range(n):
                procs.append(subprocess.Popen(
                    base + ["https://%s:%d/tiny" % (h, origin_port)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        outs = [p.communicate(timeout=DEADLINE)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert outs == [b"200\n"] * len(procs)


def test_shared_cache_mints_once_per_host_for_all_workers(weir, dns, pki,
                                                          h2o):
    """Two workers with mitm_certificate_cache shared: 100 hosts, each
    visited by 2 connections at once, then once more: both workers serve
    decrypted requests, each host is minted exactly once, and the
    counters of stub_status say so: 100 minted, 200 from a cache."""
    hosts = ["h%d.m.test" % i for i in range(100)]
    o = tls_origin(h2o, pki, names=("*.m.test",))
    add_names(dns, *hosts)
    port = start(weir, dns, pki, [o.port], workers=2,
                 http="    mitm_certificate_cache shared:mitm:4m;\n"
                      "    log_format pid '$pid $mitm $host';\n",
                 server="        access_log logs/pid.log pid;\n"
                        "        location = /status { stub_status; }\n"
                        # 200 curls and 300 handshakes with a Python
                        # origin at once: slow on a busy 2-core machine
                        "        proxy_connect_timeout 15s;\n")
    for n in (2, 1):
        visit_all(port, pki, hosts, o.port, n)
    log = weir.log()
    for h in hosts:
        n = len(re.findall(r'minted a certificate for "%s"' % re.escape(h),
                           log))
        assert n == 1, (h, n)
    assert "all workers" in log

    p = subprocess.run([CURL, "-sS", "--max-time", "20",
                        "http://127.0.0.1:%d/status" % port],
                       capture_output=True, timeout=DEADLINE)
    assert "MITM certificates: minted 100 from cache 200 evicted 0" \
        in p.stdout.decode(), p.stdout

    def both():
        with open(weir.path("logs", "pid.log")) as f:
            pids = {l.split()[0] for l in f if " decrypted " in l}
        return pids if len(pids) == 2 else None

    wait_for(both, what="both workers to serve decrypted requests")


def test_shared_cache_survives_a_reload(weir, dns, pki, h2o):
    """A leaf minted before a reload is served after it, byte for byte
    (the same key and serial), without a second mint."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port],
                 http="    mitm_certificate_cache shared:mitm:1m;\n")
    ca = mitm_ca(pki).cert
    before = leaf_der(port, "a.test", o.port, ca)
    old = set(weir.workers())
    weir.reload(wait=False)

    def new_workers():
        now = set(weir.workers())
        return now if now and not (now & old) else None

    wait_for(new_workers, what="the new workers")
    after = leaf_der(port, "a.test", o.port, ca)
    assert after == before
    assert len(re.findall(r'minted a certificate for "a\.test"',
                          weir.log())) == 1


def test_shared_cache_keeps_no_leaf_of_another_ca(weir, dns, pki, h2o):
    """A reload that changes the CA keeps the zone but never serves a
    leaf of the old CA: the next client gets one issued by the new CA."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port],
                 http="    mitm_certificate_cache shared:mitm:1m;\n")
    s = tls_through(port, "a.test", o.port, [mitm_ca(pki).cert])
    s.close()
    other = pki.other_ca("weir second mitm CA")
    key = weir.path("conf", "second-ca.key")
    shutil.copyfile(other.key, key)
    os.chmod(key, 0o600)
    conf = open(weir.conf_path).read()
    conf = conf.replace(mitm_ca(pki).cert, other.cert)
    conf = conf.replace(weir.path("conf", "mitm-ca.key"), key)
    old = set(weir.workers())
    with open(weir.conf_path, "w") as f:
        f.write(conf)
    weir.reload(wait=False)

    def new_workers():
        now = set(weir.workers())
        return now if now and not (now & old) else None

    wait_for(new_workers, what="the new workers")
    s = tls_through(port, "a.test", o.port, [other.cert])
    try:
        assert issuer_cn(s.getpeercert()) == "weir second mitm CA"
    finally:
        s.close()


def test_certificate_cache_errors(weir):
    """A bad mitm_certificate_cache is refused with its file:line."""
    weir.allow.append(r"\[emerg\]")
    for value, reason in (("shared:x", "invalid mitm_certificate_cache"),
                          ("private:x:1m", "invalid mitm_certificate_cache"),
                          ("shared:x:1k", "is too small")):
        weir.conf(tlspki.mitm_preamble() +
                  "http {\n"
                  "    mitm_certificate_cache %s;\n"
                  "}\n" % value)
        p = weir.run(["-t"])
        assert p.returncode != 0
        assert reason in p.stderr, p.stderr
        assert "weir.conf:" in p.stderr, p.stderr


# ---- weir -E: the CA for the clients to trust


def test_export_the_ca_in_pem_and_der(weir, dns, pki):
    """weir -E pem prints the CA of the server with mitm on, as its file
    has it; -E der the same certificate in DER; nothing else goes to
    stdout, and nothing is started."""
    write_conf(weir, dns, pki, [443])
    p = weir.run(["-E", "pem"])
    assert p.returncode == 0, p.stderr
    with open(mitm_ca(pki).cert) as f:
        want = ssl.PEM_cert_to_DER_cert(f.read())
    assert ssl.PEM_cert_to_DER_cert(p.stdout) == want
    assert p.stdout.startswith("-----BEGIN CERTIFICATE-----")

    # binary: not through weir.run, which decodes stdout as text
    from weirtest import WEIR_BIN
    der = subprocess.run([WEIR_BIN, "-p", weir.prefix, "-c",
                          weir.conf_path, "-E", "der"], capture_output=True,
                         timeout=DEADLINE, env=weir.env())
    assert der.returncode == 0, der.stderr
    assert der.stdout == want


def test_export_without_mitm_fails(weir, dns, pki):
    """-E on a configuration without mitm on exits 1 and says why."""
    write_conf(weir, dns, pki, [443], mitm="off")
    p = weir.run(["-E", "pem"])
    assert p.returncode == 1
    assert "no CA to export" in p.stderr, p.stderr
    assert p.stdout == ""
    p = weir.run(["-E", "xml"])
    assert p.returncode == 1
    assert 'invalid option: "-E xml"' in p.stderr, p.stderr


# ---- the onboarding page


def plain_via_proxy(port, url, method="GET"):
    """(status, headers, body) of an absolute-form request through the
    proxy (curl -x sends http:// URLs in absolute form)."""
    p = subprocess.run([CURL, "-sS", "--max-time", "20", "-o", "-",
                        "-D", "/dev/stderr", "-X", method,
                        "-x", "http://127.0.0.1:%d" % port, url],
                       capture_output=True, timeout=DEADLINE)
    assert p.returncode == 0, p.stderr
    head = p.stderr.decode("latin1")
    status = int(head.split()[1])
    return status, head, p.stdout


def test_onboarding_page_serves_instructions_and_the_ca(weir, dns, pki):
    """mitm_onboarding NAME: http://NAME/ through the proxy is weir's own
    page (every platform named, the CA's fingerprint), /weir-ca.pem and
    /weir-ca.der are the CA; the name is never looked up (the DNS server
    knows it not), other paths are 404, other methods 405."""
    port = start(weir, dns, pki, [443],
                 server="        mitm_onboarding mitm.weir;\n")
    status, head, body = plain_via_proxy(port, "http://mitm.weir/")
    assert status == 200
    assert "text/html" in head
    page = body.decode()
    for platform in ("Debian", "Fedora", "macOS", "Windows", "Firefox",
                     "Android", "iOS"):
        assert platform in page, platform
    with open(mitm_ca(pki).cert) as f:
        der = ssl.PEM_cert_to_DER_cert(f.read())
    fp = ":".join("%02X" % b for b in hashlib.sha256(der).digest())
    assert fp in page

    status, head, body = plain_via_proxy(port, "http://MITM.weir/weir-ca.pem")
    assert status == 200
    assert ssl.PEM_cert_to_DER_cert(body.decode()) == der
    status, head, body = plain_via_proxy(port, "http://mitm.weir/weir-ca.der")
    assert status == 200
    assert "application/x-x509-ca-cert" in head
    assert body == der

    assert plain_via_proxy(port, "http://mitm.weir/other")[0] == 404
    assert plain_via_proxy(port, "http://mitm.weir/", method="POST")[0] == 405
    assert dns.count("mitm.weir") == 0


def test_onboarding_is_off_by_default(weir, dns, pki):
    """Without mitm_onboarding, the name is an origin like any other (it
    does not resolve here: 502)."""
    port = start(weir, dns, pki, [443])
    assert plain_via_proxy(port, "http://mitm.weir/")[0] == 502


@pytest.mark.parametrize("shared", [False, True], ids=["worker", "shared"])
def test_stub_status_counts_certificates(weir, dns, pki, h2o, shared):
    """stub_status adds a line after nginx's four: the certificates
    minted, served from a cache and evicted (the zone's with a shared
    cache, this worker's without)."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port],
                 http=("    mitm_certificate_cache shared:mitm:1m;\n"
                       if shared else ""),
                 server="        location = /status { stub_status; }\n")
    for _ in range(3):
        s = tls_through(port, "a.test", o.port, [mitm_ca(pki).cert])
        s.close()
    p = subprocess.run([CURL, "-sS", "--max-time", "20",
                        "http://127.0.0.1:%d/status" % port],
                       capture_output=True, timeout=DEADLINE)
    lines = p.stdout.decode().splitlines()
    assert lines[0].startswith("Active connections:"), lines
    want = "MITM certificates: minted 1 from cache 2 evicted 0"
    if not shared:
        want += " (this worker)"
    assert lines[4] == want, lines


@pytest.mark.parametrize("shared", [False, True], ids=["worker", "shared"])
def test_origin_variables(weir, dns, pki, h2o, shared):
    """$mitm_origin_subject, _protocol and _cipher: what the look at the
    origin saw, on the first tunnel and on one served from a cache (the
    worker's, or the shared zone's)."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start(weir, dns, pki, [o.port],
                 http=("    mitm_certificate_cache shared:mitm:1m;\n"
                       if shared else ""),
                 server=("        add_header X-S $mitm_origin_subject;\n"
                         "        add_header X-P $mitm_origin_protocol;\n"
                         "        add_header X-C $mitm_origin_cipher;\n"
                         "        add_header X-V $mitm_origin_verify;\n"))
    for _ in range(2):
        r = curl(port, "https://a.test:%d/tiny" % o.port,
                 ca=mitm_ca(pki).cert)
        assert r.statuses() == [200]
        assert r.header("x-s")[0].startswith("CN=a.test,"), r.heads
        assert r.header("x-p") == ["TLSv1.3"], r.heads
        assert r.header("x-c")[0].startswith("TLS_"), r.heads
        assert r.header("x-v") == ["OK"], r.heads
