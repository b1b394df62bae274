"""A minimal WebSocket (RFC 6455) echo origin and client, for the tests
of weir's Upgrade tunnel (test_proxy_stream.py). Python standard library
only.

WsOrigin listens on 127.0.0.1 (a free port) in a background thread, one
thread per connection; stop() closes every socket and joins the threads.
It answers by path:

    /echo           101, then echoes every text and binary message
                    (reassembled from fragments) as one frame, answers
                    pings with pongs and a close with a close
    /hello          101, sends the text message "hello from origin"
                    first, then as /echo
    /server-close   101, echoes one message, then sends a close frame
                    (1001 "going away") and waits for the client's close
    /server-reset   101, echoes one message; on the next one, resets
                    the connection (a RST: SO_LINGER 0 and close)
    anything else   a plain "200 OK" HTTP/1.1 response (keep-alive), so
                    an Upgrade request that gets no 101 can be tested

An Upgrade request without "Upgrade: websocket", a Connection with the
"upgrade" token or a Sec-WebSocket-Key gets 400. Frames from the client
must be masked (RFC 6455 5.1): an unmasked one gets close 1002.

WsClient speaks the client side over a connected socket: handshake()
(checks a 101's Upgrade, Connection and Sec-WebSocket-Accept), send()
with masking, recv_frame(), recv_message(), close().
"""

import base64
import hashlib
import os
import socket
import struct
import threading
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

OP_CONT = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

MAX_MESSAGE = 64 << 20

WS_PATHS = ("/echo", "/hello", "/server-close", "/server-reset")


def accept_key(key):
    """Sec-WebSocket-Accept for a Sec-WebSocket-Key (str or bytes)."""
    if isinstance(key, str):
        key = key.encode("ascii")
    return base64.b64encode(hashlib.sha1(key.strip() + GUID)
                            .digest()).decode("ascii")


def mask_bytes(key, data):
    """data XOR the 4-byte key repeated (fast for large payloads)."""
    n = len(data)
    if n == 0:
        return b""
    rep = (key * (n // 4 + 1))[:n]
    x = int.from_bytes(data, "big") ^ int.from_bytes(rep, "big")
    return x.to_bytes(n, "big")


def encode_frame(opcode, payload, fin=True, mask=False):
    """One frame; with mask a random masking key (client frames)."""
    head = bytearray()
    head.append((0x80 if fin else 0) | opcode)
    n = len(payload)
    bit = 0x80 if mask else 0
    if n < 126:
        head.append(bit | n)
    elif n < 65536:
        head.append(bit | 126)
        head += struct.pack("!H", n)
    else:
        head.append(bit | 127)
        head += struct.pack("!Q", n)
    if mask:
        key = os.urandom(4)
        head += key
        payload = mask_bytes(key, payload)
    return bytes(head) + bytes(payload)


class ProtocolError(Exception):
    pass


class FrameReader:
    """Reads frames off a socket, keeping bytes read past the last one."""

    def __init__(self, sock, buf=b""):
        self.s = sock
        self.buf = bytearray(buf)

    def _need(self, n):
        while len(self.buf) < n:
            data = self.s.recv(max(65536, n - len(self.buf)))
            if not data:
                raise EOFError("connection closed")
            self.buf += data

    def frame(self):
        """(fin, opcode, masked, payload) of the next frame."""
        self._need(2)
        b0, b1 = self.buf[0], self.buf[1]
        if b0 & 0x70:
            raise ProtocolError("reserved bits set: %#x" % b0)
        fin = bool(b0 & 0x80)
        opcode = b0 & 0x0F
        masked = bool(b1 & 0x80)
        n = b1 & 0x7F
        pos = 2
        if n == 126:
            self._need(4)
            n = struct.unpack("!H", self.buf[2:4])[0]
            pos = 4
        elif n == 127:
            self._need(10)
            n = struct.unpack("!Q", self.buf[2:10])[0]
            pos = 10
        if n > MAX_MESSAGE:
            raise ProtocolError("frame too large: %d" % n)
        key = None
        if masked:
            self._need(pos + 4)
            key = bytes(self.buf[pos:pos + 4])
            pos += 4
        self._need(pos + n)
        payload = bytes(self.buf[pos:pos + n])
        del self.buf[:pos + n]
        if key is not None:
            payload = mask_bytes(key, payload)
        return fin, opcode, masked, payload


def read_head(sock, buf=b"", limit=65536):
    """(head bytes without the blank line, bytes after it)."""
    buf = bytearray(buf)
    while b"\r\n\r\n" not in buf:
        if len(buf) > limit:
            raise ProtocolError("head too large")
        data = sock.recv(65536)
        if not data:
            raise EOFError("connection closed before a full head")
        buf += data
    head, rest = bytes(buf).split(b"\r\n\r\n", 1)
    return head, rest


def parse_head(head):
    """(first line, {lowercased name: value}) of an HTTP head."""
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        value = value.strip()
        if name in headers:
            headers[name] += ", " + value
        else:
            headers[name] = value
    return lines[0], headers


def has_token(value, token):
    return token in [t.strip().lower() for t in (value or "").split(",")]


class WsOrigin:
    def __init__(self):
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(128)
        self.ls.settimeout(0.1)
        self.port = self.ls.getsockname()[1]
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.socks = []
        self.threads = []
        self.connections = 0
        self.requests = []        # (request line, headers) in order
        self.events = []          # ("close-received", path) and the like
        self.errors = []          # protocol errors seen
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    # ---- lifetime

    def stop(self):
        self.stopping.set()
        self.accepter.join(timeout=5)
        with self.lock:
            socks = list(self.socks)
            threads = list(self.threads)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        for t in threads:
            t.join(timeout=5)
        self.ls.close()
        left = [t for t in threads if t.is_alive()]
        assert not left, "websocket origin threads did not stop"

    def _accept(self):
        while not self.stopping.is_set():
            try:
                s, _ = self.ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            s.settimeout(30)
            t = threading.Thread(target=self._serve, args=(s,), daemon=True)
            with self.lock:
                self.connections += 1
                self.socks.append(s)
                self.threads.append(t)
            t.start()

    def event(self, what):
        with self.lock:
            self.events.append(what)

    # ---- one connection

    def _serve(self, s):
        rest = b""
        try:
            while not self.stopping.is_set():
                head, rest = read_head(s, rest)
                line, headers = parse_head(head)
                with self.lock:
                    self.requests.append((line, headers))
                path = line.split(" ")[1] if " " in line else "/"
                if path not in WS_PATHS:
                    body = b"not a websocket: %s\n" % path.encode()
                    n = int(headers.get("content-length", "0") or 0)
                    while len(rest) < n:
                        data = s.recv(65536)
                        if not data:
                            return
                        rest += data
                    rest = rest[n:]
                    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain"
                              b"\r\nContent-Length: %d\r\n\r\n%s"
                              % (len(body), body))
                    continue
                key = headers.get("sec-websocket-key")
                if (headers.get("upgrade", "").lower() != "websocket"
                        or not has_token(headers.get("connection"),
                                         "upgrade")
                        or not key):
                    s.sendall(b"HTTP/1.1 400 Bad Request\r\n"
                              b"Content-Length: 0\r\nConnection: close"
                              b"\r\n\r\n")
                    self.event(("bad-handshake", path))
                    return
                s.sendall(b"HTTP/1.1 101 Switching Protocols\r\n"
                          b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                          b"Sec-WebSocket-Accept: %s\r\n\r\n"
                          % accept_key(key).encode())
                self._websocket(s, path, FrameReader(s, rest))
                return
        except (OSError, EOFError, ProtocolError) as exc:
            if not self.stopping.is_set() and not isinstance(exc, EOFError):
                with self.lock:
                    self.errors.append(repr(exc))
        finally:
            try:
                s.close()
            except OSError:
                pass

    def _websocket(self, s, path, reader):
        if path == "/hello":
            s.sendall(encode_frame(OP_TEXT, b"hello from origin"))
        echoed = 0
        message = None
        msg_op = None
        while True:
            try:
                fin, op, masked, payload = reader.frame()
            except EOFError:
                self.event(("eof", path))
                return
            if not masked:
                s.sendall(encode_frame(OP_CLOSE, struct.pack("!H", 1002)
                                       + b"unmasked frame"))
                self.event(("unmasked", path))
                return
            if op == OP_CLOSE:
                self.event(("close-received", path, payload))
                if path != "/server-close" or echoed == 0:
                    s.sendall(encode_frame(OP_CLOSE, payload[:2]))
                # the server closes the TCP connection first (RFC 6455 7.1.1)
                s.shutdown(socket.SHUT_WR)
                self._drain(s)
                return
            if op == OP_PING:
                s.sendall(encode_frame(OP_PONG, payload))
                continue
            if op == OP_PONG:
                continue
            if op in (OP_TEXT, OP_BINARY):
                if message is not None:
                    raise ProtocolError("new message inside a fragmented one")
                message, msg_op = bytearray(payload), op
            elif op == OP_CONT:
                if message is None:
                    raise ProtocolError("continuation without a message")
                message += payload
            else:
                raise ProtocolError("unknown opcode %#x" % op)
            if len(message) > MAX_MESSAGE:
                raise ProtocolError("message too large")
            if not fin:
                continue
            if path == "/server-reset" and echoed == 1:
                # the first echo was read: a reset loses nothing of it
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                             struct.pack("ii", 1, 0))
                self.event(("reset-sent", path))
                return
            s.sendall(encode_frame(msg_op, bytes(message)))
            message = None
            echoed += 1
            if path == "/server-close" and echoed == 1:
                s.sendall(encode_frame(OP_CLOSE, struct.pack("!H", 1001)
                                       + b"going away"))
                self.event(("close-sent", path))

    def _drain(self, s):
        deadline = time.monotonic() + 5
        s.settimeout(0.5)
        while time.monotonic() < deadline:
            try:
                if not s.recv(65536):
                    return
            except socket.timeout:
                continue
            except OSError:
                return


class WsClient:
    """The client side of one WebSocket over sock (already connected,
    e.g. to weir)."""

    def __init__(self, sock):
        self.s = sock
        self.reader = None
        self.status = None
        self.headers = {}
        self.body_start = b""

    def handshake(self, path="/echo", host="localhost", extra=()):
        """Sends the Upgrade request; returns (status, headers). On 101
        checks Sec-WebSocket-Accept and gets ready for frames."""
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n" % (path, host, key))
        for h in extra:
            req += h + "\r\n"
        self.s.sendall((req + "\r\n").encode("latin-1"))
        head, rest = read_head(self.s)
        line, headers = parse_head(head)
        self.status = int(line.split(" ")[1])
        self.headers = headers
        if self.status == 101:
            # what a browser checks (RFC 6455 4.1)
            assert headers.get("upgrade", "").lower() == "websocket", headers
            assert "upgrade" in headers.get("connection", "").lower(), headers
            got = headers.get("sec-websocket-accept")
            assert got == accept_key(key), (
                "Sec-WebSocket-Accept %r, expected %r" % (got,
                                                          accept_key(key)))
            self.reader = FrameReader(self.s, rest)
        else:
            self.body_start = rest
        return self.status, headers

    def send(self, opcode, payload, fin=True):
        self.s.sendall(encode_frame(opcode, payload, fin=fin, mask=True))

    def send_text(self, text):
        self.send(OP_TEXT, text.encode("utf-8"))

    def send_binary(self, data):
        self.send(OP_BINARY, data)

    def recv_frame(self):
        """(fin, opcode, payload); server frames must not be masked."""
        fin, op, masked, payload = self.reader.frame()
        if masked:
            raise ProtocolError("masked frame from the server")
        return fin, op, payload

    def recv_message(self):
        """(opcode, payload) of the next data or close message; pongs
        are skipped, pings answered."""
        message, msg_op = None, None
        while True:
            fin, op, payload = self.recv_frame()
            if op == OP_PONG:
                continue
            if op == OP_PING:
                self.send(OP_PONG, payload)
                continue
            if op == OP_CLOSE:
                return op, payload
            if op == OP_CONT:
                message += payload
            else:
                message, msg_op = bytearray(payload), op
            if fin:
                return msg_op, bytes(message)

    def close(self, code=1000, reason=b""):
        """Sends a close frame; returns the payload of the peer's."""
        self.send(OP_CLOSE, struct.pack("!H", code) + reason)
        while True:
            op, payload = self.recv_message()
            if op == OP_CLOSE:
                return payload

    def wait_eof(self, timeout):
        """True when the connection ends (EOF or reset) within timeout
        seconds; data frames arriving meanwhile are dropped."""
        deadline = time.monotonic() + timeout
        old = self.s.gettimeout()
        try:
            while time.monotonic() < deadline:
                self.s.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    data = self.s.recv(65536)
                except socket.timeout:
                    return False
                except ConnectionResetError:
                    return True
                if not data:
                    return True
            return False
        finally:
            self.s.settimeout(old)
