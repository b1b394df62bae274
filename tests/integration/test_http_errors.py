"""Special responses: the built-in pages for 3xx/4xx/5xx, error_page (to
a URI, to a named location, with =code and =, to a redirect URL),
recursive_error_pages, HEAD, 444, and which errors close the
connection."""

import os
import socket

import protoclient
from weirtest import DEADLINE, connect, wait_for

from test_http_body import Reader, open_conn


def errors_conf(weir, port, server, http_extra=""):
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    for name, text in (("404.html", "custom 404\n"),
                       ("50x.html", "custom 50x\n"),
                       ("ok.html", "ok page\n")):
        with open(os.path.join(html, name), "w") as f:
            f.write(text)
    weir.conf("http {\n"
              "    default_type text/plain;\n"
              "    types { text/html html; }\n"
              "%s\n"
              "    server {\n"
              "        listen 127.0.0.1:%d;\n"
              "%s"
              "        root %s;\n"
              "%s\n"
              "    }\n"
              "}\n" % (http_extra, port, protoclient.conf_line(), html,
                       server))


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


def get(port, path, method="GET", headers=""):
    """One request on a keep-alive connection: (status, headers, body,
    whether the server closed the connection after it). Over HTTP/2
    (protoclient.PROTO) on a connection of its own, and "closed" is
    None: a stream's end says nothing of the connection."""
    if protoclient.PROTO == "h2":
        fields = {"Host": "t"}
        for line in headers.split("\r\n"):
            if line:
                k, _, v = line.partition(":")
                fields[k.strip()] = v.strip()
        status, hdrs, body = protoclient.request(port, method, path, fields)
        return status, hdrs, body, None
    s = open_conn(port)
    try:
        s.sendall(("%s %s HTTP/1.1\r\nHost: t\r\n%s\r\n"
                   % (method, path, headers)).encode())
        r = Reader(s)
        status, hdrs, body = r.response(head=(method == "HEAD"))
        s.settimeout(0.3)
        closed = r.closed()
        return status, hdrs, body, closed
    finally:
        s.close()


def page(status, reason, tail="weir/"):
    return ("<title>%d %s</title>" % (status, reason), tail)


# ---- built-in pages


def test_default_error_pages(weir, proto):
    port = weir.port()
    errors_conf(weir, port, """
        location /forbidden { return 403; }
        location /broken { return 500; }
        location /unavailable { return 503; }
    """)
    start(weir, port)

    for path, status, reason in (("/missing", 404, "Not Found"),
                                 ("/forbidden", 403, "Forbidden"),
                                 ("/broken", 500, "Internal Server Error"),
                                 ("/unavailable", 503,
                                  "Service Unavailable")):
        got, hdrs, body, _ = get(port, path)
        assert got == status, path
        assert hdrs["content-type"] == "text/html"
        assert hdrs["content-length"] == str(len(body))
        text = body.decode()
        assert "<title>%d %s</title>" % (status, reason) in text
        assert "<h1>%d %s</h1>" % (status, reason) in text
        assert "<hr><center>weir/" in text


def test_server_tokens_off_hides_the_version(weir, proto):
    port = weir.port()
    errors_conf(weir, port, "server_tokens off;")
    start(weir, port)

    status, _, body, _ = get(port, "/missing")
    assert status == 404
    assert b"<hr><center>weir</center>" in body


def test_head_gets_headers_only(weir):
    port = weir.port()
    errors_conf(weir, port, "location /broken { return 500; }")
    start(weir, port)

    s = open_conn(port)
    try:
        s.sendall(b"HEAD /missing HTTP/1.1\r\nHost: t\r\n\r\n"
                  b"GET /ok.html HTTP/1.1\r\nHost: t\r\n\r\n")
        r = Reader(s)
        status, hdrs, _ = r.response(head=True)
        assert status == 404
        assert int(hdrs["content-length"]) > 0
        # nothing but the next response follows the HEAD's headers
        status, _, body = r.response()
        assert status == 200 and body == b"ok page\n"
    finally:
        s.close()


def test_errors_that_close_the_connection(weir):
    port = weir.port()
    errors_conf(weir, port, """
        location /broken { return 500; }
        location /forbidden { return 403; }
    """)
    start(weir, port)

    status, hdrs, _, closed = get(port, "/broken")
    assert status == 500
    assert hdrs.get("connection") == "close" and closed

    for path, status in (("/forbidden", 403), ("/missing", 404)):
        got, hdrs, _, closed = get(port, path)
        assert got == status
        assert hdrs.get("connection") != "close" and not closed


def test_444_closes_without_a_response(weir):
    port = weir.port()
    errors_conf(weir, port, "location /drop { return 444; }")
    start(weir, port)

    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(b"GET /drop HTTP/1.1\r\nHost: t\r\n\r\n")
        data = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
        assert data == b""
    finally:
        s.close()


def test_error_page_to_444_frees_the_request_once(weir):
    # regression: a 444 (or any terminate) inside the internal redirect of
    # an error_page freed the request while the frames that started the
    # redirect still used it (use after free, the worker died)
    port = weir.port()
    errors_conf(weir, port, """
        error_page 404 /drop;
        location /drop { return 444; }
    """)
    start(weir, port)

    for _ in range(3):
        s = connect(("127.0.0.1", port), timeout=DEADLINE)
        try:
            s.sendall(b"GET /missing HTTP/1.1\r\nHost: t\r\n\r\n")
            data = b""
            try:
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            except ConnectionResetError:
                pass
            assert data == b""
        finally:
            s.close()

    status, _, body, _ = get(port, "/ok.html")
    assert status == 200 and body == b"ok page\n"
    assert "exited" not in weir.log()


def test_redirect_pages(weir, proto):
    port = weir.port()
    errors_conf(weir, port, """
        location /moved { return 301 http://example.com/new; }
        location /found { return 302 /elsewhere; }
        location /temp { return 307 http://example.com/t; }
    """)
    start(weir, port)

    for path, status, reason, loc in (
            ("/moved", 301, "Moved Permanently", "http://example.com/new"),
            ("/found", 302, "Found", None),
            ("/temp", 307, "Temporary Redirect", "http://example.com/t")):
        got, hdrs, body, closed = get(port, path)
        assert got == status
        if loc:
            assert hdrs["location"] == loc
        else:
            assert hdrs["location"].endswith("/elsewhere")
        assert ("<title>%d %s</title>" % (status, reason)).encode() in body
        assert not closed


# ---- error_page


def test_error_page_to_uri_keeps_the_status(weir, proto):
    port = weir.port()
    errors_conf(weir, port, """
        error_page 404 /404.html;
        error_page 500 502 503 504 /50x.html;
        location /broken { return 502; }
    """)
    start(weir, port)

    status, _, body, _ = get(port, "/missing")
    assert status == 404
    assert body == b"custom 404\n"

    status, _, body, _ = get(port, "/broken")
    assert status == 502
    assert body == b"custom 50x\n"


def test_error_page_to_named_location(weir, proto):
    port = weir.port()
    errors_conf(weir, port, """
        location /a { error_page 404 @fallback; }
        location /b { error_page 404 = @fallback; }
        location @fallback { return 200 "from fallback uri=$uri\\n"; }
    """)
    start(weir, port)

    status, _, body, _ = get(port, "/a/missing")
    assert status == 404
    assert body == b"from fallback uri=/a/missing\n"

    # "=": the status of the named location's answer
    status, _, body, _ = get(port, "/b/missing")
    assert status == 200
    assert body == b"from fallback uri=/b/missing\n"


def test_error_page_with_code_override(weir, proto):
    port = weir.port()
    errors_conf(weir, port, """
        location /c { error_page 404 =200 /ok.html; }
        location /d { error_page 404 =410 /404.html; }
        location /e { error_page 403 =404 /404.html; return 403; }
    """)
    start(weir, port)

    status, _, body, _ = get(port, "/c/missing")
    assert status == 200 and body == b"ok page\n"

    status, _, body, _ = get(port, "/d/missing")
    assert status == 410 and body == b"custom 404\n"

    status, _, body, _ = get(port, "/e")
    assert status == 404 and body == b"custom 404\n"


def test_error_page_redirects(weir, proto):
    port = weir.port()
    errors_conf(weir, port, """
        location /r1 { error_page 404 http://example.com/gone; }
        location /r2 { error_page 404 =301 http://example.com/moved; }
    """)
    start(weir, port)

    status, hdrs, body, _ = get(port, "/r1/x")
    assert status == 302
    assert hdrs["location"] == "http://example.com/gone"
    assert b"302 Found" in body

    status, hdrs, _, _ = get(port, "/r2/x")
    assert status == 301
    assert hdrs["location"] == "http://example.com/moved"


def test_error_page_for_head_sends_no_body(weir):
    port = weir.port()
    errors_conf(weir, port, "error_page 404 /404.html;")
    start(weir, port)

    s = open_conn(port)
    try:
        s.sendall(b"HEAD /missing HTTP/1.1\r\nHost: t\r\n\r\n"
                  b"GET /ok.html HTTP/1.1\r\nHost: t\r\n\r\n")
        r = Reader(s)
        status, _, _ = r.response(head=True)
        assert status == 404
        status, _, body = r.response()
        assert status == 200 and body == b"ok page\n"
    finally:
        s.close()


def test_recursive_error_pages(weir, proto):
    port = weir.port()
    errors_conf(weir, port, """
        location /off {
            error_page 404 /nothing-here.html;
        }
        location /on {
            recursive_error_pages on;
            error_page 404 /on-second.html;
        }
        location = /on-second.html {
            error_page 404 /404.html;
        }
    """)
    start(weir, port)

    # off: the error page itself is missing, the built-in page answers
    status, _, body, _ = get(port, "/off/x")
    assert status == 404
    assert b"<title>404 Not Found</title>" in body

    # on: the error page's own error_page applies
    status, _, body, _ = get(port, "/on/x")
    assert status == 404
    assert body == b"custom 404\n"


def test_error_page_loop_ends(weir, proto):
    port = weir.port()
    errors_conf(weir, port, """
        recursive_error_pages on;
        error_page 404 500 /still-missing.html;
    """)
    start(weir, port)
    weir.allow.append("rewrite or internal redirection cycle")

    # the cycle's own 500 is not redirected again: the built-in page
    status, _, body, closed = get(port, "/x")
    assert status == 500
    assert b"<title>500 Internal Server Error</title>" in body
    assert closed or proto == "h2"


def test_error_page_discards_the_body(weir):
    port = weir.port()
    errors_conf(weir, port, "error_page 404 /404.html;")
    start(weir, port)

    s = open_conn(port)
    try:
        s.sendall(b"POST /missing HTTP/1.1\r\nHost: t\r\nContent-Length: 5"
                  b"\r\n\r\nhello"
                  b"GET /ok.html HTTP/1.1\r\nHost: t\r\n\r\n")
        r = Reader(s)
        status, _, _ = r.response()
        assert status in (404, 405)
        status, _, body = r.response()
        assert status == 200 and body == b"ok page\n"
    finally:
        s.close()
