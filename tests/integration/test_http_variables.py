"""Variables and complex values: each variable is returned by
`return 200 "$var"` (or written by log_format) and checked against what
the client sent; unknown names and bad syntax are configuration errors
reported at the line of their first use."""

import http.client
import os
import re
import socket
import time

import protoclient
from weirtest import DEADLINE, connect, read_all, wait_for


# ---- helpers


VARS = [
    "host", "hostname", "uri", "document_uri", "request_uri", "args",
    "query_string", "is_args", "remote_addr", "remote_port", "server_addr",
    "server_port", "server_name", "server_protocol", "scheme", "https",
    "request", "request_method", "request_length", "request_time",
    "request_id", "connection", "connection_requests", "msec",
    "time_local", "time_iso8601", "pid", "content_length", "content_type",
    "document_root", "realpath_root", "weir_version", "binary_remote_addr",
]


def conf(weir, port, extra="", http_extra="", server_name="www.test"):
    """One server on 127.0.0.1:port with a location /v/NAME returning
    "$NAME" for every name of VARS; returns the root directory."""
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    locs = "".join('        location = /v/%s { return 200 "$%s"; }\n'
                   % (v, v) for v in VARS)
    body = ("http {\n"
            "%s\n"
            "    server {\n"
            "        listen 127.0.0.1:%d;\n"
            "%s"
            "        server_name %s other.test;\n"
            "        root %s;\n"
            "%s"
            "%s\n"
            "    }\n"
            "}\n" % (http_extra, port, protoclient.conf_line(), server_name,
                     html, locs, extra))
    weir.conf(body)
    return html


def start(weir, port):
    weir.start(check_ports=False)

    def up():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            return False
        s.close()
        return True

    wait_for(up, what="the HTTP port to accept")


def get(port, path, headers=None, method="GET", body=None):
    """(status, body text) of one request on a fresh connection, over
    the protocol of the test (protoclient.PROTO)."""
    status, _, data = protoclient.request(port, method, path, headers, body)
    return status, data.decode("latin-1")


def raw(port, data, limit=65536):
    """Sends raw bytes on a fresh connection and reads until the server
    closes; returns (client port, response bytes)."""
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    try:
        local_port = s.getsockname()[1]
        s.sendall(data)
        return local_port, read_all(s, limit)
    finally:
        s.close()


def raw_body(response):
    head, _, body = response.partition(b"\r\n\r\n")
    return head, body


def var(port, name, path_args="", headers=None, **kw):
    status, text = get(port, "/v/%s%s" % (name, path_args), headers, **kw)
    assert status == 200, (name, status, text)
    return text


# ---- every variable, one location each


def test_request_variables(make_weir, proto):
    weir = make_weir()
    port = weir.port()
    html = conf(weir, port,
                extra='        location = /v/http2 { return 200 "$http2"; }\n')
    start(weir, port)
    version = {"h1": "HTTP/1.1", "h2": "HTTP/2.0"}[proto]

    assert var(port, "host", headers={"Host": "WWW.Example.COM:8080"}) \
        == "www.example.com"
    assert var(port, "hostname") == socket.gethostname()
    assert var(port, "uri", "?x=1") == "/v/uri"
    assert var(port, "document_uri", "?x=1") == "/v/document_uri"
    assert var(port, "request_uri", "?a=1&b=%20c") \
        == "/v/request_uri?a=1&b=%20c"
    assert var(port, "args", "?a=1&b=2") == "a=1&b=2"
    assert var(port, "query_string", "?q=x") == "q=x"
    assert var(port, "is_args", "?q") == "?"
    assert var(port, "is_args") == ""
    assert var(port, "remote_addr") == "127.0.0.1"
    assert var(port, "server_addr") == "127.0.0.1"
    assert var(port, "server_port") == str(port)
    assert var(port, "server_name") == "www.test"
    assert var(port, "server_protocol") == version
    assert var(port, "http2") == {"h1": "", "h2": "h2c"}[proto]
    assert var(port, "scheme") == "http"
    assert var(port, "https") == ""
    assert var(port, "request", "?k=v") == "GET /v/request?k=v " + version
    assert var(port, "request_method", method="DELETE") == "DELETE"
    assert re.fullmatch(r"\d+\.\d{3}", var(port, "request_time"))
    assert re.fullmatch(r"\d+", var(port, "connection"))
    assert var(port, "connection_requests") == "1"

    msec = var(port, "msec")
    assert re.fullmatch(r"\d+\.\d{3}", msec)
    assert abs(float(msec) - time.time()) < 60

    assert re.fullmatch(r"\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}",
                        var(port, "time_local"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d",
                        var(port, "time_iso8601"))

    assert int(var(port, "pid")) in weir.workers()
    assert var(port, "document_root") == html
    assert var(port, "realpath_root") == os.path.realpath(html)
    assert re.fullmatch(r"\d+\.\d+\.\d+", var(port, "weir_version"))

    assert var(port, "content_length", method="POST", body=b"abc",
               headers={"Content-Type": "text/x-test"}) == "3"
    assert var(port, "content_type", method="POST", body=b"abc",
               headers={"Content-Type": "text/x-test"}) == "text/x-test"


def test_request_id(make_weir, proto):
    weir = make_weir()
    port = weir.port()
    conf(weir, port)
    start(weir, port)

    ids = set()
    for _ in range(5):
        rid = var(port, "request_id")
        assert re.fullmatch(r"[0-9a-f]{32}", rid), rid
        ids.add(rid)
    assert len(ids) == 5


def test_raw_connection_variables(make_weir):
    weir = make_weir()
    port = weir.port()
    conf(weir, port)
    start(weir, port)

    # HTTP/1.0 without Host: $host falls back to the server name
    _, resp = raw(port, b"GET /v/host HTTP/1.0\r\n\r\n")
    head, body = raw_body(resp)
    assert head.startswith(b"HTTP/1.1 200") or head.startswith(b"HTTP/1.0 200")
    assert body == b"www.test"

    # an absolute request target names the host, not the Host header
    _, resp = raw(port, b"GET http://Abs.Example:81/v/host HTTP/1.1\r\n"
                        b"Host: other.test\r\nConnection: close\r\n\r\n")
    assert raw_body(resp)[1] == b"abs.example"

    _, resp = raw(port, b"GET /v/server_protocol HTTP/1.0\r\n\r\n")
    assert raw_body(resp)[1] == b"HTTP/1.0"

    local_port, resp = raw(port, b"GET /v/remote_port HTTP/1.0\r\n\r\n")
    assert raw_body(resp)[1] == str(local_port).encode()

    _, resp = raw(port, b"GET /v/binary_remote_addr HTTP/1.0\r\n\r\n")
    assert raw_body(resp)[1] == b"\x7f\x00\x00\x01"

    req = b"GET /v/request_length HTTP/1.0\r\nX-Pad: 12345\r\n\r\n"
    _, resp = raw(port, req)
    n = int(raw_body(resp)[1])
    assert 0 < n <= len(req)

    # keep-alive: the second request on one connection
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(b"GET /v/connection_requests HTTP/1.1\r\nHost: a\r\n\r\n"
                  b"GET /v/connection_requests HTTP/1.1\r\nHost: a\r\n"
                  b"Connection: close\r\n\r\n")
        data = read_all(s, 65536)
    finally:
        s.close()
    bodies = re.findall(rb"\r\n\r\n(\d+)", data)
    assert bodies == [b"1", b"2"], data


def test_prefix_variables(make_weir, proto):
    weir = make_weir()
    port = weir.port()
    conf(weir, port, extra=(
        '        location = /arg {\n'
        '            return 200 "[$arg_foo][$arg_x][$arg_none][$arg_e]";\n'
        '        }\n'
        '        location = /hdr {\n'
        '            return 200 "[$http_x_test][$http_user_agent]'
        '[$http_x_multi][$http_none]";\n'
        '        }\n'
        '        location = /cookie {\n'
        '            return 200 "[$cookie_session][$cookie_a][$cookie_no]";\n'
        '        }\n'))
    start(weir, port)

    assert get(port, "/arg?foo=bar&X=1&e=")[1] == "[bar][1][][]"

    resp = raw(port, b"GET /hdr HTTP/1.1\r\nHost: a\r\nX-Test: hello\r\n"
                     b"User-Agent: ua/1\r\nx-multi: one\r\nX-Multi: two\r\n"
                     b"Connection: close\r\n\r\n")[1]
    assert raw_body(resp)[1] == b"[hello][ua/1][one, two][]"

    assert get(port, "/cookie", {"Cookie": "a=1; session=xyz"})[1] \
        == "[xyz][1][]"


def test_script_syntax(make_weir, proto):
    weir = make_weir()
    port = weir.port()
    conf(weir, port, extra=(
        '        location = /braces { return 200 "${uri}x-$uri-x"; }\n'
        '        location = /dollar { return 200 "cost \\$5 $arg_a"; }\n'
        '        location = /plain { return 200 "no variables"; }\n'
        '        location ~ ^/cap/(\\w+)/(?<num>\\d+)$ {\n'
        '            return 200 "$1:$num:$2:$0";\n'
        '        }\n'))
    start(weir, port)

    assert get(port, "/braces")[1] == "/bracesx-/braces-x"
    assert get(port, "/dollar?a=x")[1] == "cost $5 x"
    assert get(port, "/plain")[1] == "no variables"
    assert get(port, "/cap/user/42")[1] == "user:42:42:/cap/user/42"


def test_server_name_captures(make_weir, proto):
    weir = make_weir()
    port = weir.port()
    conf(weir, port, server_name="~^(?<sub>\\w+)\\.example\\.test$",
         extra='        location = /sub { return 200 "$sub|$1"; }\n')
    start(weir, port)

    assert get(port, "/sub", {"Host": "api.example.test"})[1] == "api|api"


def test_log_variables(make_weir, proto):
    """Values known only at the end: status, sizes, response headers."""
    weir = make_weir()
    port = weir.port()
    log = weir.path("logs", "vars.log")
    conf(weir, port, http_extra=(
        "    log_format vars '$status|$body_bytes_sent|$bytes_sent|"
        "$sent_http_content_type|$sent_http_x_extra|$request_time|"
        "$request_method $request_uri|$http_x_none';\n"
        "    access_log %s vars;\n" % log),
        extra=('        location = /t {\n'
               '            add_header X-Extra "e-$arg_e";\n'
               '            return 201 "hello";\n'
               '        }\n'))
    start(weir, port)

    status, hdrs, body = protoclient.request(port, path="/t?e=1")
    assert (status, body) == (201, b"hello")
    ctype = hdrs.get("content-type", "-")

    def logged():
        try:
            with open(log) as f:
                return f.read().strip()
        except FileNotFoundError:
            return ""

    line = wait_for(logged, what="the access log line")
    fields = line.splitlines()[-1].split("|")
    assert fields[0] == "201"
    assert fields[1] == "5"
    assert int(fields[2]) > 5
    assert fields[3] == ctype
    assert fields[4] == "e-1"
    assert re.fullmatch(r"\d+\.\d{3}", fields[5])
    assert fields[6] == "GET /t?e=1"
    assert fields[7] == "-"


# ---- configuration errors


def conf_error(weir, port, extra):
    weir.allow.append(r"\[emerg\]")
    conf(weir, port, extra=extra)
    res = weir.run(["-t"])
    assert res.returncode == 1, res
    return res.stderr if isinstance(res.stderr, str) \
        else res.stderr.decode()


def test_unknown_variable(make_weir):
    weir = make_weir()
    port = weir.port()
    err = conf_error(weir, port,
                     '        location = /x { return 200 "$no_such_var"; }\n')
    with open(weir.conf_path) as f:
        line = [i for i, text in enumerate(f.read().splitlines(), 1)
                if "no_such_var" in text][0]
    assert ('unknown "no_such_var" variable in %s:%d'
            % (weir.conf_path, line)) in err, err
    assert "test failed" in err


def test_bad_syntax(make_weir):
    weir = make_weir()
    port = weir.port()
    err = conf_error(weir, port,
                     '        location = /x { return 200 "a${uri"; }\n')
    assert 'the closing bracket in "uri" variable is missing' in err, err

    err = conf_error(weir, port,
                     '        location = /x { return 200 "a $"; }\n')
    assert 'invalid variable name in "a $"' in err, err


def test_log_sizes_per_request(make_weir):
    """$bytes_sent and $body_bytes_sent count one request's response,
    also on a keep-alive connection."""
    weir = make_weir()
    port = weir.port()
    log = weir.path("logs", "sizes.log")
    conf(weir, port, http_extra=(
        "    log_format sizes '$request_uri $bytes_sent $body_bytes_sent "
        "$connection_requests';\n"
        "    access_log %s sizes;\n" % log),
        extra='        location /k { return 200 "abcdef"; }\n')
    start(weir, port)

    c = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    try:
        for path in ("/k1", "/k2", "/k3"):
            c.request("GET", path)
            r = c.getresponse()
            assert r.read() == b"abcdef"
    finally:
        c.close()

    def three():
        try:
            with open(log) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return None
        return lines if len(lines) == 3 else None

    lines = wait_for(three, what="three access log lines")
    first = lines[0].split()
    assert first[2] == "6"
    for n, line in enumerate(lines, 1):
        uri, sent, body, requests = line.split()
        assert uri == "/k%d" % n
        assert body == "6", lines
        assert sent == first[1], lines
        assert requests == str(n)
