"""Run-time DNS (`resolver`, `resolver_timeout`, docs/http/resolver.md):
`proxy_pass` with variables naming a host that is neither an address nor
an upstream block is looked up by the location's resolver without
blocking the worker, answers are cached per worker for their TTL (or
valid=), negative answers too, concurrent lookups of one name share one
query, and a name that cannot be resolved gives the client a 502 and
the log a line naming the name and the reason.

The DNS server is dnsserver.DNSServer on loopback: the names are
answered from the test's records, never from the system's resolver or
/etc/hosts."""

import concurrent.futures
import socket
import time

import pytest

from test_proxy_h2 import curl, start, status_of
from weirtest import ipv6_available, run_weir


def run(weir, origin, dns, resolver_args="", http="", location="",
        host_port=None):
    pass_to = "http://$arg_h:%d" % (host_port or origin.port)
    return start(weir, pass_to, version="1.1",
                 http="    resolver %s%s;\n%s" % (dns.addr, resolver_args,
                                                   http),
                 location=location)


def test_name_is_resolved_and_cached_for_its_ttl(weir, origin, dns):
    dns.add("a.test", ("A", "127.0.0.1", 60))
    port = run(weir, origin, dns)
    for _ in range(3):
        p = curl(port, "/x?h=a.test")
        assert status_of(p) == [200]
        assert b"origin GET /x?h=a.test" in p.stdout
    # one A and one AAAA question, then the cache answers
    assert dns.count("a.test", "A") == 1
    assert dns.count("a.test", "AAAA") == 1
    assert origin.requests[0].header("Host") == "a.test:%d" % origin.port


def test_ttl_zero_is_asked_again_and_valid_overrides_the_ttl(weir, origin,
                                                            dns, make_weir):
    dns.add("zero.test", ("A", "127.0.0.1", 0))
    port = run(weir, origin, dns)
    for _ in range(2):
        assert status_of(curl(port, "/?h=zero.test")) == [200]
    assert dns.count("zero.test", "A") == 2

    w2 = make_weir()
    dns.add("kept.test", ("A", "127.0.0.1", 0))
    port2 = run(w2, origin, dns, resolver_args=" valid=30s")
    for _ in range(2):
        assert status_of(curl(port2, "/?h=kept.test")) == [200]
    assert dns.count("kept.test", "A") == 1


def test_unknown_name_is_502_logged_and_cached_negatively(weir, origin,
                                                          dns):
    port = run(weir, origin, dns)
    for _ in range(2):
        p = curl(port, "/?h=nx.test")
        assert status_of(p) == [502]
    log = weir.log()
    assert "nx.test could not be resolved (Domain name not found)" in log
    assert dns.count("nx.test", "A") == 1
    assert origin.accepted == 0


def test_server_failure_is_502_naming_the_error(weir, origin, dns):
    dns.servfail.add("broken.test")
    port = run(weir, origin, dns)
    assert status_of(curl(port, "/?h=broken.test")) == [502]
    assert "broken.test could not be resolved (" in weir.log()


def test_resolver_timeout(weir, origin, dns):
    dns.drop.add("slow.test")
    port = run(weir, origin, dns, http="    resolver_timeout 500ms;\n")
    t = time.monotonic()
    p = curl(port, "/?h=slow.test")
    took = time.monotonic() - t
    assert status_of(p) == [502]
    assert took < 3, took
    assert "slow.test could not be resolved (timed out)" in weir.log()


def test_concurrent_lookups_share_one_query(weir, origin, dns):
    dns.add("shared.test", ("A", "127.0.0.1", 60))
    dns.delay["shared.test"] = 0.3
    port = run(weir, origin, dns)
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        results = list(ex.map(lambda i: curl(port, "/%d?h=shared.test" % i),
                              range(6)))
    assert [status_of(p) for p in results] == [[200]] * 6
    assert dns.count("shared.test", "A") == 1


def test_every_address_is_tried(weir, origin, dns):
    # the first address refuses: proxy_next_upstream goes to the second
    refused = socket.socket()
    refused.bind(("127.0.0.2", 0))
    dns.add("two.test", ("A", "127.0.0.2", 60), ("A", "127.0.0.1", 60))
    port = run(weir, origin, dns)
    refused.close()
    assert status_of(curl(port, "/?h=two.test")) == [200]
    assert origin.accepted == 1


def test_ipv6_off_asks_for_a_only(weir, origin, dns):
    dns.add("four.test", ("A", "127.0.0.1", 60))
    port = run(weir, origin, dns, resolver_args=" ipv6=off")
    assert status_of(curl(port, "/?h=four.test")) == [200]
    assert dns.count("four.test", "A") == 1
    assert dns.count("four.test", "AAAA") == 0


@pytest.mark.skipif(ipv6_available() is not None,
                    reason=str(ipv6_available()))
def test_aaaa_only_name_is_reached_over_ipv6(weir, dns):
    import origin as origin_lib

    o = origin_lib.Origin(name="six", family=socket.AF_INET6)
    o.start()
    try:
        dns.add("six.test", ("AAAA", "::1", 60))
        port = run(weir, o, dns)
        p = curl(port, "/?h=six.test")
        assert status_of(p) == [200] and b"six GET" in p.stdout
    finally:
        o.stop()


def test_http2_client_through_the_resolver(weir, origin, dns):
    dns.add("h2.test", ("A", "127.0.0.1", 60))
    port = run(weir, origin, dns)
    p = curl(port, "/?h=h2.test", client="h2")
    assert status_of(p) == [200]


def test_upstream_block_wins_over_the_resolver(weir, origin, dns):
    http = ("    upstream grp.test {\n"
            "        server %s;\n"
            "    }\n" % origin.addr)
    port = run(weir, origin, dns, http=http)
    assert status_of(curl(port, "/?h=grp.test")) == [200]
    assert dns.count("grp.test") == 0


def test_no_resolver_is_502(weir, origin):
    port = start(weir, "http://$arg_h:%d" % origin.port, version="1.1")
    assert status_of(curl(port, "/?h=a.test")) == [502]
    assert "no resolver defined to resolve a.test" in weir.log()


def test_client_gone_while_resolving(weir, origin, dns):
    dns.drop.add("gone.test")
    port = run(weir, origin, dns, http="    resolver_timeout 1s;\n")
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /?h=gone.test HTTP/1.1\r\nHost: x\r\n\r\n")
    s.close()
    # the next request is served: nothing waits on the dead one
    dns.add("after.test", ("A", "127.0.0.1", 60))
    assert status_of(curl(port, "/?h=after.test")) == [200]


@pytest.mark.parametrize("args, reason", [
    ("", "invalid number of arguments in \"resolver\" directive"),
    ("valid=30s", "\"resolver\" needs at least one address"),
    ("127.0.0.1 valid=x", "invalid parameter \"valid=x\""),
    ("127.0.0.1 ipv6=maybe", "invalid parameter \"ipv6=maybe\""),
    ("127.0.0.1 cache=0", "invalid parameter \"cache=0\""),
    ("127.0.0.1 flags=1", "invalid parameter \"flags=1\""),
    ("unix:/tmp/x", "a resolver address cannot be a unix socket: "
                    "\"unix:/tmp/x\""),
])
def test_configuration_errors(weir, args, reason):
    weir.allow.append(r"\[emerg\]")
    path = weir.conf("events {\n}\nhttp {\n    resolver %s;\n}\n" % args,
                     preamble=False, events=False)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 1, res.stderr
    assert "[emerg] %s in %s:4" % (reason, path) in res.stderr, res.stderr


def test_duplicate_resolver(weir):
    weir.allow.append(r"\[emerg\]")
    path = weir.conf("events {\n}\nhttp {\n    resolver 127.0.0.1;\n"
                     "    resolver 127.0.0.1;\n}\n",
                     preamble=False, events=False)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 1
    assert "\"resolver\" directive is duplicate in %s:5" % path \
        in res.stderr, res.stderr
