"""nginx 1.22 compatibility of servers, locations and the configuration
(issue 13): what `$server_name` holds, the Content-Type of `return`
with a text, the implicit redirect of a proxied location ending in a
slash, `listen` parameters shared between servers, `alias` in a regex
location without captures, and `ssl_password_file` naming a FIFO.

Each test checks what nginx 1.22 does (Debian's /usr/sbin/nginx,
run by hand on a loopback port), with raw clients."""

import errno
import os
import socket
import threading
import time

import pytest

from tlspki import ssl_preamble
from weirtest import DEADLINE, wait_for

from test_proxy import Client
from test_tls import conf as tls_conf, context, get as tls_get, \
    server as tls_server


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


# ---------------------------------------------------------------- item 2

RETURNS = """
        location /t { return 200 "text"; }
        location /e { return 200; }
        location /n { return 404 "nf"; }
        location /v { return 500 "u=$uri"; }
        location /x.html { return 200 "hi"; }
        location /p/ { return 200 "hi"; }
        location /nc { return 204 "x"; }
        location /j { default_type application/json; return 200 "{}"; }
        location /nodef { default_type ""; return 200 "x"; }
        location /ct { add_header X-A a; return 200 "x"; }
"""


def test_return_text_has_content_type(weir):
    """return with a text (and return 200 without one) sends the type
    of the URI's extension, else default_type, whatever the code and
    whether the text has variables; a 204 has no type; default_type ""
    sends none (all as nginx 1.22)."""
    port = serve(weir, [RETURNS],
                 http="    types { text/html html; image/png png; }\n")
    want = [
        ("/t", 200, "text/plain", b"text"),
        ("/e", 200, "text/plain", b""),
        ("/n", 404, "text/plain", b"nf"),
        ("/v", 500, "text/plain", b"u=/v"),
        ("/x.html", 200, "text/html", b"hi"),
        ("/p/a.png", 200, "image/png", b"hi"),
        ("/p/a.PNG", 200, "image/png", b"hi"),
        ("/t?x.html", 200, "text/plain", b"text"),
        ("/t.png", 200, "image/png", b"text"),
        ("/nc", 204, None, b""),
        ("/j", 200, "application/json", b"{}"),
        ("/nodef", 200, None, b"x"),
        ("/ct", 200, "text/plain", b"x"),
    ]
    for target, status, ctype, body in want:
        r = one(port, target)
        assert (r.status, r.header("content-type"), r.body) == \
            (status, ctype, body), (target, r)
        assert len(r.header_all("content-type")) == (ctype is not None), r
    r = one(port, "/t", method="HEAD")
    assert (r.status, r.header("content-type"),
            r.header("content-length")) == (200, "text/plain", "4"), r


# ---------------------------------------------------------------- item 3

AUTO_REDIRECT = """
        location /a/ { proxy_pass http://127.0.0.1:1; }
        location /a-a { return 200 "a-a"; }
        location /a-b { return 200 "a-b"; }
        location ~ ^/a$ { return 200 "regex"; }
        location /b/ { return 200 "b"; }
        location = /c/ { proxy_pass http://127.0.0.1:1; }
        location "/d e/" { proxy_pass http://127.0.0.1:1; }
        location /f/ { proxy_pass http://127.0.0.1:1; }
        location = /f { return 200 "exact f"; }
        location /g { return 200 "g"; }
        location /g/ { proxy_pass http://127.0.0.1:1; }
        location / { return 200 "root"; }
"""


def test_proxied_location_redirects_without_slash(weir):
    """A proxied location ending in "/" (prefix or exact) answers its
    name without the slash with 301 to the name, the arguments kept,
    for any method and before any regex location, even among
    locations that sort between them in byte order ("/a-a" < "/a/");
    a location of another handler, or a location of the bare name,
    does not (all as nginx 1.22)."""
    port = serve(weir, [
        "        server_name client.example;\n" + AUTO_REDIRECT,
        "        server_name min.example;\n"
        "        location /a/ { proxy_pass http://127.0.0.1:1; }\n"
        '        location /a-a { return 200 "a-a"; }\n'
        '        location /a-b { return 200 "a-b"; }\n',
    ])
    base = "http://client.example:%d" % port
    r = one(port, "/a", host="min.example")
    assert (r.status, r.header("location")) == \
        (301, "http://min.example:%d/a/" % port), r
    r = one(port, "/a-b", host="min.example")
    assert (r.status, r.body) == (200, b"a-b"), r
    for target, want in (("/a", "/a/"),
                         ("/a?x=1&y=%20", "/a/?x=1&y=%20"),
                         ("/c", "/c/"),
                         ("/d%20e", "/d%20e/")):
        for method in ("GET", "HEAD", "POST", "PUT"):
            r = one(port, target, method=method,
                    body=b"x=1" if method in ("POST", "PUT") else None)
            assert (r.status, r.header("location")) == \
                (301, base + want), (method, target, r)
    for target, body in (("/a-a", b"a-a"), ("/a-b", b"a-b"),
                         ("/b", b"root"), ("/f", b"exact f"),
                         ("/g", b"g"), ("/A", b"root")):
        r = one(port, target)
        assert (r.status, r.body) == (200, body), (target, r)


# ---------------------------------------------------------------- item 4

@pytest.mark.parametrize("first,second", [(" ssl", ""), ("", " ssl")],
                         ids=["ssl_first", "ssl_second"])
def test_ssl_on_one_listen_makes_the_address_tls(weir, pki, first,
                                                 second):
    """"listen X ssl" in one server and "listen X" in another: the
    address is TLS for both (as nginx), whichever comes first."""
    a, b = pki.leaf("a.test"), pki.leaf("b.test")
    port = weir.port()
    weir.conf(ssl_preamble() +
              "http {\n"
              "    access_log off;\n"
              "    server {\n"
              "        listen 127.0.0.1:%d%s;\n"
              "        server_name a.test;\n"
              "        ssl_certificate %s;\n"
              "        ssl_certificate_key %s;\n"
              '        return 200 "a";\n'
              "    }\n"
              "    server {\n"
              "        listen 127.0.0.1:%d%s;\n"
              "        server_name b.test;\n"
              "        ssl_certificate %s;\n"
              "        ssl_certificate_key %s;\n"
              '        return 200 "b";\n'
              "    }\n"
              "}\n" % (port, first, a.chain, a.key,
                        port, second, b.chain, b.key))
    weir.start(check_ports=False)
    up(port)
    ctx = context(pki)
    for name in ("a.test", "b.test"):
        ans = tls_get(port, ctx, sni=name)
        assert (ans.status, ans.text) == (200, name[0]), (name, ans)


LISTEN_PAIRS = [
    # the second server's listen parameters, the first's; error or not
    (" ssl backlog=5", " rcvbuf=8k", True),
    (" bind", " bind", True),
    (" reuseport", " deferred", True),
    (" ssl", " reuseport", False),
    (" default_server", " ssl backlog=5", False),
    (" ssl", " ssl", False),
    (" ssl default_server", "", False),
]


@pytest.mark.parametrize("first,second,dup", LISTEN_PAIRS,
                         ids=[(f + "|" + s).strip()
                              for f, s, _ in LISTEN_PAIRS])
def test_listen_options_shared_between_servers(weir, pki, first, second,
                                               dup):
    """Of the listen parameters, socket options (bind, backlog, rcvbuf,
    reuseport, deferred ...) may be set by one listen of an address
    only, "ssl" and "default_server" by any (nginx 1.22's -t agrees on
    every pair)."""
    leaf = pki.leaf("a.test")
    port = weir.port()
    path = weir.conf(ssl_preamble() +
                     "http {\n"
                     "    ssl_certificate %s;\n"
                     "    ssl_certificate_key %s;\n"
                     "    server { listen 127.0.0.1:%d%s; }\n"
                     "    server {\n"
                     "        server_name b;\n"
                     "        listen 127.0.0.1:%d%s;\n"
                     "    }\n"
                     "}\n" % (leaf.chain, leaf.key, port, first, port,
                               second))
    weir.allow.append(r"\[emerg\]")
    res = weir.run(["-t"])
    if not dup:
        assert res.returncode == 0, res.stderr
        return
    line = 10 + ssl_preamble().count("\n")
    assert res.returncode == 1, res.stderr
    assert ("[emerg] duplicate listen options for 127.0.0.1:%d in %s:%d"
            % (port, path, line)) in res.stderr, res.stderr


# ---------------------------------------------------------------- item 5

def test_alias_in_regex_location_without_captures(weir):
    """In a regex location, alias is the whole path of the file: the URI
    is not appended (a relative alias is under the prefix); an index
    file and a try_files name go after it (all as nginx 1.22)."""
    html = weir.path("html")
    for rel, text in (("one.txt", "ONE\n"), ("d/index.html", "IDX\n"),
                      ("e/x.txt", "TF\n")):
        os.makedirs(os.path.dirname(os.path.join(html, rel)),
                    exist_ok=True)
        with open(os.path.join(html, rel), "w") as f:
            f.write(text)
    port = serve(weir, [
        "        location ~ ^/img/.*\\.png$ { alias %s/one.txt; }\n"
        "        location ~ ^/dir/$ { alias %s/d/; }\n"
        "        location ~ ^/tf/ { alias %s/e/; try_files x.txt =404; }\n"
        "        location ~ ^/tf3/ { alias %s/e/; try_files no =404; }\n"
        "        location ~ ^/rel { alias html/one.txt; }\n"
        '        location / { return 200 "root $uri"; }\n'
        % (html, html, html, html)],
        http="    types { text/plain txt; image/png png; }\n")
    for target, status, body in (("/img/a.png", 200, b"ONE\n"),
                                 ("/img/x/y.png", 200, b"ONE\n"),
                                 ("/dir/", 200, b"root /dir/index.html"),
                                 ("/tf/zz", 200, b"TF\n"),
                                 ("/tf3/zz", 404, None),
                                 ("/rel", 200, b"ONE\n"),
                                 ("/relx", 200, b"ONE\n")):
        r = one(port, target)
        assert r.status == status, (target, r)
        if body is not None:
            assert r.body == body, (target, r)
    r = one(port, "/img/a.png")
    assert r.header("content-type") == "image/png", r


# ---------------------------------------------------------------- item 6

class FifoWriter(threading.Thread):
    """Writes data into the FIFO at path for each of `times` readers
    that open it, then closes it (the writer a password agent would
    be). Bounded: it gives up after DEADLINE; .served says how many
    readers it fed."""

    def __init__(self, path, data, times=1):
        super().__init__(daemon=True)
        self.path, self.data, self.times = path, data, times
        self.served = 0
        self.stop = threading.Event()

    def run(self):
        deadline = time.monotonic() + DEADLINE
        while self.served < self.times and not self.stop.is_set() \
                and time.monotonic() < deadline:
            try:
                # without a reader this fails with ENXIO at once
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
                time.sleep(0.01)
                continue
            try:
                os.write(fd, self.data)
            finally:
                os.close(fd)
            self.served += 1


def fifo_conf(weir, pki, pw_path):
    enc = pki.leaf("e.test", password="s3cret")
    port = weir.port()
    path = tls_conf(weir, tls_server(port, "e.test", [enc],
                                     "        ssl_password_file %s;\n"
                                     % pw_path))
    return enc, port, path


def test_ssl_password_file_fifo(weir, pki):
    """ssl_password_file may name a FIFO, read like a file when its
    writer comes (as nginx), for -t and for a start."""
    fifo = weir.path("conf", "pw.fifo")
    os.mkfifo(fifo)
    enc, port, _ = fifo_conf(weir, pki, fifo)

    writer = FifoWriter(fifo, b"wrong\n%s\n" % enc.password.encode())
    writer.start()
    res = weir.run(["-t"])
    writer.join(DEADLINE)
    assert res.returncode == 0, res.stderr
    assert writer.served == 1

    writer = FifoWriter(fifo, enc.password.encode() + b"\n")
    writer.start()
    weir.start(check_ports=False)
    writer.join(DEADLINE)
    up(port)
    ans = tls_get(port, context(pki), sni="e.test")
    assert (ans.status, ans.text) == (200, "e.test"), ans
    assert ans.peer_sha1 == enc.fingerprint


def test_ssl_password_file_not_a_file(weir, pki):
    """A FIFO nobody writes to is an error after a bounded wait, never
    a hang; a directory and a missing file are errors at once."""
    weir.allow.append(r"\[emerg\]")
    fifo = weir.path("conf", "pw.fifo")
    os.mkfifo(fifo)
    _, _, path = fifo_conf(weir, pki, fifo)
    t0 = time.monotonic()
    res = weir.run(["-t"], timeout=DEADLINE * 2)
    assert res.returncode == 1, res.stderr
    assert 'no password came from "%s" in 5000 ms' % fifo in res.stderr, \
        res.stderr
    assert time.monotonic() - t0 < DEADLINE * 2

    # a writer that closes without a line: no passwords
    writer = FifoWriter(fifo, b"")
    writer.start()
    res = weir.run(["-t"])
    writer.join(DEADLINE)
    assert res.returncode == 1, res.stderr
    assert 'no passwords in "%s"' % fifo in res.stderr, res.stderr

    d = weir.path("conf", "pw.d")
    os.mkdir(d)
    fifo_conf(weir, pki, d)
    res = weir.run(["-t"])
    assert res.returncode == 1, res.stderr
    assert 'password file "%s" is a directory' % d in res.stderr, \
        res.stderr

    missing = weir.path("conf", "none")
    fifo_conf(weir, pki, missing)
    res = weir.run(["-t"])
    assert res.returncode == 1, res.stderr
    assert ('open() "%s" failed (2: No such file or directory)' % missing
            in res.stderr), res.stderr
