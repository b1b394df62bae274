"""A small HTTP/2 origin for the proxy tests (python h2, a thread per
connection), cleartext prior knowledge or TLS with ALPN h2.

Paths:
  /tiny            200, a short body
  /echo            200, the request body back (after END_STREAM)
  /trailers        200, a body, then trailers x-checksum and grpc-status
  /interim         103 Early Hints, then 200
  /reset           200 head, part of a body, then RST_STREAM INTERNAL_ERROR
  /slow/N          N chunks of 1000 bytes, 50 ms apart, then END_STREAM
  /refuse          the first one: RST_STREAM REFUSED_STREAM; later
                   ones answer 200 "second try" and the body
  /hold            never answers (for timeouts)
  /badhdr          a connection-specific field ("connection: close")
  /badlen          content-length 100, 10 bytes of DATA, END_STREAM
  /bigstatus       ":status" "2000"
  /bighdr          a 20 KB field
  /pings           1500 PINGs, then the answer (a flood)
  /goaway          holds the first; at the second, a GOAWAY whose last
                   stream id is the first, then answers the first; later
                   ones answer "retried after the GOAWAY"
It counts connections and requests; every request's headers are kept."""

import socket
import ssl
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import hyperframe.frame


class H2Origin:
    def __init__(self, cert=None, key=None, alpn=("h2",)):
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
            if self.ctx:
                s = self.ctx.wrap_socket(s, server_side=True)
            self.conns.append(s)
            Conn(self, s).run()
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


class Conn:
    def __init__(self, origin, sock):
        self.o = origin
        self.s = sock
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False,
                                      validate_inbound_headers=False,
                                      validate_outbound_headers=False,
                                      normalize_outbound_headers=False))
        self.bodies = {}
        self.heads = {}
        self.first = True
        self.wlock = threading.Lock()

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.s.sendall(data)

    def run(self):
        self.h2.initiate_connection()
        self.flush()
        while True:
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
        elif isinstance(ev, h2.events.StreamEnded):
            self.answer(ev.stream_id)
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
