"""The http block: servers chosen by address then Host (exact names,
*.wildcards, wildcards.*, regexes with captures, default_server, the
empty name), listen addresses sharing a wildcard socket, the static
location tree with many siblings and nested levels, and the `weir -t`
errors of listen, server_name and location."""

import http.client
import os
import time

import pytest

import protoclient

from weirtest import connect, read_all, run_weir, wait_for


def up(port, host="127.0.0.1"):
    def probe():
        try:
            connect((host, port), timeout=1.0).close()
            return True
        except OSError:
            return False

    wait_for(probe, what="the http port %s:%d" % (host, port))


def start(weir, http_body, ports):
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    weir.conf("http {\n    root %s;\n%s\n}\n" % (html, http_body))
    weir.start(check_ports=False)
    for p in ports:
        up(p)


def get(port, path="/", host=None, addr="127.0.0.1"):
    conn = http.client.HTTPConnection(addr, port, timeout=10)
    try:
        headers = {}
        if host is not None:
            headers["Host"] = host
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def raw(port, data, addr="127.0.0.1"):
    s = connect((addr, port), timeout=10)
    try:
        s.sendall(data)
        return read_all(s, limit=65536)
    finally:
        s.close()


def server(port, names, answer, extra=""):
    return ("    server {\n        listen 127.0.0.1:%d%s;\n"
            "        server_name %s;\n"
            "        location / { return 200 \"%s\"; }\n    }\n"
            % (port, extra, names, answer))


# ---- server selection

SERVERS = [
    ("default.test", "first"),
    ("exact.test exact.wild.test", "exact"),
    ("*.wild.test", "head"),
    ("*.deep.wild.test", "deephead"),
    ("www.tail.*", "tail"),
    (r"~^re(?<num>\d+)\.test$", "regex $num"),
    (r"~^re", "regex2"),
    (".dot.test", "dot"),
]

SELECTION = [
    ("exact.test", "exact"),
    ("EXACT.Test", "exact"),              # names are caseless
    ("exact.test:8080", "exact"),         # the port is not part of it
    ("exact.test.", "exact"),             # nor a trailing dot
    ("exact.wild.test", "exact"),         # exact before wildcards
    ("a.wild.test", "head"),
    ("a.b.wild.test", "head"),
    ("x.deep.wild.test", "deephead"),     # the longest wildcard wins
    ("wild.test", "first"),               # *.x does not match x
    ("www.tail.org", "tail"),
    ("www.tail.co.uk", "tail"),
    ("re42.test", "regex 42"),            # named capture as a variable
    ("rex.test", "regex2"),               # regexes in order
    ("dot.test", "dot"),                  # ".x" is x ...
    ("a.dot.test", "dot"),                # ... and *.x
    ("unknown.test", "first"),            # the first server by default
]


def test_server_selection_by_host(weir):
    port = weir.port()
    body = "".join(server(port, n, a) for n, a in SERVERS)
    start(weir, body, [port])
    for host, answer in SELECTION:
        assert get(port, host=host) == (200, answer), host


def test_default_server_and_addresses(weir):
    p1, p2 = weir.port(), weir.port()
    body = (server(p1, "one.test", "one")
            + server(p1, "two.test", "two", " default_server")
            + server(p2, "two.test", "p2-two")
            + server(p2, "three.test", "p2-three"))
    # the same server on two addresses
    body += ("    server {\n        listen 127.0.0.1:%d;\n"
             "        listen 127.0.0.1:%d;\n        server_name both.test;\n"
             "        location / { return 200 \"both\"; }\n    }\n"
             % (p1, p2))
    start(weir, body, [p1, p2])

    assert get(p1, host="nothing.test") == (200, "two")
    assert get(p1, host="one.test") == (200, "one")
    assert get(p2, host="nothing.test") == (200, "p2-two")
    assert get(p2, host="three.test") == (200, "p2-three")
    assert get(p1, host="both.test") == (200, "both")
    assert get(p2, host="both.test") == (200, "both")
    # names are per address: one.test is not known on p2
    assert get(p2, host="one.test") == (200, "p2-two")


def test_request_without_host_and_the_empty_name(weir):
    port = weir.port()
    body = (server(port, "named.test", "named")
            + server(port, '""', "empty"))
    start(weir, body, [port])

    data = raw(port, b"GET / HTTP/1.0\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200") or data.startswith(
        b"HTTP/1.0 200"), data
    assert data.endswith(b"empty"), data
    assert get(port, host="named.test") == (200, "named")


def test_wildcard_address_and_specific_addresses(weir):
    """*:port serves every local address; a specific address listed by
    another server picks that server through the shared wildcard socket.
    Without a wildcard each address has its own socket. (A "bind" address
    next to a wildcard of the same port cannot be opened on Linux: the
    two sockets conflict; not tested.)"""
    p1, p2 = weir.port(), weir.port()
    body = ("    server {\n        listen %d;\n"
            "        location / { return 200 \"wildcard\"; }\n    }\n"
            "    server {\n        listen 127.0.0.2:%d;\n"
            "        location / { return 200 \"specific\"; }\n    }\n"
            "    server {\n        listen 127.0.0.1:%d;\n"
            "        location / { return 200 \"one\"; }\n    }\n"
            "    server {\n        listen 127.0.0.2:%d;\n"
            "        location / { return 200 \"two\"; }\n    }\n"
            % (p1, p1, p2, p2))
    start(weir, body, [p1, p2])
    up(p1, "127.0.0.2")
    up(p2, "127.0.0.2")

    assert get(p1) == (200, "wildcard")
    assert get(p1, addr="127.0.0.2") == (200, "specific")
    assert get(p1, addr="127.0.0.3") == (200, "wildcard")
    assert get(p2) == (200, "one")
    assert get(p2, addr="127.0.0.2") == (200, "two")


# ---- locations

def test_location_tree_with_many_siblings_and_levels(weir):
    """Longest-prefix lookup through a tree with many siblings, exact
    and prefix locations of one name, and three nested levels."""
    port = weir.port()
    locs = []
    for i in range(40):
        locs.append('location /p%02d { return 200 "p%02d"; }' % (i, i))
    locs.append('location = /p07 { return 200 "exact-p07"; }')
    locs.append('location /p07/x { return 200 "p07x"; }')
    locs.append('location /p1 { return 200 "p1"; }')
    locs.append('location /q/ { return 200 "q";\n'
                '  location /q/r/ { return 200 "qr";\n'
                '    location /q/r/s/ { return 200 "qrs"; }\n'
                '  }\n'
                '  location /q/rr { return 200 "qrr"; }\n'
                '}')
    locs.append('location / { return 200 "root"; }')
    body = ("    server {\n        listen 127.0.0.1:%d;\n%s\n    }\n"
            % (port, "\n".join(locs)))
    start(weir, body, [port])

    table = [("/", "root"), ("/p", "root"), ("/p0", "root"),
             ("/p1", "p1"), ("/p1x", "p1"), ("/p2", "root"),
             ("/p07", "exact-p07"), ("/p07/", "p07"), ("/p07/x", "p07x"),
             ("/p07/xy", "p07x"), ("/p39/a", "p39"), ("/p40", "root"),
             ("/q", "root"), ("/q/", "q"), ("/q/r", "q"), ("/q/r/", "qr"),
             ("/q/r/s/t", "qrs"), ("/q/rr/", "qrr"), ("/q/z", "q")]
    for i in range(40):
        table.append(("/p%02d/z" % i, "p%02d" % i))
    for path, answer in table:
        assert get(port, path) == (200, answer), path


def test_try_files_and_status(weir, proto):
    port = weir.port()
    body = ("    server {\n        listen 127.0.0.1:%d;\n" % port
            + protoclient.conf_line() +
            "        location /t/ { try_files $uri /exists.txt; }\n"
            "        location /s/ { try_files /nofile =403; }\n"
            "        location /d/ { try_files /nofile/ @n; }\n"
            "        location @n { return 200 \"named\"; }\n"
            "    }\n")
    weir.write("html/exists.txt", "exists\n")
    start(weir, body, [port])

    def pget(path):
        status, _, data = protoclient.request(port, "GET", path)
        return status, data.decode()

    assert pget("/t/none") == (200, "exists\n")
    assert pget("/s/x")[0] == 403
    assert pget("/d/x") == (200, "named")


def test_core_directives_are_accepted(weir):
    """Every core directive with a valid value passes `weir -t`."""
    conf = """
    types { text/html html htm; text/css css; }
    default_type application/octet-stream;
    client_header_buffer_size 2k;
    large_client_header_buffers 4 16k;
    client_header_timeout 30s;
    client_body_timeout 30s;
    client_max_body_size 10m;
    client_body_buffer_size 32k;
    client_max_headers 50;
    send_timeout 20s;
    keepalive_timeout 10s 5;
    keepalive_requests 200;
    lingering_close always;
    lingering_time 10s;
    lingering_timeout 2s;
    ignore_invalid_headers off;
    underscores_in_headers on;
    merge_slashes off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay off;
    etag off;
    if_modified_since before;
    server_tokens off;
    chunked_transfer_encoding off;
    log_not_found off;
    absolute_redirect off;
    port_in_redirect off;
    server_name_in_redirect on;
    reset_timedout_connection on;
    connection_pool_size 1k;
    request_pool_size 8k;
    error_page 404 /404.html;
    error_page 500 502 503 =200 /50x.html;
    error_log logs/http.log warn;
    server {
        listen 127.0.0.1:%d default_server reuseport backlog=64
               rcvbuf=64k sndbuf=64k;
        server_name example.com *.example.com www.example.* ~^(?<x>.+)$ "";
        error_log logs/server.log;
        keepalive_timeout 0;
        location / { root html; }
        location /alias/ { alias html/; }
        location = /x { internal; }
        location ^~ /y/ { location ~ z$ { } }
        location ~* \\.PNG$ { try_files $uri =404; }
        location @named { error_page 404 = @named; }
    }
""" % weir.port()
    weir.conf("http {%s}\n" % conf)
    res = weir.run(["-t"])
    assert res.returncode == 0, res.stderr
    assert "test is successful" in res.stderr


# ---- weir -t errors

def t_fails(weir, http_body):
    weir.allow.append(r"\[emerg\]")
    text = "events {\n}\nhttp {\n%s\n}\n" % http_body
    path = weir.conf(text, preamble=False, events=False)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 1, res.stderr
    assert "weir: configuration file %s test failed" % path \
        in res.stderr.splitlines(), res.stderr
    return path, res.stderr.splitlines()


ERRORS = [
    ("duplicate_default",
     "server { listen 127.0.0.1:8080 default_server; }\n"
     "server { listen 127.0.0.1:8080 default_server; }",
     "a duplicate default server for 127.0.0.1:8080", 5),
    ("duplicate_listen",
     "server {\nlisten 127.0.0.1:8080;\nlisten 127.0.0.1:8080;\n}",
     "a duplicate listen 127.0.0.1:8080", 6),
    ("duplicate_options",
     "server { listen 127.0.0.1:8080 backlog=5; }\n"
     "server { listen 127.0.0.1:8080 rcvbuf=8k; }",
     "duplicate listen options for 127.0.0.1:8080", 5),
    ("bad_port",
     "server { listen 127.0.0.1:99999; }",
     'invalid port in "127.0.0.1:99999" of the "listen" directive', 4),
    ("bad_address",
     "server { listen 300.1.1.1:80; }",
     None, 4),
    ("quic_not_yet",
     "server { listen 127.0.0.1:8080 quic; }",
     'the "quic" parameter of the "listen" directive is not supported yet',
     4),
    ("bad_listen_param",
     "server { listen 127.0.0.1:8080 foo; }",
     'invalid parameter "foo"', 4),
    ("bad_backlog",
     "server { listen 127.0.0.1:8080 backlog=x; }",
     'invalid backlog "backlog=x"', 4),
    ("listen_in_http",
     "listen 8080;",
     '"listen" directive is not allowed here', 4),
    ("outside",
     "server {\nlocation /a {\nlocation /b { }\n}\n}",
     'location "/b" is outside location "/a"', 6),
    ("inside_exact",
     "server {\nlocation = /a {\nlocation /a/b { }\n}\n}",
     'location "/a/b" cannot be inside the exact location "/a"', 6),
    ("nested_named",
     "server {\nlocation /a {\nlocation @x { }\n}\n}",
     'named location "@x" can be on the server level only', 6),
    ("inside_named",
     "server {\nlocation @x {\nlocation /a { }\n}\n}",
     'location "/a" cannot be inside the named location "@x"', 6),
    ("bad_modifier",
     "server {\nlocation !! /a { }\n}",
     'invalid location modifier "!!"', 5),
    ("bad_regex",
     "server {\nlocation ~ \"(\" { }\n}",
     None, 5),
    ("bad_wildcard",
     "server {\nserver_name a*b.com;\n}",
     'invalid server name or wildcard "a*b.com"', 5),
    ("suspicious_name",
     "server {\nserver_name a/b;\n}",
     'server name "a/b" has suspicious symbols', 5),
    ("root_and_alias",
     "server {\nlocation /x {\nroot /a;\nalias /b;\n}\n}",
     '"alias" directive is duplicate, "root" directive was specified '
     'earlier', 7),
    ("error_page_code",
     "server {\nerror_page 200 /x;\n}",
     'value "200" must be between 300 and 599', 5),
    ("duplicate_try_files",
     "server {\ntry_files a b;\ntry_files c d;\n}",
     '"try_files" directive is duplicate', 6),
    ("two_http",
     "}\nhttp {",
     '"http" directive is duplicate', 5),
]


@pytest.mark.parametrize("name,body,reason,line", ERRORS,
                         ids=[e[0] for e in ERRORS])
def test_t_errors(weir, name, body, reason, line):
    path, lines = t_fails(weir, body)
    if reason is None:
        want = " in %s:%d" % (path, line)
        assert any(ln.startswith("weir: [emerg] ") and ln.endswith(want)
                   for ln in lines), "\n".join(lines)
    else:
        want = "weir: [emerg] %s in %s:%d" % (reason, path, line)
        assert want in lines, "want %r in:\n%s" % (want, "\n".join(lines))


DUPLICATES = [
    ("prefix", "location /a { }\nlocation /a { }", '"/a"'),
    ("noregex", "location /a { }\nlocation ^~ /a { }", '"/a"'),
    ("exact", "location = /a { }\nlocation = /a { }", '"/a"'),
    ("named", "location @a { }\nlocation @a { }", '"@a"'),
]


@pytest.mark.parametrize("name,locs,shown", DUPLICATES,
                         ids=[d[0] for d in DUPLICATES])
def test_duplicate_locations(weir, name, locs, shown):
    path, lines = t_fails(weir, "server {\n%s\n}" % locs)
    want = "weir: [emerg] duplicate location %s in %s:6" % (shown, path)
    assert want in lines, "want %r in:\n%s" % (want, "\n".join(lines))


def test_exact_and_prefix_of_one_name_coexist(weir):
    weir.conf("http {\nserver {\nlisten 127.0.0.1:%d;\n"
              "location = /a { }\nlocation /a { }\n}\n}\n" % weir.port())
    res = weir.run(["-t"])
    assert res.returncode == 0, res.stderr


def test_conflicting_server_name_is_a_warning(weir):
    port = weir.port()
    weir.conf("http {\n%s%s}\n" % (server(port, "a.test", "one"),
                                   server(port, "a.test", "two")))
    res = weir.run(["-t"])
    assert res.returncode == 0, res.stderr
    assert ('[warn] conflicting server name "a.test" on 127.0.0.1:%d, '
            'ignored' % port) in res.stderr


def test_http_reloads_under_load_fail_nothing(weir):
    """50 reloads while clients keep sending HTTP requests, on new and on
    keep-alive connections: no request fails, and the answers move to the
    new configuration."""
    import threading

    port = weir.port()
    tport = weir.port()

    def conf(n):
        weir.conf("""
worker_processes 2;
test_listen 127.0.0.1:%d;
test_value %d;
http {
    server {
        listen 127.0.0.1:%d;
        location / { return 200 "v=%d"; }
    }
}
""" % (tport, n, port, n), module=True)

    conf(0)
    weir.start()

    stop = threading.Event()
    failures = []
    counts = [0, 0]

    def client(keepalive, slot):
        conn = None
        used = False
        deadline = time.monotonic() + 120
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port,
                                                      timeout=10)
                    used = False
                conn.request("GET", "/")
                resp = conn.getresponse()
                body = resp.read()
                if resp.status != 200 or not body.startswith(b"v="):
                    failures.append((resp.status, body))
                counts[slot] += 1
                used = True
                if not keepalive or resp.getheader("Connection") == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as exc:
                # an old worker drains its idle keep-alive connections
                # (keepalive_drain_timeout) instead of closing them: no
                # failure is allowed, not even on a reused connection
                failures.append("%s connection: %r"
                                % ("reused" if used else "new", exc))
                if conn is not None:
                    conn.close()
                    conn = None
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=client, args=(False, 0), daemon=True),
               threading.Thread(target=client, args=(True, 1), daemon=True)]
    for t in threads:
        t.start()
    try:
        for n in range(1, 51):
            conf(n)
            answer = weir.reload()
            assert answer["value"] == n
    finally:
        stop.set()
        for t in threads:
            t.join(30)

    assert failures == []
    assert counts[0] > 50 and counts[1] > 50, counts

    weir.settle()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", "/")
    assert conn.getresponse().read() == b"v=50"
    conn.close()
