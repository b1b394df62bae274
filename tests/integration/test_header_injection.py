"""No header value with CR, LF or NUL ever leaves weir (issue 13).

The percent-decoded URI ($uri) may hold "%0D%0A": a configuration that
puts it into a response header (add_header, a return URL), a module's
own header, or weir's own redirects must never split the response. The
one place every head goes through on its way to the protocol refuses
such a head with 500 and a log line naming the header; what weir builds
itself is percent-encoded; a trailer is dropped. Towards origins, the
request serializer refuses the same (502 is not right: the origin is
not at fault, so the client gets 500)."""

import os
import socket
import threading

import pytest

from weirtest import DEADLINE, connect, wait_for

from test_http_v1 import Reader, start, STREAM_MODULE


SPLIT = b"/a%0D%0ASet-Cookie:%20x=1"


def exchange(port, target, host=b"h.test"):
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: " + host +
                  b"\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data
    finally:
        s.close()


def head_of(data):
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    names = [ln.split(b":", 1)[0].lower() for ln in lines[1:]]
    return status, names, lines, body


def assert_not_split(data):
    status, names, lines, _ = head_of(data)
    assert b"set-cookie" not in names, lines
    assert b"x-injected" not in names, lines
    for ln in lines:
        assert b"\r" not in ln and b"\n" not in ln
    return status, lines


def test_add_header_with_decoded_uri_is_500(weir):
    port = start(weir, server="location /a { add_header X-Uri $uri; "
                              "return 200 ok; }\n")
    status, lines = assert_not_split(exchange(port, SPLIT))
    assert status == 500, lines
    weir.wait_log(r'\[error\].*response header "X-Uri" has a CR, LF or '
                  r'NUL in its value, response refused')
    # the same location with a clean URI is served with the header
    status, lines = assert_not_split(exchange(port, b"/a-fine"))
    assert status == 200 and b"X-Uri: /a-fine" in lines, lines


def test_return_url_with_decoded_uri_is_500(weir):
    port = start(weir, server="location /a { return 302 http://x.test$uri; }\n")
    status, lines = assert_not_split(exchange(port, SPLIT))
    assert status == 500, lines
    weir.wait_log(r'response header "Location" has a CR, LF or NUL')


def test_error_page_with_the_same_header_still_answers(weir):
    """add_header ... always: the 500 page carries the header too; it is
    sent without it rather than not at all."""
    port = start(weir, server="location /a { add_header X-Uri $uri always; "
                              "return 200 ok; }\n")
    status, lines = assert_not_split(exchange(port, SPLIT))
    assert status == 500, lines
    weir.wait_log(r'response header "X-Uri" has a CR, LF or NUL in its '
                  r'value, dropped')


def test_directory_redirect_is_percent_encoded(weir):
    """weir's own trailing-slash redirect: a space becomes %20 (as in
    nginx), and CR LF in a directory's name cannot split the head."""
    port = start(weir)
    os.makedirs(weir.path("html", "a b"), exist_ok=True)
    os.makedirs(weir.path("html", "x\r\nSet-Cookie: y=1"), exist_ok=True)
    status, lines = assert_not_split(exchange(port, b"/a%20b?q=1"))
    assert status == 301, lines
    assert b"Location: http://h.test:%d/a%%20b/?q=1" % port in lines, lines
    status, lines = assert_not_split(
        exchange(port, b"/x%0D%0ASet-Cookie:%20y=1"))
    assert status == 301, lines
    assert (b"Location: http://h.test:%d/x%%0D%%0ASet-Cookie:%%20y=1/"
            % port) in lines, lines


def test_location_redirect_is_percent_encoded(weir):
    """The redirect to a location's slash form (a proxied prefix location
    ending with "/"): the URI is percent-encoded."""
    port = start(weir, server="location \"/a b/\" { proxy_pass "
                              "http://127.0.0.1:1; }\n")
    status, lines = assert_not_split(exchange(port, b"/a%20b"))
    assert status == 301, lines
    assert b"Location: http://h.test:%d/a%%20b/" % port in lines, lines


@pytest.mark.skipif(not os.path.exists(STREAM_MODULE),
                    reason="the test stream module is not built")
def test_trailer_with_crlf_is_dropped(weir):
    port = start(weir, server="location /bt { test_stream 2 5 "
                              "bad-trailer; }\n")
    s = connect(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(b"GET /bt HTTP/1.1\r\nHost: h\r\nTE: trailers\r\n"
                  b"Connection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    status, _, lines, body = head_of(data)
    assert status == 200, lines
    assert b"X-Injected" not in body and b"X-Trailer" not in body, body
    assert body.endswith(b"0\r\n\r\n"), body
    weir.wait_log(r'response header "X-Trailer" has a CR, LF or NUL in '
                  r'its value, dropped')


def test_proxy_set_header_with_decoded_uri_never_reaches_origin(weir):
    """Towards an origin: the proxy module leaves the header out (and
    logs it), so the origin's request head is never split."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(DEADLINE)
    got = []

    def serve():
        c, _ = srv.accept()
        c.settimeout(DEADLINE)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        got.append(data)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                  b"Connection: close\r\n\r\nok")
        c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        port = start(weir, server="location /a { proxy_set_header X-Uri "
                                  "$uri; proxy_pass http://127.0.0.1:%d; }\n"
                                  % srv.getsockname()[1])
        status, lines = assert_not_split(exchange(port, SPLIT))
        assert status == 200, lines
        t.join(DEADLINE)
        head = got[0].split(b"\r\n\r\n")[0].split(b"\r\n")
        names = [ln.split(b":", 1)[0].lower() for ln in head[1:]]
        assert b"x-uri" not in names and b"set-cookie" not in names, head
        weir.wait_log(r'the value of header "X-Uri" has a CR, LF or NUL: '
                      r'not sent')
    finally:
        srv.close()
