"""HTTP/2 requests as an HTTP/1.1 origin sees them (src/http/v2,
docs/http/http2.md "Requests"): the validation of RFC 9113 section 8
(a malformed request is reset with PROTOCOL_ERROR or answered 400 and
never reaches the origin), the downgrade to HTTP/1.1 (no HTTP/2 request
turns into bytes an HTTP/1.1 parser reads as something else: the
origin's raw bytes are compared whole), request bodies (buffered,
client_max_body_size, trailers, Expect: 100-continue) and responses
relayed from an origin (trailers, 1xx, HEAD, 204/304, streaming).

Frames come from h2client.py with python h2's own checks off, so that
the client sends what a hostile one would."""

import threading

import h2.errors
import h2.events
import pytest

from h2client import H2Client
from test_http2 import start
from weirtest import wait_for

PROTOCOL_ERROR = h2.errors.ErrorCodes.PROTOCOL_ERROR

BASE = [(":method", "GET"), (":scheme", "http"), (":authority", "a.test"),
        (":path", "/x")]


def setv(hdrs, name, value):
    return [(k, value if k == name else v) for k, v in hdrs]


def without(hdrs, name):
    return [(k, v) for k, v in hdrs if k != name]


def proxied(weir, make_origin, server="", location=""):
    """weir with HTTP/2 on, everything proxied to a recording origin;
    returns (port, origin)."""
    o = make_origin()
    port, _ = start(weir, "        http2 on;\n%s"
                    "        location / { proxy_pass http://%s;\n%s"
                    "        }\n" % (server, o.addr, location))
    return port, o


def send(c, hdrs, body=None, end=True):
    """A request with exactly these header fields (in this order)."""
    return c.request(None, None, pseudo=hdrs, body=body, end=end)


def fine_head(o):
    return b"GET /fine HTTP/1.1\r\nHost: %s\r\n\r\n" % o.addr.encode()


def received(o):
    """Every byte the origin got, request by request."""
    return [q.raw_head + q.raw_body for q in o.requests]


def still_serves(c, o, before=()):
    """The connection goes on, and the origin got nothing but what the
    test expects before a plain GET /fine."""
    ok = c.response(c.request("GET", "/fine"))
    assert ok.status == 200, (ok.status, ok.reset)
    o.wait_requests(len(before) + 1)
    assert received(o) == list(before) + [fine_head(o)]


# ------------------------------------------------------------ validation

MALFORMED = {
    # the pseudo-headers (RFC 9113 8.3): required, once, first, known
    "no_method": without(BASE, ":method"),
    "no_scheme": without(BASE, ":scheme"),
    "no_path": without(BASE, ":path"),
    "no_authority_no_host": without(BASE, ":authority"),
    "dup_method": BASE + [(":method", "POST")],
    "dup_path": BASE + [(":path", "/y")],
    "dup_authority": BASE + [(":authority", "a.test")],
    "pseudo_after_regular": BASE[:3] + [("x-a", "1"), (":path", "/x")],
    "unknown_pseudo": BASE + [(":foo", "1")],
    "status_in_request": BASE + [(":status", "200")],
    "protocol_without_connect": BASE + [(":protocol", "websocket")],
    # :path (8.3.1)
    "path_empty": setv(BASE, ":path", ""),
    "path_relative": setv(BASE, ":path", "x"),
    "path_absolute_form": setv(BASE, ":path", "http://a.test/x"),
    "path_asterisk_get": setv(BASE, ":path", "*"),
    "path_space": setv(BASE, ":path", "/a b"),
    "path_tab": setv(BASE, ":path", "/a\tb"),
    "path_cr": setv(BASE, ":path", "/a\rb"),
    "path_lf": setv(BASE, ":path", "/a\nb"),
    "path_nul": setv(BASE, ":path", "/a\x00b"),
    # connection-specific fields (8.2.2)
    "connection": BASE + [("connection", "close")],
    "keep_alive": BASE + [("keep-alive", "timeout=5")],
    "proxy_connection": BASE + [("proxy-connection", "keep-alive")],
    "transfer_encoding": BASE + [("transfer-encoding", "chunked")],
    "upgrade": BASE + [("upgrade", "h2c")],
    "te_gzip": BASE + [("te", "gzip")],
    "te_trailers_and_more": BASE + [("te", "trailers, deflate")],
    # field names and values (8.2.1)
    "name_uppercase": BASE + [("X-Upper", "1")],
    "name_space": BASE + [("x a", "1")],
    "name_colon": BASE + [("x:a", "1")],
    "name_cr": BASE + [("x\ra", "1")],
    "name_lf": BASE + [("x\na", "1")],
    "name_nul": BASE + [("x\x00a", "1")],
    "name_empty": BASE + [("", "1")],
    "value_cr": BASE + [("x-a", "1\r2")],
    "value_lf": BASE + [("x-a", "1\n2")],
    "value_nul": BASE + [("x-a", "1\x002")],
    "value_leading_space": BASE + [("x-a", " 1")],
    "value_trailing_tab": BASE + [("x-a", "1\t")],
    "value_control": BASE + [("x-a", "1\x012")],
    # :method
    "method_space": setv(BASE, ":method", "GET /y"),
    "method_empty": setv(BASE, ":method", ""),
    # :authority and Host (8.3.1)
    "authority_space": setv(BASE, ":authority", "a test"),
    "authority_slash": setv(BASE, ":authority", "a.test/x"),
    "authority_crlf": setv(BASE, ":authority", "a.test\r\nx-b: 1"),
    "host_twice": (without(BASE, ":authority")
                   + [("host", "a.test"), ("host", "a.test")]),
    # content-length without the DATA it announces (8.1.1)
    "get_content_length_no_data": BASE + [("content-length", "5")],
    "head_content_length_no_data": (setv(BASE, ":method", "HEAD")
                                    + [("content-length", "5")]),
}

# what weir itself refuses, with a response (RFC 9113 8.1.1 allows one)
MALFORMED_400 = {
    "path_hash": setv(BASE, ":path", "/a#b"),
    "path_above_root": setv(BASE, ":path", "/a/../../x"),
    "authority_userinfo": setv(BASE, ":authority", "u@a.test"),
    "host_userinfo": without(BASE, ":authority") + [("host", "u@a.test")],
    "authority_bad_port": setv(BASE, ":authority", "a.test:8x"),
    "host_differs": BASE + [("host", "b.test")],
    "host_other_port": BASE + [("host", "a.test:8080")],
    "host_https_port_on_http": BASE + [("host", "a.test:443")],
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_request_reset(weir, make_origin, case):
    port, o = proxied(weir, make_origin)
    c = H2Client(port, validate=False)
    r = c.response(send(c, MALFORMED[case]))
    assert r.reset == PROTOCOL_ERROR and r.status is None, (r.status,
                                                            r.reset)
    still_serves(c, o)
    c.close()


@pytest.mark.parametrize("case", sorted(MALFORMED_400))
def test_malformed_request_400(weir, make_origin, case):
    port, o = proxied(weir, make_origin)
    c = H2Client(port, validate=False)
    r = c.response(send(c, MALFORMED_400[case]))
    assert r.status == 400 and r.ended, (r.status, r.reset)
    still_serves(c, o)
    c.close()


def test_malformed_field_cannot_write_log_lines(weir, make_origin):
    """nghttp2's message about an invalid field quotes it: CR, LF and NUL
    are escaped in the error log, so a client cannot forge a line."""
    o = make_origin()
    port, _ = start(weir, "        http2 on;\n"
                    "        location / { proxy_pass http://%s; }\n"
                    % o.addr, main="error_log logs/error.log info;\n")
    c = H2Client(port, validate=False)
    r = c.response(send(c, BASE + [
        ("x-a", "1\r\n2016/01/01 00:00:00 [warn] 1#0: forged\x00z")]))
    assert r.reset == PROTOCOL_ERROR
    still_serves(c, o)
    c.close()

    with open(weir.path("logs", "error.log"), "rb") as f:
        log = f.read()
    assert b"\n2016/01/01" not in log and b"\x00" not in log
    assert b"value: [1\\x0d\\x0a2016/01/01 00:00:00 [warn]" in log


@pytest.mark.parametrize("case", ["400", "431", "405", "400_reset"])
def test_refused_request_is_freed_at_once(weir, make_origin, case):
    """A request answered before its phases run (400 from the header
    block, 431, 405 for TRACE) ends when its answer is out: its access
    log line is written while the connection stays open (it used to wait
    for the connection's end, holding the stream and its pool)."""
    # a client that reads nothing holds the lingering close after the
    # last GOAWAY for lingering_timeout
    port, o = proxied(weir, make_origin,
                      server="        large_client_header_buffers 4 1k;\n"
                      "        lingering_timeout 1s;\n")
    c = H2Client(port, validate=False)
    if case.startswith("400"):
        hdrs = MALFORMED_400["path_hash"]
    elif case == "431":
        hdrs = BASE + [("x-big", "b" * 2000)]
    else:
        hdrs = setv(BASE, ":method", "TRACE")
    if case == "400_reset":
        # the client gives up (RST_STREAM NO_ERROR, in the same packet)
        # before the 400 is out: the request still ends at once (with no
        # log line when it never started), so a graceful stop does not
        # wait for it (the idle session closes after about two seconds,
        # its lingering close included; a stream left would hold it for
        # worker_shutdown_timeout, 10s)
        sid = send(c, hdrs, end=False)
        c.conn.reset_stream(sid)
        c.flush()
        still_serves(c, o)
        weir.stop(timeout=5)
        c.close()
        return

    r = c.response(send(c, hdrs))
    assert r.status == int(case)
    # the line names the request, as for HTTP/1
    line = '"%s %s HTTP/2.0" %s ' % (dict(hdrs)[":method"],
                                     dict(hdrs)[":path"], case)

    def logged():
        try:
            with open(weir.path("logs", "access.log")) as f:
                return line in f.read()
        except OSError:
            return False

    wait_for(logged, what="the access log line of the %s" % case)
    still_serves(c, o)
    c.close()


@pytest.mark.parametrize("code", ["NO_ERROR", "CANCEL"])
def test_client_reset_during_response_ends_request(weir, make_origin,
                                                   code):
    """A client that resets a stream while its response waits for window
    (RST_STREAM NO_ERROR or CANCEL): the request ends at once (its access
    log line is written), not after send_timeout."""
    port, _ = start(weir, "        http2 on;\n"
                    "        send_timeout 60s;\n")
    with open(weir.path("html", "big.bin"), "wb") as f:
        f.write(b"z" * (1 << 20))
    c = H2Client(port)
    sid = c.request("GET", "/big.bin")
    c.wait(lambda: c.responses[sid].status is not None, "the HEADERS")
    c.conn.reset_stream(sid, getattr(h2.errors.ErrorCodes, code))
    c.flush()

    def logged():
        with open(weir.path("logs", "access.log")) as f:
            return "GET /big.bin HTTP/2.0" in f.read()

    wait_for(logged, what="the access log line")
    r = c.response(c.request("GET", "/big.bin", headers=[("range",
                                                           "bytes=0-9")]))
    assert r.status == 206 and r.body == b"z" * 10
    c.close()


@pytest.mark.parametrize("case", ["short", "long", "long_split",
                                  "short_many_frames", "twice",
                                  "not_a_number"])
def test_content_length_disagrees_with_data(weir, make_origin, case):
    """Fewer or more DATA bytes than content-length (or a length given
    twice, or not a number): the stream is reset and the origin gets no
    byte of it (the body is read whole before the request goes)."""
    port, o = proxied(weir, make_origin)
    c = H2Client(port, validate=False)
    hdrs = setv(BASE, ":method", "POST")
    if case == "short":
        sid = send(c, hdrs + [("content-length", "10")], body=b"12345")
    elif case == "long":
        sid = send(c, hdrs + [("content-length", "3")], body=b"12345")
    elif case == "twice":
        sid = send(c, hdrs + [("content-length", "5"),
                              ("content-length", "5")], body=b"12345")
    elif case == "not_a_number":
        sid = send(c, hdrs + [("content-length", "5x")], body=b"12345")
    elif case == "long_split":
        # the first frame fits, the second goes past
        sid = send(c, hdrs + [("content-length", "8")], end=False)
        c.send_body(sid, b"12345", end=False)
        c.send_body(sid, b"67890", end=True)
    else:
        sid = send(c, hdrs + [("content-length", "100000")], end=False)
        for _ in range(9):
            c.send_body(sid, b"x" * 5000, end=False)
        c.send_body(sid, b"x" * 5000, end=True)
    r = c.response(sid)
    assert r.reset == PROTOCOL_ERROR and r.status is None, (r.status,
                                                            r.reset)
    still_serves(c, o)
    c.close()


def test_get_with_content_length_and_body(weir, make_origin):
    """A GET whose body matches its content-length is not malformed: it
    goes on framed by that length."""
    port, o = proxied(weir, make_origin)
    c = H2Client(port, validate=False)
    r = c.response(send(c, BASE + [("content-length", "5")], body=b"12345"))
    assert r.status == 200
    assert received(o) == [b"GET /x HTTP/1.1\r\nHost: %s\r\n"
                           b"Content-Length: 5\r\n\r\n12345"
                           % o.addr.encode()]
    c.close()


@pytest.mark.parametrize("authority,host", [
    ("a.test", "a.test"),
    ("A.Test", "a.test"),
    ("a.test", "a.test."),
    ("a.test:80", "a.test"),
    ("a.test", "a.test:80"),
    ("a.test:", "a.test"),
    ("[::1]", "[::1]:80"),
])
def test_authority_and_equal_host(weir, make_origin, authority, host):
    """Host naming what :authority names (after scheme-based
    normalization, RFC 9113 8.3.1 and RFC 3986 6.2.3) is accepted, and
    :authority is the Host weir passes on ($http_host)."""
    port, o = proxied(weir, make_origin,
                      location="            proxy_set_header Host "
                               "$http_host;\n")
    c = H2Client(port, validate=False)
    r = c.response(send(c, setv(BASE, ":authority", authority)
                        + [("host", host)]))
    assert r.status == 200, (r.status, r.reset)
    assert received(o) == [b"GET /x HTTP/1.1\r\nHost: %s\r\n\r\n"
                           % authority.encode()]
    c.close()


def test_host_without_authority(weir, make_origin):
    port, o = proxied(weir, make_origin,
                      location="            proxy_set_header Host $host;\n")
    c = H2Client(port, validate=False)
    r = c.response(send(c, without(BASE, ":authority")
                        + [("host", "H.Test")]))
    assert r.status == 200
    assert received(o) == [b"GET /x HTTP/1.1\r\nHost: h.test\r\n\r\n"]
    c.close()


def test_options_asterisk_is_not_malformed(weir, make_origin):
    """OPTIONS with :path "*" is well-formed (RFC 9113 8.3.1): weir
    answers it as it does over HTTP/1.1 (no resource: 405)."""
    port, o = proxied(weir, make_origin)
    c = H2Client(port, validate=False)
    r = c.response(send(c, setv(setv(BASE, ":path", "*"),
                                ":method", "OPTIONS")))
    assert r.reset is None and r.status == 405
    still_serves(c, o)
    c.close()


# ------------------------------------------------ downgrade smuggling

SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: evil\r\n\r\n"

SMUGGLE = {
    "value_crlf_request": BASE + [
        ("x-a", "1\r\n\r\n" + SMUGGLED.decode())],
    "value_lf_request": BASE + [("x-a", "1\n\nGET /smuggled HTTP/1.1")],
    "value_cr_field": BASE + [("x-a", "1\rtransfer-encoding: chunked")],
    "path_crlf_request": setv(BASE, ":path", "/a HTTP/1.1\r\nHost: a\r\n\r\n"
                              + SMUGGLED.decode()[:-4]),
    "path_space_version": setv(BASE, ":path", "/a HTTP/1.0"),
    "path_hash": setv(BASE, ":path", "/a#/../../smuggled"),
    "method_space": setv(BASE, ":method", "GET /smuggled HTTP/1.1\r\n"),
    "method_space_only": setv(BASE, ":method", "GET /smuggled"),
    "transfer_encoding": (setv(BASE, ":method", "POST")
                          + [("transfer-encoding", "chunked")]),
    "name_colon": BASE + [("transfer-encoding:chunked", "x")],
    "name_space": BASE + [("content-length ", "0")],
    "name_trailing_colon": BASE + [("x-a:", "1")],
    "authority_crlf": setv(BASE, ":authority",
                           "a.test\r\n\r\n" + SMUGGLED.decode()),
}

SMUGGLE_BODY = {
    # the body would be read as the next request were the length passed
    "content_length_0_with_body": ([("content-length", "0")], SMUGGLED),
    "content_length_short": ([("content-length", "4")], b"abcd" + SMUGGLED),
    "chunked_body_and_te": ([("transfer-encoding", "chunked")],
                            b"0\r\n\r\n" + SMUGGLED),
    "chunked_body_and_length": ([("content-length", "5")],
                                b"0\r\n\r\n" + SMUGGLED),
}


@pytest.mark.parametrize("case", sorted(SMUGGLE) + sorted(SMUGGLE_BODY))
def test_downgrade_smuggling_refused(weir, make_origin, case):
    """A request made to be read as two (or as another) by an HTTP/1.1
    origin is refused: the origin's bytes are exactly those of the next,
    plain request."""
    port, o = proxied(weir, make_origin)
    c = H2Client(port, validate=False)
    if case in SMUGGLE:
        sid = send(c, SMUGGLE[case])
    else:
        fields, body = SMUGGLE_BODY[case]
        sid = send(c, setv(BASE, ":method", "POST") + fields, body=body)
    r = c.response(sid)
    assert r.reset == PROTOCOL_ERROR or r.status == 400, (r.status,
                                                          r.reset)
    still_serves(c, o)
    c.close()


def test_downgrade_framing_and_fields(weir, make_origin):
    """What a well-formed request becomes, byte for byte: Host from
    :authority, weir's own Content-Length for a body sent without one
    (several DATA frames), the cookie crumbs joined with "; ", TE:
    trailers not passed on (hop-by-hop), a tab inside a value and
    obs-text kept as they are, names lowercase as received."""
    port, o = proxied(weir, make_origin,
                      location="            proxy_set_header Host $host;\n")
    c = H2Client(port, validate=False)
    hdrs = setv(BASE, ":method", "POST") + [
        (b"cookie", b"a=1"), (b"x-one", b"1"), (b"cookie", b"b=2"),
        (b"te", b"trailers"), (b"x-tab", b"a\tb"),
        (b"x-obs", b"caf\xc3\xa9 \xff"), (b"cookie", b"c=3")]
    sid = send(c, hdrs, end=False)
    c.send_body(sid, b"hello ", end=False)
    c.send_body(sid, b"wor", end=False)
    c.send_body(sid, b"ld", end=True)
    r = c.response(sid)
    assert r.status == 200, (r.status, r.reset)
    assert received(o) == [
        b"POST /x HTTP/1.1\r\n"
        b"Host: a.test\r\n"
        b"x-one: 1\r\n"
        b"x-tab: a\tb\r\n"
        b"x-obs: caf\xc3\xa9 \xff\r\n"
        b"cookie: a=1; b=2; c=3\r\n"
        b"Content-Length: 11\r\n"
        b"\r\n"
        b"hello world"]
    c.close()


@pytest.mark.parametrize("case", ["get", "post_empty", "post_length_0",
                                  "post_end_in_data"])
def test_downgrade_empty_bodies(weir, make_origin, case):
    """No body: a GET goes without any length; a POST that ends in its
    HEADERS, or with content-length 0, or with an empty DATA frame, goes
    with Content-Length: 0, so the origin never waits for a body."""
    port, o = proxied(weir, make_origin)
    c = H2Client(port, validate=False)
    post = setv(BASE, ":method", "POST")
    if case == "get":
        sid = send(c, BASE)
    elif case == "post_empty":
        sid = send(c, post)
    elif case == "post_length_0":
        sid = send(c, post + [("content-length", "0")])
    else:
        sid = send(c, post, end=False)
        c.conn.end_stream(sid)
        c.flush()
    r = c.response(sid)
    assert r.status == 200, (r.status, r.reset)
    host = o.addr.encode()
    if case == "get":
        assert received(o) == [b"GET /x HTTP/1.1\r\nHost: %s\r\n\r\n"
                               % host]
    else:
        assert received(o) == [b"POST /x HTTP/1.1\r\nHost: %s\r\n"
                               b"Content-Length: 0\r\n\r\n" % host]
    c.close()


# ------------------------------------------------------ request bodies

def test_body_larger_than_windows_buffered(weir, make_origin):
    """A body many times the stream and connection windows: credit comes
    back as weir takes the DATA, the origin gets it whole with weir's
    Content-Length."""
    port, o = proxied(weir, make_origin,
                      server="        http2_stream_window_size 64k;\n"
                             "        http2_connection_window_size 64k;\n"
                             "        client_body_buffer_size 16k;\n")
    body = bytes(range(256)) * 4096              # 1 MiB
    c = H2Client(port)
    r = c.response(c.request("POST", "/echo", body=body))
    assert r.status == 200 and r.body == body
    q = o.requests[0]
    assert q.raw_head == (b"POST /echo HTTP/1.1\r\nHost: %s\r\n"
                          b"Content-Length: %d\r\n\r\n"
                          % (o.addr.encode(), len(body)))
    assert q.raw_body == body
    c.close()
    weir.allow.append("buffered to a temporary file")


@pytest.mark.parametrize("case", ["content_length", "no_length",
                                  "expect"])
def test_client_max_body_size(weir, make_origin, case):
    """Past client_max_body_size: a 413 as an HTTP/2 response, the stream
    then closed or reset with NO_ERROR (RFC 9113 8.1), nothing to the
    origin, and the connection's window credit given back: three such
    bodies through a 64k connection window, then a body that fits."""
    port, o = proxied(weir, make_origin,
                      server="        client_max_body_size 10k;\n"
                             "        http2_stream_window_size 64k;\n"
                             "        http2_connection_window_size 64k;\n")
    c = H2Client(port)
    for _ in range(3):
        if case == "content_length":
            sid = c.request("POST", "/echo", end=False,
                            headers=[("content-length", "200000")])
        elif case == "expect":
            sid = c.request("POST", "/echo", end=False,
                            headers=[("content-length", "200000"),
                                     ("expect", "100-continue")])
        else:
            sid = c.request("POST", "/echo", end=False)
        c.send_body(sid, b"x" * 200000)
        r = c.response(sid)
        assert r.status == 413, (r.status, r.reset)
        assert b"413" in r.body
        assert r.reset in (None, h2.errors.ErrorCodes.NO_ERROR), r.reset
        if case == "expect":
            assert r.interim == []
    r = c.response(c.request("POST", "/echo", body=b"y" * 5000))
    assert r.status == 200 and r.body == b"y" * 5000
    assert [q.path for q in o.requests] == ["/echo"]
    c.close()


def test_request_trailers_buffered(weir, make_origin):
    """Request trailers end the body; a buffered body goes with a
    Content-Length, so they are not passed on (as for HTTP/1.1 clients,
    docs/http/proxy.md#proxy_pass_trailers)."""
    port, o = proxied(weir, make_origin)
    c = H2Client(port, validate=False)
    sid = c.request("POST", "/echo", body=b"abc", end=False)
    c.conn.send_headers(sid, [("x-checksum", "900150983cd2")],
                        end_stream=True)
    c.flush()
    r = c.response(sid)
    assert r.status == 200 and r.body == b"abc"
    assert received(o) == [b"POST /echo HTTP/1.1\r\nHost: %s\r\n"
                           b"Content-Length: 3\r\n\r\nabc"
                           % o.addr.encode()]
    c.close()


@pytest.mark.parametrize("trailer", [(":path", "/y"), ("X-Upper", "1"),
                                     ("x-a", "1\r\n2")])
def test_malformed_request_trailers(weir, make_origin, trailer):
    port, o = proxied(weir, make_origin)
    c = H2Client(port, validate=False)
    sid = c.request("POST", "/echo", body=b"abc", end=False)
    c.conn.send_headers(sid, [trailer], end_stream=True)
    c.flush()
    r = c.response(sid)
    assert r.reset == PROTOCOL_ERROR and r.status is None, (r.status,
                                                            r.reset)
    still_serves(c, o)
    c.close()


def test_expect_100_continue(weir, make_origin):
    """Expect: 100-continue gets a 100 HEADERS before the body is sent,
    then the final response; weir answered the expectation, so the origin
    does not see it. A request that ends in its HEADERS gets no 100."""
    port, o = proxied(weir, make_origin)
    c = H2Client(port)
    sid = c.request("POST", "/echo", end=False,
                    headers=[("expect", "100-continue"),
                             ("content-length", "5")])
    c.wait(lambda: c.responses[sid].interim or c.responses[sid].done,
           "the 100")
    r = c.responses[sid]
    assert r.interim == [[(":status", "100")]] and r.status is None
    c.send_body(sid, b"hello")
    r = c.response(sid)
    assert r.status == 200 and r.body == b"hello"
    assert received(o) == [b"POST /echo HTTP/1.1\r\nHost: %s\r\n"
                           b"Content-Length: 5\r\n\r\nhello"
                           % o.addr.encode()]

    sid = c.request("GET", "/x", headers=[("expect", "100-continue")])
    r = c.response(sid)
    assert r.status == 200 and r.interim == []
    c.close()


# ----------------------------------------------------------- responses

def data_frames(c, sid):
    return [e for e in c.events
            if isinstance(e, h2.events.DataReceived) and e.stream_id == sid]


def test_origin_trailers_as_final_headers(weir, make_origin):
    """The trailers of a chunked origin response go out as a final
    HEADERS frame with END_STREAM (proxy_pass_trailers on)."""
    port, o = proxied(weir, make_origin)
    c = H2Client(port)
    sid = c.request("GET", "/trailers")
    r = c.response(sid)
    assert r.status == 200 and r.body == b"hello trailers\n"
    assert r.trailers == [("x-checksum", "abc123"), ("x-trailer-two", "2")]
    ends = [e for e in c.events if isinstance(e, h2.events.StreamEnded)
            and e.stream_id == sid]
    trailers = [e for e in c.events
                if isinstance(e, h2.events.TrailersReceived)
                and e.stream_id == sid]
    assert len(ends) == 1 and len(trailers) == 1
    assert c.events.index(trailers[0]) < c.events.index(ends[0])
    c.close()


def test_origin_interim_responses_relayed(weir, make_origin):
    """1xx from the origin are HEADERS before the final response: 103
    with its Link, and 100 (the origin's own, the client did not ask)."""
    port, o = proxied(weir, make_origin)
    c = H2Client(port)
    r = c.response(c.request("GET", "/1xx"))
    assert r.status == 200 and len(r.body) == 64
    assert r.interim == [[(":status", "103"),
                          ("link", "</style.css>; rel=preload; as=style")]]

    def two_interims(req, w):
        w.send_raw(b"HTTP/1.1 100 Continue\r\n\r\n")
        w.read_body()
        w.send_raw(b"HTTP/1.1 103 Early Hints\r\nLink: </a.js>\r\n\r\n")
        w.respond(200, body=b"ok")

    o.handler = two_interims
    r = c.response(c.request("POST", "/x", body=b"abc"))
    assert r.status == 200 and r.body == b"ok"
    assert [dict(h)[":status"] for h in r.interim] == ["100", "103"]
    c.close()


@pytest.mark.parametrize("method,path,status", [
    ("HEAD", "/tiny", 200), ("HEAD", "/chunked/1000", 200),
    ("GET", "/status/204", 204), ("GET", "/status/304", 304)])
def test_origin_responses_without_data(weir, make_origin, method, path,
                                       status):
    """HEAD, 204 and 304 from an origin: HEADERS with END_STREAM, no DATA
    frame; HEAD keeps the origin's content-length."""
    port, o = proxied(weir, make_origin)
    c = H2Client(port)
    sid = c.request(method, path)
    r = c.response(sid)
    assert r.status == status and r.body == b""
    assert data_frames(c, sid) == []
    if path == "/tiny":
        assert r.header("content-length") == "64"
    if status != 200:
        assert r.header("content-length") is None
    # the origin's connection is still good for the next request
    r = c.response(c.request("GET", "/tiny"))
    assert r.status == 200 and len(r.body) == 64
    c.close()


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_slow_origin_response_streamed(weir, make_origin, framing):
    """The first bytes of a response reach the client while the origin
    has not sent the rest: the origin waits for the client to have them
    (no timing involved), then finishes."""
    seen = threading.Event()
    port, o = proxied(weir, make_origin)

    def slow(req, w):
        if framing == "length":
            w.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
                       b"first")
        elif framing == "chunked":
            w.send_raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked"
                       b"\r\n\r\n5\r\nfirst\r\n")
        else:
            w.keepalive = False
            w.send_raw(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
                       b"first")
        if not seen.wait(10):
            w.close()
            return
        if framing == "chunked":
            w.send_raw(b"6\r\n-last\n\r\n0\r\n\r\n")
        else:
            w.send_raw(b"last\n")
        if framing == "close":
            w.close()

    o.handler = slow
    c = H2Client(port)
    sid = c.request("GET", "/slow")
    c.wait(lambda: c.responses[sid].body == b"first"
           or c.responses[sid].done, "the first bytes")
    assert not c.responses[sid].done
    seen.set()
    r = c.response(sid)
    assert r.status == 200
    assert r.body == (b"first-last\n" if framing == "chunked"
                      else b"firstlast\n")
    c.close()


URI_CASES = ["/a.txt", "/d/a.b/c", "/d/a.b/c.tar.gz?x=1", "/d/e.?q", "/e.",
             "/p?a=%41&b=/../c", "/%41%2e/b", "/x//y/./z/../w.html",
             "/.hidden", "/a/..", "/a/.", "/+plus+", "/?", "/",
             "/d/a.b/c.tar.%67z", "/x/y/w.html", "/x.b/.b", "/x.b/%2eb"]
URI_FILES = ["a.txt", "d/a.b/c", "d/a.b/c.tar.gz", "e.", "x/y/w.html",
             ".hidden", "A./b", "x.b/.b"]


@pytest.mark.parametrize("path", URI_CASES)
def test_uri_as_http1_makes_it(weir, path):
    """$uri and $args of a path over HTTP/2, and the file and MIME type
    (the extension) it maps to, are what the HTTP/1.1 parser makes of
    the same target: simple paths are taken as they are, the others
    decoded and normalized."""
    import http.client
    import os

    port, html = start(weir, "        http2 on;\n"
                       "        types { text/html html; text/plain txt;"
                       " application/x-b b; application/gzip gz;"
                       " application/x-hidden hidden; }\n"
                       "        default_type application/x-none;\n"
                       "        location /s/ { }\n"
                       "        location / { return 200 \"$uri|$args|"
                       "$is_args|$request_uri\"; }\n")
    for f in URI_FILES:
        name = os.path.join(html, "s", f)
        os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(name, "w") as fh:
            fh.write(f)

    def h1(target):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            c.request("GET", target)
            r = c.getresponse()
            return r.status, r.getheader("content-type"), r.read()
        finally:
            c.close()

    def h2(target):
        c = H2Client(port)
        try:
            r = c.response(c.request("GET", target))
            return r.status, r.header("content-type"), r.body
        finally:
            c.close()

    for target in (path, "/s" + path):
        assert h2(target) == h1(target), target
    if path == "/x//y/./z/../w.html":
        assert h2("/s" + path)[:2] == (200, "text/html")
    if path == "/d/a.b/c.tar.gz?x=1":
        assert h2("/s" + path)[:2] == (200, "application/gzip")
    if path in ("/.hidden", "/x.b/.b", "/x.b/%2eb"):
        # as nginx: a '.' that starts the segment begins no extension
        assert h2("/s" + path)[:2] == (200, "application/x-none")
