"""A DNS server on loopback for the resolver tests (Debian python3-dnslib).

DNSServer listens on 127.0.0.1 (UDP, a free port) and answers from its
`records`: name -> list of (type, address, ttl), type "A" or "AAAA";
a name "*.w.test" answers for every name under w.test that has no
records of its own.
A name it does not know gets NXDOMAIN; a name in `servfail` gets
SERVFAIL; a name in `drop` gets no answer at all (a timeout for the
client); a name in `delay` (name -> seconds) is answered that much
later, from a timer, so that concurrent lookups can be seen to share
one query. Every question is recorded in `queries` as (name, type), so
a test can assert what weir asked for and how often.

stop() closes the socket and joins the thread; the loop polls a stop
flag every 50 ms, so it never outlives the test.
"""

import select
import socket
import threading

from dnslib import AAAA, QTYPE, RCODE, RR, A, DNSRecord


class DNSServer:

    def __init__(self):
        self.records = {}
        self.servfail = set()
        self.drop = set()
        self.delay = {}
        self.queries = []
        self.lock = threading.Lock()
        self.sock = None
        self.port = None
        self._stop = threading.Event()
        self._thread = None
        self._timers = []

    def start(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        self.sock = s
        self.port = s.getsockname()[1]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def add(self, name, *answers):
        """add("a.test", ("A", "127.0.0.1", 60), ("AAAA", "::1", 60))"""
        self.records.setdefault(name.lower().rstrip("."), []).extend(answers)

    def count(self, name, qtype=None):
        name = name.lower().rstrip(".")
        with self.lock:
            return sum(1 for n, t in self.queries
                       if n == name and (qtype is None or t == qtype))

    def stop(self):
        self._stop.set()
        for t in self._timers:
            t.cancel()
        if self._thread:
            self._thread.join(5)
        if self.sock:
            self.sock.close()

    def _run(self):
        while not self._stop.is_set():
            r, _, _ = select.select([self.sock], [], [], 0.05)
            if not r:
                continue
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            try:
                self._answer(data, peer)
            except Exception:       # a malformed packet: ignored
                pass

    def _answer(self, data, peer):
        q = DNSRecord.parse(data)
        name = str(q.q.qname).lower().rstrip(".")
        qtype = QTYPE[q.q.qtype]
        with self.lock:
            self.queries.append((name, qtype))
        if name in self.drop:
            return
        reply = q.reply()
        records = self.records.get(name)
        if records is None and "." in name:
            records = self.records.get("*." + name.split(".", 1)[1])
        if name in self.servfail:
            reply.header.rcode = RCODE.SERVFAIL
        elif records is None:
            reply.header.rcode = RCODE.NXDOMAIN
        else:
            for t, addr, ttl in records:
                if t != qtype:
                    continue
                rdata = A(addr) if t == "A" else AAAA(addr)
                reply.add_answer(RR(q.q.qname, getattr(QTYPE, t),
                                    rdata=rdata, ttl=ttl))
        packet = reply.pack()
        if name in self.delay:
            t = threading.Timer(self.delay[name], self._send,
                                (packet, peer))
            self._timers.append(t)
            t.start()
        else:
            self._send(packet, peer)

    def _send(self, packet, peer):
        try:
            self.sock.sendto(packet, peer)
        except OSError:
            pass
