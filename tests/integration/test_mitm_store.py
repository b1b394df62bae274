"""The on-disk store of minted leaves (mitm_certificate_store,
docs/http/mitm.md): a leaf minted before a restart (a full stop of the
master and a new start, not a reload) is read back from PATH and served
again, byte for byte, without a mint; with one worker and no shared
zone, and with two workers and a zone (where the worker that owns the
zone's pending node reads the store, once for all). The store holds at
most `slots` entries (PATH/<slot / 256>/<slot>, hex), a file that is
not an entry, or an entry made for another key (PATH/leaf.key, the one
key of every leaf), is skipped and replaced; the key is refused when
others may read it, and files are 0600, directories 0700.

The origins, the DNS fixture, weir's CA and the configuration are
test_mitm.py's; the counters are read from stub_status ("MITM
certificates: minted N from cache N evicted N stored N loaded N") and
from the error log's info lines."""

import os
import re
import socket
import stat
import subprocess

import pytest

import tlspki
from test_mitm import (CURL, add_names, curl, leaf_der, mitm_ca, openssl,
                       start, tls_origin, visit_all, wait_port)
# the factory of H2Origin, each closed at teardown (a fixture)
from test_proxy_h2 import h2o  # noqa: F401
from weirtest import DEADLINE, line_of, wait_for


STATUS = "        location = /status { stub_status; }\n"
ZONE = "    mitm_certificate_cache shared:mitm:1m;\n"


def store_line(path, slots=None):
    return "    mitm_certificate_store %s%s;\n" % (
        path, " slots=%d" % slots if slots else "")


def start_store(weir, dns, pki, o, zone=False, workers=1, slots=None,
                extra=""):
    """A forward proxy with mitm on, a store in PREFIX/store (and a
    shared zone with zone), stub_status at /status; returns its port."""
    http = store_line("store", slots) + (ZONE if zone else "") + extra
    return start(weir, dns, pki, [o.port], workers=workers, http=http,
                 server=STATUS)


def restart(weir, port):
    """A full stop of the master, then a new start (not a reload)."""
    weir.stop()
    weir.start(check_ports=False)
    wait_port(port)


def counts(port):
    """The counters of stub_status's MITM line, as a dict."""
    p = subprocess.run([CURL, "-sS", "--max-time", "20",
                        "http://127.0.0.1:%d/status" % port],
                       capture_output=True, timeout=DEADLINE)
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode()
    m = re.search(r"^MITM certificates: minted (\d+) from cache (\d+) "
                  r"evicted (\d+) stored (\d+) loaded (\d+)( \(this "
                  r"worker\))?$", text, re.M)
    assert m, text
    keys = ("minted", "cached", "evicted", "stored", "loaded")
    got = {k: int(v) for k, v in zip(keys, m.groups())}
    got["worker"] = m.group(6) is not None
    return got


def files(root):
    """Every file under root (relative paths)."""
    out = []
    for d, _, names in os.walk(root):
        for n in names:
            out.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(out)


def entries(root):
    return [f for f in files(root) if f != "leaf.key"]


def serial(der):
    out = openssl("x509", "-inform", "DER", "-noout", "-serial", input=der)
    return out.strip().split("=", 1)[1]


def mints(weir, host):
    return len(re.findall(r'minted a certificate for "%s"'
                          % re.escape(host), weir.log()))


def loads(weir, host):
    return len(re.findall(r'loaded from the store the certificate for "%s"'
                          % re.escape(host), weir.log()))


def visit(port, host, oport, pki):
    """One decrypted GET of /tiny through the proxy: its status."""
    r = curl(port, "https://%s:%d/tiny" % (host, oport),
             ca=mitm_ca(pki).cert)
    return r.statuses()


# ---- restarts


@pytest.mark.parametrize("zone", [False, True], ids=["worker", "shared"])
def test_restart_serves_the_stored_leaf(weir, dns, pki, h2o, zone):
    """The leaf minted before a restart is served after it, the same
    certificate (serial number and all), with 0 minted and 1 loaded; the
    file is PREFIX/store/<slot / 256>/<slot>, 0600 in a 0700 directory,
    next to leaf.key (0600)."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start_store(weir, dns, pki, o, zone=zone)
    ca = mitm_ca(pki).cert
    before = leaf_der(port, "a.test", o.port, ca)
    c = counts(port)
    assert (c["minted"], c["stored"], c["loaded"]) == (1, 1, 0), c
    assert c["worker"] == (not zone)
    root = weir.path("store")
    got = entries(root)
    assert len(got) == 1, files(root)
    assert re.match(r"^[0-9a-f]{4}/[0-9a-f]{8}$", got[0]), got
    assert stat.S_IMODE(os.stat(os.path.join(root, got[0])).st_mode) \
        == 0o600
    assert stat.S_IMODE(os.stat(os.path.join(root, "leaf.key")).st_mode) \
        == 0o600
    for d in (root, os.path.dirname(os.path.join(root, got[0]))):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d

    restart(weir, port)
    after = leaf_der(port, "a.test", o.port, ca)
    assert serial(after) == serial(before)
    assert after == before
    c = counts(port)
    assert (c["minted"], c["loaded"], c["stored"]) == (0, 1, 0), c
    assert mints(weir, "a.test") == 1, weir.log()
    assert loads(weir, "a.test") == 1, weir.log()
    # the worker's cache has it now: no second read
    assert visit(port, "a.test", o.port, pki) == [200]
    c = counts(port)
    assert (c["minted"], c["loaded"]) == (0, 1), c


def test_two_workers_share_the_store_through_the_zone(weir, dns, pki, h2o):
    """Two workers, a shared zone and a store: 20 hosts minted, a
    restart, the 20 hosts again (two clients each, at once): 0 minted,
    20 loaded (one read of the store per host, by the worker that owns
    the zone's pending node), every request 200."""
    hosts = ["h%d.m.test" % i for i in range(20)]
    o = tls_origin(h2o, pki, names=("*.m.test",))
    add_names(dns, *hosts)
    port = start_store(weir, dns, pki, o, zone=True, workers=2)

    def round_(n):
        visit_all(port, pki, hosts, o.port, n)

    round_(1)
    c = counts(port)
    assert (c["minted"], c["stored"], c["loaded"]) == (20, 20, 0), c
    assert len(entries(weir.path("store"))) <= 20

    restart(weir, port)
    round_(2)
    c = counts(port)
    assert (c["minted"], c["stored"], c["loaded"]) == (0, 0, 20), c
    for h in hosts:
        assert mints(weir, h) == 1, (h, weir.log())
        assert loads(weir, h) == 1, (h, weir.log())


def test_slots_bound_the_entries(weir, dns, pki, h2o):
    """slots=16 and 40 hosts: never more than 16 entries on disk (and
    leaf.key, no temporary file left), every request 200; after a
    restart the hosts whose entry was replaced are minted again, the
    others loaded."""
    hosts = ["s%d.m.test" % i for i in range(40)]
    o = tls_origin(h2o, pki, names=("*.m.test",))
    add_names(dns, *hosts)
    port = start_store(weir, dns, pki, o, slots=16)
    root = weir.path("store")
    for h in hosts:
        assert visit(port, h, o.port, pki) == [200]
        assert len(entries(root)) <= 16, files(root)
    names = files(root)
    assert "leaf.key" in names
    assert not [n for n in names if n.endswith(".tmp")], names
    assert all(re.match(r"^0000/0000000[0-9a-f]$", n)
               for n in entries(root)), names
    c = counts(port)
    assert (c["minted"], c["stored"]) == (40, 40), c

    restart(weir, port)
    for h in hosts:
        assert visit(port, h, o.port, pki) == [200]
        assert len(entries(root)) <= 16, files(root)
    c = counts(port)
    assert c["minted"] + c["loaded"] == 40, c
    assert 1 <= c["loaded"] <= 16, c
    assert c["stored"] == c["minted"], c


# ---- what is skipped


def corrupt(path, how):
    with open(path, "rb") as f:
        data = f.read()
    if how == "truncated":
        data = data[:len(data) // 2]
    elif how == "empty":
        data = b""
    elif how == "garbage":
        data = os.urandom(len(data))
    elif how == "flipped":
        i = len(data) // 2
        data = data[:i] + bytes([data[i] ^ 0x40]) + data[i + 1:]
    with open(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage",
                                 "flipped"])
def test_corrupt_entry_is_skipped_and_replaced(weir, dns, pki, h2o, how):
    """An entry truncated, emptied, overwritten or with one byte changed:
    skipped with a warning, the leaf minted again and the entry
    rewritten (loaded after the next restart); the request 200."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start_store(weir, dns, pki, o)
    assert visit(port, "a.test", o.port, pki) == [200]
    root = weir.path("store")
    [entry] = entries(root)
    weir.stop()
    corrupt(os.path.join(root, entry), how)

    weir.start(check_ports=False)
    wait_port(port)
    assert visit(port, "a.test", o.port, pki) == [200]
    c = counts(port)
    assert (c["minted"], c["loaded"], c["stored"]) == (1, 0, 1), c
    if how != "empty":
        assert re.search(r"\[warn\].*mitm store: .*%s.* is corrupt"
                         % re.escape(entry), weir.log()), weir.log()
    assert entries(root) == [entry]

    restart(weir, port)
    assert visit(port, "a.test", o.port, pki) == [200]
    c = counts(port)
    assert (c["minted"], c["loaded"]) == (0, 1), c


def test_entries_of_another_leaf_key_are_skipped(weir, dns, pki, h2o):
    """leaf.key deleted between two runs: a new key is made (logged at
    notice), the old entry is for the old key and skipped (the leaf is
    minted again, for the new key), and replaced."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start_store(weir, dns, pki, o)
    ca = mitm_ca(pki).cert
    before = leaf_der(port, "a.test", o.port, ca)
    weir.stop()
    key = weir.path("store", "leaf.key")
    with open(key, "rb") as f:
        old_key = f.read()
    os.unlink(key)

    weir.start(check_ports=False)
    wait_port(port)
    with open(key, "rb") as f:
        assert f.read() != old_key
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    weir.wait_log(r"\[notice\] .*mitm created the leaf key \"%s\""
                  % re.escape(key))
    after = leaf_der(port, "a.test", o.port, ca)
    assert serial(after) != serial(before)
    c = counts(port)
    assert (c["minted"], c["loaded"], c["stored"]) == (1, 0, 1), c
    assert visit(port, "a.test", o.port, pki) == [200]

    restart(weir, port)
    assert leaf_der(port, "a.test", o.port, ca) == after
    c = counts(port)
    assert (c["minted"], c["loaded"]) == (0, 1), c


def test_a_zone_kept_by_a_reload_keeps_its_key(weir, dns, pki, h2o):
    """A store added by a reload while the shared zone stays: the zone
    keeps its key (the leaf minted before is served as it was), the new
    entries are for that key; after a restart the zone is new and takes
    leaf.key, so those entries are skipped and minted again."""
    o = tls_origin(h2o, pki, names=("a.test", "b.test"))
    add_names(dns, "a.test", "b.test")
    port = start(weir, dns, pki, [o.port], http=ZONE, server=STATUS)
    ca = mitm_ca(pki).cert
    a_before = leaf_der(port, "a.test", o.port, ca)
    conf = open(weir.conf_path).read()
    assert ZONE in conf
    old = set(weir.workers())
    with open(weir.conf_path, "w") as f:
        f.write(conf.replace(ZONE, ZONE + store_line("store")))
    weir.reload(wait=False)

    def new_workers():
        now = set(weir.workers())
        return now if now and not (now & old) else None

    wait_for(new_workers, what="the new workers")
    assert leaf_der(port, "a.test", o.port, ca) == a_before
    b = leaf_der(port, "b.test", o.port, ca)
    c = counts(port)
    assert (c["minted"], c["stored"], c["loaded"]) == (2, 1, 0), c

    restart(weir, port)
    assert leaf_der(port, "b.test", o.port, ca) != b
    c = counts(port)
    assert (c["minted"], c["stored"], c["loaded"]) == (1, 1, 0), c


def test_a_failed_verification_is_not_stored(weir, dns, pki, h2o):
    """An origin whose certificate weir does not trust: the client gets
    the 502 page inside, and nothing is written to the store."""
    rogue = pki.other_ca("weir rogue origin CA")
    o = tls_origin(h2o, pki, leaf=pki.leaf("a.test", ca=rogue))
    add_names(dns, "a.test")
    port = start_store(weir, dns, pki, o)
    assert visit(port, "a.test", o.port, pki) == [502]
    assert entries(weir.path("store")) == []
    c = counts(port)
    assert (c["minted"], c["stored"]) == (1, 0), c


# ---- the key and the files


def worker_uid(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[1])
    raise AssertionError("no Uid in /proc/%d/status" % pid)


def test_store_belongs_to_the_workers_user(weir, dns, pki, h2o):
    """The store's directories are the workers' (the master makes the
    top one and, as root, gives it to the workers' user); leaf.key stays
    the master's, 0600."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start_store(weir, dns, pki, o)
    assert visit(port, "a.test", o.port, pki) == [200]
    uid = worker_uid(weir.workers()[0])
    root = weir.path("store")
    [entry] = entries(root)
    for p in (root, os.path.join(root, os.path.dirname(entry)),
              os.path.join(root, entry)):
        assert os.stat(p).st_uid == uid, (p, os.stat(p).st_uid, uid)
    assert os.stat(os.path.join(root, "leaf.key")).st_uid == os.getuid()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604],
                         ids=["0644", "0640", "0604"])
def test_leaf_key_readable_by_others_is_refused(weir, dns, pki, h2o, mode):
    """leaf.key that its group or others may read: weir does not start,
    and says which file and why, with the directive's file:line."""
    o = tls_origin(h2o, pki)
    add_names(dns, "a.test")
    port = start_store(weir, dns, pki, o)
    assert visit(port, "a.test", o.port, pki) == [200]
    weir.stop()
    key = weir.path("store", "leaf.key")
    os.chmod(key, mode)
    weir.allow.append(r"\[emerg\]")
    rc, err = weir.start_fails()
    assert rc != 0, err
    line = line_of(weir.conf_path, "mitm_certificate_store")
    want = ('[emerg] the mitm leaf key "%s" is readable by others (mode '
            '%04o): make it 0600 in %s:%d' % (key, mode, weir.conf_path,
                                              line))
    assert want in err, err
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    os.chmod(key, 0o600)
    p = weir.run(["-t"])
    assert p.returncode == 0, p.stderr


# ---- configuration errors


@pytest.mark.parametrize("value, reason", [
    ("store slots=8",
     'invalid "slots=8" (a number of slots from 16 to 16777216)'),
    ("store slots=16777217",
     'invalid "slots=16777217" (a number of slots from 16 to 16777216)'),
    ("store slots=many",
     'invalid "slots=many" (a number of slots from 16 to 16777216)'),
    ("store slots=",
     'invalid parameter "slots=" (use slots=N)'),
    ("store size=16",
     'invalid parameter "size=16" (use slots=N)'),
    ("off slots=16",
     'invalid parameter "slots=16" after "off"'),
    ("conf/weir.conf",
     'mitm_certificate_store "PREFIX/conf/weir.conf" is not a directory'),
], ids=["small", "large", "word", "empty", "param", "off", "file"])
def test_store_errors(weir, value, reason):
    """A bad mitm_certificate_store: weir -t fails naming the directive's
    file:line and the reason."""
    weir.allow.append(r"\[emerg\]")
    weir.conf(tlspki.mitm_preamble() +
              "http {\n"
              "    mitm_certificate_store %s;\n"
              "}\n" % value)
    p = weir.run(["-t"])
    assert p.returncode != 0
    line = line_of(weir.conf_path, "mitm_certificate_store")
    want = "[emerg] %s in %s:%d" % (reason.replace("PREFIX", weir.prefix),
                                     weir.conf_path, line)
    assert want in p.stderr, p.stderr


def test_store_directive_twice_and_in_a_server(weir):
    """mitm_certificate_store twice is a duplicate, and it belongs in
    http, not in a server; `off` alone is accepted and makes nothing."""
    weir.allow.append(r"\[emerg\]")
    for body, reason, nth in (
            ("    mitm_certificate_store store;\n"
             "    mitm_certificate_store other;\n",
             '"mitm_certificate_store" directive is duplicate', 2),
            ("    server {\n"
             "        mitm_certificate_store store;\n"
             "    }\n",
             '"mitm_certificate_store" directive is not allowed here', 1)):
        weir.conf(tlspki.mitm_preamble() + "http {\n" + body + "}\n")
        p = weir.run(["-t"])
        assert p.returncode != 0
        line = line_of(weir.conf_path, "mitm_certificate_store", nth)
        want = "[emerg] %s in %s:%d" % (reason, weir.conf_path, line)
        assert want in p.stderr, p.stderr
    weir.conf(tlspki.mitm_preamble() +
              "http {\n"
              "    mitm_certificate_store off;\n"
              "}\n")
    p = weir.run(["-t"])
    assert p.returncode == 0, p.stderr
    assert not os.path.exists(weir.path("off"))
