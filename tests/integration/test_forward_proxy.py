"""The forward proxy (`forward_proxy on`, docs/http/forward-proxy.md): a
request whose target is an absolute URI (what curl -x, a browser or any
client configured with an HTTP proxy sends) goes to that URI's host,
named by weir's resolver, with the hop-by-hop headers of the proxy leg
(Proxy-Connection, Proxy-Authorization) removed; locations still match
the path, so a location with its own content handler answers instead
of the origin; origin-form requests are served as by any server.

Names are answered by dnsserver.DNSServer on loopback."""

import socket
import subprocess

import pytest

from dnsserver import DNSServer
from weirtest import DEADLINE, wait_for

CURL = "curl"


@pytest.fixture
def dns():
    d = DNSServer().start()
    try:
        yield d
    finally:
        d.stop()


def start(weir, dns, server="", http="", forward="on"):
    port = weir.port()
    weir.conf("worker_processes 1;\n"
              "http {\n"
              "    resolver %s;\n"
              "    proxy_connect_timeout 3s;\n"
              "    proxy_read_timeout 5s;\n"
              "%s"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "        forward_proxy %s;\n"
              "%s"
              "    }\n"
              "}\n" % (dns.addr, http, port, forward, server))
    weir.start(check_ports=False)

    def up():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(up, what="the proxy port to accept")
    return port


def via_proxy(port, url, args=()):
    cmd = [CURL, "-sS", "--max-time", "20", "-o", "-", "-D", "/dev/stderr",
           "-x", "http://127.0.0.1:%d" % port] + list(args) + [url]
    p = subprocess.run(cmd, capture_output=True, timeout=DEADLINE)
    assert p.returncode == 0, (p.returncode, p.stderr)
    return p


def status_of(p):
    lines = [l for l in p.stderr.decode("latin1").split("\r\n")
             if l.startswith("HTTP/")]
    return [int(l.split()[1]) for l in lines]


def test_absolute_form_goes_to_the_named_host(weir, origin, dns):
    dns.add("www.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns)
    p = via_proxy(port, "http://www.test:%d/a/b?c=d" % origin.port,
                  args=["-H", "Proxy-Authorization: Basic dTpw",
                        "--proxy-header", "Proxy-Connection: keep-alive"])
    assert status_of(p) == [200]
    assert p.stdout == b"origin GET /a/b?c=d\n"
    req = origin.requests[0]
    assert req.target == "/a/b?c=d"
    assert req.header("Host") == "www.test:%d" % origin.port
    assert req.header("Proxy-Connection") is None
    assert req.header("Proxy-Authorization") is None


def test_origin_connections_are_kept_alive_per_origin(weir, make_origin,
                                                      dns):
    o = make_origin()
    o2 = make_origin(name="other")
    dns.add("k.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns)
    for i in range(3):
        p = via_proxy(port, "http://k.test:%d/%d" % (o.port, i))
        assert p.stdout == b"origin GET /%d\n" % i
    p = via_proxy(port, "http://k.test:%d/x" % o2.port)
    assert p.stdout == b"other GET /x\n"
    # three client connections, one origin connection each per origin
    assert o.accepted == 1 and o2.accepted == 1


def test_location_with_its_own_handler_answers(weir, origin, dns):
    dns.add("www.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, server=(
        "        location /blocked/ {\n"
        "            return 403 \"blocked by weir\\n\";\n"
        "        }\n"
        "        location / {\n"
        "            add_header X-Seen-By weir;\n"
        "        }\n"))
    p = via_proxy(port, "http://www.test:%d/blocked/x" % origin.port)
    assert status_of(p) == [403] and p.stdout == b"blocked by weir\n"
    p = via_proxy(port, "http://www.test:%d/ok" % origin.port)
    assert status_of(p) == [200] and p.stdout == b"origin GET /ok\n"
    assert "x-seen-by: weir" in p.stderr.decode().lower()
    assert len(origin.requests) == 1


def test_origin_form_is_served_as_by_any_server(weir, origin, dns):
    port = start(weir, dns, server=(
        "        location = /hello {\n"
        "            return 200 \"I am the proxy\\n\";\n"
        "        }\n"))
    p = subprocess.run([CURL, "-sS", "http://127.0.0.1:%d/hello" % port],
                       capture_output=True, timeout=DEADLINE)
    assert p.stdout == b"I am the proxy\n"
    assert origin.requests == []


def test_forward_proxy_off_does_not_forward(weir, origin, dns):
    dns.add("www.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, forward="off")
    p = via_proxy(port, "http://www.test:%d/x" % origin.port)
    assert status_of(p) == [404]
    assert origin.requests == []


def test_unknown_host_is_502_naming_it(weir, origin, dns):
    port = start(weir, dns)
    p = via_proxy(port, "http://nowhere.test:%d/x" % origin.port)
    assert status_of(p) == [502]
    assert "nowhere.test could not be resolved (Domain name not found)" \
        in weir.log()


def test_upstream_block_of_the_same_name_is_not_used(weir, make_origin,
                                                      dns):
    # a client's target names a host, never a configured group
    inner = make_origin(name="inner")
    outer = make_origin(name="outer")
    dns.add("grp.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns, http=("    upstream grp.test {\n"
                                  "        server %s;\n"
                                  "    }\n" % inner.addr))
    p = via_proxy(port, "http://grp.test:%d/x" % outer.port)
    assert p.stdout == b"outer GET /x\n"
    assert inner.requests == []


def test_post_body_is_relayed(weir, origin, dns):
    dns.add("www.test", ("A", "127.0.0.1", 60))
    port = start(weir, dns)
    p = via_proxy(port, "http://www.test:%d/echo" % origin.port,
                  args=["--data-binary", "x" * 100000])
    assert status_of(p) == [200] and p.stdout == b"x" * 100000
