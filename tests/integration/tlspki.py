"""A test PKI generated at run time with the openssl CLI (no private key
is ever committed), and the load_module preamble of the ssl module.

Usage (the session-scoped `pki` fixture of conftest.py gives a PKI in a
temporary directory that is removed when the session ends; every
certificate is generated once per session and then cached):

    def test_x(weir, pki):
        leaf = pki.leaf("a.test")                   # RSA-2048, by the CA
        ec = pki.leaf("a.test", key="ec")           # ECDSA P-256
        ip = pki.leaf("localhost", ips=["127.0.0.1"])
        enc = pki.leaf("e.test", password="s3cret")  # encrypted key
        sub = pki.leaf("i.test", ca=pki.intermediate())
        old = pki.leaf("old.test", expired=True)
        cli = pki.client("alice")                   # clientAuth cert
        rogue = pki.leaf("a.test", ca=pki.other_ca())  # not trusted
        tk = pki.ticket_key("k1")                   # 80 random bytes
        weir.conf(ssl_preamble() + "http { server { listen ... ssl;\\n"
                  "ssl_certificate %s; ssl_certificate_key %s; } }"
                  % (leaf.chain, leaf.key))

Cert attributes (all paths are absolute, PEM):
    cert      the certificate alone
    key       its private key (encrypted when password was given)
    chain     the certificate followed by its intermediates: what
              ssl_certificate / proxy_ssl_certificate take
    ca        the root CA certificate that verifies it (a path): what
              a client, ssl_client_certificate or
              proxy_ssl_trusted_certificate takes
    names     the DNS names (the first is the CN), ips the IP addresses
    key_type  "rsa" or "ec"
    password, password_file   (encrypted keys only; the file holds the
              password on one line, as ssl_password_file reads it)
    subject, issuer   the DNs as `openssl x509 -subject -nameopt RFC2253`
              prints them (what $ssl_client_s_dn / _i_dn give)
    serial    hex, upper case; fingerprint: SHA-1, lower-case hex
    der_sha1  the same fingerprint (no colons)

PKI methods (every argument is keyword-friendly; the same arguments give
the same cached Cert):
    pki.ca                      the root CA (a Cert, CA:TRUE)
    pki.ca_cert                 its certificate's path (== pki.ca.cert)
    pki.leaf(*names, key="rsa", ips=(), ca=None, expired=False,
             password=None)    a server certificate (serverAuth)
    pki.client(cn, key="rsa", ca=None)   a client certificate (clientAuth)
    pki.intermediate(name="weir test intermediate CA")   a CA signed by
                                the root; leaves it signs carry it in
                                their chain
    pki.other_ca(name="weir untrusted CA")   a second, unrelated root
    pki.ticket_key(name, size=80)   a session ticket key file (48 or 80
                                random bytes)
    pki.path(name)              a path inside the PKI directory

ssl_preamble() returns "" when `weir -V` lists weir_http_ssl_module (built
in), else "load_module <builddir>/weir_http_ssl_module.so;\\n" when the
build directory has the dynamic module, and raises AssertionError with a clear
message when neither (a TLS test never passes by skipping).
ssl_build() says which: "dynamic" or "static".
"""

import hashlib
import os
import re
import subprocess
import threading

OPENSSL = "openssl"
SSL_MODULE = "weir_http_ssl_module"

_DAYS = 30


class PKIError(AssertionError):
    pass


def _run(args, **kw):
    res = subprocess.run([OPENSSL] + list(args), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=60, text=True, **kw)
    if res.returncode != 0:
        raise PKIError("openssl %s failed (%d):\n%s%s"
                       % (" ".join(args), res.returncode, res.stdout,
                          res.stderr))
    return res.stdout


class Cert:
    """A certificate and its key (see the module docstring)."""

    def __init__(self, **kw):
        self.cert = None
        self.key = None
        self.chain = None
        self.ca = None
        self.names = ()
        self.ips = ()
        self.key_type = "rsa"
        self.password = None
        self.password_file = None
        self.subject = None
        self.issuer = None
        self.serial = None
        self.fingerprint = None
        self.der_sha1 = None
        self.is_ca = False
        self.signer = None       # the Cert that signed this one
        self.__dict__.update(kw)

    def __repr__(self):
        return "<Cert %s %s>" % (self.names or self.subject, self.key_type)


class PKI:
    """A CA and certificates under directory (created if needed)."""

    def __init__(self, directory):
        self.dir = os.path.abspath(directory)
        os.makedirs(self.dir, exist_ok=True)
        # weir's master reads these as root; keep them readable anyway
        os.chmod(self.dir, 0o755)
        self._cache = {}
        self._lock = threading.Lock()
        self._serial = 0x1000
        self._ca = None

    # ---- public

    def path(self, name):
        return os.path.join(self.dir, name)

    @property
    def ca(self):
        if self._ca is None:
            self._ca = self._root("weir test CA", "ca")
        return self._ca

    @property
    def ca_cert(self):
        return self.ca.cert

    def other_ca(self, name="weir untrusted CA"):
        return self._cached(("root", name),
                            lambda: self._root(name, self._slug("root",
                                                                name)))

    def intermediate(self, name="weir test intermediate CA", ca=None):
        signer = ca or self.ca
        key = ("inter", name, signer.cert)

        def make():
            slug = self._slug("inter", name, signer.cert)
            return self._issue(slug, cn=name, names=(), ips=(), key="rsa",
                               signer=signer, kind="ca")

        return self._cached(key, make)

    def leaf(self, *names, key="rsa", ips=(), ca=None, expired=False,
             password=None):
        if not names and not ips:
            raise ValueError("a leaf needs a DNS name or an IP")
        signer = ca or self.ca
        names = tuple(names)
        ips = tuple(ips)
        ck = ("leaf", names, key, ips, signer.cert, expired, password)

        def make():
            slug = self._slug("leaf", *ck[1:])
            cn = names[0] if names else ips[0]
            return self._issue(slug, cn=cn, names=names, ips=ips, key=key,
                               signer=signer, kind="server",
                               expired=expired, password=password)

        return self._cached(ck, make)

    def client(self, cn, key="rsa", ca=None):
        signer = ca or self.ca
        ck = ("client", cn, key, signer.cert)

        def make():
            slug = self._slug(*ck)
            return self._issue(slug, cn=cn, names=(), ips=(), key=key,
                               signer=signer, kind="client")

        return self._cached(ck, make)

    def ticket_key(self, name, size=80):
        if size not in (48, 80):
            raise ValueError("ticket keys are 48 or 80 bytes")
        ck = ("ticket", name, size)

        def make():
            p = self.path("ticket-%s-%d.key" % (re.sub(r"\W", "_", name),
                                                size))
            with open(p, "wb") as f:
                f.write(os.urandom(size))
            os.chmod(p, 0o644)
            return p

        return self._cached(ck, make)

    # ---- internals

    def _cached(self, key, make):
        with self._lock:
            if key not in self._cache:
                self._cache[key] = make()
            return self._cache[key]

    def _slug(self, *parts):
        h = hashlib.sha1(repr(parts).encode()).hexdigest()[:10]
        word = re.sub(r"[^A-Za-z0-9.-]", "_", str(parts[1]))[:24]
        return "%s-%s-%s" % (parts[0], word.strip("_") or "x", h)

    def _next_serial(self):
        self._serial += 1
        return self._serial

    def _newkey(self, path, key):
        if key == "rsa":
            _run(["genpkey", "-algorithm", "RSA", "-pkeyopt",
                  "rsa_keygen_bits:2048", "-out", path])
        elif key == "ec":
            _run(["genpkey", "-algorithm", "EC", "-pkeyopt",
                  "ec_paramgen_curve:P-256", "-out", path])
        else:
            raise ValueError("key must be \"rsa\" or \"ec\", not %r" % key)
        os.chmod(path, 0o644)

    def _root(self, cn, slug):
        keyp = self.path(slug + ".key")
        certp = self.path(slug + ".crt")
        self._newkey(keyp, "rsa")
        _run(["req", "-x509", "-new", "-key", keyp, "-out", certp,
              "-days", str(_DAYS), "-subj", "/O=weir tests/CN=" + cn,
              "-set_serial", str(self._next_serial()),
              "-config", self._empty_conf(), "-extensions", "v3",
              "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        c = Cert(cert=certp, key=keyp, chain=certp, ca=certp, names=(),
                 key_type="rsa", is_ca=True)
        c._inter = []
        self._describe(c)
        return c

    def _empty_conf(self):
        p = self.path("openssl-empty.cnf")
        if not os.path.exists(p):
            with open(p, "w") as f:
                f.write("[req]\ndistinguished_name = dn\n[dn]\n[v3]\n"
                        "subjectKeyIdentifier = hash\n")
        return p

    def _issue(self, slug, cn, names, ips, key, signer, kind,
               expired=False, password=None):
        keyp = self.path(slug + ".key")
        csrp = self.path(slug + ".csr")
        certp = self.path(slug + ".crt")
        chainp = self.path(slug + ".chain.crt")
        extp = self.path(slug + ".ext")
        self._newkey(keyp, key)

        ext = ["authorityKeyIdentifier = keyid,issuer",
               "subjectKeyIdentifier = hash"]
        if kind == "ca":
            ext += ["basicConstraints = critical, CA:TRUE, pathlen:0",
                    "keyUsage = critical, keyCertSign, cRLSign"]
            subj = "/O=weir tests/CN=" + cn
        else:
            usage = ("digitalSignature, keyEncipherment" if key == "rsa"
                     else "digitalSignature")
            ext += ["basicConstraints = critical, CA:FALSE",
                    "keyUsage = critical, " + usage,
                    "extendedKeyUsage = " + ("serverAuth" if kind == "server"
                                             else "clientAuth")]
            san = ["DNS:" + n for n in names] + ["IP:" + i for i in ips]
            if san:
                ext.append("subjectAltName = " + ", ".join(san))
            subj = ("/O=weir tests/OU=%s/CN=%s"
                    % ("clients" if kind == "client" else "servers", cn))
        with open(extp, "w") as f:
            f.write("\n".join(ext) + "\n")

        _run(["req", "-new", "-key", keyp, "-out", csrp, "-subj", subj,
              "-config", self._empty_conf()])
        args = ["x509", "-req", "-in", csrp, "-CA", signer.cert,
                "-CAkey", signer.key, "-out", certp, "-extfile", extp,
                "-set_serial", str(self._next_serial()), "-sha256"]
        if expired:
            # valid for a day, two days ago: openssl ca can set the dates;
            # x509 -req cannot, so sign with a config through `openssl ca`
            self._sign_expired(csrp, certp, extp, signer)
        else:
            _run(args + ["-days", str(_DAYS)])

        inter = list(getattr(signer, "_inter", []))
        if not signer.is_ca:
            raise ValueError("the signer must be a CA")
        root = signer.ca
        chain_parts = [certp] + ([signer.cert] if signer.cert != root
                                 else []) + inter
        with open(chainp, "w") as out:
            for p in chain_parts:
                with open(p) as f:
                    out.write(f.read())

        c = Cert(cert=certp, key=keyp, chain=chainp, ca=root,
                 names=tuple(names), ips=tuple(ips), key_type=key,
                 is_ca=(kind == "ca"), signer=signer)
        # a CA's certificates above it (without the root): what the
        # chains of the certificates it signs carry after its own
        c._inter = (chain_parts[1:] if kind == "ca" else [])

        if password is not None:
            encp = self.path(slug + ".enc.key")
            _run(["pkey", "-in", keyp, "-out", encp, "-aes256",
                  "-passout", "pass:" + password])
            os.chmod(encp, 0o644)
            pwp = self.path(slug + ".pass")
            with open(pwp, "w") as f:
                f.write(password + "\n")
            c.plain_key = keyp
            c.key = encp
            c.password = password
            c.password_file = pwp

        for p in (csrp, extp):
            try:
                os.unlink(p)
            except OSError:
                pass
        self._describe(c)
        return c

    def _sign_expired(self, csrp, certp, extp, signer):
        d = self.path("ca-db-%d" % self._next_serial())
        os.makedirs(d)
        open(os.path.join(d, "index.txt"), "w").close()
        conf = os.path.join(d, "ca.cnf")
        with open(extp) as f:
            exts = f.read()
        with open(conf, "w") as f:
            f.write("[ca]\ndefault_ca = c\n[c]\n"
                    "database = %s/index.txt\n"
                    "new_certs_dir = %s\n"
                    "serial = %s/serial\n"
                    "default_md = sha256\npolicy = p\n"
                    "unique_subject = no\ncopy_extensions = none\n"
                    "preserve = yes\n"
                    "[p]\ncommonName = supplied\n"
                    "organizationName = optional\n"
                    "organizationalUnitName = optional\n"
                    "[x]\n%s" % (d, d, d, exts))
        with open(os.path.join(d, "serial"), "w") as f:
            f.write("%X\n" % self._next_serial())
        _run(["ca", "-batch", "-config", conf, "-extensions", "x",
              "-in", csrp, "-out", certp, "-cert", signer.cert,
              "-keyfile", signer.key, "-notext", "-preserveDN",
              "-startdate", "20200101000000Z", "-enddate",
              "20200102000000Z"])

    def _describe(self, c):
        out = _run(["x509", "-in", c.cert, "-noout", "-nameopt", "RFC2253",
                    "-subject", "-issuer", "-serial", "-fingerprint",
                    "-sha1"])
        for line in out.splitlines():
            k, _, v = line.partition("=")
            k = k.strip().lower()
            if k == "subject":
                c.subject = v.strip()
            elif k == "issuer":
                c.issuer = v.strip()
            elif k == "serial":
                c.serial = v.strip().upper()
            elif "fingerprint" in k:
                c.der_sha1 = v.strip().replace(":", "").lower()
                c.fingerprint = c.der_sha1


# ---------------------------------------------------------------- module

def ssl_build():
    """"dynamic" when the build directory has weir_http_ssl_module.so,
    "static" when `weir -V` lists weir_http_ssl_module; raises
    AssertionError otherwise."""
    import weirtest

    so = os.path.join(weirtest.WEIR_BUILD_DIR, SSL_MODULE + ".so")
    # built in first: a build directory reconfigured from dynamic to
    # static may still hold a stale .so
    res = weirtest.run_weir(["-V"])
    text = res.stdout + res.stderr
    if re.search(r"^modules:.*\b%s\b" % SSL_MODULE, text, re.M):
        return "static"
    if os.path.exists(so):
        return "dynamic"
    raise AssertionError(
        "the ssl module is neither built into %s (weir -V does not list "
        "%s) nor built as %s: configure with --with-http_ssl_module or "
        "--with-http_ssl_module=dynamic"
        % (weirtest.WEIR_BIN, SSL_MODULE, so))


def ssl_module_path():
    import weirtest

    return os.path.join(weirtest.WEIR_BUILD_DIR, SSL_MODULE + ".so")


def ssl_preamble():
    """The configuration lines that make the ssl module available: a
    load_module line on a dynamic build, nothing on a static one."""
    if ssl_build() == "dynamic":
        return "load_module %s;\n" % ssl_module_path()
    return ""


MITM_MODULE = "weir_http_mitm_module"


def mitm_module_path():
    import weirtest

    return os.path.join(weirtest.WEIR_BUILD_DIR, MITM_MODULE + ".so")


def mitm_preamble():
    """The configuration lines that make the interception (MITM) module
    available: ssl_preamble(), then, when the module is not built in
    (`weir -V` does not list weir_http_mitm_module) and the build
    directory has weir_http_mitm_module.so, its load_module line (after
    the ssl module's, which it needs). On a static build it is just the
    ssl preamble."""
    import weirtest

    text = ssl_preamble()
    res = weirtest.run_weir(["-V"])
    if re.search(r"^modules:.*\b%s\b" % MITM_MODULE,
                 res.stdout + res.stderr, re.M):
        return text
    so = mitm_module_path()
    if os.path.exists(so):
        text += "load_module %s;\n" % so
    return text
