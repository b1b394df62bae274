"""The MITM arms' DNS server: every A question for BENCH_DOMAIN or a
name under it is answered 127.0.0.1 (TTL one hour); any other question
gets an empty NOERROR answer (AAAA) or NXDOMAIN (a name elsewhere).
Python's standard library only, one UDP socket on loopback; run as a
process of its own (python3 dnsd.py DOMAIN) that prints its port.

weir-probe --new-host names a host never seen on every connection: the
proxy asks for each one here, as it would ask a real resolver.
"""

import socket
import struct
import sys


def answer(query, domain):
    """The reply to one query packet (bytes), or None to ignore it."""
    if len(query) < 12:
        return None
    qid, flags, qd = struct.unpack('!HHH', query[:6])
    if flags & 0x8000 or qd != 1:
        return None
    labels, i = [], 12
    while i < len(query) and query[i] != 0:
        n = query[i]
        if n > 63 or i + 1 + n > len(query):
            return None
        labels.append(query[i + 1:i + 1 + n].decode('ascii', 'replace'))
        i += 1 + n
    if i + 5 > len(query):
        return None
    qtype, qclass = struct.unpack('!HH', query[i + 1:i + 5])
    question = query[12:i + 5]
    name = '.'.join(labels).lower()
    ours = name == domain or name.endswith('.' + domain)
    rcode = 0 if ours else 3
    an = 1 if ours and qtype == 1 and qclass == 1 else 0
    head = struct.pack('!HHHHHH', qid, 0x8180 | (flags & 0x0100) | rcode,
                       1, an, 0, 0)
    body = question
    if an:
        body += struct.pack('!HHHIH4s', 0xc00c, 1, 1, 3600, 4,
                            socket.inet_aton('127.0.0.1'))
    return head + body


def main(argv):
    domain = argv[1].lower() if len(argv) > 1 else 'bench.test'
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('127.0.0.1', int(argv[2]) if len(argv) > 2 else 0))
    print('dnsd listening on 127.0.0.1:%d' % s.getsockname()[1], flush=True)
    while True:
        data, peer = s.recvfrom(4096)
        reply = answer(data, domain)
        if reply:
            s.sendto(reply, peer)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
