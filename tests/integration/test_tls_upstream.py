"""TLS to origins: `proxy_pass https://...` and the proxy_ssl_* directives
of weir_http_proxy_ssl_module, against a real TLS origin written here
(TLSOrigin: python ssl, one thread per connection, on 127.0.0.1) that
records, per TLS connection, the SNI it was given, whether the session
was resumed, the protocol, the cipher and the client certificate, and
answers every request with one line saying so.

Certificates come from the session's test PKI (tlspki.py, the `pki`
fixture); the module is built in or loaded with load_module
(`ssl_preamble`), so the suite runs the same on both builds."""

import os
import re
import socket
import ssl
import threading

import pytest

from weirtest import DEADLINE, wait_for

import tlspki


# ---- the origin

class OriginConn:
    """One connection the origin accepted."""

    def __init__(self, n):
        self.n = n              # 1, 2, ... in accept order
        self.tls = False
        self.sni = None         # the server name the client sent, or None
        self.reused = None      # SSLSocket.session_reused
        self.version = None
        self.cipher = None
        self.peer_cn = None     # the client certificate's CN
        self.requests = 0
        self.error = None       # why the handshake failed


class TLSOrigin:
    """An HTTP/1.1 origin with TLS on 127.0.0.1 (addr "127.0.0.1:PORT").

    cert: a tlspki Cert (its chain and key are served). require_client:
    a CA file; a client certificate it signed is then required.
    versions: (min, max) ssl.TLSVersion. ciphers: the TLS 1.2 list.
    both: also speak plain HTTP on the same port (the first byte tells:
    0x16 is a TLS handshake record).

    Every response body is one line:
        origin path=P conn=N tls=0|1 sni=S reused=0|1 version=V
        cipher=C cn=CN req=R
    """

    def __init__(self, cert, require_client=None, versions=None,
                 ciphers=None, both=False):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert.chain, cert.key)
        if require_client:
            self.ctx.verify_mode = ssl.CERT_REQUIRED
            self.ctx.load_verify_locations(require_client)
        if versions:
            self.ctx.minimum_version, self.ctx.maximum_version = versions
        if ciphers:
            self.ctx.set_ciphers(ciphers)
        self.ctx.set_alpn_protocols(["http/1.1"])
        self.ctx.sni_callback = self._sni
        self.both = both
        self.local = threading.local()
        self.lock = threading.Lock()
        self.conns = []
        self.socks = set()
        self.threads = []
        self.stopping = False

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.addr = "127.0.0.1:%d" % self.port
        self.acceptor = threading.Thread(target=self._accept, daemon=True)
        self.acceptor.start()

    # the handshake runs in the connection's thread: a thread-local is
    # the connection's own
    def _sni(self, sslobj, name, ctx):
        self.local.sni = name

    def _accept(self):
        while not self.stopping:
            try:
                s, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                conn = OriginConn(len(self.conns) + 1)
                self.conns.append(conn)
                self.socks.add(s)
            t = threading.Thread(target=self._serve, args=(s, conn),
                                 daemon=True)
            self.threads.append(t)
            t.start()

    def _serve(self, s, conn):
        s.settimeout(DEADLINE)
        try:
            tls = True
            if self.both:
                first = s.recv(1, socket.MSG_PEEK)
                tls = first == b"\x16"
            if tls:
                self.local.sni = None
                try:
                    t = self.ctx.wrap_socket(s, server_side=True)
                except (ssl.SSLError, OSError) as exc:
                    conn.error = repr(exc)
                    return
                with self.lock:
                    self.socks.add(t)
                conn.tls = True
                conn.sni = self.local.sni
                conn.reused = t.session_reused
                conn.version = t.version()
                conn.cipher = t.cipher()[0]
                peer = t.getpeercert()
                if peer:
                    for rdn in peer.get("subject", ()):
                        for k, v in rdn:
                            if k == "commonName":
                                conn.peer_cn = v
                s = t
            self._http(s, conn)
        except (OSError, ValueError, ssl.SSLError) as exc:
            if conn.error is None and not self.stopping:
                conn.error = repr(exc)
        finally:
            try:
                s.close()
            except OSError:
                pass

    def _http(self, s, conn):
        f = s.makefile("rb")
        try:
            while True:
                line = f.readline(8192)
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    continue
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers = {}
                while True:
                    h = f.readline(8192)
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                n = int(headers.get("content-length", "0"))
                if n:
                    f.read(n)
                conn.requests += 1
                body = ("origin path=%s conn=%d tls=%d sni=%s reused=%d "
                        "version=%s cipher=%s cn=%s req=%d\n"
                        % (path, conn.n, int(conn.tls), conn.sni,
                           int(bool(conn.reused)), conn.version,
                           conn.cipher, conn.peer_cn, conn.requests))
                close = headers.get("connection", "").lower() == "close"
                out = ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                       "Content-Length: %d\r\n%s\r\n%s"
                       % (len(body), "Connection: close\r\n" if close
                          else "", body))
                s.sendall(out.encode())
                if close:
                    return
        finally:
            f.close()

    def handshakes(self):
        """The connections whose TLS handshake succeeded."""
        with self.lock:
            return [c for c in self.conns if c.tls]

    def stop(self):
        self.stopping = True
        try:
            self.sock.close()
        except OSError:
            pass
        with self.lock:
            socks = list(self.socks)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass
        self.acceptor.join(DEADLINE)
        for t in self.threads:
            t.join(DEADLINE)


@pytest.fixture
def make_tls_origin():
    origins = []

    def make(cert, **kw):
        o = TLSOrigin(cert, **kw)
        origins.append(o)
        return o

    yield make
    for o in origins:
        o.stop()


@pytest.fixture(scope="module")
def self_signed(pki):
    """A self-signed certificate (no CA) for "origin.test"."""
    key = pki.path("selfsigned-origin.key")
    crt = pki.path("selfsigned-origin.crt")
    if not os.path.exists(crt):
        tlspki._run(["req", "-x509", "-newkey", "rsa:2048", "-nodes",
                     "-days", "30", "-subj", "/CN=origin.test",
                     "-addext", "subjectAltName=DNS:origin.test",
                     "-keyout", key, "-out", crt])
        os.chmod(key, 0o644)
    return tlspki.Cert(cert=crt, key=key, chain=crt, ca=crt,
                       names=("origin.test",))


# ---- weir

BODY = re.compile(r"^origin path=(\S+) conn=(\d+) tls=(\d) sni=(\S+) "
                  r"reused=(\d) version=(\S+) cipher=(\S+) cn=(\S+) "
                  r"req=(\d+)\n$")


def start(weir, preamble, pass_to, location="", http="", upstream="",
          workers=1):
    """weir with one server on a free port whose location / proxies to
    pass_to (a URL); location/http/upstream: more directives there.
    Returns the port."""
    port = weir.port()
    weir.conf(preamble +
              "worker_processes %d;\n"
              "http {\n"
              "    proxy_connect_timeout 3s;\n"
              "    proxy_read_timeout 5s;\n"
              "%s%s"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        location / {\n"
              "            proxy_pass %s;\n"
              "%s"
              "        }\n"
              "    }\n"
              "}\n" % (workers, http, upstream, port, pass_to, location))
    weir.start(check_ports=False)

    def up():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(up, what="the HTTP port to accept")
    return port


def get(port, path="/", keep=None):
    """One GET on a new client connection (or on keep, a socket kept
    open between calls: the caller closes it). Returns (status, body)."""
    s = keep or socket.create_connection(("127.0.0.1", port),
                                         timeout=DEADLINE)
    try:
        s.sendall(("GET %s HTTP/1.1\r\nHost: client.test\r\n%s\r\n"
                   % (path, "" if keep else "Connection: close\r\n"))
                  .encode())
        f = s.makefile("rb")
        status_line = f.readline()
        assert status_line, "weir closed without answering"
        status = int(status_line.split()[1])
        length = None
        chunked = False
        while True:
            h = f.readline()
            if h in (b"\r\n", b""):
                break
            k, _, v = h.decode("latin-1").partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
            if k.strip().lower() == "transfer-encoding":
                chunked = "chunked" in v.lower()
        if chunked:
            body = b""
            while True:
                n = int(f.readline().split(b";")[0], 16)
                if n == 0:
                    f.readline()
                    break
                body += f.read(n)
                f.readline()
        elif length is not None:
            body = f.read(length)
        else:
            body = f.read()
        f.close()
        return status, body.decode("latin-1")
    finally:
        if keep is None:
            s.close()


def answer(port, path="/", keep=None):
    """A GET that must be 200 from the origin; its fields as a dict."""
    status, body = get(port, path, keep)
    assert status == 200, (status, body)
    m = BODY.match(body)
    assert m, body
    keys = ("path", "conn", "tls", "sni", "reused", "version", "cipher",
            "cn", "req")
    return dict(zip(keys, m.groups()))


def bad_gateway(weir, port, log, path="/"):
    """A GET that must be 502, with an error log line matching log."""
    status, body = get(port, path)
    assert status == 502, (status, body)
    return weir.wait_log(log)


# ---- proxy_ssl_verify

def test_verify_off_by_default_self_signed(weir, ssl_preamble, pki,
                                           make_tls_origin, self_signed):
    o = make_tls_origin(self_signed)
    port = start(weir, ssl_preamble, "https://%s" % o.addr)
    a = answer(port, "/hello?x=1")
    assert a["path"] == "/hello?x=1"
    assert a["tls"] == "1"
    assert a["version"] in ("TLSv1.2", "TLSv1.3")


def test_verify_on_trusted_ca_and_name(weir, ssl_preamble, pki,
                                       make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_verify on;\n"
                          "proxy_ssl_trusted_certificate %s;\n"
                          "proxy_ssl_name origin.test;\n" % pki.ca_cert)
    assert answer(port)["tls"] == "1"


def test_verify_on_ip_literal_matches_ip_san(weir, ssl_preamble, pki,
                                             make_tls_origin):
    """No proxy_ssl_name: the host of proxy_pass, an IP literal, checked
    against the certificate's IP entries."""
    o = make_tls_origin(pki.leaf("localhost", ips=["127.0.0.1"]))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_verify on;\n"
                          "proxy_ssl_trusted_certificate %s;\n"
                          % pki.ca_cert)
    assert answer(port)["tls"] == "1"


def test_verify_on_upstream_name(weir, ssl_preamble, pki, make_tls_origin):
    """proxy_pass https://GROUP: the name checked is the group's."""
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://origin.test",
                 upstream="    upstream origin.test { server %s; }\n"
                          % o.addr,
                 location="proxy_ssl_verify on;\n"
                          "proxy_ssl_trusted_certificate %s;\n"
                          % pki.ca_cert)
    assert answer(port)["tls"] == "1"


def test_verify_fails_untrusted_ca(weir, ssl_preamble, pki,
                                   make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test", ca=pki.other_ca()))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_verify on;\n"
                          "proxy_ssl_trusted_certificate %s;\n"
                          "proxy_ssl_name origin.test;\n" % pki.ca_cert)
    bad_gateway(weir, port,
                r"\[error\].*upstream SSL certificate verify error: "
                r"\((19|20|21):[^)]+\) while SSL handshaking to upstream")


def test_verify_fails_self_signed(weir, ssl_preamble, pki, make_tls_origin,
                                  self_signed):
    o = make_tls_origin(self_signed)
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_verify on;\n"
                          "proxy_ssl_trusted_certificate %s;\n"
                          "proxy_ssl_name origin.test;\n" % pki.ca_cert)
    bad_gateway(weir, port,
                r"upstream SSL certificate verify error: \(18:self[- ]"
                r"signed certificate\) while SSL handshaking to upstream")


def test_verify_fails_wrong_name(weir, ssl_preamble, pki, make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_verify on;\n"
                          "proxy_ssl_trusted_certificate %s;\n"
                          "proxy_ssl_name other.test;\n" % pki.ca_cert)
    bad_gateway(weir, port,
                r"\[error\].*upstream SSL certificate does not match "
                r"\"other\.test\" while SSL handshaking to upstream")


def test_verify_fails_expired(weir, ssl_preamble, pki, make_tls_origin):
    o = make_tls_origin(pki.leaf("old.test", expired=True))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_verify on;\n"
                          "proxy_ssl_trusted_certificate %s;\n"
                          "proxy_ssl_name old.test;\n" % pki.ca_cert)
    bad_gateway(weir, port,
                r"upstream SSL certificate verify error: \(10:certificate "
                r"has expired\) while SSL handshaking to upstream")


def test_verify_off_accepts_what_on_refuses(weir, ssl_preamble, pki,
                                            make_tls_origin):
    """An expired certificate with a wrong name from another CA: off
    (explicitly) proxies anyway."""
    o = make_tls_origin(pki.leaf("old.test", expired=True))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_verify off;\n"
                          "proxy_ssl_name other.test;\n")
    assert answer(port)["tls"] == "1"


@pytest.mark.parametrize("depth,ok", [(0, False), (1, True)])
def test_verify_depth_with_an_intermediate(weir, ssl_preamble, pki,
                                           make_tls_origin, depth, ok):
    """leaf <- intermediate <- root: depth 1 (the default) allows the one
    intermediate, depth 0 does not."""
    o = make_tls_origin(pki.leaf("chain.test", ca=pki.intermediate()))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_verify on;\n"
                          "proxy_ssl_verify_depth %d;\n"
                          "proxy_ssl_trusted_certificate %s;\n"
                          "proxy_ssl_name chain.test;\n"
                          % (depth, pki.ca_cert))
    if ok:
        assert answer(port)["tls"] == "1"
    else:
        bad_gateway(weir, port,
                    r"upstream SSL certificate verify error: \(22:"
                    r"certificate chain too long\)")


# ---- proxy_ssl_server_name, proxy_ssl_name

def test_server_name_off_by_default_no_sni(weir, ssl_preamble, pki,
                                           make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://origin.test",
                 upstream="    upstream origin.test { server %s; }\n"
                          % o.addr,
                 location="proxy_ssl_name origin.test;\n")
    assert answer(port)["sni"] == "None"


def test_server_name_on_sends_proxy_ssl_name(weir, ssl_preamble, pki,
                                             make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_server_name on;\n"
                          "proxy_ssl_name sni.origin.test;\n")
    assert answer(port)["sni"] == "sni.origin.test"


def test_server_name_on_sends_the_proxy_pass_host(weir, ssl_preamble, pki,
                                                  make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://group.origin.test",
                 upstream="    upstream group.origin.test { server %s; }\n"
                          % o.addr,
                 location="proxy_ssl_server_name on;\n")
    assert answer(port)["sni"] == "group.origin.test"


def test_server_name_on_never_sends_an_ip_literal(weir, ssl_preamble, pki,
                                                  make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_server_name on;\n")
    assert answer(port)["sni"] == "None"


def test_proxy_ssl_name_with_a_variable(weir, ssl_preamble, pki,
                                        make_tls_origin):
    """proxy_ssl_name is evaluated per request."""
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://u",
                 upstream="    upstream u { server %s; keepalive 0; }\n"
                          % o.addr,
                 location="proxy_ssl_server_name on;\n"
                          "proxy_ssl_name $arg_n.origin.test;\n")
    assert answer(port, "/?n=a")["sni"] == "a.origin.test"
    assert answer(port, "/?n=b")["sni"] == "b.origin.test"


# ---- client certificate to the origin

def test_client_certificate_accepted(weir, ssl_preamble, pki,
                                     make_tls_origin):
    cli = pki.client("weir-proxy")
    o = make_tls_origin(pki.leaf("origin.test"), require_client=pki.ca_cert)
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_certificate %s;\n"
                          "proxy_ssl_certificate_key %s;\n"
                          % (cli.chain, cli.key))
    assert answer(port)["cn"] == "weir-proxy"


def test_client_certificate_encrypted_key(weir, ssl_preamble, pki,
                                          make_tls_origin):
    """proxy_ssl_password_file opens an encrypted client key."""
    cli = pki.client("weir-proxy-enc")
    enc = pki.path("weir-proxy-enc.enc.key")
    pw = pki.path("weir-proxy-enc.pass")
    if not os.path.exists(enc):
        tlspki._run(["pkey", "-in", cli.key, "-out", enc, "-aes256",
                     "-passout", "pass:s3cret"])
        os.chmod(enc, 0o644)
        with open(pw, "w") as f:
            f.write("wrong\ns3cret\n")
    o = make_tls_origin(pki.leaf("origin.test"), require_client=pki.ca_cert)
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_certificate %s;\n"
                          "proxy_ssl_certificate_key %s;\n"
                          "proxy_ssl_password_file %s;\n"
                          % (cli.chain, enc, pw))
    # the file's passwords are tried in order, as nginx does
    assert answer(port)["cn"] == "weir-proxy-enc"


def test_client_certificate_missing_is_502(weir, ssl_preamble, pki,
                                           make_tls_origin):
    """The origin requires a certificate weir does not have: with TLS
    1.3 the origin's alert comes after weir's side of the handshake, so
    weir sees it (or the origin's reset) while sending the request or
    reading the answer; either way 502 and an error line naming the
    failed SSL call and the upstream."""
    o = make_tls_origin(pki.leaf("origin.test"), require_client=pki.ca_cert)
    port = start(weir, ssl_preamble, "https://%s" % o.addr)
    bad_gateway(weir, port,
                r"\[(error|crit)\].*SSL_\w+\(\) failed .*upstream")
    assert not o.handshakes()


# ---- proxy_ssl_protocols, proxy_ssl_ciphers, proxy_ssl_conf_command

TLS12 = (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2)
TLS13 = (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_3)


def test_protocols_tls13_against_a_tls12_origin_is_502(
        weir, ssl_preamble, pki, make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"), versions=TLS12)
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_protocols TLSv1.3;\n")
    bad_gateway(weir, port,
                r"\[(error|crit)\].*SSL_do_handshake\(\) failed \(SSL: .*"
                r"while SSL handshaking to upstream")
    assert not o.handshakes()


@pytest.mark.parametrize("versions,want", [(TLS12, "TLSv1.2"),
                                           (TLS13, "TLSv1.3")])
def test_protocols_default_speaks_both(weir, ssl_preamble, pki,
                                       make_tls_origin, versions, want):
    o = make_tls_origin(pki.leaf("origin.test"), versions=versions)
    port = start(weir, ssl_preamble, "https://%s" % o.addr)
    assert answer(port)["version"] == want


def test_protocols_tls12_only(weir, ssl_preamble, pki, make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_protocols TLSv1.2;\n")
    assert answer(port)["version"] == "TLSv1.2"


def test_conf_command(weir, ssl_preamble, pki, make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_conf_command MaxProtocol TLSv1.2;\n")
    assert answer(port)["version"] == "TLSv1.2"


@pytest.mark.parametrize("cipher,ok", [
    ("ECDHE-RSA-AES128-GCM-SHA256", True),
    ("ECDHE-RSA-AES256-GCM-SHA384", False)])
def test_ciphers(weir, ssl_preamble, pki, make_tls_origin, cipher, ok):
    """A TLS 1.2 origin that takes one cipher: weir with that cipher
    gets it, with only another one the handshake fails (502)."""
    o = make_tls_origin(pki.leaf("origin.test"), versions=TLS12,
                        ciphers="ECDHE-RSA-AES128-GCM-SHA256")
    port = start(weir, ssl_preamble, "https://%s" % o.addr,
                 location="proxy_ssl_ciphers %s;\n" % cipher)
    if ok:
        assert answer(port)["cipher"] == cipher
    else:
        bad_gateway(weir, port,
                    r"SSL_do_handshake\(\) failed \(SSL: .*while SSL "
                    r"handshaking to upstream")
        assert not o.handshakes()


# ---- proxy_ssl_session_reuse

@pytest.mark.parametrize("versions", [TLS12, TLS13], ids=["1.2", "1.3"])
def test_session_reuse_on_resumes(weir, ssl_preamble, pki, make_tls_origin,
                                  versions):
    """keepalive 0: every request is a new connection; from the second
    on, weir offers the session the origin gave and it is resumed."""
    o = make_tls_origin(pki.leaf("origin.test"), versions=versions)
    port = start(weir, ssl_preamble, "https://u",
                 upstream="    upstream u { server %s; keepalive 0; }\n"
                          % o.addr)
    got = [answer(port) for _ in range(4)]
    assert [a["conn"] for a in got] == ["1", "2", "3", "4"], got
    assert got[0]["reused"] == "0"
    assert [a["reused"] for a in got[1:]] == ["1", "1", "1"], got


def test_session_reuse_with_verify_and_sni(weir, ssl_preamble, pki,
                                           make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://origin.test",
                 upstream="    upstream origin.test { server %s; "
                          "keepalive 0; }\n" % o.addr,
                 location="proxy_ssl_verify on;\n"
                          "proxy_ssl_trusted_certificate %s;\n"
                          "proxy_ssl_server_name on;\n" % pki.ca_cert)
    got = [answer(port) for _ in range(3)]
    assert [a["sni"] for a in got] == ["origin.test"] * 3
    assert [a["reused"] for a in got] == ["0", "1", "1"], got


@pytest.mark.parametrize("versions", [TLS12, TLS13], ids=["1.2", "1.3"])
def test_session_reuse_off_never_resumes(weir, ssl_preamble, pki,
                                         make_tls_origin, versions):
    o = make_tls_origin(pki.leaf("origin.test"), versions=versions)
    port = start(weir, ssl_preamble, "https://u",
                 upstream="    upstream u { server %s; keepalive 0; }\n"
                          % o.addr,
                 location="proxy_ssl_session_reuse off;\n")
    got = [answer(port) for _ in range(4)]
    assert [a["conn"] for a in got] == ["1", "2", "3", "4"], got
    assert [a["reused"] for a in got] == ["0"] * 4, got


# ---- keep-alive

def test_keepalive_twenty_requests_one_handshake(weir, ssl_preamble, pki,
                                                 make_tls_origin):
    """20 requests, each on a new client connection: one TLS connection
    to the origin carries them all."""
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://u",
                 upstream="    upstream u { server %s; keepalive 4; }\n"
                          % o.addr)
    got = [answer(port, "/%d" % i) for i in range(20)]
    assert {a["conn"] for a in got} == {"1"}, got
    assert [a["req"] for a in got] == [str(i) for i in range(1, 21)]
    assert len(o.handshakes()) == 1
    assert len(o.conns) == 1


def test_keepalive_on_one_client_connection(weir, ssl_preamble, pki,
                                            make_tls_origin):
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://%s" % o.addr)
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    try:
        got = [answer(port, "/k%d" % i, keep=s) for i in range(20)]
    finally:
        s.close()
    assert {a["conn"] for a in got} == {"1"}, got
    assert len(o.handshakes()) == 1


def test_pooled_tls_connection_closed_by_origin_is_retried(
        weir, ssl_preamble, pki, make_tls_origin):
    """The origin closes its idle TLS connection: the next request still
    gets a 200, on a new connection."""
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://u",
                 upstream="    upstream u { server %s; keepalive 4; }\n"
                          % o.addr)
    assert answer(port)["conn"] == "1"
    with o.lock:
        socks = list(o.socks)
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def closed_seen():
        return answer(port)["conn"] != "1"

    assert wait_for(closed_seen, what="a new origin connection")


# ---- the pool never mixes plain and TLS connections

def test_pool_never_mixes_plain_and_tls(weir, ssl_preamble, pki,
                                        make_tls_origin):
    """One upstream group used by an http:// and an https:// location,
    an origin that speaks both on one port: a pooled plain connection is
    never handed to https (the origin would answer tls=0) and a pooled
    TLS connection never to http (plain bytes inside TLS: an error)."""
    o = make_tls_origin(pki.leaf("origin.test"), both=True)
    port = weir.port()
    weir.conf(ssl_preamble +
              "http {\n"
              "    proxy_connect_timeout 3s;\n"
              "    proxy_read_timeout 5s;\n"
              "    upstream u { server %s; keepalive 8; }\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        location /plain/ { proxy_pass http://u; }\n"
              "        location /tls/ { proxy_pass https://u; }\n"
              "    }\n"
              "}\n" % (o.addr, port))
    weir.start(check_ports=False)
    wait_for(lambda: socket.create_connection(("127.0.0.1", port),
                                              timeout=1).close() or True,
             what="the HTTP port to accept")

    seq = ["plain", "tls", "plain", "tls", "tls", "plain", "plain", "tls"]
    got = [(kind, answer(port, "/%s/%d" % (kind, i)))
           for i, kind in enumerate(seq)]
    for kind, a in got:
        assert a["tls"] == ("1" if kind == "tls" else "0"), got
    plain_conns = {a["conn"] for k, a in got if k == "plain"}
    tls_conns = {a["conn"] for k, a in got if k == "tls"}
    assert not plain_conns & tls_conns, got
    # and each kind stays pooled: the pool matches on TLS state, so a
    # switch of kind costs no reconnect
    assert len(plain_conns) == 1 and len(tls_conns) == 1, got
    assert not [c.error for c in o.conns if c.error], \
        [c.error for c in o.conns]


# ---- the module loaded dynamically (or built in): https:// is known

def test_https_needs_the_module_says_which_build(weir, ssl_preamble, pki,
                                                 make_tls_origin):
    """Runs on both builds: with load_module on a dynamic one (and says
    which build ran, in the test output)."""
    build = tlspki.ssl_build()
    print("ssl module: %s" % build)
    assert (build == "dynamic") == ssl_preamble.startswith("load_module")
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, "https://%s" % o.addr)
    assert answer(port)["tls"] == "1"
