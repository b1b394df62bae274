"""The per-run certificates: a CA and one ECDSA P-256 leaf for
127.0.0.1 and localhost, made with the openssl command line."""

import os
import subprocess


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
                'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
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
    )
    for argv in steps:
        cp = subprocess.run(argv, capture_output=True, text=True)
        if cp.returncode != 0:
            raise RuntimeError('%s failed: %s' % (' '.join(argv[:2]),
                                                  cp.stderr.strip()))
    with open(p('leaf.pem'), 'w') as out:
        for name in ('leaf.crt', 'leaf.key'):
            with open(p(name)) as f:
                out.write(f.read())
    return {'ca': p('ca.crt'), 'cert': p('leaf.crt'), 'key': p('leaf.key'),
            'pem': p('leaf.pem')}
