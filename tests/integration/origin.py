"""A configurable, misbehaving HTTP/1.1 origin for the proxy tests.

Origin listens on 127.0.0.1 (a free port; ::1 with family=AF_INET6) and
serves every accepted connection in its own thread. It records every
request it received (Request: the raw head, method, target, version,
headers in order, the body, the connection id) and counts connections
accepted and closed, so a test can assert exactly what weir sent and how
many connections it used.

What it answers is chosen per request: by `origin.handler`, a callable
`handler(req, w)` a test sets (w is a Writer: send_raw(), respond(),
close(), wait(), read_body() ...; `w.canned(req)` falls back to the
canned behaviours), or else by the canned behaviour of the path:

  /tiny                 200, 64 bytes, Content-Length
  /size/N               200, N bytes (body_of(N)), Content-Length
  /chunked/N            200, N bytes chunked in several chunks
  /trailers             200, chunked, then trailer fields (TRAILERS)
  /close/N              200, N bytes delimited by closing the connection
  /delay-head/MS        waits MS ms, then /tiny
  /delay-body/MS        head and 10 of 20 bytes, waits MS ms, the rest
  /1xx                  103 Early Hints (Link) then 200 /tiny
  /status/N             status N ("status N\\n", no body for 1xx/204/304)
  /garbage              bytes that are not HTTP; keeps the connection
  /close-mid-head       half a status head, then closes
  /close-mid-body       Content-Length 1000, 10 bytes, then closes
  /cl-te                Content-Length and Transfer-Encoding: chunked
  /bad-cl               Content-Length: 12x
  /big-head/N           a valid head with an N-byte header field
  /early                200 before reading the request body, then
                        reads and drops it (/early/close: closes)
  /echo                 the request body back, X-Body-Length
  /headers              JSON: method, target, version, headers, body
  /location/URL         302, Location: URL (the rest of the target)
  /refresh/URL          200, Refresh: 3; url=URL
  /hang                 reads the request, never answers
  /no-read              never reads past the head (for send timeouts;
                        use Origin(rcvbuf=...) to keep buffers small)
  anything else         200 "NAME METHOD TARGET\\n", X-Origin: NAME

Every response carries X-Origin: NAME and X-Conn: connection id.
Keep-alive by default; Origin(close_after=True) closes after every
response, Origin(idle_close_ms=N) closes a connection idle for N ms.
stop() closes every connection and joins every thread.

blackhole() gives a listening address whose accept queue is full, so a
new connect() to it hangs (Linux drops SYNs then): connect timeouts.
"""

import json
import re
import select
import socket
import threading
import time
import urllib.parse

DEFAULT_TIMEOUT = 10.0

TRAILERS = [("X-Checksum", "abc123"), ("X-Trailer-Two", "2")]


def body_of(n):
    """n recognisable bytes: "0123456789abcdef..." repeated, with a
    newline every 64 bytes."""
    line = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ=\n"
    return (line * (n // len(line) + 1))[:n]


class OriginError(Exception):
    pass


class Request:
    """One request as the origin received it."""

    def __init__(self, conn_id, index):
        self.conn_id = conn_id      # the connection's number (1, 2 ...)
        self.index = index          # the n-th request on it (1, 2 ...)
        self.raw_head = b""         # request line to the empty line, as is
        self.method = ""
        self.target = ""
        self.version = ""
        self.headers = []           # [(name, value)] in order, as sent
        self.body = b""             # decoded body
        self.raw_body = b""         # body bytes as they came (framing)
        self.chunked = False
        self.trailers = []          # [(name, value)] after a chunked body
        self.complete = False       # the whole body was read
        self.bare_lf = False        # a line of the head ended with LF only

    @property
    def path(self):
        return self.target.split("?", 1)[0]

    def header(self, name, default=None):
        """The first value of header name (case-insensitive)."""
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def header_all(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def names(self):
        """The header names, lowercase, in order."""
        return [k.lower() for k, _ in self.headers]

    def __repr__(self):
        return ("<Request conn=%d #%d %s %s %s %r body=%d>"
                % (self.conn_id, self.index, self.method, self.target,
                   self.version, self.headers, len(self.body)))


class _Closed(Exception):
    """The peer closed, or the origin stops."""


class Writer:
    """What a handler answers with, for one connection."""

    def __init__(self, origin, conn):
        self.origin = origin
        self.conn = conn
        self.closed = False
        self.keepalive = True       # False: close after this response
        self._req = None

    # ---- writing

    def send_raw(self, data):
        if self.closed:
            raise _Closed()
        try:
            self.conn.sock.sendall(data)
        except OSError:
            raise _Closed()

    def respond(self, status=200, headers=(), body=b"", reason=None,
                length=True, chunks=None, trailers=None):
        """A whole response. length: add Content-Length (unless headers
        name one, or chunks is given); chunks: a list of byte strings sent
        chunked, then trailers [(name, value)]."""
        if isinstance(body, str):
            body = body.encode()
        reason = reason or REASONS.get(status, "Status")
        hs = list(headers)
        names = [k.lower() for k, _ in hs]
        hs.append(("X-Origin", self.origin.name))
        hs.append(("X-Conn", str(self.conn.id)))
        if chunks is not None:
            if "transfer-encoding" not in names:
                hs.append(("Transfer-Encoding", "chunked"))
        elif (length and "content-length" not in names
              and not (100 <= status < 200 or status in (204, 304))):
            hs.append(("Content-Length", str(len(body))))
        if not self.keepalive or self.origin.close_after:
            hs.append(("Connection", "close"))
            self.keepalive = False
        head = "HTTP/1.1 %d %s\r\n" % (status, reason)
        head += "".join("%s: %s\r\n" % (k, v) for k, v in hs)
        data = head.encode("latin-1") + b"\r\n"
        if self._req is not None and self._req.method == "HEAD":
            pass
        elif chunks is not None:
            for c in chunks:
                if c:
                    data += b"%x\r\n%s\r\n" % (len(c), c)
            data += b"0\r\n"
            for k, v in trailers or ():
                data += ("%s: %s\r\n" % (k, v)).encode("latin-1")
            data += b"\r\n"
        else:
            data += body
        self.send_raw(data)

    def close(self):
        """Closes the connection now (the handler is done with it)."""
        if not self.closed:
            self.closed = True
            self.conn.close()

    # ---- reading and waiting

    def read_body(self):
        """Reads the request body (if not read yet); returns it."""
        req = self._req
        if not req.complete:
            self.conn.read_body(req)
        return req.body

    def drain(self):
        """Reads and drops the request body."""
        self.read_body()

    def wait(self, ms):
        """Sleeps ms milliseconds; False when the origin stops."""
        return not self.origin._stopping.wait(ms / 1000.0)

    def wait_peer_close(self, timeout=DEFAULT_TIMEOUT * 3):
        """Reads and drops until the peer closes (or the origin stops or
        timeout); True when the peer closed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.origin._stopping.is_set():
                return False
            try:
                data = self.conn.recv_some(0.05)
            except _Closed:
                return True
            if data is None:
                continue
        return False

    def canned(self, req):
        """Answers with the canned behaviour of req's path."""
        self.origin._canned(req, self)


REASONS = {
    100: "Continue", 101: "Switching Protocols", 103: "Early Hints",
    200: "OK", 201: "Created", 204: "No Content", 206: "Partial Content",
    301: "Moved Permanently", 302: "Found", 304: "Not Modified",
    400: "Bad Request", 403: "Forbidden", 404: "Not Found",
    429: "Too Many Requests", 500: "Internal Server Error",
    502: "Bad Gateway", 503: "Service Unavailable",
    504: "Gateway Timeout",
}


class _Conn:
    def __init__(self, origin, sock, cid):
        self.origin = origin
        self.sock = sock
        self.id = cid
        self.buf = b""
        self.closed = False
        self.peer_closed = False
        self.lock = threading.Lock()

    def close(self):
        with self.lock:
            if self.closed:
                return
            self.closed = True
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()
        self.origin._conn_closed(self)

    def recv_some(self, timeout):
        """The bytes read, or None after timeout; raises _Closed at EOF
        or when the connection was closed."""
        if self.closed:
            raise _Closed()
        try:
            r, _, _ = select.select([self.sock], [], [], timeout)
        except (OSError, ValueError):
            raise _Closed()
        if not r:
            return None
        try:
            data = self.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self.peer_closed = True
            raise _Closed()
        return data

    def _fill(self, idle_ms=None):
        """Reads more into self.buf; with idle_ms, closes the connection
        when nothing came for that long (raises _Closed)."""
        deadline = None
        if idle_ms is not None:
            deadline = time.monotonic() + idle_ms / 1000.0
        while True:
            if self.origin._stopping.is_set():
                raise _Closed()
            t = 0.05
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    with self.origin._lock:
                        self.origin._idle_closed += 1
                    self.close()
                    raise _Closed()
                t = min(t, left)
            data = self.recv_some(t)
            if data is not None:
                self.buf += data
                return

    def _line(self):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line, self.buf = self.buf[:i + 1], self.buf[i + 1:]
                return line
            if len(self.buf) > 65536:
                raise OriginError("line too long")
            self._fill()

    def _exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_head(self, req):
        idle = self.origin.idle_close_ms if req.index > 1 else None
        while b"\r\n\r\n" not in self.buf and b"\n\n" not in self.buf:
            if len(self.buf) > 1 << 20:
                raise OriginError("request head too long")
            self._fill(idle if not self.buf else None)
        ends = [i for i in (self.buf.find(b"\r\n\r\n"),
                            self.buf.find(b"\n\n")) if i >= 0]
        end = min(ends)
        size = 4 if self.buf[end:end + 4] == b"\r\n\r\n" else 2
        head, self.buf = self.buf[:end + size], self.buf[end + size:]
        req.raw_head = head
        req.bare_lf = re.search(rb"(?<!\r)\n", head) is not None
        lines = head.decode("latin-1").replace("\r\n", "\n").split("\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            raise OriginError("bad request line %r" % lines[0])
        req.method, req.target, req.version = parts
        for line in lines[1:]:
            if not line:
                continue
            k, sep, v = line.partition(":")
            if not sep:
                raise OriginError("bad header line %r" % line)
            req.headers.append((k, v.strip(" \t")))

    def read_body(self, req):
        te = ",".join(req.header_all("transfer-encoding")).lower()
        if "chunked" in te:
            req.chunked = True
            while True:
                line = self._line()
                req.raw_body += line
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    break
                data = self._exact(size + 2)
                req.raw_body += data
                req.body += data[:-2]
            while True:
                line = self._line()
                req.raw_body += line
                if line in (b"\r\n", b"\n"):
                    break
                k, _, v = line.decode("latin-1").partition(":")
                req.trailers.append((k, v.strip()))
        else:
            cl = req.header("content-length")
            if cl is not None:
                req.body = self._exact(int(cl))
                req.raw_body = req.body
        req.complete = True


class Origin:
    """A threaded HTTP/1.1 origin on 127.0.0.1 (see the module text)."""

    def __init__(self, name="origin", handler=None, close_after=False,
                 idle_close_ms=None, rcvbuf=None, port=0,
                 family=socket.AF_INET):
        self.name = name
        self.family = family
        self.handler = handler
        self.close_after = close_after
        self.idle_close_ms = idle_close_ms
        self.rcvbuf = rcvbuf
        self.requests = []          # every Request, in arrival order
        self.errors = []            # what the origin could not parse
        self._want_port = port
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._threads = []
        self._conns = []
        self._accepted = 0
        self._closed = 0
        self._idle_closed = 0
        self._listener = None
        self._acceptor = None
        self.port = None

    # ---- life

    def start(self):
        s = socket.socket(self.family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        s.bind(("::1" if self.family == socket.AF_INET6 else "127.0.0.1",
                self._want_port))
        s.listen(128)
        self._listener = s
        self.port = s.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop,
                                          name="origin-accept-%s"
                                          % self.name, daemon=True)
        self._acceptor.start()
        return self

    def stop(self, timeout=DEFAULT_TIMEOUT):
        """Closes the listener and every connection, joins every thread.
        Raises when a thread did not end."""
        self._stopping.set()
        if self._acceptor is not None:
            self._acceptor.join(timeout)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            c.close()
        stuck = []
        for t in list(self._threads):
            t.join(timeout)
            if t.is_alive():
                stuck.append(t.name)
        if self._acceptor is not None and self._acceptor.is_alive():
            stuck.append(self._acceptor.name)
        if stuck:
            raise OriginError("origin threads did not end: %s" % stuck)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    # ---- what happened

    @property
    def accepted(self):
        """Connections accepted so far."""
        with self._lock:
            return self._accepted

    @property
    def closed(self):
        """Connections closed so far (by either side)."""
        with self._lock:
            return self._closed

    @property
    def open(self):
        with self._lock:
            return self._accepted - self._closed

    @property
    def idle_closed(self):
        """Connections the origin closed because they were idle."""
        with self._lock:
            return self._idle_closed

    def conn_ids(self):
        """The distinct connection ids the requests came on."""
        with self._lock:
            return sorted({r.conn_id for r in self.requests})

    def peer_closed(self, conn_id):
        """Did the connection end with an EOF from weir?"""
        with self._lock:
            for c in self._conns:
                if c.id == conn_id:
                    return c.peer_closed
        return False

    def _wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        with self._lock:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        "origin %s: timed out after %.1fs waiting for %s "
                        "(requests %d, accepted %d, closed %d)"
                        % (self.name, timeout, what, len(self.requests),
                           self._accepted, self._closed))
                self._lock.wait(min(left, 0.05))

    def wait_requests(self, n, timeout=DEFAULT_TIMEOUT):
        self._wait(lambda: len(self.requests) >= n, timeout,
                   "%d requests" % n)
        return self.requests[:n]

    def wait_accepted(self, n, timeout=DEFAULT_TIMEOUT):
        self._wait(lambda: self._accepted >= n, timeout,
                   "%d connections" % n)

    def wait_closed(self, n, timeout=DEFAULT_TIMEOUT):
        self._wait(lambda: self._closed >= n, timeout,
                   "%d closed connections" % n)

    def wait_complete(self, n=1, timeout=DEFAULT_TIMEOUT):
        """Waits for the n-th request to have its whole body read."""
        self._wait(lambda: (len(self.requests) >= n
                            and self.requests[n - 1].complete),
                   timeout, "request %d complete" % n)
        return self.requests[n - 1]

    # ---- machinery

    def _conn_closed(self, conn):
        with self._lock:
            self._closed += 1
            self._lock.notify_all()

    def _accept_loop(self):
        while not self._stopping.is_set():
            try:
                r, _, _ = select.select([self._listener], [], [], 0.05)
            except (OSError, ValueError):
                return
            if not r:
                continue
            try:
                sock, _ = self._listener.accept()
            except OSError:
                continue
            with self._lock:
                self._accepted += 1
                conn = _Conn(self, sock, self._accepted)
                self._conns.append(conn)
                t = threading.Thread(target=self._serve, args=(conn,),
                                     name="origin-%s-conn-%d"
                                     % (self.name, conn.id), daemon=True)
                self._threads.append(t)
                self._lock.notify_all()
            t.start()

    def _serve(self, conn):
        w = Writer(self, conn)
        index = 0
        try:
            while not self._stopping.is_set() and not w.closed:
                index += 1
                req = Request(conn.id, index)
                conn.read_head(req)
                with self._lock:
                    self.requests.append(req)
                    self._lock.notify_all()
                w._req = req
                w.keepalive = not self._wants_close(req)
                handler = self.handler
                if handler is not None:
                    handler(req, w)
                else:
                    self._canned(req, w)
                with self._lock:
                    self._lock.notify_all()
                if w.closed:
                    break
                if not req.complete and not conn.closed:
                    conn.read_body(req)
                    with self._lock:
                        self._lock.notify_all()
                if not w.keepalive or self.close_after:
                    break
        except _Closed:
            pass
        except (OriginError, ValueError, OSError) as exc:
            with self._lock:
                self.errors.append("conn %d: %s" % (conn.id, exc))
        finally:
            conn.close()

    @staticmethod
    def _wants_close(req):
        conn = ",".join(req.header_all("connection")).lower()
        tokens = [t.strip() for t in conn.split(",")]
        if "close" in tokens:
            return True
        return req.version == "HTTP/1.0" and "keep-alive" not in tokens

    # ---- canned behaviours

    def _canned(self, req, w):
        path = req.path
        parts = path.split("/", 2)
        what = parts[1] if len(parts) > 1 else ""
        arg = parts[2] if len(parts) > 2 else ""
        if what not in ("early", "no-read", "hang"):
            w.read_body()

        if path == "/tiny":
            w.respond(200, [("Content-Type", "text/plain")], body_of(64))
        elif what == "size":
            w.respond(200, [("Content-Type", "text/plain")],
                      body_of(int(arg)))
        elif what == "chunked":
            body = body_of(int(arg))
            step = max(1, len(body) // 4 + 1)
            chunks = [body[i:i + step] for i in range(0, len(body), step)]
            w.respond(200, [("Content-Type", "text/plain")], chunks=chunks)
        elif path == "/trailers":
            w.respond(200, [("Content-Type", "text/plain"),
                            ("Trailer", "X-Checksum, X-Trailer-Two")],
                      chunks=[b"hello ", b"trailers\n"], trailers=TRAILERS)
        elif what == "close":
            w.keepalive = False
            w.send_raw(b"HTTP/1.1 200 OK\r\nX-Origin: %s\r\n"
                       b"Connection: close\r\n\r\n%s"
                       % (self.name.encode(), body_of(int(arg))))
            w.close()
        elif what == "delay-head":
            if w.wait(int(arg)):
                w.respond(200, [("Content-Type", "text/plain")],
                          body_of(64))
        elif what == "delay-body":
            body = body_of(20)
            w.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n"
                       b"X-Origin: %s\r\n\r\n%s"
                       % (self.name.encode(), body[:10]))
            if w.wait(int(arg)):
                w.send_raw(body[10:])
        elif path == "/1xx":
            w.send_raw(b"HTTP/1.1 103 Early Hints\r\n"
                       b"Link: </style.css>; rel=preload; as=style\r\n\r\n")
            w.respond(200, [("Content-Type", "text/plain")], body_of(64))
        elif what == "status":
            status = int(arg)
            body = b"" if status in (204, 304) else b"status %d\n" % status
            w.respond(status, [("Content-Type", "text/plain")], body)
        elif path == "/garbage":
            w.send_raw(b"THIS IS NOT HTTP AT ALL\r\n\x00\x01\x02\r\n\r\n")
        elif path == "/close-mid-head":
            w.send_raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/pl")
            w.close()
        elif path == "/close-mid-body":
            w.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n"
                       b"X-Origin: %s\r\n\r\n%s"
                       % (self.name.encode(), body_of(10)))
            w.close()
        elif path == "/cl-te":
            w.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n"
                       b"5\r\nhello\r\n0\r\n\r\n")
        elif path == "/bad-cl":
            w.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n"
                       b"hello world!")
        elif what == "big-head":
            w.respond(200, [("X-Big", "b" * int(arg))], b"big head\n")
        elif what == "early":
            w.respond(200, [("Content-Type", "text/plain")], b"early\n")
            if arg == "close":
                w.close()
            else:
                w.drain()
        elif path == "/echo":
            body = req.body
            w.respond(200, [("Content-Type", "application/octet-stream"),
                            ("X-Body-Length", str(len(body)))], body)
        elif path == "/headers":
            data = json.dumps({
                "method": req.method, "target": req.target,
                "version": req.version, "headers": req.headers,
                "body_length": len(req.body)}).encode()
            w.respond(200, [("Content-Type", "application/json")], data)
        elif what == "location":
            url = urllib.parse.unquote(path[len("/location/"):])
            w.respond(302, [("Location", url)], b"moved\n")
        elif what == "refresh":
            url = urllib.parse.unquote(path[len("/refresh/"):])
            w.respond(200, [("Refresh", "3; url=" + url)], b"refresh\n")
        elif path == "/hang":
            w.read_body()
            w.wait_peer_close()
            w.close()
        elif path == "/no-read":
            while w.wait(50):
                pass
            w.close()
        else:
            w.respond(200, [("Content-Type", "text/plain")],
                      "%s %s %s\n" % (self.name, req.method, req.target))


# ---- a black hole for connect timeouts

class BlackHole:
    """A listening socket with backlog 0 whose accept queue is filled:
    a further connect() gets no SYN-ACK (Linux drops the SYN while the
    queue is full) and hangs until its timeout. reliable is False when
    the queue could not be shown full (then connect timeouts cannot be
    tested this way)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(0)
        self.port = self.sock.getsockname()[1]
        self.fillers = []
        self.reliable = False
        for _ in range(16):
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            c.setblocking(False)
            self.fillers.append(c)
            try:
                c.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            _, w, _ = select.select([], [c], [], 0.3)
            if not w:
                # this one hangs: the queue is full
                self.reliable = True
                break

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def probe(self, timeout=0.3):
        """Does a fresh connect() hang (True) or complete (False)?"""
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            try:
                c.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            _, w, _ = select.select([], [c], [], timeout)
            return not w
        finally:
            c.close()

    def close(self):
        for c in self.fillers:
            c.close()
        self.fillers = []
        self.sock.close()
