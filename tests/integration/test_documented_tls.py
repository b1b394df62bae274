"""Documented TLS behaviour that had no test beyond `weir -t` (issue 13),
security first: origin verification against the system store and
against the name derived from proxy_pass, client verification with
`optional_no_ca` and `optional`, `ssl_verify_depth`, and OCSP stapling
from `ssl_stapling_file`.

Each test states what the documentation (docs/http/ssl.md,
docs/http/proxy.md) promises and checks it from outside, with the
run-time test PKI (tlspki.py) and the TLS origin of
test_tls_upstream.py."""

import os
import re

import pytest

import tlspki
from test_tls import conf, context, get, no_crit, s_client, server, start
from test_tls_upstream import make_tls_origin  # noqa: F401 (a fixture)
from test_tls_upstream import answer, bad_gateway
from test_tls_upstream import start as start_proxy


# ---------------------------------------------------------------- origins

VERIFY_ERROR = (r"\[error\].*upstream SSL certificate verify error: "
                r"\(20:unable to get local issuer certificate\) "
                r"while SSL handshaking to upstream")


def requests_seen(origin):
    return sum(c.requests for c in origin.conns)


def test_verify_on_without_trusted_certificate_uses_system_store(
        weir, ssl_preamble, pki, make_tls_origin):
    """proxy.md: without proxy_ssl_trusted_certificate the system's
    default store is used. The test CA is not in it, so an origin whose
    certificate (name and address right) it issued is refused: 502 and
    the verify error, and the origin gets no request."""
    o = make_tls_origin(pki.leaf("localhost", ips=["127.0.0.1"]))
    port = start_proxy(weir, ssl_preamble, "https://%s" % o.addr,
                       location="proxy_ssl_verify on;\n")
    bad_gateway(weir, port, VERIFY_ERROR)
    assert requests_seen(o) == 0
    no_crit(weir)


def test_system_store_is_openssls_default_paths(weir, ssl_preamble, pki,
                                                 make_tls_origin,
                                                 monkeypatch, tmp_path):
    """The other half of the test above: the store used without a file
    is OpenSSL's default one, which SSL_CERT_FILE and SSL_CERT_DIR
    point elsewhere. With the test CA as the whole default store the
    same origin passes, so the 502 above came from the store's content
    and from nothing else."""
    empty = tmp_path / "no-certs"
    empty.mkdir()
    monkeypatch.setenv("SSL_CERT_FILE", pki.ca_cert)
    monkeypatch.setenv("SSL_CERT_DIR", str(empty))
    o = make_tls_origin(pki.leaf("localhost", ips=["127.0.0.1"]))
    port = start_proxy(weir, ssl_preamble, "https://%s" % o.addr,
                       location="proxy_ssl_verify on;\n")
    assert answer(port)["tls"] == "1"
    no_crit(weir)


@pytest.mark.parametrize("group,cert_name,ok", [
    ("origin.test", "origin.test", True),
    ("other.test", "origin.test", False),
])
def test_verify_name_from_upstream_group(weir, ssl_preamble, pki,
                                         make_tls_origin, group, cert_name,
                                         ok):
    """No proxy_ssl_name: `proxy_pass https://NAME` to an upstream block
    checks the certificate against NAME (proxy.md)."""
    o = make_tls_origin(pki.leaf(cert_name))
    port = start_proxy(weir, ssl_preamble, "https://%s" % group,
                       upstream="    upstream %s { server %s; }\n"
                                % (group, o.addr),
                       location="proxy_ssl_verify on;\n"
                                "proxy_ssl_trusted_certificate %s;\n"
                                % pki.ca_cert)
    if ok:
        assert answer(port)["tls"] == "1"
    else:
        bad_gateway(weir, port,
                    r"\[error\].*upstream SSL certificate does not match "
                    r"\"%s\" while SSL handshaking to upstream"
                    % re.escape(group))
        assert requests_seen(o) == 0
    no_crit(weir)


@pytest.mark.parametrize("cert_name,ok", [
    ("localhost", True),
    ("origin.test", False),
])
def test_verify_name_from_proxy_pass_host_without_port(
        weir, ssl_preamble, pki, make_tls_origin, cert_name, ok):
    """No proxy_ssl_name: `proxy_pass https://localhost:PORT` checks the
    certificate against "localhost", the host without its port."""
    o = make_tls_origin(pki.leaf(cert_name))
    port = start_proxy(weir, ssl_preamble,
                       "https://localhost:%d" % o.port,
                       location="proxy_ssl_verify on;\n"
                                "proxy_ssl_trusted_certificate %s;\n"
                                % pki.ca_cert)
    # where localhost is also ::1, that address refuses (the origin
    # listens on 127.0.0.1 only) and the request moves on to 127.0.0.1
    if ok:
        assert answer(port)["tls"] == "1"
    else:
        bad_gateway(weir, port,
                    r"\[error\].*upstream SSL certificate does not match "
                    r"\"localhost\" while SSL handshaking to upstream")
        assert requests_seen(o) == 0
    no_crit(weir)


@pytest.mark.parametrize("ips,ok", [(["127.0.0.1"], True), ([], False)])
def test_verify_name_from_proxy_pass_ip_literal(weir, ssl_preamble, pki,
                                                make_tls_origin, ips, ok):
    """No proxy_ssl_name and an IP literal in proxy_pass: the address is
    checked against the certificate's IP entries, not against its DNS
    names (a certificate for "localhost" alone does not do)."""
    o = make_tls_origin(pki.leaf("localhost", ips=ips))
    port = start_proxy(weir, ssl_preamble, "https://%s" % o.addr,
                       location="proxy_ssl_verify on;\n"
                                "proxy_ssl_trusted_certificate %s;\n"
                                % pki.ca_cert)
    if ok:
        assert answer(port)["tls"] == "1"
    else:
        bad_gateway(weir, port,
                    r"\[error\].*upstream SSL certificate does not match "
                    r"\"127\.0\.0\.1\" while SSL handshaking to upstream")
        assert requests_seen(o) == 0
    no_crit(weir)


# ---------------------------------------------------------------- clients

CLIENT_BODY = "$ssl_client_verify|$ssl_client_s_dn"


def self_signed_client(pki):
    """A self-signed client certificate (no CA at all)."""
    key = pki.path("selfsigned-client.key")
    crt = pki.path("selfsigned-client.crt")
    if not os.path.exists(crt):
        tlspki._run(["req", "-x509", "-newkey", "rsa:2048", "-nodes",
                     "-days", "30", "-subj", "/O=weir tests/CN=selfie",
                     "-addext", "extendedKeyUsage=clientAuth",
                     "-keyout", key, "-out", crt])
        os.chmod(key, 0o644)
    return tlspki.Cert(cert=crt, key=key, chain=crt, ca=crt,
                       subject="CN=selfie,O=weir tests")


def verify_server(weir, pki, mode, extra=""):
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, server(port, "localhost", [leaf],
                       "        ssl_verify_client %s;\n%s" % (mode, extra),
                       body=CLIENT_BODY), [port])
    return port


FAILED_NO_ISSUER = (r"^FAILED:(unable to get local issuer certificate"
                    r"|unable to verify the first certificate)$")


def test_verify_client_optional_no_ca(weir, pki):
    """ssl.md: optional_no_ca asks for a certificate and does not check
    it against a CA (no ssl_client_certificate needed): a certificate of
    an unknown CA and a self-signed one are accepted, and
    $ssl_client_verify says FAILED:<reason>; no certificate is NONE."""
    port = verify_server(weir, pki, "optional_no_ca")

    rogue = pki.client("mallory", ca=pki.other_ca())
    a = get(port, context(pki, client=rogue), "localhost")
    assert a.status == 200, a
    verdict, dn = a.text.split("|")
    assert re.match(FAILED_NO_ISSUER, verdict), verdict
    assert dn == rogue.subject

    selfie = self_signed_client(pki)
    a = get(port, context(pki, client=selfie), "localhost")
    assert a.status == 200, a
    verdict, dn = a.text.split("|")
    assert re.match(r"^FAILED:self[- ]signed certificate$", verdict), verdict
    assert dn == selfie.subject

    a = get(port, context(pki), "localhost")
    assert (a.status, a.text) == (200, "NONE|"), a
    no_crit(weir)


def test_verify_client_optional_no_ca_with_a_ca(weir, pki):
    """optional_no_ca with ssl_client_certificate: a certificate that
    verifies says SUCCESS, one of another CA still passes as FAILED."""
    port = verify_server(weir, pki, "optional_no_ca",
                         "        ssl_client_certificate %s;\n"
                         % pki.ca_cert)
    alice = pki.client("alice")
    a = get(port, context(pki, client=alice), "localhost")
    assert (a.status, a.text) == (200, "SUCCESS|" + alice.subject), a

    rogue = pki.client("mallory", ca=pki.other_ca())
    a = get(port, context(pki, client=rogue), "localhost")
    assert a.status == 200, a
    assert re.match(FAILED_NO_ISSUER, a.text.split("|")[0]), a.text
    no_crit(weir)


@pytest.mark.parametrize("which", ["other_ca", "self_signed"])
def test_verify_client_optional_refuses_a_bad_certificate(weir, pki,
                                                          which):
    """ssl.md: optional asks for a certificate; none is accepted, a good
    one is SUCCESS, a bad one is refused as with `on`: 400 with "The
    SSL certificate error", the reason logged at info."""
    port = verify_server(weir, pki, "optional",
                         "        ssl_client_certificate %s;\n"
                         % pki.ca_cert)
    if which == "other_ca":
        bad = pki.client("mallory", ca=pki.other_ca())
        reason = (r"\((20:unable to get local issuer certificate|"
                  r"21:unable to verify the first certificate)\)")
    else:
        bad = self_signed_client(pki)
        reason = r"\(18:self[- ]signed certificate\)"

    a = get(port, context(pki, client=bad), "localhost")
    assert a.status == 400, a
    assert "The SSL certificate error" in a.text, a.text
    assert a.headers.get("connection") == "close", a.headers
    weir.wait_log(r"\[info\].*client SSL certificate verify error: "
                  + reason)

    a = get(port, context(pki), "localhost")
    assert (a.status, a.text) == (200, "NONE|"), a
    alice = pki.client("alice")
    a = get(port, context(pki, client=alice), "localhost")
    assert (a.status, a.text) == (200, "SUCCESS|" + alice.subject), a
    no_crit(weir)


# ssl_verify_depth N: at most N intermediate CAs between the client's
# certificate and a CA of ssl_client_certificate (OpenSSL's and nginx's
# meaning; the default 1 takes a certificate issued by such a CA or by
# one intermediate of it)
@pytest.mark.parametrize("depth,intermediates,ok", [
    (0, 0, True),
    (0, 1, False),
    (1, 1, True),
    (2, 1, True),
])
def test_verify_depth(weir, pki, depth, intermediates, ok):
    """A chain longer than ssl_verify_depth is refused (400, "certificate
    chain too long" logged); at the limit it passes."""
    ca = pki.intermediate() if intermediates else None
    client = pki.client("depth-%d" % intermediates, ca=ca)
    port = verify_server(weir, pki, "on",
                         "        ssl_client_certificate %s;\n"
                         "        ssl_verify_depth %d;\n"
                         % (pki.ca_cert, depth))
    a = get(port, context(pki, client=client), "localhost")
    if ok:
        assert (a.status, a.text) == (200, "SUCCESS|" + client.subject), a
    else:
        assert a.status == 400, a
        assert "The SSL certificate error" in a.text, a.text
        weir.wait_log(r"\[info\].*client SSL certificate verify error: "
                      r"\((20:unable to get local issuer certificate|"
                      r"22:certificate chain too long)\)")
    no_crit(weir)


def test_verify_depth_default_is_one(weir, pki):
    """Without ssl_verify_depth (1): one intermediate passes."""
    client = pki.client("depth-default", ca=pki.intermediate())
    port = verify_server(weir, pki, "on",
                         "        ssl_client_certificate %s;\n"
                         % pki.ca_cert)
    a = get(port, context(pki, client=client), "localhost")
    assert (a.status, a.text) == (200, "SUCCESS|" + client.subject), a
    no_crit(weir)


# ---------------------------------------------------------------- stapling

def ocsp_response(pki, leaf, status="good"):
    """A DER OCSP response for leaf, signed by the test CA, made with
    `openssl ocsp` as a responder would (index file, request, response);
    returns its path."""
    slug = "ocsp-%s-%s" % (re.sub(r"\W", "_", leaf.names[0]), status)
    resp = pki.path(slug + ".der")
    if os.path.exists(resp):
        return resp
    index = pki.path(slug + ".index")
    req = pki.path(slug + ".req")
    # the CA database line: status, expiry, revocation, serial, file, DN
    flag = "V" if status == "good" else "R"
    revoked = "" if status == "good" else "200101000000Z"
    with open(index, "w") as f:
        f.write("%s\t301231235959Z\t%s\t%s\tunknown\t/CN=%s\n"
                % (flag, revoked, leaf.serial, leaf.names[0]))
    tlspki._run(["ocsp", "-issuer", pki.ca_cert, "-cert", leaf.cert,
                 "-no_nonce", "-reqout", req])
    tlspki._run(["ocsp", "-index", index, "-rsigner", pki.ca_cert,
                 "-rkey", pki.ca.key, "-CA", pki.ca_cert, "-reqin", req,
                 "-respout", resp, "-ndays", "7"])
    os.chmod(resp, 0o644)
    return resp


def status_of(port, sni="localhost", ask=True):
    """openssl s_client's account of the OCSP status it got."""
    args = ["-servername", sni]
    if ask:
        args.append("-status")
    rc, out = s_client(port, args,
                       request="GET / HTTP/1.1\r\nHost: %s\r\n"
                               "Connection: close\r\n\r\n" % sni)
    assert "Server certificate" in out, out
    return out


STAPLED = re.compile(r"OCSP Response Status: successful")


def test_stapling_from_file(weir, pki):
    """ssl.md: with ssl_stapling on and ssl_stapling_file, the response
    in the file is stapled to every handshake that asks for it (the
    status_request extension) and only to those."""
    leaf = pki.leaf("localhost")
    resp = ocsp_response(pki, leaf)
    port = weir.port()
    start(weir, server(port, "localhost", [leaf],
                       "        ssl_stapling on;\n"
                       "        ssl_stapling_file %s;\n" % resp), [port])
    out = status_of(port)
    assert STAPLED.search(out), out
    assert re.search(r"Cert Status: good", out), out
    assert re.search(r"Serial Number: %s" % leaf.serial, out, re.I), out
    assert "OCSP response: no response sent" not in out, out

    # a client that does not ask gets none
    out = status_of(port, ask=False)
    assert not STAPLED.search(out), out
    no_crit(weir)


def test_stapling_is_per_server_block(weir, pki):
    """The staple belongs to the server block SNI selects: a server
    without stapling on the same address staples nothing, and one with
    ssl_stapling off ignores its file."""
    a, b, c = pki.leaf("a.test"), pki.leaf("b.test"), pki.leaf("c.test")
    port = weir.port()
    start(weir,
          server(port, "a.test", [a],
                 "        ssl_stapling on;\n"
                 "        ssl_stapling_file %s;\n" % ocsp_response(pki, a))
          + server(port, "b.test", [b])
          + server(port, "c.test", [c],
                   "        ssl_stapling off;\n"
                   "        ssl_stapling_file %s;\n"
                   % ocsp_response(pki, c)), [port])
    out = status_of(port, "a.test")
    assert STAPLED.search(out), out
    for name in ("b.test", "c.test"):
        out = status_of(port, name)
        assert not STAPLED.search(out), (name, out)
        assert "OCSP response: no response sent" in out, (name, out)
    no_crit(weir)


def test_stapling_revoked_status_is_sent_as_is(weir, pki):
    """The file is not checked (ssl.md): a response that says revoked
    is stapled as it is, for the client to judge."""
    leaf = pki.leaf("revoked.test")
    port = weir.port()
    start(weir, server(port, "revoked.test", [leaf],
                       "        ssl_stapling on;\n"
                       "        ssl_stapling_file %s;\n"
                       % ocsp_response(pki, leaf, "revoked")), [port])
    out = status_of(port, "revoked.test")
    assert STAPLED.search(out), out
    assert re.search(r"Cert Status: revoked", out), out
    no_crit(weir)


def test_stapling_without_file_is_ignored_with_a_warning(weir, pki):
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, server(port, "localhost", [leaf],
                       "        ssl_stapling on;\n"), [port])
    weir.wait_log(r"\[warn\].*\"ssl_stapling\" ignored: weir staples only "
                  r"from \"ssl_stapling_file\"")
    out = status_of(port)
    assert not STAPLED.search(out), out
    no_crit(weir)


def test_stapling_file_that_is_not_a_response(weir, pki):
    """A file that is not an OCSP response is a configuration error."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    conf(weir, server(port, "localhost", [leaf],
                      "        ssl_stapling on;\n"
                      "        ssl_stapling_file %s;\n" % leaf.cert))
    weir.allow.append(r"\[emerg\]")
    res = weir.run(["-t"])
    assert res.returncode != 0, res.stderr
    assert re.search(r"\[emerg\].*d2i_OCSP_RESPONSE_bio\(\"%s\"\) failed"
                     % re.escape(leaf.cert), res.stderr), res.stderr
