"""A hostile review of the TLS module: edge-triggered stalls (pipelining,
large bodies both ways, slow readers, tunnels with TLS on both sides,
KeyUpdate), resumption across server blocks with other client
verification, a full shared session cache, garbage records,
renegotiation, and a plain HTTP request answered once.

Every wait is bounded (DEADLINE); the TLS origin is written here
(python ssl, one thread per connection)."""

import hashlib
import os
import re
import select
import socket
import ssl
import subprocess
import threading
import time

import pytest

import tlspki
from weirtest import DEADLINE, connect, wait_for


MiB = 1 << 20


# ---------------------------------------------------------------- weir

def conf(weir, http, main=""):
    return weir.conf(tlspki.ssl_preamble() + main
                     + "http {\n" + http + "}\n")


def up(port):
    def accepts():
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    wait_for(accepts, what="port %d to accept" % port)


def start(weir, http, ports, main=""):
    conf(weir, http, main)
    weir.start(check_ports=False)
    for p in ports:
        up(p)


def certs(*leaves):
    return "".join("        ssl_certificate %s;\n"
                   "        ssl_certificate_key %s;\n" % (c.chain, c.key)
                   for c in leaves)


def no_crit(weir):
    bad = [line for line in weir.log().splitlines()
           if re.search(r"\[(crit|alert|emerg)\]", line)]
    assert bad == [], "unexpected log lines:\n%s" % "\n".join(bad)


def context(pki=None, client=None, max_version=None, min_version=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if client is not None:
        ctx.load_cert_chain(client.chain, client.key)
    if max_version is not None:
        ctx.maximum_version = max_version
    if min_version is not None:
        ctx.minimum_version = min_version
    return ctx


def tls(port, ctx=None, sni="localhost", session=None, rcvbuf=None):
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    raw.settimeout(DEADLINE)
    raw.connect(("127.0.0.1", port))
    try:
        return (ctx or context()).wrap_socket(raw, server_hostname=sni,
                                              session=session)
    except BaseException:
        raw.close()
        raise


class Reader:
    """HTTP/1.1 responses off one socket (Content-Length or chunked)."""

    def __init__(self, s, pace=None):
        self.s = s
        self.buf = b""
        self.pace = pace

    def _more(self):
        if self.pace:
            time.sleep(self.pace)
        try:
            chunk = self.s.recv(16384 if not self.pace else 4096)
        except ssl.SSLZeroReturnError:
            chunk = b""
        if not chunk:
            raise EOFError("connection closed; have %r" % self.buf[:200])
        self.buf += chunk

    def _until(self, sep):
        while sep not in self.buf:
            self._more()
        head, _, self.buf = self.buf.partition(sep)
        return head

    def _exact(self, n):
        while len(self.buf) < n:
            self._more()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def response(self):
        head = self._until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if "content-length" in headers:
            body = self._exact(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self._until(b"\r\n").split(b";")[0], 16)
                if size == 0:
                    self._until(b"\r\n")
                    break
                body += self._exact(size)
                self._exact(2)
        else:
            body = b""
        return status, headers, body


def pattern(n):
    block = bytes(range(256)) * 64
    return (block * (n // len(block) + 1))[:n]


# ---------------------------------------------------------------- origin

class Origin:
    """A TLS (or plain) HTTP/1.1 origin. Paths:
      POST /sum     reads the body (length or chunked), answers
                    "<len> <sha256>"
      GET /big/N    N bytes of pattern(N)
      GET /up       101, then echoes what it reads until EOF; then sends
                    "bye:<how>" (how: "clean" after close_notify,
                    "ragged" for a TCP FIN without it) and closes
    """

    def __init__(self, cert=None, strict=False):
        self.ctx = None
        if cert is not None:
            self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ctx.load_cert_chain(cert.chain, cert.key)
            if strict:
                # python sets it by default: an EOF without close_notify
                # must show as what it is (as OpenSSL 3 servers do)
                self.ctx.options &= ~getattr(ssl,
                                             "OP_IGNORE_UNEXPECTED_EOF", 0)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.events = []
        self.errors = []
        self.stopping = False
        self.threads = []
        self.conns = set()
        self.t = threading.Thread(target=self._accept, daemon=True)
        self.t.start()

    def _accept(self):
        while not self.stopping:
            try:
                s, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.conns.add(s)
            t = threading.Thread(target=self._serve, args=(s,), daemon=True)
            self.threads.append(t)
            t.start()

    def _serve(self, s):
        s.settimeout(DEADLINE)
        try:
            if self.ctx is not None:
                s = self.ctx.wrap_socket(s, server_side=True,
                                         suppress_ragged_eofs=False)
            r = Reader(s)
            while True:
                try:
                    head = r._until(b"\r\n\r\n").decode("latin-1")
                except EOFError:
                    return
                lines = head.split("\r\n")
                method, path = lines[0].split()[:2]
                headers = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers[k.strip().lower()] = v.strip()
                if path == "/up":
                    self._tunnel(s, r)
                    return
                if method == "POST":
                    h = hashlib.sha256()
                    n = 0
                    if "content-length" in headers:
                        left = int(headers["content-length"])
                        while left:
                            d = r._exact(min(left, 65536))
                            h.update(d)
                            n += len(d)
                            left -= len(d)
                    else:
                        while True:
                            size = int(r._until(b"\r\n").split(b";")[0], 16)
                            if size == 0:
                                r._until(b"\r\n")
                                break
                            d = r._exact(size)
                            h.update(d)
                            n += size
                            r._exact(2)
                    body = ("%d %s" % (n, h.hexdigest())).encode()
                elif path.startswith("/big/"):
                    body = pattern(int(path[5:]))
                else:
                    body = b"origin"
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                          % len(body) + body)
        except Exception as exc:    # recorded, checked by the test
            if not self.stopping:
                self.errors.append(repr(exc))
        finally:
            try:
                s.close()
            except OSError:
                pass

    def _tunnel(self, s, r):
        s.sendall(b"HTTP/1.1 101 Switching Protocols\r\n"
                  b"Connection: upgrade\r\nUpgrade: raw\r\n\r\n")
        got = r.buf
        r.buf = b""
        if got:
            s.sendall(got)
        how = "clean"
        while True:
            try:
                d = s.recv(65536)
            except ssl.SSLEOFError:
                how = "ragged"
                break
            except ssl.SSLZeroReturnError:
                break
            if not d:
                break
            s.sendall(d)
        self.events.append(("eof", how))
        s.sendall(("bye:%s" % how).encode())
        if self.ctx is not None:
            try:
                s = s.unwrap()
            except (ssl.SSLError, OSError):
                pass

    def stop(self):
        self.stopping = True
        self.sock.close()
        for c in list(self.conns):
            try:
                c.close()
            except OSError:
                pass
        for t in self.threads:
            t.join(DEADLINE)


@pytest.fixture
def origins():
    made = []

    def make(cert=None, strict=False):
        o = Origin(cert, strict)
        made.append(o)
        return o

    yield make
    for o in made:
        o.stop()


def proxy_server(port, leaf, origin, extra=""):
    scheme = "https" if origin.ctx is not None else "http"
    return ("    server {\n"
            "        listen 127.0.0.1:%d ssl;\n"
            "        server_name localhost;\n"
            "%s"
            "        location / {\n"
            "            proxy_pass %s://127.0.0.1:%d;\n"
            "            proxy_http_version 1.1;\n"
            "            proxy_set_header Connection $connection_upgrade;\n"
            "            proxy_set_header Upgrade $http_upgrade;\n"
            "%s"
            "        }\n"
            "    }\n" % (port, certs(leaf), scheme, origin.port, extra))


UPGRADE_MAP = ""   # $connection_upgrade is built in


# ---------------------------------------------------------------- stalls

def test_pipelined_requests_over_tls(weir, pki):
    """200 pipelined requests in a few writes: what OpenSSL decrypted
    beyond the header buffer must be served without an event."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, "    server {\n"
                "        listen 127.0.0.1:%d ssl;\n%s"
                "        location / { return 200 \"r$uri\"; }\n"
                "    }\n" % (port, certs(leaf)), [port])
    s = tls(port)
    try:
        reqs = b"".join(b"GET /%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % i
                        for i in range(200))
        s.sendall(reqs)
        r = Reader(s)
        for i in range(200):
            status, _, body = r.response()
            assert (status, body) == (200, b"r/%d" % i)
    finally:
        s.close()
    no_crit(weir)


@pytest.mark.parametrize("origin_tls", [True, False])
@pytest.mark.parametrize("chunked", [False, True])
def test_large_body_unbuffered_through_tls(weir, pki, origins, origin_tls,
                                           chunked):
    """6 MB of request body over TLS, streamed unbuffered to an origin
    (TLS or plain), and a 6 MB response read slowly."""
    leaf = pki.leaf("localhost")
    o = origins(pki.leaf("127.0.0.1", ips=("127.0.0.1",))
                if origin_tls else None)
    port = weir.port()
    start(weir, UPGRADE_MAP + proxy_server(
        port, leaf, o, "            proxy_request_buffering off;\n"
                       "            proxy_buffering off;\n"
                       "            client_max_body_size 0;\n"), [port])
    body = os.urandom(6 * MiB)
    s = tls(port)
    try:
        if chunked:
            head = (b"POST /sum HTTP/1.1\r\nHost: localhost\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n")
            data = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 70000]),
                                               body[i:i + 70000])
                            for i in range(0, len(body), 70000)) \
                + b"0\r\n\r\n"
        else:
            head = (b"POST /sum HTTP/1.1\r\nHost: localhost\r\n"
                    b"Content-Length: %d\r\n\r\n" % len(body))
            data = b""
        s.sendall(head + (data or body))
        r = Reader(s)
        status, _, answer = r.response()
        assert status == 200, answer
        assert answer == b"%d %s" % (len(body),
                                     hashlib.sha256(body).hexdigest().encode())
        s.sendall(b"GET /big/%d HTTP/1.1\r\nHost: localhost\r\n\r\n"
                  % (6 * MiB))
        status, _, big = Reader(s).response()
        assert status == 200 and big == pattern(6 * MiB)
    finally:
        s.close()
    assert o.errors == []
    no_crit(weir)


def test_slow_reader_large_static_and_proxied(weir, pki, origins):
    """A client with a tiny receive buffer reading in small sips: every
    write wants to write again (the sealed-record retry), the bytes
    must arrive whole and in order."""
    leaf = pki.leaf("localhost")
    o = origins(pki.leaf("127.0.0.1", ips=("127.0.0.1",)))
    port = weir.port()
    html = weir.path("html")
    os.makedirs(html)
    blob = os.urandom(2 * MiB)
    with open(os.path.join(html, "f"), "wb") as f:
        f.write(blob)
    start(weir, UPGRADE_MAP + "    server {\n"
                "        listen 127.0.0.1:%d ssl;\n%s"
                "        location /f { root %s; }\n"
                "        location /big/ {\n"
                "            proxy_pass https://127.0.0.1:%d;\n"
                "            proxy_buffer_size 4k;\n"
                "            proxy_buffers 2 4k;\n"
                "            proxy_busy_buffers_size 4k;\n"
                "            proxy_max_temp_file_size 0;\n"
                "        }\n"
                "    }\n" % (port, certs(leaf), html, o.port), [port])
    s = tls(port, rcvbuf=4096)
    try:
        s.sendall(b"GET /f HTTP/1.1\r\nHost: localhost\r\n\r\n"
                  b"GET /big/%d HTTP/1.1\r\nHost: localhost\r\n\r\n"
                  b"GET /f HTTP/1.1\r\nHost: localhost\r\n"
                  b"Connection: close\r\n\r\n" % (3 * MiB))
        r = Reader(s)
        deadline = time.monotonic() + DEADLINE * 3
        for want in (blob, pattern(3 * MiB), blob):
            status, _, got = r.response()
            assert status == 200
            assert len(got) == len(want) and got == want
            assert time.monotonic() < deadline
    finally:
        s.close()
    assert o.errors == []
    no_crit(weir)


def test_keyupdate_from_client(weir, pki):
    """TLS 1.3 KeyUpdate (update_requested) between two requests: weir
    reads it, answers with its own, and goes on."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, "    server {\n"
                "        listen 127.0.0.1:%d ssl;\n%s"
                "        location / { return 200 \"k$uri\\n\"; }\n"
                "    }\n" % (port, certs(leaf)), [port])
    p = subprocess.Popen(["openssl", "s_client", "-connect",
                          "127.0.0.1:%d" % port, "-tls1_3", "-crlf",
                          "-servername", "localhost"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    out = b""
    try:
        def feed(line):
            p.stdin.write(line)
            p.stdin.flush()

        feed(b"GET /one HTTP/1.1\nHost: localhost\n\n")
        time.sleep(0.5)
        feed(b"K\n")
        time.sleep(0.5)
        feed(b"GET /two HTTP/1.1\nHost: localhost\nConnection: close\n\n")
        time.sleep(1)
        out, _ = p.communicate(timeout=DEADLINE)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = out.decode("latin-1")
    text = re.sub(r"(?s)SSL-Session:.*?---", "", text)
    assert "KEYUPDATE" in text, text
    assert "k/one" in text and "k/two" in text, text
    no_crit(weir)


def s_client_lines(p, decisive):
    """Lines of a running openssl s_client (stdout) up to and including
    the first one for which decisive(line) is true, or up to its end;
    bounded by DEADLINE."""
    lines, buf = [], b""
    end = time.monotonic() + DEADLINE
    fd = p.stdout.fileno()
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], end - time.monotonic())
        if not ready:
            break
        data = os.read(fd, 65536)
        if not data:
            break
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            lines.append(line.decode("latin-1"))
            if decisive(lines[-1]):
                return lines
    if buf:
        lines.append(buf.decode("latin-1"))
    return lines


def test_renegotiation_refused(weir, pki):
    """A TLS 1.2 client asking to renegotiate is refused with the
    no_renegotiation alert and no second handshake; weir keeps
    serving."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, "    server {\n"
                "        listen 127.0.0.1:%d ssl;\n%s"
                "        location / { return 200 \"g$uri\\n\"; }\n"
                "    }\n" % (port, certs(leaf)), [port])
    p = subprocess.Popen(["openssl", "s_client", "-connect",
                          "127.0.0.1:%d" % port, "-tls1_2", "-crlf",
                          "-msg", "-no_legacy_server_connect"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    seen = {"reneg": False}

    def decisive(line):
        # after "R": the server's answer to the second ClientHello, either
        # its alert or its ServerHello (a server that renegotiates)
        if line.startswith("RENEGOTIATING"):
            seen["reneg"] = True
        return seen["reneg"] and line.startswith("<<<") \
            and ("Alert" in line or "ServerHello" in line)

    try:
        # s_client reads its stdin once the first handshake is done
        p.stdin.write(b"R\n")
        p.stdin.flush()
        lines = s_client_lines(p, decisive)
    finally:
        p.kill()
        p.communicate(timeout=DEADLINE)
    text = "\n".join(lines)
    assert "RENEGOTIATING" in text, text
    after = text[text.index("RENEGOTIATING"):]
    answers = [line for line in after.splitlines()
               if line.startswith("<<<") and "RecordHeader" not in line]
    # the first record from the server after the new ClientHello is the
    # refusal; a server that renegotiates answers a ServerHello instead
    assert answers and answers[0].endswith("warning no_renegotiation"), \
        text
    hellos = [line for line in lines
              if line.startswith("<<<") and line.endswith(", ServerHello")]
    assert len(hellos) == 1, text
    s = tls(port)
    s.sendall(b"GET /after HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert Reader(s).response()[2] == b"g/after\n"
    s.close()
    no_crit(weir)


# ---------------------------------------------------------------- tunnel

@pytest.mark.parametrize("strict", [False, True])
def test_tunnel_tls_both_sides(weir, pki, origins, strict):
    """An upgraded connection, TLS on both sides: 2 MB each way, then
    the client half-closes (a TCP FIN without close_notify, which weir
    takes as the end of what the client sends); the origin's answer
    must still reach the client (OpenSSL 3 made that EOF fatal: nothing
    could be written after it). weir passes each end on as a
    close_notify before the FIN, to the origin and to the client.
    strict: both peers take an EOF without close_notify as an attack,
    as OpenSSL 3 does by default (python's own default ignores it)."""
    leaf = pki.leaf("localhost")
    o = origins(pki.leaf("127.0.0.1", ips=("127.0.0.1",)), strict)
    port = weir.port()
    start(weir, UPGRADE_MAP + proxy_server(port, leaf, o), [port])
    ctx = context()
    if strict:
        ctx.options &= ~getattr(ssl, "OP_IGNORE_UNEXPECTED_EOF", 0)
    raw = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    s = ctx.wrap_socket(raw, server_hostname="localhost",
                        suppress_ragged_eofs=not strict)
    try:
        s.sendall(b"GET /up HTTP/1.1\r\nHost: localhost\r\n"
                  b"Connection: upgrade\r\nUpgrade: raw\r\n\r\n")
        r = Reader(s)
        head = r._until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        # in steps, from this thread alone: an SSL object must not be
        # read and written by two threads at once
        data = os.urandom(2 * MiB)
        step = 64 * 1024
        for i in range(0, len(data), step):
            s.sendall(data[i:i + step])
            assert r._exact(len(data[i:i + step])) == data[i:i + step]
        socket.socket.shutdown(s, socket.SHUT_WR)
        rest = b""
        while True:
            try:
                d = s.recv(65536)
            except ssl.SSLZeroReturnError:
                break
            except ssl.SSLError as exc:
                # a FIN without close_notify from weir (OpenSSL 3:
                # "unexpected eof while reading")
                raise AssertionError("ragged EOF from weir after %r: %r"
                                     % (rest, exc))
            if not d:
                break
            rest += d
        assert (r.buf + rest) == b"bye:clean", rest
    finally:
        s.close()
    wait_for(lambda: o.events, what="the origin to see the end")
    assert o.events == [("eof", "clean")], o.events
    no_crit(weir)


# ---------------------------------------------------------------- security

@pytest.mark.parametrize("version", ["TLSv1_2", "TLSv1_3"])
def test_session_does_not_resume_on_server_with_client_verify(
        weir, pki, version):
    """A session from a.test (no client certificate asked) must not
    resume on b.test of the same address, which requires one: by the
    shared cache and by ticket (same ticket keys)."""
    a, b = pki.leaf("a.test"), pki.leaf("b.test")
    key = pki.ticket_key("review")
    port = weir.port()
    common = ("        ssl_session_cache shared:R:1m;\n"
              "        ssl_session_ticket_key %s;\n" % key)
    start(weir,
          "    server {\n"
          "        listen 127.0.0.1:%d ssl;\n"
          "        server_name a.test;\n%s%s"
          "        location / { return 200 \"a $ssl_session_reused\"; }\n"
          "    }\n"
          "    server {\n"
          "        listen 127.0.0.1:%d ssl;\n"
          "        server_name b.test;\n%s%s"
          "        ssl_client_certificate %s;\n"
          "        ssl_verify_client on;\n"
          "        location / { return 200 \"b $ssl_session_reused "
          "$ssl_client_verify\"; }\n"
          "    }\n" % (port, certs(a), common, port, certs(b), common,
                       pki.ca_cert), [port])
    v = getattr(ssl.TLSVersion, version)
    for tickets in (True, False):
        ctx = context(max_version=v, min_version=v)
        if not tickets:
            ctx.options |= ssl.OP_NO_TICKET
        s = tls(port, ctx, "a.test")
        s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        assert Reader(s).response()[2] == b"a ."
        # TLS 1.3: the tickets came after the handshake
        s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        Reader(s).response()
        sess = s.session
        s.close()
        # the same server resumes (python's client resumes TLS 1.2
        # sessions without a ticket only now and then: not asserted)
        s = tls(port, ctx, "a.test", session=sess)
        s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        answer = Reader(s).response()[2]
        s.close()
        if tickets or version == "TLSv1_3":
            assert answer == b"a r", (tickets, version)
        # the strict one must not
        try:
            s = tls(port, ctx, "b.test", session=sess)
        except (ssl.SSLError, ConnectionResetError):
            continue
        try:
            reused = s.session_reused
            s.sendall(b"GET / HTTP/1.1\r\nHost: b.test\r\n\r\n")
            try:
                status, _, body = Reader(s).response()
            except (ssl.SSLError, ConnectionResetError, EOFError):
                status, body = None, b""
        finally:
            s.close()
        # TLS 1.2: a resumed session keeps its SNI (a.test), so the
        # connection is a.test's and b.test's Host gets 421
        assert not reused or (version == "TLSv1_2" and status == 421), \
            (tickets, version, status, body)
        assert status != 200, (tickets, version, body)
    no_crit(weir)


@pytest.mark.parametrize("no_sni", [False, True])
def test_client_cert_of_another_ca_does_not_pass_by_resumption(
        weir, pki, no_sni):
    """mallory's certificate (another CA) is verified on a.test, which
    trusts that CA (optional); her TLS 1.3 session must not get her in
    b.test (or the default server), which trust only the test CA."""
    a, b = pki.leaf("a.test"), pki.leaf("b.test")
    other = pki.other_ca()
    mallory = pki.client("mallory", ca=other)
    port = weir.port()
    start(weir,
          "    ssl_session_cache shared:R:1m;\n"
          "    server {\n"
          "        listen 127.0.0.1:%d ssl;\n"
          "        server_name b.test;\n%s"
          "        ssl_client_certificate %s;\n"
          "        ssl_verify_client on;\n"
          "        location / { return 200 \"b $ssl_session_reused "
          "$ssl_client_verify\"; }\n"
          "    }\n"
          "    server {\n"
          "        listen 127.0.0.1:%d ssl;\n"
          "        server_name a.test;\n%s"
          "        ssl_client_certificate %s;\n"
          "        ssl_verify_client optional;\n"
          "        location / { return 200 \"a $ssl_session_reused "
          "$ssl_client_verify\"; }\n"
          "    }\n" % (port, certs(b), pki.ca_cert, port, certs(a),
                       other.cert), [port])
    ctx = context(client=mallory, min_version=ssl.TLSVersion.TLSv1_3)
    s = tls(port, ctx, "a.test")
    s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
    assert Reader(s).response()[2] == b"a . SUCCESS"
    s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
    Reader(s).response()
    sess = s.session
    s.close()
    # a.test resumes her
    s = tls(port, ctx, "a.test", session=sess)
    s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
    assert Reader(s).response()[2] == b"a r SUCCESS"
    s.close()
    try:
        s = tls(port, ctx, None if no_sni else "b.test", session=sess)
        s.sendall(b"GET / HTTP/1.1\r\nHost: b.test\r\n\r\n")
        status, _, body = Reader(s).response()
        s.close()
    except (ssl.SSLError, ConnectionResetError, EOFError) as exc:
        print("refused: %r" % exc)
        status, body = None, b""
    assert status != 200, body


def test_full_shared_cache(weir, pki):
    """The smallest shared cache, 300 TLS 1.2 sessions: every handshake
    works, the newest sessions resume, nothing worse than a warning."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, "    server {\n"
                "        listen 127.0.0.1:%d ssl;\n%s"
                "        ssl_session_cache shared:SMALL:32k;\n"
                "        ssl_session_tickets off;\n"
                "        location / { return 200 \"$ssl_session_reused\"; }\n"
                "    }\n" % (port, certs(leaf)), [port])
    ctx = context(max_version=ssl.TLSVersion.TLSv1_2)
    last = None
    for _ in range(300):
        s = tls(port, ctx)
        s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n"
                  b"Connection: close\r\n\r\n")
        assert Reader(s).response()[0] == 200
        last = s.session
        s.close()
    s = tls(port, ctx, session=last)
    s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert Reader(s).response()[2] == b"r"
    s.close()
    no_crit(weir)


def test_garbage_and_huge_records_after_handshake(weir, pki):
    """After the handshake: an application record of 65535 bytes (more
    than TLS allows), and a record that does not decrypt. Each closes
    that connection only."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, "    server {\n"
                "        listen 127.0.0.1:%d ssl;\n%s"
                "        location / { return 200 \"ok\"; }\n"
                "    }\n" % (port, certs(leaf)), [port])
    for junk in (b"\x17\x03\x03\xff\xff" + b"\x00" * 65535,
                 b"\x17\x03\x03\x00\x40" + os.urandom(64),
                 b"\x15\x03\x03\x00\x02\x02\x50"):
        s = tls(port)
        raw = socket.socket(fileno=os.dup(s.fileno()))
        try:
            raw.sendall(junk)
            raw.settimeout(DEADLINE)
            end = time.monotonic() + DEADLINE
            while time.monotonic() < end:
                try:
                    if not raw.recv(65536):
                        break
                except ConnectionResetError:
                    break
            else:
                pytest.fail("weir kept a connection that sent garbage")
        finally:
            raw.close()
            s.close()
    s = tls(port)
    s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert Reader(s).response()[2] == b"ok"
    s.close()
    no_crit(weir)


def test_plain_http_answered_once(weir, pki):
    """Two pipelined plain requests to the TLS port: one 400, then the
    connection closes."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, "    server {\n"
                "        listen 127.0.0.1:%d ssl;\n%s"
                "        location / { return 200 \"ok\"; }\n"
                "    }\n" % (port, certs(leaf)), [port])
    s = connect(port, timeout=DEADLINE)
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            try:
                d = s.recv(65536)
            except ConnectionResetError:
                break
            if not d:
                break
            data += d
    finally:
        s.close()
    assert data.count(b"HTTP/1.1 400") == 1, data
    no_crit(weir)


def test_close_mid_handshake_with_cache_and_sni(weir, pki):
    """Clients that leave at every point of the handshake (after the
    ClientHello, after a partial one), with SNI switching and the
    shared cache: no crash, no leak (LSan at exit), weir serves on."""
    a, b = pki.leaf("a.test"), pki.leaf("b.test")
    port = weir.port()
    start(weir,
          "    ssl_session_cache shared:M:1m;\n"
          "    server {\n"
          "        listen 127.0.0.1:%d ssl;\n"
          "        server_name a.test;\n%s"
          "        location / { return 200 \"a\"; }\n"
          "    }\n"
          "    server {\n"
          "        listen 127.0.0.1:%d ssl;\n"
          "        server_name b.test;\n%s"
          "        location / { return 200 \"b\"; }\n"
          "    }\n" % (port, certs(a), port, certs(b)), [port])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="b.test")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    hello = out.read()
    for cut in (len(hello), len(hello) // 2, 5, 1):
        s = connect(port, timeout=DEADLINE)
        s.sendall(hello[:cut])
        if cut == len(hello):
            s.recv(1)       # the server's flight has started
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    s = tls(port, sni="b.test")
    s.sendall(b"GET / HTTP/1.1\r\nHost: b.test\r\n\r\n")
    assert Reader(s).response()[2] == b"b"
    s.close()
    no_crit(weir)


def test_records_read_ahead_in_one_segment(weir, pki):
    """Several TLS records in one TCP segment: weir reads them with one
    read() (read-ahead), so records it has not decrypted yet wait inside
    OpenSSL where no event announces them. Requests that fill the header
    buffer, and small ones behind them, are all answered in order."""
    leaf = pki.leaf("localhost")
    port = weir.port()
    start(weir, "    server {\n"
                "        listen 127.0.0.1:%d ssl;\n%s"
                "        client_header_buffer_size 1k;\n"
                "        large_client_header_buffers 4 8k;\n"
                "        location / { return 200 \"r$uri\\n\"; }\n"
                "    }\n" % (port, certs(leaf)), [port])
    pad = b"X-Pad: " + b"p" * 3000 + b"\r\n"
    reqs = []
    for i in range(6):
        reqs.append(b"GET /%d HTTP/1.1\r\nHost: localhost\r\n%s%s\r\n"
                    % (i, pad if i % 2 == 0 else b"",
                       b"Connection: close\r\n" if i == 5 else b""))
    s = tls(port)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
        for req in reqs:
            s.sendall(req)          # one TLS record each
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
        r = Reader(s)
        for i in range(6):
            status, _, body = r.response()
            assert status == 200
            assert body == b"r/%d\n" % i
    finally:
        s.close()
    no_crit(weir)
