"""Worker memory under big HTTP/2 bodies (issue 14): a 1 GiB download
over one connection carrying 10 streams to a client that reads slowly,
and a 1 GiB streamed upload (proxy_request_buffering off) to an origin
that reads slowly, sampling the worker's VmRSS from /proc.

The bound is what the directives let weir hold, plus a margin
(test_proxy_stream.RSS_SLACK) for the allocator and the pools: per
stream the proxy buffers (proxy_buffer_size + proxy_buffers) or the
stream window of a request body (http2_stream_window_size, in blocks of
client_body_buffer_size), and per connection the 64 KiB output buffer
and the receive buffer. Sizes as test_proxy_stream: 1 GiB, 128 MiB on
the sanitizer build."""

import socket
import time

import h2.config
import h2.connection
import h2.events
import pytest

from test_http2 import start
from test_proxy_stream import (BIG, BLOCK, KiB, MiB, RSS_SLACK,
                               SLOW_PART, RssSampler,
                               StreamOrigin, expected_crc)
from test_proxy_stream import probe_origin  # noqa: F401 (the fixture)
from weirtest import DEADLINE, SANITIZER, wait_for

STREAMS = 10
# while the client is slow it takes this much per read, then pauses
SLOW_READ = 16 * KiB
SLOW_READ_PAUSE = 0.001

PROXY_BUFFERS = ("            proxy_buffer_size 16k;\n"
                 "            proxy_buffers 8 16k;\n")
# what one stream may hold of a response: proxy_buffer_size + buffers
STREAM_HOLD = 16 * KiB + 8 * 16 * KiB
# http2_stream_window_size (the default) and client_body_buffer_size
STREAM_WINDOW = 256 * KiB
BODY_BLOCK = 16 * KiB
# the session: output buffer and receive buffer (http2_recv_buffer_size)
SESSION_HOLD = 64 * KiB + 256 * KiB
# under ASan, memory nghttp2 frees (an item per frame sent) stays in
# the allocator's quarantine, 256 MiB by default, before it is reused
QUARANTINE = 256 * MiB if SANITIZER else 0


def h2_conn(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    cfg = h2.config.H2Configuration(client_side=True,
                                    header_encoding="utf-8")
    conn = h2.connection.H2Connection(config=cfg)
    conn.initiate_connection()
    s.sendall(conn.data_to_send())
    return s, conn


def warm(port):
    """One small proxied request over HTTP/2, so the worker made its
    one-time allocations before the RSS baseline."""
    s, conn = h2_conn(port)
    try:
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "GET"), (":path", "/size/1000"),
                                (":scheme", "http"),
                                (":authority", "weir")], end_stream=True)
        s.sendall(conn.data_to_send())
        got, ended = 0, False
        deadline = time.monotonic() + DEADLINE
        while not ended and time.monotonic() < deadline:
            data = s.recv(65536)
            assert data, "weir closed the warm-up connection"
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.DataReceived):
                    got += len(ev.data)
                    conn.acknowledge_received_data(
                        ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    ended = True
            out = conn.data_to_send()
            if out:
                s.sendall(out)
        assert ended and got == 1000, (ended, got)
    finally:
        s.close()


@pytest.mark.parametrize("buffering", ["on", "off"])
def test_download_10_streams_slow_reader(weir, probe_origin, buffering):
    """proxy_buffering on: what the client is too slow for goes to the
    temporary file; off: the origin is read only as the client takes."""
    port, _ = start(weir, "        http2 on;\n"
                    "        location / {\n"
                    "            proxy_pass http://127.0.0.1:%d;\n"
                    "            proxy_buffering %s;\n%s"
                    "        }\n" % (probe_origin.port, buffering,
                                     PROXY_BUFFERS))
    warm(port)
    sampler = RssSampler(weir.workers())
    each = BIG // STREAMS
    s, conn = h2_conn(port)
    got = {}
    ended = set()
    started = time.monotonic()
    try:
        for _ in range(STREAMS):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(":method", "GET"),
                                    (":path", "/size/%d" % each),
                                    (":scheme", "http"),
                                    (":authority", "weir")],
                              end_stream=True)
            got[sid] = 0
        s.sendall(conn.data_to_send())
        total = 0
        deadline = time.monotonic() + DEADLINE * 6
        while len(ended) < STREAMS:
            assert time.monotonic() < deadline, (
                "download not done: %d of %d bytes" % (total, BIG))
            slow = total < SLOW_PART
            try:
                data = s.recv(SLOW_READ if slow else 1024 * KiB)
            except socket.timeout:
                raise AssertionError("nothing more after %d bytes: %s"
                                     % (total, got))
            assert data, "weir closed after %d bytes" % total
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.DataReceived):
                    got[ev.stream_id] += len(ev.data)
                    total += len(ev.data)
                    # the window opens only as the client reads
                    conn.acknowledge_received_data(
                        ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    ended.add(ev.stream_id)
                elif isinstance(ev, h2.events.StreamReset):
                    raise AssertionError("stream %d reset" % ev.stream_id)
                elif isinstance(ev, h2.events.ResponseReceived):
                    assert dict(ev.headers)[":status"] == "200"
            out = conn.data_to_send()
            if out:
                s.sendall(out)
            if slow:
                time.sleep(SLOW_READ_PAUSE)
    finally:
        sampler.stop()
        s.close()

    assert got == {sid: each for sid in got}, got
    bound = STREAMS * STREAM_HOLD + SESSION_HOLD + RSS_SLACK + QUARANTINE
    sampler.check(bound)
    print("download (proxy_buffering %s): %d streams x %d MiB in %.1f s; "
          "RSS %s -> %s"
          % (buffering, STREAMS, each // MiB, time.monotonic() - started,
             sampler.base, sampler.max))


def test_upload_streamed_to_slow_origin(weir):
    o = StreamOrigin()
    try:
        port, _ = start(weir, "        http2 on;\n"
                        "        client_max_body_size 0;\n"
                        "        client_body_buffer_size 16k;\n"
                        "        location / {\n"
                        "            proxy_pass http://127.0.0.1:%d;\n"
                        "            proxy_request_buffering off;\n%s"
                        "        }\n" % (o.port, PROXY_BUFFERS))
        _upload(weir, port, o)
    finally:
        o.stop()
    assert o.errors == [], o.errors


def _upload(weir, port, o):
    # a small POST first: the worker's one-time allocations
    s, conn = h2_conn(port)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "POST"), (":path", "/count"),
                            (":scheme", "http"), (":authority", "weir")])
    conn.send_data(sid, b"x" * 1000, end_stream=True)
    s.sendall(conn.data_to_send())
    _wait_end(s, conn, sid)
    s.close()

    sampler = RssSampler(weir.workers())
    s, conn = h2_conn(port)
    started = time.monotonic()
    streamed = None
    try:
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "POST"), (":path",
                                                      "/count/slow"),
                                (":scheme", "http"), (":authority", "weir"),
                                ("content-length", str(BIG))])
        s.sendall(conn.data_to_send())
        view = memoryview(BLOCK)
        sent = 0
        deadline = time.monotonic() + DEADLINE * 6
        while sent < BIG:
            assert time.monotonic() < deadline, "upload stuck at %d" % sent
            room = min(conn.local_flow_control_window(sid),
                       conn.max_outbound_frame_size, BIG - sent)
            if room <= 0:
                # wait for WINDOW_UPDATE: weir gives it as the origin reads
                data = s.recv(65536)
                assert data, "weir closed after %d bytes" % sent
                for ev in conn.receive_data(data):
                    if isinstance(ev, (h2.events.StreamReset,
                                       h2.events.ResponseReceived)):
                        raise AssertionError("early answer: %r" % ev)
                out = conn.data_to_send()
                if out:
                    s.sendall(out)
                continue
            off = sent % MiB
            take = min(room, MiB - off)
            conn.send_data(sid, view[off:off + take].tobytes())
            sent += take
            if conn.local_flow_control_window(sid) <= 0 or sent == BIG:
                s.sendall(conn.data_to_send())
            if streamed is None and sent >= 64 * MiB:
                rec = wait_for(lambda: (o.last("/count/slow") is not None
                                        and o.last("/count/slow").length
                                        and o.last("/count/slow")),
                               what="the origin to get body bytes while "
                                    "the client is still sending")
                streamed = rec.length
        conn.end_stream(sid)
        s.sendall(conn.data_to_send())
        sent_at = time.monotonic()
        status, body = _wait_end(s, conn, sid)
    finally:
        sampler.stop()
        s.close()

    assert status == "200", (status, body)
    assert body == b"count=%d crc=%d\n" % (BIG, expected_crc(BIG)), body
    rec = o.last("/count/slow")
    assert rec.first_body_at < sent_at
    bound = STREAM_WINDOW + BODY_BLOCK + STREAM_HOLD + SESSION_HOLD \
        + RSS_SLACK + QUARANTINE
    sampler.check(bound)
    print("upload: %d MiB in %.1f s; the origin had %d bytes when the "
          "client had sent 64 MiB; RSS %s -> %s"
          % (BIG // MiB, sent_at - started, streamed, sampler.base,
             sampler.max))


def _wait_end(s, conn, sid):
    status, body = None, b""
    deadline = time.monotonic() + DEADLINE * 3
    while True:
        assert time.monotonic() < deadline, "no response"
        data = s.recv(65536)
        assert data, "weir closed before the response"
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                status = dict(ev.headers)[":status"]
            elif isinstance(ev, h2.events.DataReceived):
                body += ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length,
                                               ev.stream_id)
            elif isinstance(ev, h2.events.StreamReset):
                raise AssertionError("stream reset: %r" % ev)
            elif isinstance(ev, h2.events.StreamEnded):
                s.sendall(conn.data_to_send())
                return status, body
        out = conn.data_to_send()
        if out:
            s.sendall(out)
