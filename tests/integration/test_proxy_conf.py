"""The proxy module's configuration: directive errors name file:line and
the wrong value (`weir -t`), and the URI the origin is asked for follows
nginx's proxy_pass rules (no URI part, a URI part replacing the location
prefix, a changed URI, variables, regex and named locations).

The origin is a second server block of the same weir answering
"$request_method $request_uri": what it received on its request line.
The behaviour of the proxy (headers, bodies, errors, timeouts) is tested
in test_proxy.py."""

import http.client
import socket

import pytest

import protoclient
from weirtest import DEADLINE, connect, read_all, run_weir, wait_for


HEAD = "error_log logs/error.log info;\nevents {\n}\n"


# ---- configuration errors


def expect_error(weir, http, reason, line):
    """`weir -t` on HEAD + "http { <http> }" fails with reason at line
    (counted in the whole file, HEAD is 3 lines)."""
    weir.allow.append(r"\[emerg\]")
    path = weir.conf(HEAD + "http {\n" + http + "}\n", preamble=False,
                     events=False)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    lines = res.stderr.splitlines()
    assert res.returncode == 1, res.stderr
    want = "weir: [emerg] %s in %s:%d" % (reason, path, line)
    assert want in lines, "want %r in:\n%s" % (want, res.stderr)


def server(*lines):
    return ("    server {\n        listen 127.0.0.1:1;\n"
            + "".join("        %s\n" % l for l in lines) + "    }\n")


# (name, http block text, reason, line); line 4 is "http {", 5 "server {",
# 6 the listen, 7 the first line given to server()
ERRORS = [
    ("twice",
     server("location / {",
            "    proxy_pass http://127.0.0.1:8081;",
            "    proxy_pass http://127.0.0.1:8082;",
            "}"),
     '"proxy_pass" directive is duplicate', 9),

    ("bad_prefix",
     server("location / { proxy_pass ftp://127.0.0.1; }"),
     'invalid URL prefix in "ftp://127.0.0.1"', 7),

    ("no_scheme",
     server("location / { proxy_pass 127.0.0.1:8081; }"),
     'invalid URL prefix in "127.0.0.1:8081"', 7),

    ("no_host",
     server("location / { proxy_pass http:///x; }"),
     'no host in "http:///x"', 7),

    ("bad_port",
     server("location / { proxy_pass http://127.0.0.1:99999; }"),
     'invalid port in "http://127.0.0.1:99999"', 7),

    ("empty_port",
     server("location / { proxy_pass http://127.0.0.1:/; }"),
     'invalid port in "http://127.0.0.1:/"', 7),

    ("bad_host",
     server("location / { proxy_pass http://user@127.0.0.1; }"),
     'invalid host in "http://user@127.0.0.1"', 7),

    ("uri_in_regex_location",
     server("location ~ ^/a {",
            "    proxy_pass http://127.0.0.1:8081/b/;",
            "}"),
     '"proxy_pass" cannot have URI part in location given by regular '
     'expression, or inside named location', 8),

    ("uri_in_named_location",
     server("location @up {",
            "    proxy_pass http://127.0.0.1:8081/;",
            "}"),
     '"proxy_pass" cannot have URI part in location given by regular '
     'expression, or inside named location', 8),

    ("in_server",
     server("proxy_pass http://127.0.0.1:8081;"),
     '"proxy_pass" directive is not allowed here', 7),

    ("unknown_variable",
     server("location / { proxy_pass http://$no_such_thing; }"),
     'unknown "no_such_thing" variable', 7),

    ("next_upstream",
     server("proxy_next_upstream error bogus;"),
     'invalid value "bogus" in "proxy_next_upstream" directive', 7),

    ("buffers_zero",
     server("proxy_buffers 0 4k;"),
     '"proxy_buffers" directive invalid value', 7),

    ("buffers_size",
     server("proxy_buffers 8 lots;"),
     '"proxy_buffers" directive invalid value', 7),

    ("buffer_size",
     server("proxy_buffer_size huge;"),
     '"proxy_buffer_size" directive invalid value', 7),

    ("timeout",
     server("proxy_read_timeout soon;"),
     '"proxy_read_timeout" directive invalid value', 7),

    ("ping_idle",
     server("proxy_http2_ping_idle often;"),
     '"proxy_http2_ping_idle" directive invalid value', 7),

    ("http_version",
     server("proxy_http_version 2.0;"),
     'invalid value "2.0" in "proxy_http_version" directive', 7),

    ("flag",
     server("proxy_buffering maybe;"),
     'invalid value "maybe" in "proxy_buffering" directive, it must be '
     '"on" or "off"', 7),

    ("set_header_args",
     server("proxy_set_header X-A;"),
     'invalid number of arguments in "proxy_set_header" directive', 7),

    ("set_header_name",
     server('proxy_set_header "X A" 1;'),
     'invalid header name "X A"', 7),

    ("set_header_content_length",
     server("proxy_set_header Content-Length 10;"),
     '"Content-Length" cannot be set: weir frames the body to the origin '
     'itself', 7),

    ("set_header_transfer_encoding",
     server("proxy_set_header transfer-encoding chunked;"),
     '"transfer-encoding" cannot be set: weir frames the body to the '
     'origin itself', 7),

    ("redirect_default_first",
     server("location / {",
            "    proxy_redirect default;",
            "    proxy_pass http://127.0.0.1:8081;",
            "}"),
     '"proxy_redirect" directive default must come after "proxy_pass"', 8),

    ("redirect_default_variables",
     server("location / {",
            "    proxy_pass http://$host;",
            "    proxy_redirect default;",
            "}"),
     '"proxy_redirect" directive default cannot be used with '
     '"proxy_pass" with variables', 9),

    ("redirect_parameter",
     server("proxy_redirect sometimes;"),
     'invalid parameter "sometimes"', 7),

    ("redirect_after_off",
     server("proxy_redirect off;",
            "proxy_redirect http://a/ /;"),
     '"proxy_redirect" directive cannot follow "proxy_redirect off"', 8),

    ("redirect_regex",
     server("proxy_redirect ~^(http:// /;"),
     None, 7),
]


@pytest.mark.parametrize("http,reason,line",
                         [c[1:] for c in ERRORS],
                         ids=[c[0] for c in ERRORS])
def test_configuration_error(weir, http, reason, line):
    if reason is None:
        # the regex library's own message; only file:line is ours
        weir.allow.append(r"\[emerg\]")
        path = weir.conf(HEAD + "http {\n" + http + "}\n", preamble=False,
                         events=False)
        res = run_weir(["-t", "-c", path], prefix=weir.prefix,
                       env=weir.env())
        assert res.returncode == 1, res.stderr
        assert ("in %s:%d" % (path, line)) in res.stderr, res.stderr
        return
    expect_error(weir, http, reason, line)


NO_SSL = ('https in "proxy_pass" requires the ssl module (configure '
          '--with-http_ssl_module, or load_module '
          'modules/weir_http_ssl_module.so)')


def ssl_built_in():
    """Is the ssl module linked into the binary under test (`weir -V`)?
    A dynamic build's module is not there without its load_module."""
    import tlspki

    try:
        return tlspki.ssl_build() == "static"
    except AssertionError:
        return False


@pytest.mark.parametrize("url", ["https://127.0.0.1", "https://$host",
                                 "https://127.0.0.1:8443/x"])
def test_https_needs_the_ssl_module(weir, url):
    """proxy_pass https:// is refused at its file:line, naming the module,
    when the ssl module is neither built in nor loaded; accepted when it
    is built in."""
    http = server("location / { proxy_pass %s; }" % url)
    if not ssl_built_in():
        expect_error(weir, http, NO_SSL, 7)
        return
    path = weir.conf(HEAD + "http {\n" + http + "}\n", preamble=False,
                     events=False)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 0, res.stderr


def test_valid_configuration(weir):
    """Every directive in every context it is allowed in."""
    every = """
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header Content-Length "";
        proxy_pass_request_headers on;
        proxy_pass_request_body on;
        proxy_method $request_method;
        proxy_http_version 1.1;
        proxy_hide_header X-Secret;
        proxy_pass_header Server;
        proxy_redirect http://a/ /b/;
        proxy_redirect ~*^http://(c)/(.*)$ /$1/$2;
        proxy_intercept_errors off;
        proxy_buffering on;
        proxy_request_buffering on;
        proxy_buffers 8 4k;
        proxy_buffer_size 4k;
        proxy_busy_buffers_size 8k;
        proxy_max_temp_file_size 1m;
        proxy_temp_file_write_size 8k;
        proxy_connect_timeout 5s;
        proxy_send_timeout 5s;
        proxy_read_timeout 5s;
        proxy_next_upstream error timeout http_502;
        proxy_next_upstream_tries 3;
        proxy_next_upstream_timeout 10s;
        proxy_ignore_client_abort off;
        proxy_pass_trailers on;
        proxy_socket_keepalive off;
        proxy_via off;
"""
    path = weir.conf(HEAD + "http {\n" + every + "server {\n"
                     "listen 127.0.0.1:1;\n" + every
                     + "location / {\n" + every
                     + "proxy_pass http://127.0.0.1:8081/;\n"
                     + "proxy_redirect default;\n}\n"
                     + "location /o/ {\nproxy_pass http://127.0.0.1:8081;\n"
                     + "proxy_redirect off;\n}\n"
                     + "location /v/ {\n"
                     + "proxy_pass http://$host:8081$request_uri;\n}\n"
                     + "location /u/ {\nproxy_pass http://backend/u/;\n}\n"
                     + "location @named {\nproxy_pass http://backend;\n}\n"
                     + "location ~ ^/re/ {\nproxy_pass http://backend;\n}\n"
                     + "}\nupstream backend {\nserver 127.0.0.1:8081;\n}\n"
                     + "}\n", preamble=False, events=False)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 0, res.stderr


# ---- the URI the origin is asked for


def get(port, path, headers=None):
    """(status, headers, body text) of one request on a fresh
    connection, over the protocol of the test (protoclient.PROTO); path
    is sent as it is."""
    if protoclient.PROTO == "h2":
        status, hdrs, body = protoclient.request(port, "GET", path, headers)
        return status, hdrs, body.decode("latin-1")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    try:
        c.putrequest("GET", path, skip_accept_encoding=True,
                     skip_host="Host" in (headers or {}))
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        c.endheaders()
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, \
            r.read().decode("latin-1")
    finally:
        c.close()


def raw(port, data):
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(data)
        return read_all(s, 65536)
    finally:
        s.close()


def wait_http(port):
    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_for(up, what="the HTTP port to accept")


@pytest.fixture
def proxied(weir, proto):
    """A weir with the origin server block on port o and the proxy one on
    port p (with HTTP/2 on for the "h2" runs of proto); returns (p, o)."""
    p, o = weir.port(), weir.port()
    html = weir.path("html")
    weir.write("html/exists/index.html", "here\n")
    weir.conf("""
http {
    server {
        listen 127.0.0.1:%(o)d;
        location / {
            return 200 "$request_method $request_uri";
        }
        location /redirect/ {
            return 302 "http://127.0.0.1:%(o)d/y/target?a=1";
        }
    }

    server {
        listen 127.0.0.1:%(p)d;
%(h2)s        root %(html)s;

        location /plain/ { proxy_pass http://127.0.0.1:%(o)d; }
        location /slash/ { proxy_pass http://127.0.0.1:%(o)d/; }
        location /sub/ { proxy_pass http://127.0.0.1:%(o)d/x/; }
        location /noslash { proxy_pass http://127.0.0.1:%(o)d/z; }
        location = /exact { proxy_pass http://127.0.0.1:%(o)d/other; }

        location /group/ { proxy_pass http://origin/g/; }

        # a changed URI: error_page and try_files redirect internally
        location /err/ {
            error_page 404 = /changed/by-error-page;
            return 404;
        }
        location /tf/ {
            try_files $uri /changed/by-try-files?k=v%%20w;
        }
        location /changed/ { proxy_pass http://127.0.0.1:%(o)d; }
        location /changed-sub/ { proxy_pass http://127.0.0.1:%(o)d/cs/; }
        location /tfs/ {
            try_files $uri "/changed-sub/a b?x";
        }

        # a named location keeps the client's URI
        location /nm/ {
            error_page 404 = @origin;
            return 404;
        }
        location @origin { proxy_pass http://127.0.0.1:%(o)d; }

        location ~ ^/re/ { proxy_pass http://127.0.0.1:%(o)d; }

        # variables: the evaluated URI as it is, or the client's
        location /var/ { proxy_pass http://127.0.0.1:$http_x_port; }
        location /varu/ {
            proxy_pass http://127.0.0.1:$http_x_port/fixed?a=$arg_a;
        }
        location ~ ^/rv/(.*)$ {
            proxy_pass http://127.0.0.1:$http_x_port/captured/$1;
        }

        location /method/ {
            proxy_method POST;
            proxy_pass http://127.0.0.1:%(o)d;
        }

        location /redir/ { proxy_pass http://127.0.0.1:%(o)d/redirect/; }
        location /redir-off/ {
            proxy_pass http://127.0.0.1:%(o)d/redirect/;
            proxy_redirect off;
        }
        location /redir-rule/ {
            proxy_pass http://127.0.0.1:%(o)d/redirect/;
            proxy_redirect http://127.0.0.1:%(o)d/y/ /elsewhere/;
        }
        location /redir-re/ {
            proxy_pass http://127.0.0.1:%(o)d/redirect/;
            proxy_redirect ~^http://[^/]+/(\\w)/(.*)$ /re-$1/$2;
        }
    }

    upstream origin {
        server 127.0.0.1:%(o)d;
    }
}
""" % {"o": o, "p": p, "html": html, "h2": protoclient.conf_line()})
    weir.start(check_ports=False)
    wait_http(p)
    wait_http(o)
    return p, o


URIS = [
    # no URI part: the client's URI byte for byte
    ("/plain/a%2Fb%20c?x=1&y=%41", "/plain/a%2Fb%20c?x=1&y=%41"),
    ("/plain/", "/plain/"),
    ("/plain/%7Euser/", "/plain/%7Euser/"),
    # a URI part replaces the location prefix; the rest is decoded and
    # escaped again
    ("/slash/", "/"),
    ("/slash/a/b?x=1", "/a/b?x=1"),
    ("/slash/a%2Fb", "/a/b"),
    ("/slash/a%20b%25c?q=%20", "/a%20b%25c?q=%20"),
    ("/slash/%7Euser", "/~user"),
    ("/slash/a%3Fb", "/a%3Fb"),
    ("/slash/a%23b", "/a%23b"),
    ("/slash/%C3%A9", "/%C3%A9"),
    ("/sub/p", "/x/p"),
    ("/sub/", "/x/"),
    ("/sub/p/q?r", "/x/p/q?r"),
    ("/noslash/q", "/z/q"),
    ("/noslashfoo", "/zfoo"),
    ("/exact", "/other"),
    ("/exact?a=b", "/other?a=b"),
    ("/group/h", "/g/h"),
    # a changed URI goes escaped, with the new arguments
    ("/err/x%20y?old=1", "/changed/by-error-page"),
    ("/tf/missing", "/changed/by-try-files?k=v%20w"),
    ("/tfs/missing", "/cs/a%20b?x"),
    # a named location keeps the client's URI
    ("/nm/a%20b?c", "/nm/a%20b?c"),
    # a regex location without URI part
    ("/re/a%2Fb?c", "/re/a%2Fb?c"),
]


@pytest.mark.parametrize("sent,seen", URIS, ids=[u[0] for u in URIS])
def test_uri(proxied, sent, seen):
    p, _ = proxied
    status, _, body = get(p, sent)
    assert status == 200, (status, body)
    assert body == "GET " + seen


def test_uri_with_variables(proxied):
    p, o = proxied
    port = {"X-Port": str(o)}

    # without a URI part: the client's URI
    status, _, body = get(p, "/var/a%20b?c=d", port)
    assert (status, body) == (200, "GET /var/a%20b?c=d")

    # with one: the evaluated URI as it is
    status, _, body = get(p, "/varu/anything?a=42", port)
    assert (status, body) == (200, "GET /fixed?a=42")

    status, _, body = get(p, "/rv/x/y?z", port)
    assert (status, body) == (200, "GET /captured/x/y")


def test_uri_variables_bad_url(proxied, weir):
    """A URL from variables that is not one is a 500 with a log line."""
    p, _ = proxied
    weir.allow.append(r"invalid port in proxy_pass URL")
    status, _, _ = get(p, "/var/x", {"X-Port": "99999"})
    assert status == 500
    assert 'invalid port in proxy_pass URL "http://127.0.0.1:99999"' \
        in weir.log()


def test_method(proxied):
    p, _ = proxied
    status, _, body = get(p, "/method/m?1")
    assert (status, body) == (200, "POST /method/m?1")


def test_absolute_form(proxied, proto):
    """A request line with an absolute URI: the origin gets the path."""
    if proto == "h2":
        pytest.skip("HTTP/1 request line (absolute-form)")
    p, _ = proxied
    data = raw(p, b"GET http://example.com/plain/abs?q HTTP/1.1\r\n"
                  b"Host: example.com\r\nConnection: close\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200 "), data
    assert data.endswith(b"GET /plain/abs?q"), data


# ---- proxy_redirect


REDIRECTS = [
    # the default: "http://$proxy_host/redirect/" -> "/redir/"; the
    # origin's Location names /y/, so it does not match
    ("/redir/", None),
    ("/redir-off/", None),
    ("/redir-rule/", "/elsewhere/target?a=1"),
    ("/redir-re/", "/re-y/target?a=1"),
]


@pytest.mark.parametrize("path,location", REDIRECTS,
                         ids=[r[0] for r in REDIRECTS])
def test_redirect(proxied, path, location):
    p, o = proxied
    status, headers, _ = get(p, path)
    assert status == 302
    if location is None:
        location = "http://127.0.0.1:%d/y/target?a=1" % o
    else:
        # a rewritten Location is made absolute (absolute_redirect on)
        location = "http://127.0.0.1:%d%s" % (p, location)
    assert headers["location"] == location


def test_redirect_default(weir):
    """proxy_redirect default replaces "http://$proxy_host" + the URI part
    with the location's name (and absolute_redirect, on by default, makes
    the result name the proxy; an origin's own relative Location is left
    alone)."""
    p, o = weir.port(), weir.port()
    weir.conf("""
http {
    server {
        listen 127.0.0.1:%(o)d;
        location /back/ { return 301 "http://127.0.0.1:%(o)d/back/to/x"; }
        location / { return 301 "http://127.0.0.1:%(o)d/else"; }
        location /relative/ {
            absolute_redirect off;
            return 302 "/somewhere?x";
        }
    }
    server {
        listen 127.0.0.1:%(p)d;
        location /front/ { proxy_pass http://127.0.0.1:%(o)d/back/; }
        location /whole/ { proxy_pass http://127.0.0.1:%(o)d; }
        location /rel/ { proxy_pass http://127.0.0.1:%(o)d/relative/; }
        location /nested/ {
            proxy_pass http://127.0.0.1:%(o)d/back/;
            location /nested/inner/ {
                proxy_pass http://127.0.0.1:%(o)d/back/;
            }
        }
    }
}
""" % {"o": o, "p": p})
    weir.start(check_ports=False)
    wait_http(p)

    me = "http://127.0.0.1:%d" % p

    status, headers, _ = get(p, "/front/")
    assert (status, headers["location"]) == (301, me + "/front/to/x")

    # without a URI part "http://$proxy_host/" becomes "/"
    status, headers, _ = get(p, "/whole/")
    assert (status, headers["location"]) == (301, me + "/else")

    # a nested location makes its own default
    status, headers, _ = get(p, "/nested/inner/")
    assert (status, headers["location"]) == (301,
                                             me + "/nested/inner/to/x")

    # the origin's relative Location is relayed as it is
    status, headers, _ = get(p, "/rel/")
    assert (status, headers["location"]) == (302, "/somewhere?x")


# ---- the proxy's variables and proxy_set_header inheritance


def test_variables_and_header_lists(weir):
    """$proxy_add_x_forwarded_for, $proxy_add_forwarded, $proxy_host,
    $connection_upgrade, and proxy_set_header lists: a level without one
    inherits the whole list above, a level with one replaces it."""
    p, o = weir.port(), weir.port()
    weir.conf("""
http {
    proxy_set_header X-Level http;
    server {
        listen 127.0.0.1:%(o)d;
        location / {
            return 200 "xff=$http_x_forwarded_for|fwd=$http_forwarded|host=$http_host|conn=$http_connection|lvl=$http_x_level|ae=$http_accept_encoding|ph=$http_x_ph|via=$http_via";
        }
    }
    server {
        listen 127.0.0.1:%(p)d;
        location /inherit/ { proxy_pass http://127.0.0.1:%(o)d/; }
        location /own/ {
            proxy_pass http://127.0.0.1:%(o)d/;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header Forwarded $proxy_add_forwarded;
            proxy_set_header Accept-Encoding "";
            proxy_set_header X-Ph "$proxy_host $proxy_port";
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $http_host;
            proxy_via on;
        }
    }
}
""" % {"o": o, "p": p})
    weir.start(check_ports=False)
    wait_http(p)

    status, _, body = get(p, "/inherit/", {"Accept-Encoding": "gzip",
                                           "X-Forwarded-For": "1.2.3.4"})
    assert status == 200
    assert body == ("xff=1.2.3.4|fwd=|host=127.0.0.1:%d|conn=|lvl=http|"
                    "ae=gzip|ph=|via=" % o)

    status, headers, body = get(p, "/own/", {
        "Accept-Encoding": "gzip", "X-Forwarded-For": "1.2.3.4",
        "Forwarded": "for=5.6.7.8", "Host": "front.test:8443",
        "Via": "1.0 first"})
    assert status == 200
    assert body == ('xff=1.2.3.4, 127.0.0.1|'
                    'fwd=for=5.6.7.8, for=127.0.0.1;proto=http;'
                    'host="front.test:8443"|host=front.test:8443|conn=|'
                    'lvl=|ae=|ph=127.0.0.1:%d %d|via=1.0 first, 1.1 weir'
                    % (o, o))
    assert headers["via"] == "1.1 weir"
