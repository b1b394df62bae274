"""HTTP/2 to clients (src/http/v2): h2 over TLS (ALPN) and h2c with
prior knowledge on a plain port (HTTP/1.1 still served there), the
directives, requests and responses through the usual modules, flow
control, limits, malformed requests and the graceful shutdown. Clients:
curl, nghttp and python h2 (h2client.py)."""

import os
import re
import socket
import subprocess

import pytest

import tlspki
from h2client import H2Client
from weirtest import DEADLINE, wait_for


def up(port):
    def accepts():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_for(accepts, what="port %d to accept" % port)


def start(weir, server, http_extra="", tls=None, listen="", main=""):
    """One server on 127.0.0.1:port (h2c when listen has no "ssl");
    returns (port, html directory)."""
    port = weir.port()
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    certs = ""
    pre = ""
    if tls is not None:
        pre = tlspki.ssl_preamble()
        certs = ("        ssl_certificate %s;\n"
                 "        ssl_certificate_key %s;\n" % (tls.chain, tls.key))
    weir.conf(pre + main +
              "http {\n"
              "    types { text/html html; text/plain txt; }\n"
              "    default_type application/octet-stream;\n"
              "    access_log logs/access.log;\n"
              "%s\n"
              "    server {\n"
              "        listen 127.0.0.1:%d%s;\n"
              "        root %s;\n"
              "%s%s\n"
              "    }\n"
              "}\n" % (http_extra, port, listen, html, certs, server))
    weir.start(check_ports=False)
    up(port)
    return port, html


def curl(args, timeout=DEADLINE):
    p = subprocess.run(["curl", "-sS", "-k", "--max-time", str(timeout)]
                       + args, capture_output=True, timeout=timeout + 5)
    return p


# ---------------------------------------------------------------- h2c

def test_h2c_prior_knowledge_and_http1_same_port(weir):
    port, html = start(weir, "        http2 on;\n"
                       "        location /r { return 200 \"hello $http2 "
                       "$server_protocol\"; }\n")
    with open(os.path.join(html, "f.txt"), "w") as f:
        f.write("file body\n")

    p = curl(["--http2-prior-knowledge", "-w", "%{http_version}",
              "http://127.0.0.1:%d/r" % port])
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"hello h2c HTTP/2.02"

    p = curl(["--http2-prior-knowledge", "http://127.0.0.1:%d/f.txt"
              % port])
    assert p.stdout == b"file body\n"

    # the same port still speaks HTTP/1.1
    p = curl(["--http1.1", "-w", "%{http_version}",
              "http://127.0.0.1:%d/r" % port])
    assert p.stdout == b"hello  HTTP/1.11.1"


def test_http2_off_is_http1(weir):
    port, _ = start(weir, "        location / { return 200 ok; }\n")
    p = curl(["--http2-prior-knowledge", "http://127.0.0.1:%d/" % port])
    assert p.returncode != 0 or b"ok" != p.stdout


def test_listen_http2_parameter(weir):
    port, _ = start(weir, "        location / { return 200 \"$http2\"; }\n",
                    listen=" http2")
    p = curl(["--http2-prior-knowledge", "http://127.0.0.1:%d/" % port])
    assert p.stdout == b"h2c"


def test_h2_over_tls_alpn(weir, pki):
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    port, _ = start(weir, "        http2 on;\n"
                    "        location / { return 200 \"$http2 $https\"; }\n",
                    tls=leaf, listen=" ssl")
    p = curl(["--http2", "-w", " %{http_version}",
              "https://127.0.0.1:%d/" % port])
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"h2 on 2"

    c = H2Client(port, tls=True)
    assert c.alpn == "h2"
    r = c.response(c.request("GET", "/"))
    assert r.status == 200 and r.body == b"h2 on"
    c.close()

    # without http2: ALPN stays http/1.1
    p = curl(["--http1.1", "-w", " %{http_version}",
              "https://127.0.0.1:%d/" % port])
    assert p.stdout == b" on 1.1"


def test_nghttp_client(weir):
    port, html = start(weir, "        http2 on;\n")
    with open(os.path.join(html, "n.txt"), "w") as f:
        f.write("nghttp\n")
    p = subprocess.run(["nghttp", "-n", "-s",
                        "http://127.0.0.1:%d/n.txt" % port],
                       capture_output=True, timeout=DEADLINE)
    assert p.returncode == 0, p.stderr
    p = subprocess.run(["nghttp", "http://127.0.0.1:%d/n.txt" % port],
                       capture_output=True, timeout=DEADLINE)
    assert p.stdout == b"nghttp\n"
