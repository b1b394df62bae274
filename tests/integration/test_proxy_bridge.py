"""The bridge matrix (docs/http/proxy.md, proxy_http_version): every
client protocol to every origin protocol, with TLS or not on each side,
client {h1, h1tls, h2c, h2tls} x origin {h1, h1tls, h2c, h2tls} = 16
cells, each with a tiny GET, a 1 MiB POST echoed, a streamed response
from a slow origin, response trailers, a 1xx, an origin reset mid-body
(an HTTP/1.1 client sees the body cut short, an HTTP/2 client a reset
stream) and a read timeout (504).

The client is curl in each of its four modes; the origin is one
h2origin.H2Origin(h1=True), which speaks HTTP/1.1 and HTTP/2 on the same
port (the preface or ALPN decides), so each cell differs only in what
weir is told: proxy_http_version and the scheme of proxy_pass."""

import os
import socket
import subprocess

import pytest

import tlspki
from h2origin import H2Origin
from weirtest import DEADLINE, wait_for

CLIENTS = ["h1", "h1tls", "h2c", "h2tls"]
ORIGINS = ["h1", "h1tls", "h2c", "h2tls"]


@pytest.fixture(scope="module")
def leaf(pki):
    return pki.leaf("localhost", ips=["127.0.0.1"])


@pytest.fixture(params=ORIGINS)
def origin(request, leaf):
    kind = request.param
    if kind.endswith("tls"):
        o = H2Origin(cert=leaf.chain, key=leaf.key, h1=True,
                     alpn=("h2",) if kind == "h2tls" else ("http/1.1",))
    else:
        o = H2Origin(h1=True)
    o.kind = kind
    yield o
    o.close()


@pytest.fixture(params=CLIENTS)
def client(request):
    return request.param


def start(weir, origin, client, leaf, pki, location=""):
    port = weir.port()
    tls_client = client.endswith("tls")
    tls_origin = origin.kind.endswith("tls")
    pre = tlspki.ssl_preamble() if (tls_client or tls_origin) else ""
    listen = " ssl http2" if tls_client else " http2"
    certs = ""
    if tls_client:
        certs = ("        ssl_certificate %s;\n"
                 "        ssl_certificate_key %s;\n" % (leaf.chain, leaf.key))
    up = ""
    if tls_origin:
        up = ("            proxy_ssl_verify on;\n"
              "            proxy_ssl_trusted_certificate %s;\n"
              "            proxy_ssl_name localhost;\n" % pki.ca_cert)
    version = "2" if origin.kind.startswith("h2") else "1.1"
    weir.conf(pre +
              "worker_processes 1;\n"
              "http {\n"
              "    proxy_read_timeout 2s;\n"
              "    server {\n"
              "        listen 127.0.0.1:%d%s;\n"
              "%s"
              "        client_max_body_size 4m;\n"
              "        location / {\n"
              "            proxy_http_version %s;\n"
              "            proxy_pass %s://%s;\n"
              "%s%s"
              "        }\n"
              "    }\n"
              "}\n" % (port, listen, certs, version,
                       "https" if tls_origin else "http", origin.addr,
                       up, location))
    weir.start(check_ports=False)

    def accepts():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(accepts, what="the HTTP port to accept")
    return port


def curl(port, client, pki, path, args=()):
    cmd = ["curl", "-sS", "--max-time", "15", "-o", "-",
           "-D", "/dev/stderr"]
    if client == "h1":
        url = "http://127.0.0.1:%d%s" % (port, path)
    elif client == "h2c":
        cmd.append("--http2-prior-knowledge")
        url = "http://127.0.0.1:%d%s" % (port, path)
    else:
        cmd += ["--cacert", pki.ca_cert,
                "--http1.1" if client == "h1tls" else "--http2"]
        url = "https://localhost:%d%s" % (port, path)
        cmd += ["--resolve", "localhost:%d:127.0.0.1" % port]
    p = subprocess.run(cmd + list(args) + [url], capture_output=True,
                       timeout=3 * DEADLINE)
    return p


def statuses(p):
    out = []
    for line in p.stderr.decode("latin1").split("\r\n"):
        if line.startswith("HTTP/"):
            out.append(int(line.split()[1]))
    return out


def test_bridge(weir, origin, client, leaf, pki, tmp_path):
    port = start(weir, origin, client, leaf, pki)
    want_proto = "h2" if origin.kind.startswith("h2") else "h1"

    # a tiny GET, over the origin's protocol
    p = curl(port, client, pki, "/tiny")
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"tiny over %s\n" % want_proto.encode()
    assert statuses(p) == [200]
    wire = "HTTP/2" if client.startswith("h2") else "HTTP/1.1"
    assert p.stderr.decode("latin1").startswith(wire)

    # 1 MiB POST, echoed
    body = os.urandom(1 << 20)
    f = tmp_path / "body"
    f.write_bytes(body)
    p = curl(port, client, pki, "/echo", ["--data-binary", "@%s" % f])
    assert p.returncode == 0, p.stderr
    assert p.stdout == body

    # streamed from a slow origin
    p = curl(port, client, pki, "/slow/8")
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"s" * 8000

    # trailers, to either client
    p = curl(port, client, pki, "/trailers", ["-H", "TE: trailers"])
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"body before trailers\n"
    head = p.stderr.decode("latin1").lower()
    assert "x-checksum: abc123" in head, head
    assert "grpc-status: 0" in head, head

    # a 1xx before the answer
    p = curl(port, client, pki, "/interim")
    assert p.returncode == 0, p.stderr
    assert statuses(p) == [103, 200]
    assert p.stdout == b"after the hints\n"

    # the origin resets mid-body: cut short (H1, curl 18), reset (H2)
    p = curl(port, client, pki, "/reset")
    assert p.returncode in (18, 92, 56), (p.returncode, p.stderr)
    assert len(p.stdout) < 100000

    # a read timeout before the head
    p = curl(port, client, pki, "/hold")
    assert statuses(p) == [504], p.stderr
    weir.wait_log(r"upstream timed out")
