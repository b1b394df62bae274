"""The default configuration (conf/weir.conf with conf/mime.types and the
welcome site in html/, as `make install` lays them out) serves what the
README promises, the HTTPS demo of `make run` (conf/https.conf and the
self-signed certificate the GNUmakefile makes) serves it over TLS, and
stub_status counts the requests of every worker."""

import http.client
import os
import re
import shutil
import socket
import ssl
import subprocess

from weirtest import REPO, wait_for


def get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, \
            resp.read()
    finally:
        conn.close()


def wait_http(port):
    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_for(up, what="the HTTP port to accept")


def default_conf(weir, port, origin):
    """The default weir.conf on free ports, with mime.types and html/ as
    `make install` lays them out; returns its text."""
    with open(os.path.join(REPO, "conf", "weir.conf")) as f:
        text = f.read()
    text = text.replace("127.0.0.1:8080", "127.0.0.1:%d" % port)
    text = text.replace("127.0.0.1:8081", "127.0.0.1:%d" % origin)
    shutil.copy(os.path.join(REPO, "conf", "mime.types"),
                weir.path("conf", "mime.types"))
    shutil.copytree(os.path.join(REPO, "html"), weir.path("html"))
    return text


def test_default_configuration_serves_the_welcome_site(weir):
    port = weir.port()

    with open(os.path.join(REPO, "conf", "weir.conf")) as f:
        text = f.read()
    assert "127.0.0.1:8080" in text
    assert "127.0.0.1:8081" in text
    assert re.search(r"^    include  conf\.d/\*\.conf;$", text, re.M)
    # the same file, on free ports: 8080 and 8081 may be taken on a test
    # machine; with no conf.d/ (as `make install` leaves it), so no
    # HTTPS and no need of the TLS module
    origin = weir.port()
    text = default_conf(weir, port, origin)
    assert not os.path.exists(weir.path("conf", "conf.d"))
    weir.conf("daemon off;\n" + text, preamble=False, events=False)

    weir.start(check_ports=False)
    wait_http(port)

    status, headers, body = get(port, "/")
    assert status == 200
    assert headers["content-type"] == "text/html"
    assert b"Welcome to weir" in body

    status, headers, body = get(port, "/no/such/page")
    assert status == 404
    assert b"weir has no page at this address" in body

    status, _, body = get(port, "/status")
    assert status == 200
    assert body.startswith(b"Active connections:")

    # the reverse proxy demo: /proxy/x is /x at the origin server block
    status, _, body = get(port, "/proxy/some/path?a=1")
    assert status == 200
    assert body == b"hello from the origin server block: /some/path?a=1\n"

    with open(weir.path("logs", "access.log")) as f:
        log = f.read()
    assert '"GET / HTTP/1.1" 200' in log
    assert '"GET /no/such/page HTTP/1.1" 404' in log


def run_https(weir):
    """The GNUmakefile's run_https (what `make run` does before starting
    weir) with the test prefix as RUN_PREFIX."""
    return subprocess.run(
        ["make", "-s", "-C", REPO, "--no-print-directory",
         "--eval=weir-test-https: ; @$(run_https)", "weir-test-https",
         "RUN_PREFIX=" + weir.prefix],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=60)


def test_default_configuration_serves_https(weir, ssl_preamble):
    """What `make run` adds (the GNUmakefile's run_https, run here against
    the test prefix): conf.d/https.conf, read by weir.conf's include, and
    a self-signed certificate for localhost and 127.0.0.1 made with the
    openssl command line; the welcome site then answers on 8443 (a free
    port here) over TLS, verified against that certificate."""
    port, origin, https = weir.port(), weir.port(), weir.port()
    text = default_conf(weir, port, origin)
    weir.conf("daemon off;\n" + ssl_preamble + text, preamble=False,
              events=False)

    res = run_https(weir)
    assert res.returncode == 0, res.stdout
    assert "predates" not in res.stdout
    crt = weir.path("conf", "weir.crt")
    key = weir.path("conf", "weir.key")
    inc = weir.path("conf", "conf.d", "https.conf")
    assert "a self-signed certificate" in res.stdout
    assert os.stat(key).st_mode & 0o077 == 0
    with open(inc) as f:
        https_conf = f.read()
    with open(os.path.join(REPO, "conf", "https.conf")) as f:
        assert f.read() == https_conf
    assert "127.0.0.1:8443 ssl" in https_conf
    with open(inc, "w") as f:
        f.write(https_conf.replace("127.0.0.1:8443", "127.0.0.1:%d"
                                   % https))

    # a second run keeps what is there
    with open(crt) as f:
        pem = f.read()
    res = run_https(weir)
    assert res.returncode == 0 and res.stdout == "", res.stdout
    with open(crt) as f:
        assert f.read() == pem

    weir.start(check_ports=False)
    wait_http(port)
    wait_http(https)

    ctx = ssl.create_default_context(cafile=crt)
    ctx.set_alpn_protocols(["http/1.1"])
    for host in ("localhost", "127.0.0.1"):
        conn = http.client.HTTPSConnection(host, https, timeout=5,
                                           context=ctx)
        try:
            conn.request("GET", "/")
            resp = conn.getresponse()
            body = resp.read()
            assert resp.status == 200
            assert b"Welcome to weir" in body
            conn.request("GET", "/tls")
            resp = conn.getresponse()
            body = resp.read().decode()
            assert resp.status == 200
            assert re.match(r"protocol TLSv1\.3, cipher TLS_\S+\n"
                            r"alpn http/1\.1, reused \.\n$", body), body
            conn.request("GET", "/no/such/page")
            resp = conn.getresponse()
            assert resp.status == 404
            assert b"weir has no page at this address" in resp.read()
        finally:
            conn.close()

    # plain HTTP on 8080 is unchanged
    status, _, body = get(port, "/")
    assert status == 200 and b"Welcome to weir" in body


STATUS = re.compile(r"server accepts handled requests\n (\d+) (\d+) (\d+) ")


def test_stub_status_counts_every_worker(weir):
    """Two workers with reuseport each take connections; the counters live
    in shared memory, so whichever worker answers /status reports the
    requests both served."""
    port = weir.port()
    weir.conf("""
worker_processes 2;
http {
    server {
        listen 127.0.0.1:%d reuseport;
        location = /status { stub_status; }
        location / {
            add_header X-Pid $pid;
            return 200 "ok";
        }
    }
}
""" % port)
    weir.start(check_ports=False)
    wait_http(port)

    pids = set()
    n = 0
    for _ in range(400):
        status, headers, _ = get(port, "/")
        assert status == 200
        pids.add(headers["x-pid"])
        n += 1
        if len(pids) == 2 and n >= 40:
            break
    assert len(pids) == 2, "one worker took every connection: %r" % pids

    for _ in range(4):
        _, headers, body = get(port, "/status")
        m = STATUS.search(body.decode())
        assert m, body
        accepts, handled, requests = map(int, m.groups())
        # this /status request is counted too
        assert requests >= n + 1, (requests, n)
        assert accepts >= n + 1 and handled == accepts
