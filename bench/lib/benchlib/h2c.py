"""Just enough HTTP/2 with prior knowledge (h2c, RFC 9113 3.3) for the
harness, in the standard library: a readiness GET against listeners that
speak only HTTP/2 (nginx 1.22's `listen ... http2` and HAProxy's `proto
h2` on a plain port), and `hold`, which keeps N idle HTTP/2 connections
open for the idle suite (weir-probe hold is HTTP/1 only).

Run as a program it is the holder:

    h2c.py hold -c N -u http://127.0.0.1:PORT/PATH [-T SECONDS]

It opens the N connections (at most 200 in progress at once), sends the
preface, SETTINGS and one GET on each and reads its response (ACKing the
server's SETTINGS), prints `h2c hold: N idle` when all are idle or -T
seconds (default 60) after the start, and holds them until SIGTERM.
Connections that fail are not retried; the count says how many are idle.
"""

import selectors
import signal
import socket
import struct
import sys
import time

PREFACE = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'

DATA, HEADERS, RST_STREAM, SETTINGS, GOAWAY = 0, 1, 3, 4, 7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4

# :status of an indexed HPACK field (RFC 7541 appendix A)
_STATUS_INDEX = {8: 200, 9: 204, 10: 206, 11: 304, 12: 400, 13: 404,
                 14: 500}


def frame(ftype, flags, stream, payload=b''):
    return struct.pack('>I', len(payload))[1:] + \
        struct.pack('>BBI', ftype, flags, stream) + payload


def _literal(name_index, value):
    """A literal header field without indexing, the name indexed, the
    value raw (no Huffman); values here are short (< 127 bytes)."""
    value = value.encode()
    return bytes((name_index, len(value))) + value


def request(port, path):
    """The client's first bytes: preface, empty SETTINGS and a GET of
    path on stream 1 (END_STREAM | END_HEADERS)."""
    block = b'\x82\x86' + _literal(4, path) + \
        _literal(1, '127.0.0.1:%d' % port)
    return PREFACE + frame(SETTINGS, 0, 0) + \
        frame(HEADERS, END_STREAM | END_HEADERS, 1, block)


def parse_frames(buf):
    """(frames, rest): the whole frames at the start of buf as (type,
    flags, stream, payload), and the bytes after them."""
    out = []
    while len(buf) >= 9:
        n = int.from_bytes(buf[:3], 'big')
        if len(buf) < 9 + n:
            break
        ftype, flags = buf[3], buf[4]
        stream = int.from_bytes(buf[5:9], 'big') & 0x7fffffff
        out.append((ftype, flags, stream, bytes(buf[9:9 + n])))
        buf = buf[9 + n:]
    return out, buf


def status_of(block):
    """The :status of a response header block when the server sent it
    as an indexed static field (every server here does for 200), else
    None. Dynamic table size updates before it are skipped."""
    i = 0
    while i < len(block) and (block[i] & 0xe0) == 0x20:
        # a 5-bit prefix integer: all ones means more bytes follow, the
        # last without its high bit (RFC 7541 5.1)
        more = (block[i] & 0x1f) == 0x1f
        i += 1
        while more and i < len(block):
            more = bool(block[i] & 0x80)
            i += 1
    if i < len(block) and block[i] & 0x80:
        return _STATUS_INDEX.get(block[i] & 0x7f)
    return None


class Conn:
    """One h2c connection's state while it makes its one request:
    done when stream 1 ended, status from its HEADERS."""

    def __init__(self):
        self.buf = b''
        self.status = None
        self.done = False
        self.failed = None
        self.out = b''

    def feed(self, data):
        """Takes bytes from the server; queues the SETTINGS ACK in
        self.out."""
        frames, self.buf = parse_frames(self.buf + data)
        for ftype, flags, stream, payload in frames:
            if ftype == SETTINGS and not flags & ACK:
                self.out += frame(SETTINGS, ACK, 0)
            elif ftype == HEADERS and stream == 1:
                if self.status is None:
                    self.status = status_of(payload)
                    if not flags & END_HEADERS:
                        self.failed = 'CONTINUATION not handled'
                if flags & END_STREAM:
                    self.done = True
            elif ftype == DATA and stream == 1 and flags & END_STREAM:
                self.done = True
            elif ftype == RST_STREAM and stream == 1:
                self.failed = 'RST_STREAM'
            elif ftype == GOAWAY:
                self.failed = self.failed or 'GOAWAY'


def get(port, path, timeout=2.0):
    """One h2c GET of path to 127.0.0.1:port; returns the status (None
    when not an indexed one); raises OSError on failure."""
    with socket.create_connection(('127.0.0.1', port), timeout) as s:
        s.sendall(request(port, path))
        c = Conn()
        end = time.monotonic() + timeout
        while not c.done and not c.failed:
            if time.monotonic() > end:
                raise OSError('h2c: no response in %.0f s' % timeout)
            data = s.recv(65536)
            if not data:
                raise OSError('h2c: connection closed')
            c.feed(data)
            if c.out:
                s.sendall(c.out)
                c.out = b''
        if c.failed:
            raise OSError('h2c: ' + c.failed)
        return c.status


def hold(port, path, n, timeout, report=print):
    """Opens n h2c connections, one GET each; returns the list of the
    idle sockets once they are all done or timeout passed. report gets
    the failure summary."""
    sel = selectors.DefaultSelector()
    idle, failed, started = [], {}, 0
    first = request(port, path)
    end = time.monotonic() + timeout

    def fail(s, why):
        failed[why] = failed.get(why, 0) + 1
        sel.unregister(s)
        s.close()

    while (started < n or sel.get_map()) and time.monotonic() < end:
        while started < n and len(sel.get_map()) < 200:
            started += 1
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(('127.0.0.1', port))
            except BlockingIOError:
                pass
            except OSError:
                failed['connect'] = failed.get('connect', 0) + 1
                s.close()
                continue
            c = Conn()
            c.out = first
            sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
        for key, ev in sel.select(0.1):
            s, c = key.fileobj, key.data
            try:
                if ev & selectors.EVENT_WRITE and c.out:
                    k = s.send(c.out)
                    c.out = c.out[k:]
                if ev & selectors.EVENT_READ:
                    data = s.recv(65536)
                    if not data:
                        fail(s, 'closed')
                        continue
                    c.feed(data)
            except OSError as e:
                fail(s, type(e).__name__)
                continue
            if c.failed:
                fail(s, c.failed)
            elif c.done and not c.out:
                sel.unregister(s)
                if c.status == 200:
                    idle.append(s)
                else:
                    failed['status %s' % c.status] = \
                        failed.get('status %s' % c.status, 0) + 1
                    s.close()
            else:
                sel.modify(s, selectors.EVENT_READ | (
                    selectors.EVENT_WRITE if c.out else 0), c)
    for key in list(sel.get_map().values()):
        fail(key.fileobj, 'timeout')
    missing = n - len(idle) - sum(failed.values())
    if missing:
        failed['not opened'] = missing
    if failed:
        report('h2c hold: %d of %d connections failed or not opened (%s)'
               % (n - len(idle), n, ', '.join(
                   '%s %d' % kv for kv in sorted(failed.items()))))
    return idle


def _url_port_path(url):
    if not url.startswith('http://'):
        raise ValueError('h2c hold: http:// URLs only: %s' % url)
    hostport, _, path = url[len('http://'):].partition('/')
    host, _, port = hostport.rpartition(':')
    if host != '127.0.0.1' or not port.isdigit():
        raise ValueError('h2c hold: http://127.0.0.1:PORT/ only: %s' % url)
    return int(port), '/' + path


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog='h2c.py hold')
    ap.add_argument('cmd', choices=('hold',))
    ap.add_argument('-c', type=int, required=True)
    ap.add_argument('-u', required=True)
    ap.add_argument('-T', type=float, default=60.0)
    a = ap.parse_args(argv)
    try:
        port, path = _url_port_path(a.u)
    except ValueError as e:
        ap.error(str(e))
    stop = []
    signal.signal(signal.SIGTERM, lambda *x: stop.append(1))
    signal.signal(signal.SIGINT, lambda *x: stop.append(1))
    err = lambda text: print(text, file=sys.stderr, flush=True)
    idle = hold(port, path, a.c, a.T, err)
    print('h2c hold: %d idle' % len(idle), flush=True)
    while not stop:
        time.sleep(0.5)     # until SIGTERM: not a readiness wait
    closed = 0
    for s in idle:
        try:
            s.setblocking(False)
            if s.recv(1, socket.MSG_PEEK) == b'':
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    print('h2c hold: %d open at end, %d closed by peer'
          % (len(idle) - closed, closed), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
