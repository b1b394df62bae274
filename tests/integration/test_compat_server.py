"""nginx 1.22 compatibility of servers, locations and the configuration
(issue 13): what `$server_name` holds, the Content-Type of `return`
with a text, the implicit redirect of a proxied location ending in a
slash, `listen` parameters shared between servers, `alias` in a regex
location without captures, and `ssl_password_file` naming a FIFO.

Each test checks what nginx 1.22 does (Debian's /usr/sbin/nginx,
run by hand on a loopback port), with raw clients."""

import os
import socket

from weirtest import wait_for

from test_proxy import Client


# ---------------------------------------------------------------- helpers

def serve(weir, servers, http=""):
    """weir with the given server blocks (each a string holding its
    body, "%(port)d" standing for the one port they share); returns
    the port."""
    port = weir.port()
    blocks = "".join("    server {\n"
                     "        listen 127.0.0.1:%d;\n"
                     "%s"
                     "    }\n" % (port, body) for body in servers)
    weir.conf("http {\n"
              "    access_log off;\n"
              "%s%s"
              "}\n" % (http, blocks))
    weir.start(check_ports=False)
    up(port)
    return port


def up(port):
    def accepts():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(accepts, what="port %d to accept" % port)


def one(port, target="/", host="client.example", headers=(),
        method="GET", body=None):
    """One request on a fresh connection; returns the Response."""
    with Client(port) as c:
        return c.request(method, target, headers=list(headers), body=body,
                         host=host)


# ---------------------------------------------------------------- item 1

def test_server_name_is_first_name_as_written(weir):
    """$server_name is the server's first name whatever matched: a
    regex keeps its tilde and its case, wildcards their asterisk, and
    ".a.com" loses only its dot (nginx 1.22 gives the same)."""
    ret = '        return 200 "sn=[$server_name]";\n'
    port = serve(weir, [
        "        server_name ~^EXAMPLE\\.COM$ other.example;\n" + ret,
        "        server_name *.wc.example.com;\n" + ret,
        "        server_name .dot.example.com;\n" + ret,
        "        server_name www.tail.*;\n" + ret,
        "        server_name UPPER.example.com;\n" + ret,
        '        server_name "" x.example;\n' + ret,
    ])
    want = [
        ("example.com", "~^EXAMPLE\\.COM$"),
        ("other.example", "~^EXAMPLE\\.COM$"),
        ("a.wc.example.com", "*.wc.example.com"),
        ("dot.example.com", "dot.example.com"),
        ("a.dot.example.com", "dot.example.com"),
        ("www.tail.org", "www.tail.*"),
        ("upper.example.com", "upper.example.com"),
        ("x.example", ""),
    ]
    for host, name in want:
        r = one(port, host=host)
        assert (r.status, r.body) == (200, b"sn=[%s]" % name.encode()), \
            (host, r)


def test_server_name_in_redirect_with_pattern_name(weir):
    """server_name_in_redirect on: a plain first name is the host of
    the redirect; a pattern (regex, wildcard) is no host, so the
    request's Host is (weir: nginx writes the pattern)."""
    loc = ("        server_name_in_redirect on;\n"
           "        location / { return 301 /x; }\n")
    port = serve(weir, [
        "        server_name ~^re\\.example$;\n" + loc,
        "        server_name *.wc.example;\n" + loc,
        "        server_name .dot.example;\n" + loc,
    ])
    for host, want in (("re.example", "re.example"),
                       ("a.wc.example", "a.wc.example"),
                       ("a.dot.example", "dot.example")):
        r = one(port, host=host)
        assert r.status == 301, (host, r)
        assert r.header("location") == "http://%s:%d/x" % (want, port), \
            (host, r)
