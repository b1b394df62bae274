"""A small HTTP/2 client for the tests, on Debian's python3-h2: one
connection (h2c prior knowledge, or TLS with ALPN h2), requests sent on
it as streams, and every event kept so a test can look at frames.

    c = H2Client(port)                      # h2c
    c = H2Client(port, tls=True)            # TLS, ALPN "h2"
    sid = c.request("GET", "/x", headers=[("x-a", "1")], body=b"")
    resp = c.response(sid)                  # Response: status, headers,
                                            # body, reset (error code)
    c.close()

Every wait is bounded by DEADLINE; nothing sleeps."""

import socket
import ssl
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

from weirtest import DEADLINE


class Response:
    def __init__(self, sid):
        self.sid = sid
        self.status = None
        self.headers = []
        self.interim = []
        self.trailers = []
        self._body = b""
        # DATA as it comes, joined when the body is read: appending to
        # one bytes object copies it whole each time (a 4 MiB download
        # in 1 KiB frames copied 8 GiB)
        self._chunks = []
        self.ended = False
        self.reset = None           # the RST_STREAM error code

    @property
    def body(self):
        if self._chunks:
            self._body += b"".join(self._chunks)
            self._chunks = []
        return self._body

    def add_body(self, data):
        self._chunks.append(data)

    def header(self, name):
        for k, v in self.headers:
            if k == name:
                return v
        return None

    @property
    def done(self):
        return self.ended or self.reset is not None


class H2Client:
    def __init__(self, port, tls=False, host="127.0.0.1",
                 authority=None, settings=None, validate=True):
        raw = socket.create_connection((host, port), timeout=DEADLINE)
        if tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2", "http/1.1"])
            self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
            self.alpn = self.sock.selected_alpn_protocol()
        else:
            self.sock = raw
            self.alpn = None
        self.authority = authority or "%s:%d" % (host, port)
        self.scheme = "https" if tls else "http"
        cfg = h2.config.H2Configuration(
            client_side=True, header_encoding="utf-8",
            validate_outbound_headers=validate,
            normalize_outbound_headers=validate,
            validate_inbound_headers=False)
        self.conn = h2.connection.H2Connection(config=cfg)
        self.conn.initiate_connection()
        if settings:
            self.conn.update_settings(settings)
        self.responses = {}
        self.events = []
        self.goaway = None
        self.closed = False
        self.remote_settings = {}
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, method, path, headers=(), body=None, end=True,
                pseudo=None):
        sid = self.conn.get_next_available_stream_id()
        hdrs = pseudo if pseudo is not None else [
            (":method", method), (":path", path),
            (":scheme", self.scheme), (":authority", self.authority)]
        hdrs = list(hdrs) + list(headers)
        self.responses[sid] = Response(sid)
        self.conn.send_headers(sid, hdrs, end_stream=(end and not body))
        if body:
            self.send_body(sid, body, end=end)
        self.flush()
        return sid

    def send_body(self, sid, body, end=True):
        """Sends body within the flow-control windows, reading (and so
        taking WINDOW_UPDATEs) while they are closed."""
        pos = 0
        deadline = time.monotonic() + DEADLINE
        while pos < len(body):
            room = min(self.conn.local_flow_control_window(sid),
                       self.conn.max_outbound_frame_size)
            if room <= 0:
                self.flush()
                if time.monotonic() > deadline:
                    raise AssertionError("window never opened")
                self.read_once()
                if self.responses[sid].done:
                    return
                continue
            chunk = body[pos:pos + room]
            self.conn.send_data(sid, chunk)
            pos += len(chunk)
            self.flush()
        if end:
            self.conn.end_stream(sid)
            self.flush()

    def read_once(self, timeout=DEADLINE):
        self.sock.settimeout(timeout)
        data = self.sock.recv(65536)
        if not data:
            self.closed = True
            return False
        for ev in self.conn.receive_data(data):
            self.events.append(ev)
            self._event(ev)
        self.flush()
        return True

    def _event(self, ev):
        r = self.responses.get(getattr(ev, "stream_id", None))
        if isinstance(ev, h2.events.ResponseReceived):
            r.status = int(dict(ev.headers)[":status"])
            r.headers = ev.headers
        elif isinstance(ev, h2.events.InformationalResponseReceived):
            r.interim.append(ev.headers)
        elif isinstance(ev, h2.events.TrailersReceived):
            r.trailers = ev.headers
        elif isinstance(ev, h2.events.DataReceived):
            r.add_body(ev.data)
            self.conn.acknowledge_received_data(
                ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.StreamEnded):
            r.ended = True
        elif isinstance(ev, h2.events.StreamReset):
            if r is not None:
                r.reset = ev.error_code
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.goaway = ev
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            for k, v in ev.changed_settings.items():
                self.remote_settings[k] = v.new_value

    def wait(self, predicate, what="the answer"):
        deadline = time.monotonic() + DEADLINE
        while not predicate():
            if self.closed or time.monotonic() > deadline:
                raise AssertionError("no %s (closed=%s)" % (what,
                                                            self.closed))
            try:
                if not self.read_once(timeout=max(0.05, deadline
                                                  - time.monotonic())):
                    if predicate():
                        return
                    raise AssertionError("connection closed before %s"
                                         % what)
            except socket.timeout:
                continue

    def response(self, sid):
        r = self.responses[sid]
        self.wait(lambda: r.done, "response on stream %d" % sid)
        return r

    def close(self):
        try:
            self.conn.close_connection()
            self.flush()
        except Exception:
            pass
        self.sock.close()
