"""A small HTTP/2 origin for the proxy tests (python h2, a thread per
connection), cleartext prior knowledge or TLS with ALPN h2; with h1=True
it also speaks HTTP/1.1 (cleartext: when the first bytes are not the
HTTP/2 preface; TLS: when ALPN chose http/1.1), with the same paths
(/tiny /echo /trailers /interim /reset /slow/N /hold), so that one origin
serves every cell of the bridge matrix.

Paths:
  /tiny            200, a short body
  /echo            200, the request body back (after END_STREAM)
  /trailers        200, a body, then trailers x-checksum and grpc-status
  /interim         103 Early Hints, then 200
  /reset           200 head, part of a body, then (50 ms later) RST_STREAM
                   INTERNAL_ERROR
  /slow/N          N chunks of 1000 bytes, 50 ms apart, then END_STREAM
  /refuse          the first one: RST_STREAM REFUSED_STREAM; later
                   ones answer 200 "second try" and the body
  /hold            never answers (for timeouts)
  /badhdr          a connection-specific field ("connection: close")
  /badlen          content-length 100, 10 bytes of DATA, END_STREAM
  /bigstatus       ":status" "2000"
  /bighdr          a 20 KB field
  /pings           1500 PINGs, then the answer (a flood)
  /windows         1500 WINDOW_UPDATEs of 1, then the answer (a flood)
  /resets          200 head, then 1500 RST_STREAMs of the stream (a flood)
  /tinydata        200 head, 1500 DATA frames of 1 byte, then END_STREAM
                   (a flood)
  /mute            200 "muted", then the connection goes silent: it is
                   kept open, nothing is read or sent any more (a peer
                   gone without a word)
  /goaway          holds the first; at the second, a GOAWAY whose last
                   stream id is the first, then answers the first; later
                   ones answer "retried after the GOAWAY"
It counts connections and requests; every request's headers are kept.
handshake_delay: seconds each connection waits before its TLS handshake
(a slow origin to open); fail_handshake: then it closes instead.
conn: the class that speaks HTTP/2 on each connection (Conn, or a
subclass with more paths); settings: the SETTINGS it sends first."""

import socket
import ssl
import struct
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hyperframe.frame


class H2Origin:
    def __init__(self, cert=None, key=None, alpn=("h2",), h1=False,
                 handshake_delay=0.0, fail_handshake=False, conn=None,
                 settings=None):
        self.h1 = h1
        self.conn_class = conn or Conn
        self.settings = settings or {}
        self.handshake_delay = handshake_delay
        self.fail_handshake = fail_handshake
        if h1 and alpn == ("h2",):
            alpn = ("h2", "http/1.1")
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.addr = "127.0.0.1:%d" % self.port
        self.ctx = None
        if cert:
            self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ctx.load_cert_chain(cert, key)
            self.ctx.set_alpn_protocols(list(alpn))
        self.connections = 0
        self.requests = []
        self.lock = threading.Lock()
        self.stopping = False
        self.threads = []
        self.conns = []
        self.errors = []            # why connections ended
        self.trace = None           # a list: every byte received
        self.refused = False        # /refuse: the first one was
        self.goaways = 0            # /goaway requests seen
        self.req_trailers = []      # the request trailers received
        self.pings = 0              # PINGs received (answered by h2)
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self.threads.append(t)

    def _accept(self):
        while not self.stopping:
            try:
                s, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            t = threading.Thread(target=self._serve, args=(s,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, s):
        try:
            if self.handshake_delay:
                # bounded: the test's own delay, then on
                time.sleep(self.handshake_delay)
            if self.fail_handshake:
                return
            if self.ctx:
                s = self.ctx.wrap_socket(s, server_side=True)
            self.conns.append(s)
            if self.h1 and self.ctx and s.selected_alpn_protocol() != "h2":
                H1Conn(self, s, b"").run()
                return
            if self.h1 and not self.ctx:
                first = b""
                while len(first) < 24:
                    d = s.recv(24 - len(first))
                    if not d:
                        return
                    first += d
                    if not PREFACE.startswith(first):
                        break
                if first != PREFACE[:len(first)] or len(first) < 24:
                    H1Conn(self, s, first).run()
                    return
                self.conn_class(self, s, first).run()
                return
            self.conn_class(self, s).run()
        except (OSError, ssl.SSLError, h2.exceptions.ProtocolError) as e:
            self.errors.append(repr(e))
        finally:
            try:
                s.close()
            except OSError:
                pass

    def close(self):
        self.stopping = True
        try:
            # shutdown wakes the accept() of the other thread; close
            # alone does not
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass
        for s in list(self.conns):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self.threads:
            t.join(5)


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


class H1Conn:
    """HTTP/1.1 on one connection, keep-alive, the same paths."""

    def __init__(self, origin, sock, data):
        self.o = origin
        self.s = sock
        self.buf = data

    def read_until(self, sep):
        while sep not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise OSError("closed")
            self.buf += d
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def read_n(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise OSError("closed")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def run(self):
        while True:
            head = self.read_until(b"\r\n\r\n").decode("latin1")
            lines = head.split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            hdrs = [(":method", method), (":path", target)]
            for line in lines[1:]:
                if line:
                    k, v = line.split(":", 1)
                    hdrs.append((k.strip().lower(), v.strip()))
            h = dict(hdrs)
            with self.o.lock:
                self.o.requests.append(hdrs)
            body = b""
            if "content-length" in h:
                body = self.read_n(int(h["content-length"]))
            elif h.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    size = int(self.read_until(b"\r\n").split(b";")[0], 16)
                    if size == 0:
                        self.read_until(b"\r\n")      # no trailers sent
                        break
                    body += self.read_n(size)
                    self.read_n(2)
            if not self.answer(target.split("?")[0], body):
                return

    def answer(self, path, body):
        send = self.s.sendall
        if path == "/tiny":
            send(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n"
                 b"tiny over h1\n")
        elif path == "/echo":
            send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                 % len(body) + body)
        elif path == "/trailers":
            b = b"body before trailers\n"
            send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                 b"Trailer: x-checksum, grpc-status\r\n\r\n"
                 b"%x\r\n%s\r\n0\r\nx-checksum: abc123\r\n"
                 b"grpc-status: 0\r\n\r\n" % (len(b), b))
        elif path == "/interim":
            send(b"HTTP/1.1 103 Early Hints\r\n"
                 b"Link: </s.css>; rel=preload\r\n\r\n"
                 b"HTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n"
                 b"after the hints\n")
        elif path == "/reset":
            send(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
                 + b"x" * 5000)
            time.sleep(0.05)
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                              struct.pack("ii", 1, 0))
            return False
        elif path.startswith("/slow/"):
            send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                 b"\r\n")
            for _ in range(int(path.split("/")[2])):
                time.sleep(0.05)
                send(b"3e8\r\n" + b"s" * 1000 + b"\r\n")
            send(b"0\r\n\r\n")
        elif path == "/hold":
            while self.s.recv(65536):
                pass
            return False
        else:
            send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\n"
                 b"not here\n")
        return True


class Conn:
    def __init__(self, origin, sock, data=b""):
        self.o = origin
        self.s = sock
        self.first_data = data
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False,
                                      validate_inbound_headers=False,
                                      validate_outbound_headers=False,
                                      normalize_outbound_headers=False))
        self.bodies = {}
        self.heads = {}
        self.first = True
        self.wlock = threading.Lock()
        self.muted = False

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.s.sendall(data)

    def run(self):
        if self.o.settings:
            self.h2.local_settings = h2.settings.Settings(
                client=False, initial_values=self.o.settings)
        self.h2.initiate_connection()
        self.flush()
        data = self.first_data
        while True:
            if not data:
                data = self.s.recv(65536)
            if not data:
                return
            with self.wlock:
                if self.o.trace is not None:
                    self.o.trace.append(data)
                events = self.h2.receive_data(data)
            for ev in events:
                self.event(ev)
            with self.wlock:
                self.flush()
            data = b""
            if self.muted:
                # silent but open, until the origin stops (bounded)
                deadline = time.time() + 60
                while not self.o.stopping and time.time() < deadline:
                    time.sleep(0.05)
                return

    def event(self, ev):
        if isinstance(ev, h2.events.RequestReceived):
            hdrs = [(k.decode() if isinstance(k, bytes) else k,
                     v.decode() if isinstance(v, bytes) else v)
                    for k, v in ev.headers]
            self.heads[ev.stream_id] = hdrs
            self.bodies[ev.stream_id] = b""
            with self.o.lock:
                self.o.requests.append(hdrs)
            # a HEADERS with END_STREAM also brings a StreamEnded
        elif isinstance(ev, h2.events.DataReceived):
            self.bodies[ev.stream_id] = (self.bodies.get(ev.stream_id, b"")
                                         + ev.data)
            with self.wlock:
                self.h2.acknowledge_received_data(ev.flow_controlled_length,
                                                  ev.stream_id)
        elif isinstance(ev, h2.events.TrailersReceived):
            with self.o.lock:
                self.o.req_trailers.append(
                    [(k.decode() if isinstance(k, bytes) else k,
                      v.decode() if isinstance(v, bytes) else v)
                     for k, v in ev.headers])
        elif isinstance(ev, h2.events.StreamEnded):
            self.answer(ev.stream_id)
        elif isinstance(ev, h2.events.PingReceived):
            with self.o.lock:
                self.o.pings += 1
        elif isinstance(ev, h2.events.WindowUpdated):
            pass

    def send_body(self, sid, body, end=True):
        """Sends body as the windows allow (waits for WINDOW_UPDATE)."""
        deadline = time.time() + 20
        while body:
            with self.wlock:
                room = min(self.h2.local_flow_control_window(sid),
                           self.h2.max_outbound_frame_size)
                if room > 0:
                    self.h2.send_data(sid, body[:room])
                    body = body[room:]
                self.flush()
            if body:
                if time.time() > deadline:
                    raise OSError("window never opened")
                time.sleep(0.01)
        if end:
            with self.wlock:
                self.h2.end_stream(sid)
                self.flush()

    def answer(self, sid):
        hdrs = dict(self.heads[sid])
        path = hdrs.get(":path", "/").split("?")[0]
        body = self.bodies.get(sid, b"")
        h2c = self.h2
        if path == "/tiny":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "200"),
                                       ("content-type", "text/plain")])
            self.send_body(sid, b"tiny over h2\n")
        elif path == "/echo":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "200"),
                                       ("content-length", str(len(body)))])
            threading.Thread(target=self.send_body, args=(sid, body),
                             daemon=True).start()
        elif path == "/trailers":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "200"),
                                       ("content-type", "application/grpc")])
            self.send_body(sid, b"body before trailers\n", end=False)
            with self.wlock:
                h2c.send_headers(sid, [("x-checksum", "abc123"),
                                       ("grpc-status", "0")],
                                 end_stream=True)
                self.flush()
        elif path == "/interim":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "103"),
                                       ("link", "</s.css>; rel=preload")])
                h2c.send_headers(sid, [(":status", "200")])
            self.send_body(sid, b"after the hints\n")
        elif path == "/reset":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "200"),
                                       ("content-length", "100000")])
            self.send_body(sid, b"x" * 5000, end=False)
            # as the HTTP/1.1 /reset: the reset comes after the body, not
            # in the same read (a reset read together with DATA loses
            # that DATA towards an HTTP/2 client: a known fault, in the
            # stop 31 note)
            time.sleep(0.05)
            with self.wlock:
                h2c.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
                self.flush()
        elif path.startswith("/slow/"):
            n = int(path.split("/")[2])

            def slow():
                try:
                    with self.wlock:
                        h2c.send_headers(sid, [(":status", "200")])
                        self.flush()
                    for _ in range(n):
                        time.sleep(0.05)
                        self.send_body(sid, b"s" * 1000, end=False)
                    with self.wlock:
                        h2c.end_stream(sid)
                        self.flush()
                except (OSError, h2.exceptions.ProtocolError):
                    pass

            threading.Thread(target=slow, daemon=True).start()
        elif path == "/refuse":
            if not self.o.refused:
                self.o.refused = True
                with self.wlock:
                    h2c.reset_stream(sid,
                                     h2.errors.ErrorCodes.REFUSED_STREAM)
            else:
                with self.wlock:
                    h2c.send_headers(sid, [(":status", "200")])
                self.send_body(sid, b"second try " + body + b"\n")
        elif path == "/hold":
            pass
        elif path == "/mute":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "200")])
            self.send_body(sid, b"muted\n")
            self.muted = True
        elif path == "/badhdr":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "200"),
                                       ("connection", "close")])
            self.send_body(sid, b"bad\n")
        elif path == "/badlen":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "200"),
                                       ("content-length", "100")])
            self.send_body(sid, b"0123456789")
        elif path == "/bigstatus":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "2000")])
            self.send_body(sid, b"bad\n")
        elif path == "/bighdr":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "200"),
                                       ("x-big", "b" * 20000)])
            self.send_body(sid, b"bad\n")
        elif path == "/pings":
            with self.wlock:
                for i in range(1500):
                    h2c.ping(b"%08d" % i)
                self.flush()
                h2c.send_headers(sid, [(":status", "200")])
            self.send_body(sid, b"after pings\n")
        elif path == "/windows":
            f = hyperframe.frame.WindowUpdateFrame(0)
            f.window_increment = 1
            with self.wlock:
                self.flush()
                self.s.sendall(f.serialize() * 1500)
                h2c.send_headers(sid, [(":status", "200")])
            self.send_body(sid, b"after windows\n")
        elif path == "/resets":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "200")])
                self.flush()
                f = hyperframe.frame.RstStreamFrame(sid)
                f.error_code = 0
                self.s.sendall(f.serialize() * 1500)
        elif path == "/tinydata":
            with self.wlock:
                h2c.send_headers(sid, [(":status", "200")])
                for _ in range(1500):
                    h2c.send_data(sid, b"x")
                h2c.end_stream(sid)
                self.flush()
        elif path == "/goaway":
            with self.o.lock:
                self.o.goaways += 1
                n = self.o.goaways
            if n == 1:
                self.held = sid
            elif n == 2:
                # a GOAWAY naming the first stream: this one is above it
                f = hyperframe.frame.GoAwayFrame(0)
                f.last_stream_id = self.held
                f.error_code = 0
                with self.wlock:
                    self.flush()
                    self.s.sendall(f.serialize())
                    h2c.send_headers(self.held, [(":status", "200")])
                self.send_body(self.held, b"first, before the GOAWAY\n")
            else:
                with self.wlock:
                    h2c.send_headers(sid, [(":status", "200")])
                self.send_body(sid, b"retried after the GOAWAY\n")
        else:
            with self.wlock:
                h2c.send_headers(sid, [(":status", "404")])
            self.send_body(sid, b"not here\n")
