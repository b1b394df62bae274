"""Streamed HTTP/2 request bodies (proxy_request_buffering off,
docs/http/http2.md "Requests"): DATA reaches the origin while the client
is still sending, a body without content-length goes chunked with the
client's trailers as chunked trailers, and the window the client gets
back follows what the origin took."""

import socket
import time
import zlib

from h2client import H2Client
from test_http2 import start
from test_proxy_stream import BLOCK, MiB, StreamOrigin
from weirtest import DEADLINE, wait_for


def streamed(weir, origin_addr, location="", server=""):
    port, _ = start(weir, "        http2 on;\n"
                    "        client_max_body_size 0;\n%s"
                    "        location / { proxy_pass http://%s;\n"
                    "            proxy_request_buffering off;\n%s"
                    "        }\n" % (server, origin_addr, location))
    return port


def test_body_reaches_origin_before_its_end(weir):
    o = StreamOrigin()
    try:
        port = streamed(weir, "127.0.0.1:%d" % o.port)
        c = H2Client(port)
        body = BLOCK[:4 * MiB]
        sid = c.request("POST", "/count", body=body[:MiB], end=False)

        def origin_has_some():
            rec = o.last("/count")
            if rec is None or rec.length == 0:
                return False
            return True

        # the stream stays open: only streaming gets bytes to the origin
        wait_for(origin_has_some,
                 what="the origin to get body bytes before END_STREAM")
        assert not o.last("/count").done
        c.send_body(sid, body[MiB:], end=True)
        r = c.response(sid)
        assert r.status == 200, (r.status, r.reset)
        assert r.body == b"count=%d crc=%d\n" % (len(body),
                                                  zlib.crc32(body))
        rec = o.last("/count")
        # no content-length from the client: chunked to the origin
        assert rec.headers.get("transfer-encoding") == "chunked", \
            rec.headers
        c.close()
    finally:
        o.stop()
    assert o.errors == [], o.errors


def test_trailers_go_as_chunked_trailers(weir, make_origin):
    o = make_origin()
    port = streamed(weir, o.addr)
    c = H2Client(port, validate=False)
    sid = c.request("POST", "/echo", body=b"abc", end=False)
    c.conn.send_headers(sid, [("x-checksum", "900150983cd2")],
                        end_stream=True)
    c.flush()
    r = c.response(sid)
    assert r.status == 200 and r.body == b"abc", (r.status, r.body)
    o.wait_requests(1)
    q = o.requests[0]
    assert q.chunked, q.raw_head
    assert q.body == b"abc"
    assert q.trailers == [("x-checksum", "900150983cd2")], q.trailers
    c.close()


def test_content_length_body_streamed(weir, make_origin):
    """With a content-length the body goes with it, streamed."""
    o = make_origin()
    port = streamed(weir, o.addr)
    c = H2Client(port)
    body = bytes(range(256)) * 1000
    sid = c.request("POST", "/echo", body=body,
                    headers=[("content-length", str(len(body)))])
    r = c.response(sid)
    assert r.status == 200 and r.body == body, r.status
    o.wait_requests(1)
    q = o.requests[0]
    assert not q.chunked and q.header("content-length") == str(len(body))
    # a small body and one that ends at once, on the same connection
    for b in (b"x", b""):
        r = c.response(c.request("POST", "/echo", body=b))
        assert r.status == 200 and r.body == b, (r.status, r.body)
    c.close()


def test_too_large_streamed_body(weir, make_origin):
    """client_max_body_size still holds while the body streams: 413 if
    nothing went out yet, else the stream ends; the connection goes on."""
    o = make_origin()
    port = streamed(weir, o.addr,
                    location="            client_max_body_size 1k;\n")
    c = H2Client(port)
    sid = c.request("POST", "/echo", body=b"z" * 5000)
    r = c.response(sid)
    assert r.status in (413, None), (r.status, r.reset)
    assert r.status == 413 or r.reset is not None
    r = c.response(c.request("POST", "/echo", body=b"ok"))
    assert r.status == 200 and r.body == b"ok", (r.status, r.body)
    c.close()


def test_client_resets_streamed_upload(weir):
    o = StreamOrigin()
    try:
        port = streamed(weir, "127.0.0.1:%d" % o.port)
        c = H2Client(port)
        sid = c.request("POST", "/hold", body=BLOCK[:512 * 1024],
                        end=False)
        wait_for(lambda: o.last("/hold") is not None,
                 what="the origin to get the request")
        c.conn.reset_stream(sid)
        c.flush()
        o.release()
        r = c.response(c.request("POST", "/count", body=b"abc"))
        assert r.status == 200, (r.status, r.reset)
        assert r.body == b"count=3 crc=%d\n" % zlib.crc32(b"abc")
        c.close()
    finally:
        o.stop()


def test_expect_continue_streamed(weir, make_origin):
    o = make_origin()
    port = streamed(weir, o.addr)
    c = H2Client(port)
    sid = c.request("POST", "/echo", headers=[("expect", "100-continue")],
                    end=False)
    r = c.responses[sid]
    c.wait(lambda: r.interim or r.done, "the 100")
    assert [dict(h).get(":status") for h in r.interim] == ["100"], \
        (r.interim, r.status)
    c.send_body(sid, b"after the 100")
    r = c.response(sid)
    assert r.status == 200 and r.body == b"after the 100", (r.status,
                                                             r.body)
    c.close()


def test_streamed_body_timeout(weir):
    """A client that stops sending is timed out (client_body_timeout),
    the origin connection given up, the session kept."""
    o = StreamOrigin()
    try:
        port = streamed(weir, "127.0.0.1:%d" % o.port,
                        location="            client_body_timeout 1s;\n")
        c = H2Client(port)
        sid = c.request("POST", "/count", body=b"a" * 1000, end=False)
        r = c.response(sid)
        assert r.status == 408 or r.reset is not None, (r.status, r.reset)
        r = c.response(c.request("POST", "/count", body=b"abc"))
        assert r.status == 200, (r.status, r.reset)
        c.close()
    finally:
        o.stop()
    assert "client timed out while reading client request body" \
        in weir.log()


def _pump(c, sids, chunk):
    """Sends on every stream of sids as much as its window allows, and
    reads the WINDOW_UPDATEs, until nothing moves for three rounds (the
    windows stay shut: the uploads are stuck). Bounded by DEADLINE."""
    idle = 0
    deadline = time.monotonic() + DEADLINE
    while idle < 3:
        assert time.monotonic() < deadline, "the uploads never settled"
        moved = False
        for sid in sids:
            room = min(c.conn.local_flow_control_window(sid),
                       c.conn.max_outbound_frame_size, len(chunk))
            if room > 0:
                c.conn.send_data(sid, chunk[:room])
                moved = True
        c.flush()
        try:
            c.read_once(timeout=0.2)
            moved = True
        except socket.timeout:
            pass
        idle = 0 if moved else idle + 1


def test_stuck_uploads_leave_the_connection_window_open(weir,
                                                         make_origin):
    """Streamed uploads whose origin reads nothing hold DATA up to their
    stream window. That DATA is credited to the connection window when
    it arrives (not when the origin takes it), so six of them (6 x 64k,
    more than the 256k connection window) do not shut the window the
    other streams share: a buffered POST and a GET on the same
    connection complete meanwhile."""
    o = make_origin(rcvbuf=4096)
    port, _ = start(weir, "        http2 on;\n"
                    "        http2_stream_window_size 64k;\n"
                    "        http2_connection_window_size 256k;\n"
                    "        client_max_body_size 0;\n"
                    "        client_body_buffer_size 16k;\n"
                    "        location /no-read { proxy_pass http://%s;\n"
                    "            proxy_request_buffering off;\n"
                    "            proxy_read_timeout 60s;\n"
                    "            proxy_send_timeout 60s;\n"
                    "        }\n"
                    "        location / { proxy_pass http://%s; }\n"
                    % (o.addr, o.addr))
    c = H2Client(port)
    sids = [c.request("POST", "/no-read", end=False) for _ in range(6)]
    _pump(c, sids, b"u" * 16384)
    assert all(c.conn.local_flow_control_window(s) == 0 for s in sids)
    # the stream windows are shut, the connection's is not
    assert c.conn.outbound_flow_control_window > 0, \
        c.conn.outbound_flow_control_window
    body = b"small body " * 100
    r = c.response(c.request("POST", "/echo", body=body))
    assert r.status == 200 and r.body == body, (r.status, r.reset)
    r = c.response(c.request("GET", "/tiny"))
    assert r.status == 200 and len(r.body) == 64, (r.status, r.reset)
    for sid in sids:
        c.conn.reset_stream(sid)
    c.flush()
    c.close()
