"""Raw HTTP/2 frames for the limit and conformance tests: frames are
packed by hand (so a test can send what no library would: bad lengths,
bad stream ids, floods), the server's frames parsed back, header blocks
encoded with python3-hpack.

    c = RawH2(port)                 # preface + SETTINGS, reads weir's
    c.send(headers(1, [...]))       # SETTINGS and acknowledges it
    f = c.goaway()                  # the GOAWAY frame (or None at EOF)
    c.close()

Every wait is bounded by DEADLINE; nothing sleeps."""

import socket
import struct
import time

import hpack

from weirtest import DEADLINE

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, \
    GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)

END_STREAM = 0x1
ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8

NO_ERROR = 0x0
PROTOCOL_ERROR = 0x1
INTERNAL_ERROR = 0x2
FLOW_CONTROL_ERROR = 0x3
STREAM_CLOSED = 0x5
FRAME_SIZE_ERROR = 0x6
REFUSED_STREAM = 0x7
CANCEL = 0x8
COMPRESSION_ERROR = 0x9
ENHANCE_YOUR_CALM = 0xb


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + struct.pack(
        ">BBI", ftype, flags, sid) + payload


def settings(pairs=(), ack=False):
    return frame(SETTINGS, ACK if ack else 0, 0,
                 b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def ping(data=b"12345678", ack=False):
    return frame(PING, ACK if ack else 0, 0, data)


def window_update(sid, inc):
    return frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", inc))


def rst(sid, code=CANCEL):
    return frame(RST_STREAM, 0, sid, struct.pack(">I", code))


def priority(sid, dep=0, weight=16):
    return frame(PRIORITY, 0, sid, struct.pack(">IB", dep, weight))


def data(sid, payload=b"", end=False):
    return frame(DATA, END_STREAM if end else 0, sid, payload)


def goaway_frame(last, code=NO_ERROR):
    return frame(GOAWAY, 0, 0, struct.pack(">II", last, code))


class Frame:
    def __init__(self, ftype, flags, sid, payload):
        self.type = ftype
        self.flags = flags
        self.sid = sid
        self.payload = payload

    @property
    def error_code(self):
        if self.type == GOAWAY:
            return struct.unpack(">I", self.payload[4:8])[0]
        if self.type == RST_STREAM:
            return struct.unpack(">I", self.payload[:4])[0]
        return None

    @property
    def last_stream_id(self):
        return struct.unpack(">I", self.payload[:4])[0] & 0x7fffffff

    def settings(self):
        return dict(struct.unpack(">HI", self.payload[i:i + 6])
                    for i in range(0, len(self.payload), 6))

    def __repr__(self):
        return "<frame type=%d flags=%#x sid=%d len=%d code=%s%s>" % (
            self.type, self.flags, self.sid, len(self.payload),
            self.error_code, " %r" % self.payload[8:]
            if self.type == GOAWAY else "")


class RawH2:
    def __init__(self, port, host="127.0.0.1", preface=True,
                 client_settings=(), handshake=True):
        self.sock = socket.create_connection((host, port),
                                             timeout=DEADLINE)
        self.authority = "%s:%d" % (host, port)
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder()
        self.buf = b""
        self.frames = []
        self.eof = False
        self.server_settings = None
        self.status = {}            # the first :status of each stream
        if preface:
            self.send(PREFACE + settings(client_settings))
        if preface and handshake:
            f = self.wait(lambda f: f.type == SETTINGS
                          and not f.flags & ACK, "the server's SETTINGS")
            self.server_settings = f.settings()
            self.send(settings(ack=True))

    def send(self, data):
        self.sock.sendall(data)

    def headers(self, sid, path="/", method="GET", extra=(), end=True,
                end_headers=True, pseudo=None, block=None):
        """A HEADERS frame of a request (the block encoded now, so the
        HPACK state follows the order of calls)."""
        if block is None:
            hdrs = pseudo if pseudo is not None else [
                (":method", method), (":scheme", "http"),
                (":path", path), (":authority", self.authority)]
            block = self.enc.encode(list(hdrs) + list(extra))
        flags = (END_STREAM if end else 0) | (END_HEADERS if end_headers
                                              else 0)
        return frame(HEADERS, flags, sid, block)

    def read_frame(self, timeout):
        """The next frame, None at EOF (or a reset connection), raises
        socket.timeout."""
        while True:
            if len(self.buf) >= 9:
                n = struct.unpack(">I", b"\0" + self.buf[:3])[0]
                if len(self.buf) >= 9 + n:
                    ftype, flags, sid = struct.unpack(">BBI",
                                                      self.buf[3:9])
                    f = Frame(ftype, flags, sid & 0x7fffffff,
                              self.buf[9:9 + n])
                    self.buf = self.buf[9 + n:]
                    self.frames.append(f)
                    if ftype == HEADERS:
                        # every block, in order: the HPACK state
                        for k, v in self.dec.decode(f.payload):
                            if k == ":status":
                                self.status.setdefault(f.sid, int(v))
                    return f
            if self.eof:
                return None
            self.sock.settimeout(timeout)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.eof = True
                continue
            self.buf += chunk

    def wait(self, predicate, what="a frame", timeout=DEADLINE):
        """The first frame (from now) the predicate accepts; fails at EOF
        or after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no %s: %r" % (what, self.frames[-8:]))
            try:
                f = self.read_frame(left)
            except socket.timeout:
                continue
            if f is None:
                raise AssertionError("EOF before %s: %r"
                                     % (what, self.frames[-8:]))
            if f.type == PING and not f.flags & ACK:
                self.send(ping(f.payload, ack=True))
            if predicate(f):
                return f

    def goaway(self, timeout=DEADLINE):
        """Reads to the GOAWAY (returned) or to EOF (None)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no GOAWAY nor EOF: %r"
                                     % self.frames[-8:])
            try:
                f = self.read_frame(left)
            except socket.timeout:
                continue
            if f is None or f.type == GOAWAY:
                return f

    def closed(self, timeout=DEADLINE):
        """Reads to EOF; True if it came within timeout."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                if self.read_frame(left) is None:
                    return True
            except socket.timeout:
                continue

    def stream_end(self, sid, what=None):
        """The frame that ends stream sid: RST_STREAM, or HEADERS/DATA
        with END_STREAM; the status seen on the way is in self.status."""
        def ends(f):
            return f.sid == sid and (f.type == RST_STREAM or (
                f.type in (HEADERS, DATA) and f.flags & END_STREAM))

        return self.wait(ends, what or "the end of stream %d" % sid)

    def close(self):
        self.sock.close()
