"""The default configuration (conf/weir.conf with conf/mime.types and the
welcome site in html/, as `make install` lays them out) serves what the
README promises, and stub_status counts the requests of every worker."""

import http.client
import os
import re
import shutil
import socket

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


def test_default_configuration_serves_the_welcome_site(weir):
    port = weir.port()

    with open(os.path.join(REPO, "conf", "weir.conf")) as f:
        text = f.read()
    assert "127.0.0.1:8080" in text
    assert "127.0.0.1:8081" in text
    # the same file, on free ports: 8080 and 8081 may be taken on a test
    # machine
    origin = weir.port()
    text = text.replace("127.0.0.1:8080", "127.0.0.1:%d" % port)
    text = text.replace("127.0.0.1:8081", "127.0.0.1:%d" % origin)
    shutil.copy(os.path.join(REPO, "conf", "mime.types"),
                weir.path("conf", "mime.types"))
    shutil.copytree(os.path.join(REPO, "html"), weir.path("html"))
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
