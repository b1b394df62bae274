"""A real browser over HTTP/2 (issue 14, "Interop"): Debian's headless
Chromium loads a page with 50 images from weir over TLS with http2 on,
half of them static files, half proxied to an HTTP/1.1 origin (the
H2 -> H1 bridge), and the access log must show all 51 requests as
HTTP/2.0 over at most two connections.

Chromium trusts the test certificate through the command line alone
(--ignore-certificate-errors-spki-list with the SHA-256 of the leaf's
SubjectPublicKeyInfo), never with --ignore-certificate-errors: a TLS
failure is a failure. It talks to loopback only: the host resolver
answers nothing but 127.0.0.1, background networking, extensions and
component updates are off, and the test reads Chromium's own net log
to check that every TCP connection went to weir's port, no UDP datagram
was sent and every other request Chromium made on its own failed at
name resolution. auto/deps installs the `chromium` package; the test
is skipped only when /usr/bin/chromium is absent."""

import base64
import hashlib
import json
import os
import re
import signal
import struct
import subprocess
import zlib

import pytest

import tlspki
from test_http2 import up
from weirtest import DEADLINE, wait_for

CHROMIUM = "/usr/bin/chromium"

IMAGES = 50

pytestmark = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason="%s not installed (auto/deps installs Debian's chromium "
           "package)" % CHROMIUM)

LOG_FORMAT = ("log_format h2 '$connection $server_protocol \"$http2\" "
              "$status \"$request\"';\n")
LOG_LINE = re.compile(r'^(\d+) (\S*) "([^"]*)" (\d{3}) "(\S+) (\S+) (\S+)"$')


def png(width, height, rgb):
    """A width x height truecolour PNG of one colour."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height,
                                         8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def images():
    """[(path, png bytes, width)]: even ones static, odd ones proxied;
    each image has its own width, so a body swapped between two
    requests shows in the widths the page reports."""
    out = []
    for i in range(IMAGES):
        where = "img" if i % 2 == 0 else "up"
        width = i + 1
        out.append(("/%s/i%02d.png" % (where, i),
                    png(width, 2, (i * 5 % 256, 255 - i * 5 % 256, 128)),
                    width))
    return out


def page(imgs):
    """index.html: every image, then a script that, once the load event
    has fired (every image is then loaded or failed), writes how many
    decoded and their widths into the DOM that --dump-dom prints. The
    data: icon keeps Chromium from asking for /favicon.ico."""
    tags = "".join('<img src="%s" alt="">\n' % p for p, _, _ in imgs)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n"
            "<title>weir over HTTP/2</title></head><body>\n%s"
            "<p id=\"result\">not loaded</p>\n"
            "<script>\n"
            "window.addEventListener(\"load\", function () {\n"
            "    var imgs = document.images, n = 0, w = [], i;\n"
            "    for (i = 0; i < imgs.length; i++) {\n"
            "        if (imgs[i].complete && imgs[i].naturalWidth > 0) {\n"
            "            n++;\n"
            "        }\n"
            "        w.push(imgs[i].naturalWidth);\n"
            "    }\n"
            "    document.getElementById(\"result\").textContent =\n"
            "        \"loaded \" + n + \" of \" + imgs.length\n"
            "        + \" widths \" + w.join(\",\");\n"
            "});\n"
            "</script>\n</body></html>\n" % tags)


def spki_sha256(cert):
    """base64(SHA-256(SubjectPublicKeyInfo DER)) of a PEM certificate:
    what --ignore-certificate-errors-spki-list takes. openssl prints the
    public key as PEM, whose body is that DER."""
    pem = subprocess.run(["openssl", "x509", "-in", cert, "-pubkey",
                          "-noout"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, check=True,
                         timeout=DEADLINE).stdout
    body = "".join(line for line in pem.splitlines()
                   if line and not line.startswith("-----"))
    return base64.b64encode(hashlib.sha256(base64.b64decode(body))
                            .digest()).decode()


def run_chromium(url, spki, workdir, timeout, proxy_port=None):
    """Runs headless Chromium on url with --dump-dom; returns
    (CompletedProcess, net log path). Its profile, home and net log are
    under workdir; it may only resolve 127.0.0.1. With proxy_port, every
    request goes through http://127.0.0.1:PROXY_PORT (names that are not
    loopback ones are not bypassed: the proxy resolves them), else
    through no proxy at all."""
    home = os.path.join(workdir, "home")
    os.makedirs(home, exist_ok=True)
    netlog = os.path.join(workdir, "netlog.json")
    env = dict(os.environ, HOME=home,
               XDG_CONFIG_HOME=os.path.join(home, ".config"),
               XDG_CACHE_HOME=os.path.join(home, ".cache"))
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
              "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        env.pop(k, None)
    args = [CHROMIUM, "--headless=new",
            "--user-data-dir=" + os.path.join(workdir, "profile"),
            "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking",
            "--no-proxy-server" if proxy_port is None
            else "--proxy-server=http://127.0.0.1:%d" % proxy_port,
            "--disable-extensions", "--disable-component-update",
            # and more of the fetches Chromium makes on its own: HTTP/3
            # (it tries QUIC on UDP 443), sync, default apps, network
            # time, the keyring over D-Bus (the spelling dictionary is
            # still asked for: the resolver rules below stop it)
            "--disable-quic", "--disable-sync", "--disable-default-apps",
            "--disable-spell-checking", "--password-store=basic",
            "--disable-features=NetworkTimeServiceQuerying",
            # every name but 127.0.0.1 fails to resolve: whatever
            # Chromium still tries to fetch cannot leave the machine
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--ignore-certificate-errors-spki-list=" + spki,
            "--log-net-log=" + netlog,
            # a bound inside the browser: past it the navigation stops
            # and the DOM is dumped as it is (the count then fails)
            "--timeout=%d" % (timeout * 1000),
            "--dump-dom", url]
    if os.geteuid() == 0:
        args.insert(1, "--no-sandbox")
    # its own process group: on a timeout the browser and every helper
    # process it forked (zygote, renderer, GPU, network service) go
    # together, and none outlives the test
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=workdir, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, err = proc.communicate(timeout=DEADLINE)
        raise AssertionError("chromium still running after %ds:\n%s"
                             % (timeout + 30,
                                err.decode(errors="replace")[-3000:]))
    finally:
        kill_group(proc.pid)
    p = subprocess.CompletedProcess(args, proc.returncode, out, err)
    return p, netlog


ERR_NAME_NOT_RESOLVED = -105
ERR_ABORTED = -3


def netlog_events(path):
    """The events of a Chromium net log, with their type and source type
    names. Chromium ends the JSON when it exits; a log cut short by a
    crash is closed here so that what it holds can still be read."""
    with open(path, errors="replace") as f:
        text = f.read()
    try:
        log = json.loads(text)
    except ValueError:
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    sources = {v: k for k, v in log["constants"]["logSourceType"].items()}
    for e in log.get("events", ()):
        yield (types.get(e["type"], e["type"]),
               sources.get(e["source"]["type"], e["source"]["type"]),
               e["source"]["id"], e.get("phase"), e.get("params") or {})


def group_members(pgid):
    """The live (not zombie) pids of process group pgid, from /proc."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                data = f.read()
        except OSError:
            continue
        # the command name may hold spaces and parentheses
        rest = data[data.rindex(")") + 2:].split()
        if int(rest[2]) == pgid and rest[0] not in ("Z", "X"):
            pids.append(int(name))
    return pids


def kill_group(pgid):
    """Kills what is left of process group pgid (Chromium's, made by
    run_chromium) and waits, bounded, until none of it is alive."""
    if not group_members(pgid):
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    wait_for(lambda: not group_members(pgid),
             what="chromium's processes to exit")


def transport_event(kind, params, weir):
    """One net log event of the transport: True for a TCP connection made
    to weir ("127.0.0.1:PORT"), a problem's text for a TCP connection
    elsewhere, a UDP datagram or a name lookup (the resolver rules answer
    every name before any lookup: a lookup means a name escaped them),
    "" for a transport event that is neither, None for any other
    event."""
    if kind in ("TCP_CONNECT_ATTEMPT", "TCP_CONNECT"):
        addr = params.get("address", params.get("remote_address"))
        if addr is None:
            return ""
        if addr != weir:
            return "TCP connection to %s" % addr
        return kind == "TCP_CONNECT" or ""
    if kind == "UDP_BYTES_SENT":
        return "UDP datagram sent (%s)" % params
    if (kind.startswith("HOST_RESOLVER_MANAGER_JOB")
            or kind.startswith("HOST_RESOLVER_SYSTEM_TASK")
            or kind.startswith("HOST_RESOLVER_DNS_TASK")
            or kind.startswith("DNS_TRANSACTION")):
        return "name lookup (%s)" % kind
    return None


def foreign_traffic(netlog, port):
    """What Chromium's net log shows leaving for anywhere but weir: a
    TCP connection to another address, any UDP datagram (neither QUIC
    nor DNS has a reason to send one here), a request for another URL
    that did not fail (the host resolver rules refuse every name:
    Chromium's own background fetches end with ERR_NAME_NOT_RESOLVED,
    or ERR_ABORTED when the browser exits first). A UDP connect() alone
    sends nothing (the resolver does one to learn whether IPv6 is
    routed) and is allowed.
    Returns (problems, connections to weir): no problems when
    everything went to weir, and at least one connection when the log
    was read at all."""
    weir = "127.0.0.1:%d" % port
    url_prefix = "https://%s/" % weir
    bad = []
    to_weir = 0
    urls = {}
    errors = {}
    for kind, source, sid, phase, params in netlog_events(netlog):
        seen = transport_event(kind, params, weir)
        if seen is not None:
            if seen is True:
                to_weir += 1
            elif seen:
                bad.append(seen)
        elif kind == "REQUEST_ALIVE" and source == "URL_REQUEST":
            if "url" in params:
                urls[sid] = params["url"]
            if "net_error" in params:
                errors[sid] = params["net_error"]
    for sid, url in sorted(urls.items()):
        if url.startswith(url_prefix) or url.startswith("data:"):
            continue
        if errors.get(sid) not in (ERR_NAME_NOT_RESOLVED, ERR_ABORTED):
            bad.append("request for %s ended with %s"
                       % (url[:80], errors.get(sid, "no result")))
    return bad, to_weir


def test_chromium_loads_50_images_over_h2(weir, make_origin, pki):
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    imgs = images()
    proxied = {p: body for p, body, _ in imgs if p.startswith("/up/")}

    def serve(req, w):
        body = proxied.get(req.path)
        if body is None:
            w.respond(404, body=b"not here\n")
        else:
            w.respond(200, headers=[("Content-Type", "image/png")],
                      body=body)

    o = make_origin(name="images", handler=serve)

    html = weir.path("html")
    os.makedirs(os.path.join(html, "img"))
    for p, body, _ in imgs:
        if p.startswith("/img/"):
            with open(html + p, "wb") as f:
                f.write(body)
    with open(os.path.join(html, "index.html"), "w") as f:
        f.write(page(imgs))

    port = weir.port()
    weir.conf(tlspki.ssl_preamble() +
              "http {\n"
              "    types { text/html html; image/png png; }\n"
              "    default_type application/octet-stream;\n"
              "    " + LOG_FORMAT +
              "    access_log logs/access.log h2;\n"
              "    server {\n"
              "        listen 127.0.0.1:%d ssl;\n"
              "        http2 on;\n"
              "        ssl_certificate %s;\n"
              "        ssl_certificate_key %s;\n"
              "        root %s;\n"
              "        location /up/ { proxy_pass http://%s; }\n"
              "    }\n"
              "}\n" % (port, leaf.chain, leaf.key, html, o.addr))
    weir.start(check_ports=False)
    up(port)

    workdir = weir.path("chromium")
    os.makedirs(workdir)
    p, netlog = run_chromium("https://127.0.0.1:%d/index.html" % port,
                             spki_sha256(leaf.cert), workdir,
                             timeout=int(DEADLINE))
    err = p.stderr.decode(errors="replace")
    out = p.stdout.decode(errors="replace")
    assert p.returncode == 0, "chromium exited %d:\n%s" % (
        p.returncode, err[-3000:])

    bad, to_weir = foreign_traffic(netlog, port)
    assert not bad, "chromium reached beyond weir: %s" % bad
    # a net log without the connections to weir would make the check
    # above vacuous (Chromium renamed its events, say)
    assert to_weir >= 1, "no connection to weir in %s" % netlog

    m = re.search(r'<p id="result">([^<]*)</p>', out)
    assert m, "no result in the dumped DOM:\n%s\n%s" % (out[-2000:],
                                                        err[-2000:])
    widths = ",".join(str(w) for _, _, w in imgs)
    assert m.group(1) == "loaded %d of %d widths %s" % (IMAGES, IMAGES,
                                                        widths)

    # each access log line is written when its request ends: a graceful
    # stop makes sure the last ones are there (the fixture's own stop
    # then finds weir gone)
    weir.stop()
    with open(weir.path("logs", "access.log")) as f:
        lines = f.read().splitlines()
    log = "\n".join(lines)
    entries = []
    for line in lines:
        lm = LOG_LINE.match(line)
        assert lm, "unexpected access log line: %r" % line
        entries.append(lm.groups() + (line,))

    # the page declares a data: icon, so Chromium has no reason to ask
    # for /favicon.ico; should it, that request is left out of the 51
    # (it is a 404), but it must have come over HTTP/2 all the same
    favicon = [e for e in entries if e[5] == "/favicon.ico"]
    entries = [e for e in entries if e[5] != "/favicon.ico"]
    for e in favicon:
        assert e[1:3] + e[6:7] == ("HTTP/2.0", "h2", "HTTP/2.0"), e[7]

    assert len(entries) == IMAGES + 1, log
    want = ["/index.html"] + [path for path, _, _ in imgs]
    assert sorted(e[5] for e in entries) == sorted(want), log
    for conn, proto, h2, status, method, target, version, line in entries:
        assert (proto, h2, version) == ("HTTP/2.0", "h2", "HTTP/2.0"), (
            "not HTTP/2: %r\n%s" % (line, log))
        assert (method, status) == ("GET", "200"), line
    conns = {e[0] for e in entries + favicon}
    assert len(conns) <= 2, "%d connections:\n%s" % (len(conns), log)
    assert len(conns) <= to_weir, (to_weir, log)

    # the proxied half reached the origin over HTTP/1.1, each once
    assert sorted(q.path for q in o.requests) == sorted(proxied)
    assert {q.version for q in o.requests} == {"HTTP/1.1"}
