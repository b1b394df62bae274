"""TLS termination (weir_http_ssl_module): every ssl_* directive, SNI,
ECDSA/RSA selection, ALPN, session resumption (shared cache, tickets,
across workers and reloads, ticket key rotation), handshake timeout,
garbage and plain HTTP on a TLS port, the ssl variables, client
certificates, and the module built in or loaded with load_module.

Certificates come from the run-time test PKI (tlspki.py, the `pki`
fixture); clients are Python's ssl module, curl and openssl s_client.
Every configuration starts with the ssl module's preamble (its
load_module line on a dynamic build)."""

import hashlib
import os
import re
import socket
import ssl
import subprocess
import time
from signal import SIGHUP

import pytest

import tlspki
from weirtest import DEADLINE, EARLY, WEIR_BIN, REPO, connect, read_all
from weirtest import run_weir
from weirtest import wait_for


# ---------------------------------------------------------------- weir

def cert_lines(*certs):
    return "".join("        ssl_certificate %s;\n"
                   "        ssl_certificate_key %s;\n" % (c.chain, c.key)
                   for c in certs)


def server(port, names="", certs=(), extra="", body=None, listen="ssl",
           default=False):
    """One server block on 127.0.0.1:port whose location / returns
    `body` (default: the first server name, or "default")."""
    if body is None:
        body = names.split()[0] if names else "default"
    return ("    server {\n"
            "        listen 127.0.0.1:%d %s%s;\n"
            "%s"
            "%s%s"
            "        location / { return 200 \"%s\"; }\n"
            "    }\n"
            % (port, listen, " default_server" if default else "",
               "        server_name %s;\n" % names if names else "",
               cert_lines(*certs), extra, body))


def conf(weir, http, main=""):
    """Writes the configuration: the ssl module's preamble, main-level
    lines, and the http block; returns its path."""
    return weir.conf(tlspki.ssl_preamble() + main
                     + "http {\n" + http + "}\n")


def up(port, timeout=DEADLINE):
    def accepts():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(accepts, timeout=timeout, what="port %d to accept" % port)


def start(weir, http, ports, main=""):
    conf(weir, http, main)
    weir.start(check_ports=False)
    for p in ports:
        up(p)


def reload(weir, http, main=""):
    """Rewrites the configuration, sends HUP, and waits until none of
    the old workers is left and the new ones are up."""
    old = set(weir.workers())
    conf(weir, http, main)
    weir.signal(SIGHUP)
    want = weir.expected_workers()

    def swapped():
        now = set(weir.workers())
        return len(now) == want and not (now & old)

    wait_for(swapped, what="the reload's new workers to replace the old")


def conf_fails(weir):
    """Runs weir -t on the configuration written last: it must fail;
    its [emerg] lines are expected. Returns the output."""
    weir.allow.append(r"\[emerg\]")
    res = weir.run(["-t"])
    assert res.returncode != 0, res.stderr
    return res.stderr


def no_crit(weir):
    bad = [line for line in weir.log().splitlines()
           if re.search(r"\[(crit|alert|emerg)\]", line)]
    assert bad == [], "unexpected log lines:\n%s" % "\n".join(bad)


# ---------------------------------------------------------------- clients

def context(pki=None, verify=True, min_version=None, max_version=None,
            ciphers=None, alpn=None, client=None):
    """A client SSLContext: verifies against the test CA (no hostname
    check: tests choose SNI and Host freely), or not at all."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    if verify and pki is not None:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(pki.ca_cert)
    else:
        ctx.verify_mode = ssl.CERT_NONE
    if min_version is not None:
        ctx.minimum_version = min_version
    if max_version is not None:
        ctx.maximum_version = max_version
    if ciphers is not None:
        ctx.set_ciphers(ciphers)
    if alpn is not None:
        ctx.set_alpn_protocols(alpn)
    if client is not None:
        ctx.load_cert_chain(client.chain, client.key)
    return ctx


class Answer:
    """One TLS connection's outcome: the HTTP response and the TLS
    facts the client saw."""

    def __init__(self, sock, data):
        head, _, self.body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status_line = lines[0]
        parts = lines[0].split(" ", 2)
        self.status = int(parts[1]) if len(parts) > 1 and \
            parts[1].isdigit() else None
        self.headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.text = self.body.decode("latin-1")
        der = sock.getpeercert(binary_form=True)
        self.peer_sha1 = hashlib.sha1(der).hexdigest() if der else None
        self.version = sock.version()
        self.cipher = sock.cipher()[0]
        self.alpn = sock.selected_alpn_protocol()
        self.reused = sock.session_reused
        self.session = sock.session

    def __repr__(self):
        return "<Answer %r %r %s %s reused=%s>" % (
            self.status_line, self.text[:80], self.version, self.cipher,
            self.reused)


def tls_socket(port, ctx, sni=None, session=None):
    raw = connect(port, timeout=DEADLINE)
    try:
        return ctx.wrap_socket(raw, server_hostname=sni, session=session)
    except BaseException:
        raw.close()
        raise


def get(port, ctx, sni=None, host=None, path="/", session=None):
    """A GET over a new TLS connection (Connection: close); returns an
    Answer."""
    s = tls_socket(port, ctx, sni, session)
    try:
        if host is None:
            host = sni or "localhost"
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
                   "\r\n" % (path, host)).encode())
        data = b""
        while len(data) < 1 << 20:
            try:
                chunk = s.recv(65536)
            except ssl.SSLZeroReturnError:
                break
            if not chunk:
                break
            data += chunk
        return Answer(s, data)
    finally:
        s.close()


def handshake_fails(port, ctx, sni=None):
    """Asserts the TLS handshake fails; returns the error's text."""
    with pytest.raises((ssl.SSLError, ConnectionResetError,
                        BrokenPipeError)) as info:
        s = tls_socket(port, ctx, sni)
        try:
            # TLS 1.3: a server's refusal of the client's certificate
            # may only show on the first read
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(1)
        finally:
            s.close()
    return str(info.value)


def s_client(port, args=(), request=None, timeout=DEADLINE):
    """Runs openssl s_client against the port; with request, sends it
    and waits for the server to close. Returns (rc, stdout+stderr)."""
    cmd = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port]
    cmd += list(args)
    if request is not None:
        cmd.append("-ign_eof")
    res = subprocess.run(cmd, input=(request or "").encode(),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=timeout)
    return res.returncode, res.stdout.decode("latin-1")


def client_hello(sni="localhost"):
    """The bytes of a real ClientHello (Python's, via memory BIOs)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=sni)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return out.read()


# ---------------------------------------------------------------- module

def test_module_build(weir, pki):
    """The module loads: dynamically with load_module when the build
    has the .so, else built in (the test says which)."""
    kind = tlspki.ssl_build()
    leaf = pki.leaf("localhost")
    port = weir.port()
    if kind == "dynamic":
        main = "load_module %s;\n" % tlspki.ssl_module_path()
    else:
        main = ""
        res = run_weir(["-V"])
        assert "weir_http_ssl_module" in res.stdout + res.stderr
    print("ssl module: %s" % kind)
    weir.conf(main + "http {\n" + server(port, "localhost", [leaf])
              + "}\n")
    res = weir.run(["-t"])
    assert res.returncode == 0, res.stderr
    weir.start(check_ports=False)
    up(port)
    a = get(port, context(pki), sni="localhost")
    assert (a.status, a.text) == (200, "localhost")
    assert a.peer_sha1 == leaf.fingerprint


def _nossl_binary():
    """A weir binary without the ssl module, or (None, why)."""
    if tlspki.ssl_build() == "dynamic":
        return WEIR_BIN, "the dynamic build without load_module"
    # only a build made for this: an older build of another directory
    # may predate the core's "listen ... ssl" support
    for rel in ("build/test-nossl/weir",):
        path = os.path.join(REPO, rel)
        if not os.access(path, os.X_OK) or \
                os.path.realpath(path) == os.path.realpath(WEIR_BIN):
            continue
        res = subprocess.run([path, "-V"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             timeout=DEADLINE)
        if "weir_http_ssl_module" not in res.stdout:
            return path, rel
    return None, "no weir build without the ssl module here " \
        "(build/test-nossl)"


def test_listen_ssl_without_module(weir):
    path, why = _nossl_binary()
    if path is None:
        pytest.skip(why)
    port = weir.port()
    p = weir.conf("http {\n    server {\n"
                  "        listen 127.0.0.1:%d ssl;\n"
                  "        return 200 x;\n    }\n}\n" % port)
    res = subprocess.run([path, "-p", weir.prefix + "/", "-c", p, "-t"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=DEADLINE)
    print("without the module: %s" % why)
    weir.allow.append(r"\[emerg\]")
    assert res.returncode != 0
    line = weirtest_line(p, "ssl;")
    assert re.search(r"\[emerg\].*\"ssl\".*(requires|module).*"
                     r"weir\.conf:%d" % line, res.stdout), res.stdout


def weirtest_line(path, needle):
    import weirtest
    return weirtest.line_of(path, needle)


# ---------------------------------------------------------------- certs

def test_certificate_chain(weir, pki):
    """ssl_certificate sends the chain: a client that trusts only the
    root verifies a leaf signed by an intermediate."""
    leaf = pki.leaf("i.test", ca=pki.intermediate())
    port = weir.port()
    start(weir, server(port, "i.test", [leaf]), [port])
    ctx = context(pki)
    ctx.check_hostname = True
    a = get(port, ctx, sni="i.test")
    assert (a.status, a.text) == (200, "i.test")
    assert a.peer_sha1 == leaf.fingerprint
    # the same with curl
    res = subprocess.run(["curl", "-sS", "--max-time", str(DEADLINE),
                          "--cacert", pki.ca_cert, "--resolve",
                          "i.test:%d:127.0.0.1" % port,
                          "https://i.test:%d/" % port],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, timeout=DEADLINE * 2)
    assert (res.returncode, res.stdout) == (0, "i.test"), res.stderr


def test_certificate_expired_is_served(weir, pki):
    """weir loads an expired certificate (as nginx does); a verifying
    client refuses it."""
    old = pki.leaf("old.test", expired=True)
    port = weir.port()
    start(weir, server(port, "old.test", [old]), [port])
    err = handshake_fails(port, context(pki), sni="old.test")
    assert "expired" in err
    a = get(port, context(verify=False), sni="old.test")
    assert a.status == 200 and a.peer_sha1 == old.fingerprint


def test_certificate_errors(weir, pki):
    leaf = pki.leaf("localhost")
    other = pki.leaf("other.test")
    other_ec = pki.leaf("localhost", key="ec")
    port = weir.port()
    cases = [
        # a missing file
        ("        ssl_certificate %s.missing;\n"
         "        ssl_certificate_key %s;\n" % (leaf.chain, leaf.key),
         "ssl_certificate ", r"\.missing"),
        # a key that does not match the certificate
        ("        ssl_certificate %s;\n"
         "        ssl_certificate_key %s;\n" % (leaf.chain, other.key),
         "ssl_certificate ", r"(?i)key"),
        # a key of another type than the certificate's (an ECDSA key
        # for an RSA certificate: OpenSSL files it in another slot, so
        # only a check of the pair finds it)
        ("        ssl_certificate %s;\n"
         "        ssl_certificate_key %s;\n" % (leaf.chain, other_ec.key),
         "ssl_certificate ", r"(?i)key"),
        # a certificate without a key
        ("        ssl_certificate %s;\n" % leaf.chain,
         "ssl_certificate ", r"ssl_certificate_key"),
    ]
    for lines, needle, what in cases:
        p = conf(weir, "    server {\n        listen 127.0.0.1:%d ssl;\n"
                 "%s    }\n" % (port, lines))
        weir.allow.append(r"\[emerg\]")
        res = weir.run(["-t"])
        assert res.returncode != 0, "weir -t accepted:\n%s" % lines
        err = res.stderr
        assert re.search(what, err), err
        assert re.search(r"\[emerg\].*weir\.conf:\d+", err), err

    # listen ... ssl and no certificate: nginx's wording, at the line
    # of the server block (nginx) or of the listen
    p = conf(weir, "    server {\n        listen 127.0.0.1:%d ssl;\n"
             "    }\n" % port)
    res = weir.run(["-t"])
    weir.allow.append(r"\[emerg\]")
    assert res.returncode != 0
    m = re.search(r'no "ssl_certificate" is defined for the "listen '
                  r'... ssl" directive in \S*weir\.conf:(\d+)', res.stderr)
    assert m, res.stderr
    assert int(m.group(1)) in (weirtest_line(p, "server {"),
                               weirtest_line(p, "ssl;")), res.stderr


def test_encrypted_key(weir, pki):
    enc = pki.leaf("e.test", password="s3cret")
    port = weir.port()
    # a password file with a wrong line first: every line is tried
    pw = weir.write("conf/pw", "wrong\n%s\n" % enc.password)
    extra = "        ssl_password_file %s;\n" % pw
    start(weir, server(port, "e.test", [enc], extra), [port])
    a = get(port, context(pki), sni="e.test")
    assert (a.status, a.text) == (200, "e.test")
    assert a.peer_sha1 == enc.fingerprint


def test_encrypted_key_wrong_password(weir, pki):
    enc = pki.leaf("e.test", password="s3cret")
    port = weir.port()
    pw = weir.write("conf/pw", "not-it\n")
    p = conf(weir, server(port, "e.test", [enc],
                          "        ssl_password_file %s;\n" % pw))
    res = weir.run(["-t"])
    weir.allow.append(r"\[emerg\]")
    assert res.returncode != 0
    lines = [weirtest_line(p, n) for n in ("ssl_certificate_key",
                                           "ssl_certificate ",
                                           "ssl_password_file")]
    m = re.search(r"\[emerg\].*weir\.conf:(\d+)", res.stderr)
    assert m and int(m.group(1)) in lines, res.stderr
    assert enc.key in res.stderr or "bad decrypt" in res.stderr, res.stderr

    # no password file at all: an error, never a prompt on the terminal
    conf(weir, server(port, "e.test", [enc]))
    res = weir.run(["-t"])
    weir.allow.append(r"\[emerg\]")
    assert res.returncode != 0
    assert re.search(r"\[emerg\].*weir\.conf:\d+", res.stderr), res.stderr


# ---------------------------------------------------------------- protocols

def test_protocols(weir, pki):
    leaf = pki.leaf("localhost")
    p13, p12, pdef = weir.port(), weir.port(), weir.port()
    http = (server(p13, "localhost", [leaf],
                   "        ssl_protocols TLSv1.3;\n")
            + server(p12, "localhost", [leaf],
                     "        ssl_protocols TLSv1.2;\n")
            + server(pdef, "localhost", [leaf]))
    start(weir, http, [p13, p12, pdef])
    only12 = context(pki, max_version=ssl.TLSVersion.TLSv1_2)
    only13 = context(pki, min_version=ssl.TLSVersion.TLSv1_3)

    handshake_fails(p13, only12, "localhost")
    assert get(p13, only13, "localhost").version == "TLSv1.3"

    handshake_fails(p12, only13, "localhost")
    assert get(p12, only12, "localhost").version == "TLSv1.2"
    assert get(p12, context(pki), "localhost").version == "TLSv1.2"

    # the default: TLS 1.2 and 1.3
    assert get(pdef, only12, "localhost").version == "TLSv1.2"
    assert get(pdef, only13, "localhost").version == "TLSv1.3"
    assert get(pdef, context(pki), "localhost").version == "TLSv1.3"

    rc, out = s_client(p13, ["-tls1_2", "-servername", "localhost"])
    assert rc != 0, out


def test_protocols_invalid(weir):
    port = weir.port()
    p = conf(weir, "    ssl_protocols TLSv1.2 SSLv9;\n"
             "    server { listen 127.0.0.1:%d; }\n" % port)
    res = weir.run(["-t"])
    weir.allow.append(r"\[emerg\]")
    assert res.returncode != 0
    assert re.search(r"\[emerg\].*SSLv9.*weir\.conf:%d"
                     % weirtest_line(p, "SSLv9"), res.stderr), res.stderr


def test_ciphers(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, server(port, "localhost", [leaf],
                       "        ssl_ciphers ECDHE-RSA-AES256-GCM-SHA384;\n"),
          [port])
    tls12 = ssl.TLSVersion.TLSv1_2
    handshake_fails(port, context(pki, max_version=tls12,
                                  ciphers="ECDHE-RSA-AES128-GCM-SHA256"),
                    "localhost")
    a = get(port, context(pki, max_version=tls12,
                          ciphers="ECDHE-RSA-AES128-GCM-SHA256:"
                                  "ECDHE-RSA-AES256-GCM-SHA384"),
            "localhost")
    assert a.cipher == "ECDHE-RSA-AES256-GCM-SHA384"


def test_prefer_server_ciphers(weir, pki):
    leaf = pki.leaf("localhost")
    on, off = weir.port(), weir.port()
    ciphers = ("        ssl_ciphers ECDHE-RSA-AES256-GCM-SHA384:"
               "ECDHE-RSA-AES128-GCM-SHA256;\n")
    start(weir, server(on, "localhost", [leaf],
                       ciphers + "        ssl_prefer_server_ciphers on;\n")
          + server(off, "localhost", [leaf], ciphers), [on, off])
    ctx = context(pki, max_version=ssl.TLSVersion.TLSv1_2,
                  ciphers="ECDHE-RSA-AES128-GCM-SHA256:"
                          "ECDHE-RSA-AES256-GCM-SHA384")
    assert get(on, ctx, "localhost").cipher == "ECDHE-RSA-AES256-GCM-SHA384"
    assert get(off, ctx, "localhost").cipher == \
        "ECDHE-RSA-AES128-GCM-SHA256"


def test_conf_command(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, server(port, "localhost", [leaf],
                       "        ssl_conf_command Ciphersuites "
                       "TLS_CHACHA20_POLY1305_SHA256;\n"), [port])
    a = get(port, context(pki), "localhost")
    assert (a.version, a.cipher) == ("TLSv1.3",
                                     "TLS_CHACHA20_POLY1305_SHA256")


def test_conf_command_invalid(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    conf(weir, server(port, "localhost", [leaf],
                      "        ssl_conf_command NoSuchCommand 1;\n"))
    res = weir.run(["-t"])
    weir.allow.append(r"\[emerg\]")
    assert res.returncode != 0
    assert "NoSuchCommand" in res.stderr, res.stderr
    assert "[emerg]" in res.stderr


def test_ecdh_curve(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, server(port, "localhost", [leaf],
                       "        ssl_ecdh_curve secp384r1;\n"), [port])
    for proto in ("-tls1_3", "-tls1_2"):
        rc, out = s_client(port, [proto, "-servername", "localhost",
                                  "-CAfile", pki.ca_cert],
                           request="GET / HTTP/1.0\r\n\r\n")
        assert rc == 0, out
        assert re.search(r"Server Temp Key: (ECDH, )?(secp384r1|P-384)",
                         out), out
    # a client offering only X25519 has no curve in common
    rc, out = s_client(port, ["-tls1_3", "-groups", "X25519",
                              "-servername", "localhost"])
    assert rc != 0, out


def test_large_response_keepalive(weir, pki):
    """A static file of several MB (never sendfile() on TLS) and
    several requests on one keep-alive connection."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    html = weir.path("html")
    os.makedirs(html)
    blob = (bytes(range(251)) * ((3 << 20) // 251 + 1))[:3 << 20]
    with open(os.path.join(html, "big"), "wb") as f:
        f.write(blob)
    start(weir, server(port, "localhost", [leaf],
                       "        location /big { root %s; }\n" % html),
          [port])
    s = tls_socket(port, context(pki), "localhost")
    try:
        s.sendall(b"GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n"
                  b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
                  b"GET /big HTTP/1.1\r\nHost: localhost\r\n"
                  b"Connection: close\r\n\r\n")
        data = b""
        while len(data) < 8 << 20:
            try:
                chunk = s.recv(1 << 16)
            except ssl.SSLZeroReturnError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    bodies = []
    for _ in range(3):
        head, _, data = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        m = re.search(rb"(?i)\r\ncontent-length: (\d+)", head)
        n = int(m.group(1))
        bodies.append(data[:n])
        data = data[n:]
    assert data == b""
    assert bodies[0] == blob and bodies[2] == blob
    assert bodies[1] == b"localhost"


# ---------------------------------------------------------------- SNI

def sni_setup(weir, pki):
    certs = {n: pki.leaf(n) for n in ("a.test", "b.test", "c.test")}
    port = weir.port()
    http = "".join(server(port, n, [certs[n]]) for n in
                   ("a.test", "b.test", "c.test"))
    start(weir, http, [port])
    return port, certs


def test_sni_selects_server(weir, pki):
    port, certs = sni_setup(weir, pki)
    ctx = context(pki)
    for name in ("a.test", "b.test", "c.test"):
        a = get(port, ctx, sni=name)
        assert (a.status, a.text) == (200, name)
        assert a.peer_sha1 == certs[name].fingerprint, name
    # the name's case does not matter
    a = get(port, ctx, sni="B.Test", host="b.test")
    assert a.peer_sha1 == certs["b.test"].fingerprint
    assert (a.status, a.text) == (200, "b.test")
    # no SNI: the default server's certificate; the Host chooses
    a = get(port, ctx, sni=None, host="a.test")
    assert a.peer_sha1 == certs["a.test"].fingerprint
    assert (a.status, a.text) == (200, "a.test")
    a = get(port, ctx, sni=None, host="c.test")
    assert a.peer_sha1 == certs["a.test"].fingerprint
    assert (a.status, a.text) == (200, "c.test")
    # an unknown name: the default server
    a = get(port, ctx, sni="zzz.test", host="zzz.test")
    assert a.peer_sha1 == certs["a.test"].fingerprint
    assert (a.status, a.text) == (200, "a.test")
    # openssl s_client and curl agree
    rc, out = s_client(port, ["-servername", "c.test", "-CAfile",
                              pki.ca_cert, "-verify_return_error"],
                       request="GET / HTTP/1.1\r\nHost: c.test\r\n"
                               "Connection: close\r\n\r\n")
    assert rc == 0 and "CN = c.test" in out, out
    assert out.rstrip().endswith("c.test") or "\r\n\r\nc.test" in out, out
    res = subprocess.run(["curl", "-sS", "--max-time", str(DEADLINE),
                          "--cacert", pki.ca_cert, "--resolve",
                          "b.test:%d:127.0.0.1" % port,
                          "https://b.test:%d/" % port],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, timeout=DEADLINE * 2)
    assert (res.returncode, res.stdout) == (0, "b.test"), res.stderr


def test_sni_host_mismatch_421(weir, pki):
    """The documented rule (docs/http/ssl.md): a request whose Host
    selects another server block than the SNI did gets 421; the same
    block (any case, with a port) is served."""
    port, certs = sni_setup(weir, pki)
    ctx = context(pki)
    a = get(port, ctx, sni="b.test", host="c.test")
    assert a.status == 421, a
    a = get(port, ctx, sni="b.test", host="B.TEST:%d" % port)
    assert (a.status, a.text) == (200, "b.test")
    # one keep-alive connection: the second request's Host disagrees
    s = tls_socket(port, ctx, "a.test")
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"
                  b"GET / HTTP/1.1\r\nHost: b.test\r\n"
                  b"Connection: close\r\n\r\n")
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ssl.SSLZeroReturnError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    assert data.startswith(b"HTTP/1.1 200"), data
    assert b"HTTP/1.1 421" in data, data


def test_ecdsa_and_rsa(weir, pki):
    """One server with an ECDSA and an RSA pair: each client gets the
    one it can use."""
    rsa, ec = pki.leaf("localhost"), pki.leaf("localhost", key="ec")
    port = weir.port()
    start(weir, server(port, "localhost", [ec, rsa]), [port])
    tls12 = ssl.TLSVersion.TLSv1_2
    a = get(port, context(pki, max_version=tls12,
                          ciphers="ECDHE-ECDSA-AES128-GCM-SHA256"),
            "localhost")
    assert a.peer_sha1 == ec.fingerprint
    a = get(port, context(pki, max_version=tls12,
                          ciphers="ECDHE-RSA-AES128-GCM-SHA256"),
            "localhost")
    assert a.peer_sha1 == rsa.fingerprint
    # TLS 1.3: by signature algorithm
    for sigalgs, bits in (("ecdsa_secp256r1_sha256", 256),
                          ("rsa_pss_rsae_sha256", 2048)):
        rc, out = s_client(port, ["-tls1_3", "-sigalgs", sigalgs,
                                  "-servername", "localhost",
                                  "-CAfile", pki.ca_cert,
                                  "-verify_return_error"],
                           request="GET / HTTP/1.0\r\n\r\n")
        assert rc == 0, out
        assert "Server public key is %d bit" % bits in out, out


# ---------------------------------------------------------------- ALPN

def test_alpn(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    extra = "        location /alpn { return 200 \"[$ssl_alpn_protocol]\"; }\n"
    start(weir, server(port, "localhost", [leaf], extra), [port])
    a = get(port, context(pki, alpn=["http/1.1"]), "localhost", path="/alpn")
    assert a.alpn == "http/1.1"
    assert a.text == "[http/1.1]"
    a = get(port, context(pki, alpn=["x-unknown/9", "http/1.1"]),
            "localhost", path="/alpn")
    assert a.alpn == "http/1.1"
    # no ALPN at all: HTTP/1.1
    a = get(port, context(pki), "localhost", path="/alpn")
    assert a.alpn is None and (a.status, a.text) == (200, "[]")
    # only unknown protocols: the no_application_protocol alert
    err = handshake_fails(port, context(pki, alpn=["x-unknown/9"]),
                          "localhost")
    assert "NO APPLICATION PROTOCOL" in err.upper().replace("_", " "), err
    no_crit(weir)


# ---------------------------------------------------------------- variables

VARS = ("ssl_protocol", "ssl_cipher", "ssl_server_name",
        "ssl_session_reused", "https", "scheme", "ssl_alpn_protocol")


def test_variables(weir, pki):
    leaf = pki.leaf("v.test")
    tls, plain = weir.port(), weir.port()
    body = "|".join("$" + v for v in VARS)
    http = (server(tls, "v.test", [leaf], body=body)
            + server(plain, "v.test", listen="", body=body))
    start(weir, http, [tls, plain])
    a = get(tls, context(pki, alpn=["http/1.1"]), sni="v.test")
    got = dict(zip(VARS, a.text.split("|")))
    assert got == {"ssl_protocol": a.version, "ssl_cipher": a.cipher,
                   "ssl_server_name": "v.test", "ssl_session_reused": ".",
                   "https": "on", "scheme": "https",
                   "ssl_alpn_protocol": "http/1.1"}, a.text
    # no SNI: $ssl_server_name is empty
    a = get(tls, context(pki), host="v.test")
    assert a.text.split("|")[2] == ""
    # a plain connection: every ssl variable is empty
    s = connect(plain)
    try:
        s.sendall(b"GET / HTTP/1.0\r\nHost: v.test\r\n\r\n")
        data = read_all(s, 65536)
    finally:
        s.close()
    body = data.partition(b"\r\n\r\n")[2].decode()
    assert body == "|||||http|", body


def test_variables_h2(weir, pki):
    """test_variables over HTTP/2: a stream sees the TLS variables of its
    connection, and $http2 and $server_protocol say which protocol."""
    from h2client import H2Client

    leaf = pki.leaf("v.test")
    tls, plain = weir.port(), weir.port()
    names = VARS + ("http2", "server_protocol")
    body = "|".join("$" + v for v in names)
    h2 = "        http2 on;\n"
    http = (server(tls, "v.test", [leaf], body=body, extra=h2)
            + server(plain, "v.test", listen="", body=body, extra=h2))
    start(weir, http, [tls, plain])

    def answer(port, **kw):
        c = H2Client(port, authority="v.test", **kw)
        try:
            r = c.response(c.request("GET", "/"))
            assert r.status == 200, r.status
            facts = (c.sock.version(), c.sock.cipher()[0]) \
                if kw.get("tls") else None
            return dict(zip(names, r.body.decode().split("|"))), facts
        finally:
            c.close()

    # h2client sends the SNI "localhost"
    got, (version, cipher) = answer(tls, tls=True)
    assert got == {"ssl_protocol": version, "ssl_cipher": cipher,
                   "ssl_server_name": "localhost", "ssl_session_reused": ".",
                   "https": "on", "scheme": "https",
                   "ssl_alpn_protocol": "h2", "http2": "h2",
                   "server_protocol": "HTTP/2.0"}, got
    got, _ = answer(plain)
    assert got == {"ssl_protocol": "", "ssl_cipher": "",
                   "ssl_server_name": "", "ssl_session_reused": "",
                   "https": "", "scheme": "http", "ssl_alpn_protocol": "",
                   "http2": "h2c", "server_protocol": "HTTP/2.0"}, got


# ---------------------------------------------------------------- resumption

def resume_body():
    return "$pid $ssl_session_reused $ssl_protocol"


def resume_server(port, leaf, extra):
    return server(port, "localhost", [leaf], extra, body=resume_body(),
                  listen="ssl reuseport")


def resumed_by(port, ctx, session, want_pids=2, tries=60):
    """Connects again and again with the newest session until
    connections resumed in want_pids different workers (or tries ran
    out). Returns ({pid: resumed count}, [answers], newest session)."""
    pids = {}
    answers = []
    for _ in range(tries):
        a = get(port, ctx, "localhost", session=session)
        answers.append(a)
        pid, reused, _ = a.text.split(" ")
        assert reused == ("r" if a.reused else "."), a
        if a.reused:
            pids[pid] = pids.get(pid, 0) + 1
        if a.session is not None:
            session = a.session
        if len(pids) >= want_pids:
            break
    return pids, answers, session


@pytest.mark.parametrize("version", ["TLSv1_2", "TLSv1_3"])
def test_resumption_shared_cache_across_workers(weir, pki, version):
    """ssl_session_cache shared (tickets off): a session made in one
    worker resumes in the other."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    extra = ("        ssl_session_cache shared:SSL:1m;\n"
             "        ssl_session_tickets off;\n")
    start(weir, resume_server(port, leaf, extra), [port],
          main="worker_processes 2;\n")
    v = getattr(ssl.TLSVersion, version)
    ctx = context(pki, min_version=v, max_version=v)
    first = get(port, ctx, "localhost")
    assert first.status == 200 and not first.reused
    if version == "TLSv1_2":
        assert not first.session.has_ticket   # tickets off: a session id
    pids, answers, _ = resumed_by(port, ctx, first.session)
    assert len(pids) == 2, answers
    assert all(a.reused for a in answers), answers


def test_resumption_without_cache_is_per_worker(weir, pki):
    """Counter-check: with no cache and no tickets nothing resumes."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    extra = ("        ssl_session_cache off;\n"
             "        ssl_session_tickets off;\n")
    start(weir, resume_server(port, leaf, extra), [port])
    ctx = context(pki, max_version=ssl.TLSVersion.TLSv1_2)
    first = get(port, ctx, "localhost")
    a = get(port, ctx, "localhost", session=first.session)
    assert not a.reused and a.text.split(" ")[1] == "."


def test_session_timeout(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    extra = ("        ssl_session_cache shared:SSL:1m;\n"
             "        ssl_session_tickets off;\n"
             "        ssl_session_timeout 1s;\n")
    start(weir, resume_server(port, leaf, extra), [port])
    ctx = context(pki, max_version=ssl.TLSVersion.TLSv1_2)
    first = get(port, ctx, "localhost")
    assert get(port, ctx, "localhost", session=first.session).reused
    time.sleep(2.2)   # the session's lifetime, not readiness
    assert not get(port, ctx, "localhost", session=first.session).reused


def ticket_conf(port, leaf, keys, cache="none"):
    extra = "        ssl_session_cache %s;\n" % cache
    extra += "".join("        ssl_session_ticket_key %s;\n" % k
                     for k in keys)
    return resume_server(port, leaf, extra)


@pytest.mark.parametrize("version", ["TLSv1_2", "TLSv1_3"])
def test_resumption_tickets_across_workers_and_reload(weir, pki, version):
    leaf = pki.leaf("localhost")
    k1 = pki.ticket_key("k1")
    port = weir.port()
    start(weir, ticket_conf(port, leaf, [k1]), [port],
          main="worker_processes 2;\n")
    v = getattr(ssl.TLSVersion, version)
    ctx = context(pki, min_version=v, max_version=v)
    first = get(port, ctx, "localhost")
    assert first.session.has_ticket
    pids, answers, session = resumed_by(port, ctx, first.session)
    assert len(pids) == 2, answers

    # a reload with the same key file: the old ticket still resumes
    reload(weir, ticket_conf(port, leaf, [k1]),
           main="worker_processes 2;\n")
    a = get(port, ctx, "localhost", session=session)
    assert a.reused, a
    assert a.text.split(" ")[0] not in pids   # a new worker


def test_ticket_key_rotation(weir, pki):
    leaf = pki.leaf("localhost")
    old, new = pki.ticket_key("rot-old"), pki.ticket_key("rot-new", 48)
    port = weir.port()
    ctx = context(pki, max_version=ssl.TLSVersion.TLSv1_2)
    start(weir, ticket_conf(port, leaf, [old]), [port])
    s_old = get(port, ctx, "localhost").session

    # the new key first (encrypts), the old one second (decrypts)
    reload(weir, ticket_conf(port, leaf, [new, old]))
    a = get(port, ctx, "localhost", session=s_old)
    assert a.reused, a
    s_new = get(port, ctx, "localhost").session

    # the old key gone: its tickets give a full handshake
    reload(weir, ticket_conf(port, leaf, [new]))
    a = get(port, ctx, "localhost", session=s_old)
    assert not a.reused, a
    assert get(port, ctx, "localhost", session=s_new).reused


def test_ticket_key_errors(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    bad = weir.write("conf/short.key", "too short\n")
    p = conf(weir, ticket_conf(port, leaf, [bad]))
    res = weir.run(["-t"])
    weir.allow.append(r"\[emerg\]")
    assert res.returncode != 0
    assert re.search(r"\[emerg\].*short\.key.*weir\.conf:%d"
                     % weirtest_line(p, "short.key"), res.stderr), \
        res.stderr
    conf(weir, ticket_conf(port, leaf, [bad + ".missing"]))
    res = weir.run(["-t"])
    assert res.returncode != 0 and "missing" in res.stderr, res.stderr


def test_resumption_cache_across_reload(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    extra = ("        ssl_session_cache shared:SSL:1m;\n"
             "        ssl_session_tickets off;\n")
    start(weir, resume_server(port, leaf, extra), [port])
    ctx = context(pki, max_version=ssl.TLSVersion.TLSv1_2)
    first = get(port, ctx, "localhost")
    reload(weir, resume_server(port, leaf, extra))
    a = get(port, ctx, "localhost", session=first.session)
    assert a.reused, a
    # s_client: -sess_out / -sess_in
    sess = weir.path("s.pem")
    rc, out = s_client(port, ["-tls1_2", "-servername", "localhost",
                              "-sess_out", sess],
                       request="GET / HTTP/1.0\r\n\r\n")
    assert rc == 0 and "New, TLSv1.2" in out, out
    rc, out = s_client(port, ["-tls1_2", "-servername", "localhost",
                              "-sess_in", sess],
                       request="GET / HTTP/1.0\r\n\r\n")
    assert rc == 0 and "Reused, TLSv1.2" in out, out


# ---------------------------------------------------------------- misbehaving

def test_handshake_timeout(weir, pki):
    """A client that sends half a ClientHello and waits is cut off at
    ssl_handshake_timeout."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, server(port, "localhost", [leaf],
                       "        ssl_handshake_timeout 1s;\n"), [port])
    hello = client_hello()
    s = connect(port, timeout=DEADLINE)
    try:
        s.sendall(hello[:len(hello) // 2])
        t0 = time.monotonic()
        try:
            data = read_all(s)
        except ConnectionResetError:
            data = b""
        took = time.monotonic() - t0
    finally:
        s.close()
    assert data == b"" or data[:1] == b"\x15", data   # nothing, or an alert
    # not before the timeout; the upper bound is read_all's DEADLINE
    assert took >= 1 - EARLY, took
    no_crit(weir)
    # the server still serves
    assert get(port, context(pki), "localhost").status == 200


def test_garbage(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, server(port, "localhost", [leaf]), [port])
    junk = [
        # a handshake record header, then nonsense
        b"\x16\x03\x01\x00\x30" + bytes(range(48)),
        # a handshake record of impossible length
        b"\x16\x03\x01\xff\xff" + b"\x00" * 100,
        # binary noise
        bytes((i * 37 + 11) % 256 for i in range(300)),
        b"\x16",
    ]
    for data in junk:
        s = connect(port, timeout=DEADLINE)
        try:
            s.sendall(data)
            if len(data) == 1:
                s.shutdown(socket.SHUT_WR)
            try:
                got = read_all(s, 65536)
            except ConnectionResetError:
                got = b""
        finally:
            s.close()
        assert got == b"" or got[:1] == b"\x15" or \
            got.startswith(b"HTTP/1.1 400"), (data, got)
    no_crit(weir)
    assert get(port, context(pki), "localhost").status == 200


def test_plain_http_on_tls_port(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, server(port, "localhost", [leaf]), [port])
    s = connect(port, timeout=DEADLINE)
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        data = read_all(s, 65536)   # read to EOF: the server closes
    finally:
        s.close()
    assert data.startswith(b"HTTP/1.1 400"), data
    assert b"The plain HTTP request was sent to HTTPS port" in data, data
    assert re.search(rb"(?i)\r\nconnection: close\r\n", data), data
    no_crit(weir)


# ---------------------------------------------------------------- client certs

CLIENT_VARS = ("ssl_client_verify", "ssl_client_s_dn", "ssl_client_i_dn",
               "ssl_client_serial", "ssl_client_fingerprint")


def test_client_certificate(weir, pki):
    leaf = pki.leaf("localhost")
    alice = pki.client("alice")
    port, opt = weir.port(), weir.port()
    body = "|".join("$" + v for v in CLIENT_VARS)
    verify = ("        ssl_client_certificate %s;\n"
              "        ssl_verify_depth 2;\n" % pki.ca_cert)
    start(weir, server(port, "localhost", [leaf],
                       verify + "        ssl_verify_client on;\n", body=body)
          + server(opt, "localhost", [leaf],
                   verify + "        ssl_verify_client optional;\n",
                   body=body), [port, opt])

    a = get(port, context(pki, client=alice), "localhost")
    assert a.status == 200, a
    assert a.text.split("|") == ["SUCCESS", alice.subject, alice.issuer,
                                 alice.serial, alice.fingerprint], a.text

    # no certificate: 400 with nginx's page
    a = get(port, context(pki), "localhost")
    assert a.status == 400, a
    assert "No required SSL certificate was sent" in a.text, a.text

    # optional: no certificate is fine
    a = get(opt, context(pki), "localhost")
    assert a.status == 200 and a.text.split("|")[0] == "NONE", a.text

    # a certificate from an intermediate CA (sent in the client's chain)
    bob = pki.client("bob", ca=pki.intermediate())
    a = get(port, context(pki, client=bob), "localhost")
    assert a.status == 200, a
    assert a.text.split("|")[:2] == ["SUCCESS", bob.subject], a.text

    # a certificate from another CA: 400 (or refused in the handshake)
    rogue = pki.client("mallory", ca=pki.other_ca())
    try:
        a = get(port, context(pki, client=rogue), "localhost")
    except (ssl.SSLError, ConnectionResetError) as exc:
        print("refused in the handshake: %s" % exc)
    else:
        assert a.status == 400, a
        assert "The SSL certificate error" in a.text, a.text
    no_crit(weir)
