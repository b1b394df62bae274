"""HTTP/2 abuse limits (src/http/v2/weir_http_v2.c): each test drives a
client past one limit, checks what it gets (a refused stream, a 431, a
GOAWAY ENHANCE_YOUR_CALM ...), the error log line naming the limit, and
that another client connection is served meanwhile. Raw frames from
h2raw.py, whole requests from h2client.py."""

import os
import socket
import threading
import time

import h2.errors
import h2.events
import hpack

import h2raw
from h2client import H2Client
from h2raw import RawH2
from test_http2 import start
from weirtest import DEADLINE, EARLY


def served(port):
    """A second connection gets its 200 while the first is misused."""
    c = H2Client(port)
    try:
        r = c.response(c.request("GET", "/ok"))
        assert r.status == 200 and r.body == b"ok"
    finally:
        c.close()


def start_h2(weir, extra="", locations="", http_extra=""):
    port, html = start(weir, "        http2 on;\n" + extra +
                       "        location /ok { return 200 ok; }\n"
                       + locations, http_extra=http_extra)
    return port, html


def flood_goaway(c, weir, line, code=h2raw.ENHANCE_YOUR_CALM):
    """The misused connection ends with a GOAWAY of code and the log
    line; then it closes."""
    g = c.goaway()
    assert g is not None, c.frames[-8:]
    assert g.error_code == code, g
    assert c.closed()
    weir.wait_log(line)


# ------------------------------------------------------ concurrent streams

def test_settings_advertised(weir):
    """SETTINGS: the configured MAX_CONCURRENT_STREAMS (not the higher
    value nghttp2 is told), ENABLE_PUSH 0, the window and the header
    list size."""
    port, _ = start_h2(weir, "        http2_max_concurrent_streams 7;\n"
                       "        large_client_header_buffers 4 2k;\n")
    c = RawH2(port)
    s = c.server_settings
    assert s[0x3] == 7, s
    assert s[0x2] == 0, s
    assert s[0x4] == 256 * 1024, s
    assert s[0x6] == 8 * 1024, s
    c.close()


def test_max_concurrent_streams_refused(weir, make_origin):
    """A stream past an acknowledged http2_max_concurrent_streams gets
    RST_STREAM REFUSED_STREAM (RFC 9113 5.1.2): the others go on and the
    connection stays (nghttp2 alone would end it with a PROTOCOL_ERROR
    GOAWAY)."""
    o = make_origin()
    port, _ = start_h2(weir, "        http2_max_concurrent_streams 2;\n",
                       "        location / { proxy_pass http://%s; }\n"
                       % o.addr)
    c = H2Client(port)
    c.wait(lambda: c.remote_settings.get(3) == 2, "the SETTINGS")
    # the client would not open more than weir allows: make it
    c.conn.remote_settings[3] = 100
    c.conn.remote_settings.acknowledge()
    s1 = c.request("GET", "/delay-head/300")
    s2 = c.request("GET", "/delay-head/300")
    s3 = c.request("GET", "/delay-head/300")
    r3 = c.response(s3)
    assert r3.reset == h2.errors.ErrorCodes.REFUSED_STREAM
    served(port)
    assert c.response(s1).status == 200
    assert c.response(s2).status == 200
    # and it goes on serving
    assert c.response(c.request("GET", "/ok")).status == 200
    assert c.goaway is None
    c.close()
    weir.wait_log(r"client exceeded http2_max_concurrent_streams \(2\):"
                  r" stream 5 refused")


def test_refused_streams_flood(weir, make_origin):
    """A client that keeps opening streams past the limit: GOAWAY
    ENHANCE_YOUR_CALM after 100 refused in a second."""
    o = make_origin()
    port, _ = start_h2(weir, "        http2_max_concurrent_streams 2;\n",
                       "        location / { proxy_pass http://%s; }\n"
                       % o.addr)
    other = H2Client(port)
    c = RawH2(port)
    c.send(b"".join(c.headers(2 * i + 1, "/hang") for i in range(200)))
    flood_goaway(c, weir, r"client HTTP/2 flood: more than 100 refused "
                 r"streams \(http2_max_concurrent_streams\) in a second")
    # the GOAWAY goes first: the RST_STREAMs queued behind it need not
    # follow (streams above its last id are refused anyway)
    assert not [f for f in c.frames if f.type == h2raw.HEADERS]
    r = other.response(other.request("GET", "/ok"))
    assert r.status == 200
    other.close()


# ------------------------------------------------------------ header limits

def test_header_field_list_and_count_431(weir):
    """large_client_header_buffers 4 1k: a field over 1k, or a list over
    4k, gets 431; client_max_headers 10: the 11th field gets 431. The
    stream ends with the 431, the connection goes on."""
    port, _ = start_h2(weir, "        large_client_header_buffers 4 1k;\n"
                       "        client_max_headers 10;\n")
    c = H2Client(port)
    cases = [
        ([("x-long", "a" * 1100)], "too long header field "
         r"\(large_client_header_buffers\)"),
        ([("x-f%d" % i, "b" * 900) for i in range(6)],
         r"too large header list \(more than large_client_header_buffers"),
        ([("x-n%d" % i, "c") for i in range(11)],
         r"too many header lines \(client_max_headers\)"),
    ]
    for hdrs, line in cases:
        r = c.response(c.request("GET", "/ok", headers=hdrs))
        assert r.status == 431, (r.status, r.reset)
        weir.wait_log(line)
        served(port)
    # within the limits: fine
    r = c.response(c.request("GET", "/ok", headers=[
        ("x-n%d" % i, "d" * 500) for i in range(6)]))
    assert r.status == 200
    c.close()


# ------------------------------------------------- requests and timeouts

def test_keepalive_requests_goaway_logged(weir):
    """keepalive_requests 2: the second stream gets GOAWAY NO_ERROR with
    its id as the last and its whole answer; the connection closes."""
    port, _ = start_h2(weir, "        keepalive_requests 2;\n")
    c = RawH2(port)
    c.send(c.headers(1, "/ok"))
    c.stream_end(1)
    c.send(c.headers(3, "/ok"))
    g = c.goaway()
    assert g is not None and g.error_code == h2raw.NO_ERROR
    assert g.last_stream_id == 3
    c.stream_end(3)
    assert c.status == {1: 200, 3: 200}
    assert c.closed()
    served(port)
    weir.wait_log(r"HTTP/2 keepalive_requests \(2\) reached: GOAWAY")


def _read_to_end(sock, limit):
    """Reads to EOF: (bytes, "fin" or "reset"), bounded by limit bytes
    and DEADLINE."""
    buf = b""
    deadline = time.monotonic() + DEADLINE
    while len(buf) < limit and time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return buf, "reset"
        except socket.timeout:
            continue
        if not chunk:
            return buf, "fin"
        buf += chunk
    raise AssertionError("no end of the connection (%d bytes)" % len(buf))


def test_keepalive_requests_lingering_close(weir):
    """keepalive_requests 2 with a client that goes on sending requests
    while the last responses are in flight (a small receive buffer keeps
    them in weir's socket buffer): weir closes with a lingering close,
    so the client
    reads the GOAWAY, both whole responses and a FIN, not a reset that
    would destroy what was still in weir's socket buffer."""
    port, html = start_h2(weir, "        keepalive_requests 2;\n"
                          "        lingering_timeout 2s;\n")
    size = 512 * 1024
    with open(os.path.join(html, "big"), "wb") as f:
        f.write(b"b" * size)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    s.settimeout(DEADLINE)
    s.connect(("127.0.0.1", port))
    enc = hpack.Encoder()

    def req(sid):
        return h2raw.frame(h2raw.HEADERS, h2raw.END_STREAM
                           | h2raw.END_HEADERS, sid, enc.encode([
                               (":method", "GET"), (":scheme", "http"),
                               (":path", "/big"),
                               (":authority", "127.0.0.1:%d" % port)]))

    s.sendall(h2raw.PREFACE + h2raw.settings([(0x4, 0x7fffffff)])
              + h2raw.window_update(0, 0x7fffffff - 65535)
              + h2raw.settings(ack=True) + req(1) + req(3))
    stop = threading.Event()
    errors = []

    def flood():
        # requests past the GOAWAY, which weir ignores, until the end
        sid = 5
        t0 = time.monotonic()
        while not stop.is_set() and time.monotonic() - t0 < DEADLINE:
            try:
                s.sendall(b"".join(req(sid + 2 * i) for i in range(50)))
            except (ConnectionResetError, BrokenPipeError) as e:
                # a reset (weir closed with these bytes unread)
                errors.append(e)
                return
            except OSError:
                return
            sid += 100
            if sid > 0x7fffff00:
                return

    t = threading.Thread(target=flood)
    t.start()
    try:
        data, end = _read_to_end(s, 8 * size)
    finally:
        stop.set()
        t.join(DEADLINE)
        s.close()
    # the error of a reset goes to whichever call comes first
    assert end == "fin" and not errors, (end, errors, len(data))
    frames = []
    while len(data) >= 9:
        n = int.from_bytes(data[:3], "big")
        frames.append((data[3], data[4], int.from_bytes(data[5:9], "big")
                       & 0x7fffffff, data[9:9 + n]))
        data = data[9 + n:]
    assert data == b"", "a cut frame at the end"
    got = {1: 0, 3: 0}
    ended = set()
    goaway = None
    for ftype, flags, sid, payload in frames:
        if ftype == h2raw.DATA:
            got[sid] += len(payload)
        if ftype in (h2raw.DATA, h2raw.HEADERS) and flags & h2raw.END_STREAM:
            ended.add(sid)
        if ftype == h2raw.GOAWAY:
            goaway = payload
        assert ftype != h2raw.RST_STREAM, frames[-4:]
    assert goaway is not None
    assert int.from_bytes(goaway[:4], "big") == 3
    assert int.from_bytes(goaway[4:8], "big") == h2raw.NO_ERROR
    assert got == {1: size, 3: size} and ended == {1, 3}, (got, ended)


def test_idle_timeout(weir):
    """keepalive_timeout 1s: a connection whose streams are done gets
    GOAWAY NO_ERROR and is closed, not sooner."""
    port, _ = start_h2(weir, "        keepalive_timeout 1s;\n")
    c = RawH2(port)
    c.send(c.headers(1, "/ok"))
    c.stream_end(1)
    t0 = time.monotonic()
    g = c.goaway()
    assert time.monotonic() - t0 >= 1 - EARLY
    assert g is not None and g.error_code == h2raw.NO_ERROR
    assert g.last_stream_id == 1
    assert c.closed()
    served(port)
    weir.wait_log(r"client timed out \(HTTP/2 idle\)")


def test_preface_first_headers_timeout(weir):
    """client_header_timeout 1s: a connection that sends the preface and
    SETTINGS but no request is closed (GOAWAY) after it, not sooner."""
    port, _ = start_h2(weir, "        client_header_timeout 1s;\n"
                       "        keepalive_timeout 60s;\n")
    t0 = time.monotonic()
    c = RawH2(port)
    g = c.goaway()
    assert time.monotonic() - t0 >= 1 - EARLY
    assert g is not None and g.error_code == h2raw.NO_ERROR
    assert c.closed()
    served(port)
    weir.wait_log(r"client timed out \(HTTP/2 preface\)")


def test_header_block_timeout(weir):
    """A HEADERS without END_HEADERS and no CONTINUATION: the stream is
    reset (CANCEL) after client_header_timeout."""
    port, _ = start_h2(weir, "        client_header_timeout 1s;\n")
    c = RawH2(port)
    t0 = time.monotonic()
    c.send(c.headers(1, "/ok", end_headers=False))
    f = c.stream_end(1)
    assert time.monotonic() - t0 >= 1 - EARLY
    assert f.type == h2raw.RST_STREAM and f.error_code == h2raw.CANCEL
    served(port)
    c.close()
    weir.wait_log(r"client timed out \(HTTP/2 request headers\)")


# -------------------------------------------------------- buffers, frames

def test_small_recv_buffer_big_upload(weir, make_origin):
    """http2_recv_buffer_size 1k: frames span many reads, a 300 KiB body
    arrives whole, another connection is served meanwhile."""
    o = make_origin()
    port, _ = start_h2(weir, "        client_body_buffer_size 512k;\n",
                       "        location / { proxy_pass http://%s; }\n"
                       % o.addr,
                       http_extra="    http2_recv_buffer_size 1k;\n")
    body = bytes(range(256)) * 1200
    c = H2Client(port)
    sid = c.request("POST", "/echo", body=body)
    served(port)
    r = c.response(sid)
    assert r.status == 200 and r.body == body
    c.close()


def test_recv_buffer_size_too_small(weir):
    weir.conf("http {\n    http2_recv_buffer_size 16;\n"
              "    server { listen 127.0.0.1:%d; http2 on; }\n}\n"
              % weir.port())
    weir.allow.append(r"\[emerg\].*http2_recv_buffer_size")
    rc, err = weir.start_fails()
    assert rc != 0
    assert "http2_recv_buffer_size" in err and "too small" in err, err


def test_chunk_size_default(weir):
    """DATA frames a client receives are at most http2_chunk_size, 8k by
    default, though the client allows 16k (a value set:
    test_http2.py's test_static_large_file_flow_control)."""
    port, html = start_h2(weir)
    body = bytes(range(256)) * 200
    with open(html + "/f.bin", "wb") as f:
        f.write(body)
    c = H2Client(port)
    r = c.response(c.request("GET", "/f.bin"))
    assert r.body == body
    sizes = [len(e.data) for e in c.events
             if isinstance(e, h2.events.DataReceived)]
    assert max(sizes) == 8192, sizes
    c.close()


# ------------------------------------------------------------------ floods

def flood_test(weir, make_origin, send, line, extra="",
               code=h2raw.ENHANCE_YOUR_CALM):
    """Another connection opens first; the flood's connection sends
    send(c) and must end with GOAWAY code and the log line; the other
    is served after it."""
    o = make_origin()
    port, _ = start_h2(weir, extra,
                       "        location / { proxy_pass http://%s; }\n"
                       % o.addr)
    other = H2Client(port)
    c = RawH2(port)
    send(c)
    flood_goaway(c, weir, line, code)
    r = other.response(other.request("GET", "/ok"))
    assert r.status == 200
    other.close()
    return c


def test_rapid_reset_burst(weir, make_origin):
    """Streams opened and reset by the client (CVE-2023-44487), all in
    one burst: the reset streams stay counted until their requests end,
    so past http2_max_concurrent_streams the new ones are refused, and
    past 128 refused: GOAWAY ENHANCE_YOUR_CALM. The request bodies never
    end, so no response is ready before the reset."""
    def send(c):
        c.send(b"".join(c.headers(2 * i + 1, "/x", method="POST",
                                  end=False) + h2raw.rst(2 * i + 1)
                        for i in range(2100)))

    flood_test(weir, make_origin, send,
               r"client HTTP/2 flood: more than 128 refused streams "
               r"\(http2_max_concurrent_streams\) in a second")


def test_reset_before_response_paced(weir, make_origin):
    """Streams opened and reset by the client before any response, one
    at a time (a PING round trip after each, so the request is gone
    before the next): past 2 x max(http2_max_concurrent_streams, 100)
    in a second, GOAWAY ENHANCE_YOUR_CALM."""
    o = make_origin()
    port, _ = start_h2(weir, "        http2_max_concurrent_streams 4;\n",
                       "        location / { proxy_pass http://%s; }\n"
                       % o.addr)
    other = H2Client(port)
    c = RawH2(port)
    g = None
    # a window is a second: on a slow machine the first may pass before
    # 200 round trips, so go on (bounded) until it trips
    for i in range(5000):
        sid = 2 * i + 1
        try:
            c.send(c.headers(sid, "/x", method="POST", end=False)
                   + h2raw.rst(sid) + h2raw.ping(b"%08d" % i))
        except OSError:
            break
        f = c.wait(lambda f: (f.type == h2raw.PING and f.flags & h2raw.ACK)
                   or f.type == h2raw.GOAWAY, "the PING ACK")
        if f.type == h2raw.GOAWAY:
            g = f
            break
    if g is None:
        g = c.goaway()
    assert g is not None and g.error_code == h2raw.ENHANCE_YOUR_CALM, g
    assert i >= 200, i
    assert not [f for f in c.frames if f.type == h2raw.RST_STREAM
                and f.error_code == h2raw.REFUSED_STREAM]
    weir.wait_log(r"client HTTP/2 flood: more than 200 streams reset by "
                  r"the client before their response in a second")
    r = other.response(other.request("GET", "/ok"))
    assert r.status == 200
    other.close()


def test_continuation_flood(weir, make_origin):
    def send(c):
        c.send(c.headers(1, "/ok", end_headers=False)
               + b"".join(h2raw.frame(h2raw.CONTINUATION, 0, 1)
                          for _ in range(50)))

    flood_test(weir, make_origin, send,
               r"client HTTP/2 flood: more than 8 CONTINUATION frames in a "
               r"header block \(max_continuations\)")


def test_ping_flood_acks_unread(weir, make_origin):
    """PINGs whose acknowledgements the client does not read: past 1000
    waiting, GOAWAY ENHANCE_YOUR_CALM (nghttp2's max_outbound_ack)."""
    def send(c):
        c.send(b"".join(h2raw.ping(b"%08d" % i) for i in range(3000)))

    c = flood_test(weir, make_origin, send,
                   r"client HTTP/2 flood: more than 1000 PING or SETTINGS "
                   r"acknowledgements waiting \(max_outbound_ack\)")
    acks = [f for f in c.frames if f.type == h2raw.PING]
    assert len(acks) <= 1001


def test_settings_flood_acks_unread(weir, make_origin):
    def send(c):
        c.send(b"".join(h2raw.settings([(0x4, 65535)])
                        for _ in range(3000)))

    flood_test(weir, make_origin, send,
               r"client HTTP/2 flood: more than 1000 PING or SETTINGS "
               r"acknowledgements waiting \(max_outbound_ack\)")


def test_settings_too_many_entries(weir, make_origin):
    """More than 32 entries in one SETTINGS (nghttp2's max_settings)."""
    def send(c):
        c.send(h2raw.settings([(0x4, 65535)] * 40))

    flood_test(weir, make_origin, send,
               r"client HTTP/2 error, GOAWAY ENHANCE_YOUR_CALM: SETTINGS: "
               r"too many setting entries")


def test_empty_data_flood(weir, make_origin):
    def send(c):
        c.send(c.headers(1, "/x", method="POST", end=False)
               + b"".join(h2raw.data(1) for _ in range(1500)))

    flood_test(weir, make_origin, send,
               r"client HTTP/2 flood: more than 1000 empty or tiny DATA "
               r"frames in a second")


def test_tiny_data_flood(weir, make_origin):
    def send(c):
        c.send(c.headers(1, "/x", method="POST", end=False)
               + b"".join(h2raw.data(1, b"x") for _ in range(1500)))

    flood_test(weir, make_origin, send,
               r"more than 1000 empty or tiny DATA frames in a second")


def test_window_update_flood(weir, make_origin):
    def send(c):
        c.send(b"".join(h2raw.window_update(0, 1) for _ in range(1500)))

    flood_test(weir, make_origin, send,
               r"client HTTP/2 flood: more than 1000 WINDOW_UPDATE frames "
               r"beyond the DATA frames sent in a second")


def test_priority_flood(weir, make_origin):
    def send(c):
        c.send(b"".join(h2raw.priority(2 * i + 1) for i in range(1500)))

    flood_test(weir, make_origin, send,
               r"client HTTP/2 flood: more than 1000 PRIORITY frames in a "
               r"second")


def test_window_updates_of_a_download_are_fine(weir):
    """A client that acknowledges every DATA frame of a large download
    (two WINDOW_UPDATEs each) is no flood."""
    port, html = start_h2(weir, "        http2_chunk_size 1k;\n")
    body = bytes(range(256)) * 4096 * 4
    with open(html + "/big.bin", "wb") as f:
        f.write(body)
    c = H2Client(port)
    r = c.response(c.request("GET", "/big.bin"))
    assert r.body == body
    assert c.goaway is None
    c.close()
    assert "flood" not in weir.log()
