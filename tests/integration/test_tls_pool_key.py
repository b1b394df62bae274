"""TLS connections to origins are reused only by requests whose TLS
settings would have made the same connection (issue 13).

The keep-alive pool and the session cache are keyed by the address and
by everything that decides the handshake and its verification: the
client context (trust store, CRL, depth, client certificate, protocols,
ciphers, ALPN, commands) and the name weir checks and sends. Two
locations that reach one origin with different settings never share a
pooled connection or a session, in either order; two locations with the
same settings do.

The origin is test_tls_upstream.TLSOrigin: each answer says which of its
connections carried the request, whether the session was resumed and the
client certificate's CN."""

import os
import socket
import ssl
import subprocess

import pytest

from weirtest import wait_for

from test_tls_upstream import BODY, get, make_tls_origin  # noqa: F401


def start(weir, preamble, http):
    port = weir.port()
    weir.conf(preamble +
              "worker_processes 1;\n"
              "http {\n"
              "    proxy_connect_timeout 3s;\n"
              "    proxy_read_timeout 5s;\n"
              "%s"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "%s"
              "    }\n"
              "}\n" % (http.get("http", ""), port, http["server"]))
    weir.start(check_ports=False)
    wait_for(lambda: socket.create_connection(("127.0.0.1", port),
                                              timeout=1).close() or True,
             what="the HTTP port to accept")
    return port


def fields(port, path):
    status, body = get(port, path)
    assert status == 200, (path, status, body)
    m = BODY.match(body)
    assert m, body
    keys = ("path", "conn", "tls", "sni", "reused", "version", "cipher",
            "cn", "req")
    return dict(zip(keys, m.groups()))


def refused(weir, port, path, log):
    status, body = get(port, path)
    assert status == 502, (path, status, body)
    weir.wait_log(log)


VERIFY_ERROR = r"upstream SSL certificate verify error"


# ---- a trust store that refuses the origin ---------------------------

@pytest.mark.parametrize("order", ["lax-first", "strict-first"])
def test_pool_keyed_by_trust_store(weir, ssl_preamble, pki,
                                   make_tls_origin, order):
    """/lax/ does not verify; /strict/ verifies with a CA that did not
    sign the origin's certificate: /strict/ is 502 every time, even
    right after /lax/ left a connection in the pool."""
    o = make_tls_origin(pki.leaf("origin.test"))
    other = pki.other_ca()
    port = start(weir, ssl_preamble, {
        "http": "    upstream u { server %s; keepalive 8; }\n" % o.addr,
        "server":
            "        location /lax/ { proxy_pass https://u; }\n"
            "        location /strict/ {\n"
            "            proxy_pass https://u;\n"
            "            proxy_ssl_verify on;\n"
            "            proxy_ssl_trusted_certificate %s;\n"
            "            proxy_ssl_name origin.test;\n"
            "        }\n" % other.cert})

    seq = (["lax", "strict", "lax", "strict"] if order == "lax-first"
           else ["strict", "lax", "strict", "lax"])
    lax_conns = set()
    for i, kind in enumerate(seq):
        if kind == "lax":
            lax_conns.add(fields(port, "/lax/%d" % i)["conn"])
        else:
            refused(weir, port, "/strict/%d" % i, VERIFY_ERROR)
    # the lax location keeps its pooled connection all along
    assert len(lax_conns) == 1, lax_conns


@pytest.mark.parametrize("order", ["good-first", "bad-first"])
def test_session_cache_keyed_by_trust_store(weir, ssl_preamble, pki,
                                            make_tls_origin, order):
    """keepalive 0, so every request is a new connection: a session
    from a location that verifies with the right CA is never offered by
    one whose CA refuses the origin (a resumed session would skip the
    chain check), and the good location still resumes its own."""
    o = make_tls_origin(pki.leaf("origin.test"))
    other = pki.other_ca()
    port = start(weir, ssl_preamble, {
        "http": "    upstream u { server %s; keepalive 0; }\n"
                "    proxy_ssl_verify on;\n"
                "    proxy_ssl_name origin.test;\n" % o.addr,
        "server":
            "        location /good/ {\n"
            "            proxy_pass https://u;\n"
            "            proxy_ssl_trusted_certificate %s;\n"
            "        }\n"
            "        location /bad/ {\n"
            "            proxy_pass https://u;\n"
            "            proxy_ssl_trusted_certificate %s;\n"
            "        }\n" % (pki.ca_cert, other.cert)})

    seq = (["good", "bad", "good", "bad"] if order == "good-first"
           else ["bad", "good", "bad", "good"])
    good = []
    for i, kind in enumerate(seq):
        if kind == "good":
            good.append(fields(port, "/good/%d" % i))
        else:
            refused(weir, port, "/bad/%d" % i, VERIFY_ERROR)
    assert [a["reused"] for a in good] == ["0", "1"], good
    # every refused handshake was a full one: the origin saw no resumed
    # session that did not come from /good/
    assert sum(1 for c in o.conns if c.reused) == 1, \
        [(c.n, c.reused) for c in o.conns]


# ---- the name checked against the certificate ------------------------

@pytest.mark.parametrize("keepalive", [8, 0], ids=["pooled", "sessions"])
def test_pool_and_sessions_keyed_by_name(weir, ssl_preamble, pki,
                                         make_tls_origin, keepalive):
    """One trust store, two names: /right/ checks origin.test (the
    certificate's), /wrong/ checks other.test. /wrong/ is 502 after
    /right/ pooled a connection or cached a session."""
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, {
        "http": "    upstream u { server %s; keepalive %d; }\n"
                "    proxy_ssl_verify on;\n"
                "    proxy_ssl_trusted_certificate %s;\n"
                % (o.addr, keepalive, pki.ca_cert),
        "server":
            "        location /right/ {\n"
            "            proxy_pass https://u;\n"
            "            proxy_ssl_name origin.test;\n"
            "        }\n"
            "        location /wrong/ {\n"
            "            proxy_pass https://u;\n"
            "            proxy_ssl_name other.test;\n"
            "        }\n"})
    for i in range(2):
        fields(port, "/right/%d" % i)
        refused(weir, port, "/wrong/%d" % i,
                r'upstream SSL certificate does not match "other\.test"')


def test_pool_keyed_by_sni(weir, ssl_preamble, pki, make_tls_origin):
    """The same name, sent as SNI by one location and not by the other:
    each request reaches the origin the way its location says."""
    o = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, {
        "http": "    upstream u { server %s; keepalive 8; }\n"
                "    proxy_ssl_name origin.test;\n" % o.addr,
        "server":
            "        location /sni/ {\n"
            "            proxy_pass https://u;\n"
            "            proxy_ssl_server_name on;\n"
            "        }\n"
            "        location /nosni/ { proxy_pass https://u; }\n"})
    for i in range(2):
        assert fields(port, "/sni/%d" % i)["sni"] == "origin.test"
        assert fields(port, "/nosni/%d" % i)["sni"] == "None"


# ---- client certificates ---------------------------------------------

@pytest.mark.parametrize("order", ["cert-first", "none-first"])
def test_pool_keyed_by_client_certificate(weir, ssl_preamble, pki,
                                          make_tls_origin, order):
    """The origin asks for a client certificate and takes a connection
    without one: /cert/ presents one, /none/ says
    `proxy_ssl_certificate ""` and must never reach the origin on a
    connection that presented /cert/'s."""
    o = make_tls_origin(pki.leaf("origin.test"), require_client=pki.ca_cert)
    o.ctx.verify_mode = ssl.CERT_OPTIONAL
    client = pki.client("weir-client")
    port = start(weir, ssl_preamble, {
        "http": "    upstream u { server %s; keepalive 8; }\n" % o.addr,
        "server":
            "        location /cert/ {\n"
            "            proxy_pass https://u;\n"
            "            proxy_ssl_certificate %s;\n"
            "            proxy_ssl_certificate_key %s;\n"
            "        }\n"
            "        location /none/ {\n"
            "            proxy_pass https://u;\n"
            "            proxy_ssl_certificate \"\";\n"
            "            proxy_ssl_certificate_key \"\";\n"
            "        }\n" % (client.chain, client.key)})
    seq = (["cert", "none", "cert", "none"] if order == "cert-first"
           else ["none", "cert", "none", "cert"])
    for i, kind in enumerate(seq):
        a = fields(port, "/%s/%d" % (kind, i))
        assert a["cn"] == ("weir-client" if kind == "cert" else "None"), \
            (kind, a)


# ---- the same settings share -------------------------------------------

def test_same_settings_share_connections(weir, ssl_preamble, pki,
                                         make_tls_origin):
    """Two locations that set the same proxy_ssl_* directives each (not
    inherited) share one context, so one pooled connection and one
    handshake serve both."""
    o = make_tls_origin(pki.leaf("origin.test"))
    loc = ("            proxy_pass https://u;\n"
           "            proxy_ssl_verify on;\n"
           "            proxy_ssl_trusted_certificate %s;\n"
           "            proxy_ssl_name origin.test;\n" % pki.ca_cert)
    port = start(weir, ssl_preamble, {
        "http": "    upstream u { server %s; keepalive 8; }\n" % o.addr,
        "server": "        location /a/ {\n%s        }\n"
                  "        location /b/ {\n%s        }\n" % (loc, loc)})
    got = [fields(port, "/%s/%d" % (k, i))
           for i, k in enumerate("abab")]
    assert {a["conn"] for a in got} == {"1"}, got
    assert len(o.handshakes()) == 1


# ---- one queue per peer ---------------------------------------------------

@pytest.mark.parametrize("keepalive", [2, 1])
def test_pool_per_peer_and_eviction(weir, ssl_preamble, pki,
                                    make_tls_origin, keepalive):
    """Two origins in one group, requests alternating between them:
    with room for both (keepalive 2) each keeps one connection; with
    room for one, each request evicts the other origin's connection, so
    every request opens a new one."""
    a = make_tls_origin(pki.leaf("origin.test"))
    b = make_tls_origin(pki.leaf("origin.test"))
    port = start(weir, ssl_preamble, {
        "http": "    upstream u { server %s; server %s; keepalive %d; }\n"
                % (a.addr, b.addr, keepalive),
        "server": "        location / { proxy_pass https://u; }\n"})
    for i in range(6):
        fields(port, "/%d" % i)
    if keepalive == 1:
        assert (len(a.conns), len(b.conns)) == (3, 3)
    else:
        assert (len(a.conns), len(b.conns)) == (1, 1)


# ---- proxy_ssl_crl -----------------------------------------------------------

def make_crl(pki, name, revoked):
    """A CRL signed by the test CA that revokes the certificates in
    revoked (tlspki Certs), made with `openssl ca -gencrl`."""
    d = pki.path("crl-" + name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "index.txt"), "w") as f:
        for c in revoked:
            serial = c.serial if len(c.serial) % 2 == 0 else "0" + c.serial
            f.write("R\t301231235959Z\t240101000000Z\t%s\tunknown\t/CN=x\n"
                    % serial)
    with open(os.path.join(d, "crlnumber"), "w") as f:
        f.write("1000\n")
    conf = os.path.join(d, "ca.conf")
    with open(conf, "w") as f:
        f.write("[ca]\ndefault_ca = d\n[d]\n"
                "database = %s/index.txt\ncrlnumber = %s/crlnumber\n"
                "default_md = sha256\ndefault_crl_days = 30\n" % (d, d))
    out = os.path.join(d, "crl.pem")
    subprocess.run(["openssl", "ca", "-gencrl", "-config", conf,
                    "-cert", pki.ca.cert, "-keyfile", pki.ca.key,
                    "-out", out], check=True, capture_output=True)
    return out


def test_proxy_ssl_crl(weir, ssl_preamble, pki, make_tls_origin):
    """An origin whose certificate the CRL revokes is 502 ("certificate
    revoked"); one the CRL does not name is served; the location without
    a CRL, with the same trust store, is served by the revoked one and
    does not lend it its connection."""
    revoked = pki.leaf("revoked.test")
    fine = pki.leaf("origin.test")
    crl = make_crl(pki, "pool-key", [revoked])
    bad = make_tls_origin(revoked)
    good = make_tls_origin(fine)
    port = start(weir, ssl_preamble, {
        "http": "    upstream bad { server %s; keepalive 8; }\n"
                "    upstream good { server %s; keepalive 8; }\n"
                "    proxy_ssl_verify on;\n"
                "    proxy_ssl_trusted_certificate %s;\n"
                % (bad.addr, good.addr, pki.ca_cert),
        "server":
            "        location /nocrl/ {\n"
            "            proxy_pass https://bad;\n"
            "            proxy_ssl_name revoked.test;\n"
            "        }\n"
            "        location /bad/ {\n"
            "            proxy_pass https://bad;\n"
            "            proxy_ssl_name revoked.test;\n"
            "            proxy_ssl_crl %s;\n"
            "        }\n"
            "        location /good/ {\n"
            "            proxy_pass https://good;\n"
            "            proxy_ssl_name origin.test;\n"
            "            proxy_ssl_crl %s;\n"
            "        }\n" % (crl, crl)})
    assert fields(port, "/nocrl/1")["conn"] == "1"
    refused(weir, port, "/bad/1", r"verify error: \(23:certificate revoked\)")
    assert fields(port, "/good/1")["tls"] == "1"
    assert fields(port, "/nocrl/2")["conn"] == "1"


def test_proxy_ssl_crl_bad_file(weir, ssl_preamble, pki):
    weir.allow.append(r"X509_LOOKUP_load_file")
    weir.conf(ssl_preamble +
              "http {\n server {\n listen 127.0.0.1:%d;\n"
              " location / { proxy_pass https://127.0.0.1:1;\n"
              "  proxy_ssl_verify on;\n"
              "  proxy_ssl_trusted_certificate %s;\n"
              "  proxy_ssl_crl %s;\n }\n }\n}\n"
              % (weir.port(), pki.ca_cert, pki.path("no-such.crl")))
    r = weir.run(["-t"])
    assert r.returncode == 1
    assert "X509_LOOKUP_load_file" in r.stderr, r.stderr
    assert "no-such.crl" in r.stderr


def test_proxy_ssl_crl_checks_the_whole_chain(weir, ssl_preamble, pki,
                                              make_tls_origin):
    """As documented: with a CRL only from the root, a leaf issued by an
    intermediate has no CRL of its issuer and is refused."""
    inter = pki.intermediate()
    leaf = pki.leaf("chained.test", ca=inter)
    crl = make_crl(pki, "root-only", [])
    o = make_tls_origin(leaf)
    port = start(weir, ssl_preamble, {
        "server":
            "        location / {\n"
            "            proxy_pass https://%s;\n"
            "            proxy_ssl_verify on;\n"
            "            proxy_ssl_trusted_certificate %s;\n"
            "            proxy_ssl_name chained.test;\n"
            "            proxy_ssl_crl %s;\n"
            "        }\n" % (o.addr, pki.ca_cert, crl)})
    refused(weir, port, "/",
            r"verify error: \(3:unable to get certificate CRL\)")
