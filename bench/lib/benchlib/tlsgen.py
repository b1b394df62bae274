"""The per-run certificates, made with the openssl command line: a CA
and one ECDSA P-256 leaf for 127.0.0.1, localhost and the MITM arms'
names (BENCH_DOMAIN and every name one label under it), and the
interception CA that the intercepting proxies mint their leaves from
(EC P-256, its key 0600; mitmproxy's copy of both in its confdir)."""

import os
import subprocess

# the MITM arms' origin names: bench.test and *.bench.test (the DNS
# server of the run, benchlib/dnsd.py, answers 127.0.0.1 for them all)
BENCH_DOMAIN = 'bench.test'


def make(rundir):
    """Writes RUNDIR/tls/{ca,leaf}.{crt,key} and leaf.pem (leaf
    certificate + key, for HAProxy's crt); returns a dict of paths."""
    d = os.path.join(rundir, 'tls')
    os.makedirs(d, exist_ok=True)
    p = lambda name: os.path.join(d, name)
    ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
    with open(p('leaf.ext'), 'w') as f:
        f.write('basicConstraints=CA:FALSE\n'
                'keyUsage=digitalSignature\n'
                'extendedKeyUsage=serverAuth\n'
                'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:%s,'
                'DNS:*.%s\n' % (BENCH_DOMAIN, BENCH_DOMAIN))
    steps = (
        ['openssl', 'req', '-x509'] + ec + [
            '-days', '7', '-subj', '/CN=weir bench CA',
            '-addext', 'basicConstraints=critical,CA:TRUE',
            '-keyout', p('ca.key'), '-out', p('ca.crt')],
        ['openssl', 'req'] + ec + [
            '-subj', '/CN=localhost',
            '-keyout', p('leaf.key'), '-out', p('leaf.csr')],
        ['openssl', 'x509', '-req', '-in', p('leaf.csr'),
         '-CA', p('ca.crt'), '-CAkey', p('ca.key'), '-CAcreateserial',
         '-days', '7', '-extfile', p('leaf.ext'), '-out', p('leaf.crt')],
        ['openssl', 'req', '-x509'] + ec + [
            '-days', '7', '-subj', '/CN=weir bench interception CA',
            '-addext', 'basicConstraints=critical,CA:TRUE',
            '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
            '-keyout', p('mitm-ca.key'), '-out', p('mitm-ca.crt')],
    )
    for argv in steps:
        cp = subprocess.run(argv, capture_output=True, text=True)
        if cp.returncode != 0:
            raise RuntimeError('%s failed: %s' % (' '.join(argv[:2]),
                                                  cp.stderr.strip()))
    os.chmod(p('mitm-ca.key'), 0o600)
    os.makedirs(p('mitmproxy'), exist_ok=True)
    for out_name, names in (('leaf.pem', ('leaf.crt', 'leaf.key')),
                            ('mitmproxy/mitmproxy-ca.pem',
                             ('mitm-ca.key', 'mitm-ca.crt'))):
        with open(p(out_name), 'w') as out:
            for name in names:
                with open(p(name)) as f:
                    out.write(f.read())
    os.chmod(p('mitmproxy/mitmproxy-ca.pem'), 0o600)
    return {'ca': p('ca.crt'), 'cert': p('leaf.crt'), 'key': p('leaf.key'),
            'pem': p('leaf.pem'), 'mitm_cert': p('mitm-ca.crt'),
            'mitm_key': p('mitm-ca.key'), 'mitm_confdir': p('mitmproxy')}
