"""A real browser through the intercepting proxy (issue 16): Debian's
headless Chromium with --proxy-server=http://127.0.0.1:P loads an HTTPS
page with 20 images from two test origins, a.test (HTTP/2 and
HTTP/1.1) and b.test (HTTP/1.1 only). weir decrypts both CONNECTs with
leaves minted from its CA; the access log must show every request
decrypted, over HTTP/2 on both legs where the origin chose h2 and over
HTTP/1.1 where it did not.

Chromium trusts weir's CA through the command line alone: the base64
SHA-256 of the CA's SubjectPublicKeyInfo in
--ignore-certificate-errors-spki-list (what docs/mitm.md tells testers
to pass; Chromium matches it against every certificate the server
sends, so weir must send its CA after the leaf), never
--ignore-certificate-errors. Everything stays on loopback as in
test_http2_browser: the host resolver answers nothing but 127.0.0.1
(the proxy's address; names behind a proxy are the proxy's to
resolve), and weir resolves a.test and b.test through the `dns`
fixture. Chromium's own net log must show TCP connections to weir's
port only, no datagram and no name lookup; the background fetches
Chromium still makes go to weir too, which may not let them out (its
resolver knows two names, its CONNECT ports are the origins').
Skipped only when /usr/bin/chromium is absent."""

import os
import re
import ssl

import h2.exceptions
import pytest

from h2origin import Conn, H1Conn, H2Origin
from test_http2_browser import (CHROMIUM, ERR_ABORTED,
                                ERR_NAME_NOT_RESOLVED, netlog_events, png,
                                run_chromium, spki_sha256, transport_event)
from test_mitm import add_names, mitm_ca, start
from weirtest import DEADLINE

pytestmark = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason="%s not installed (auto/deps installs Debian's chromium "
           "package)" % CHROMIUM)

IMAGES_PER_ORIGIN = 10

# what Chromium's background fetches may end with: the host resolver
# rules refused the name, the browser exited first, or weir refused the
# CONNECT (a port it does not allow) or answered the absolute-form
# request with an error (a name its resolver does not know)
ERR_TUNNEL_CONNECTION_FAILED = -111
BACKGROUND_ERRORS = (ERR_NAME_NOT_RESOLVED, ERR_ABORTED,
                     ERR_TUNNEL_CONNECTION_FAILED)

LOG_FORMAT = ("    log_format browser '$connection [$mitm] "
              "[$server_protocol] [$mitm_origin_alpn] [$scheme] "
              "[$http_host] $status \"$request\"';\n"
              "    access_log logs/access.log browser;\n")
LOG_LINE = re.compile(r'^(\d+) \[([^\]]*)\] \[([^\]]*)\] \[([^\]]*)\] '
                      r'\[([^\]]*)\] \[([^\]]*)\] (\d{3}) '
                      r'"(\S+) (\S+) (\S+)"$')


# ---------------------------------------------------------------- origins

class AssetOrigin(H2Origin):
    """An H2Origin over TLS that serves `files` (path -> (content type,
    body)) over HTTP/2 (ALPN h2) and HTTP/1.1 (any other choice), and
    records every request as (protocol, path) in `served`."""

    def __init__(self, files, cert, key, alpn):
        self.files = files
        self.served = []
        super().__init__(cert=cert, key=key, alpn=alpn, h1=True,
                         conn=AssetH2Conn)

    def lookup(self, proto, path):
        with self.lock:
            self.served.append((proto, path))
        return self.files.get(path)

    def _serve(self, s):
        # H2Origin._serve for a TLS origin, with this file's HTTP/1.1
        # connection class (H2Origin's is fixed)
        try:
            s = self.ctx.wrap_socket(s, server_side=True)
            self.conns.append(s)
            if s.selected_alpn_protocol() == "h2":
                self.conn_class(self, s).run()
            else:
                AssetH1Conn(self, s, b"").run()
        except (OSError, ssl.SSLError, h2.exceptions.ProtocolError) as e:
            self.errors.append(repr(e))
        finally:
            try:
                s.close()
            except OSError:
                pass


class AssetH1Conn(H1Conn):
    def answer(self, path, body):
        found = self.o.lookup("http/1.1", path)
        if found is None:
            self.s.sendall(b"HTTP/1.1 404 Not Found\r\n"
                           b"Content-Length: 9\r\n\r\nnot here\n")
            return True
        ctype, data = found
        self.s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"
                       b"Content-Length: %d\r\n\r\n"
                       % (ctype.encode(), len(data)) + data)
        return True


class AssetH2Conn(Conn):
    def answer(self, sid):
        path = dict(self.heads[sid]).get(":path", "/").split("?")[0]
        found = self.o.lookup("h2", path)
        if found is None:
            with self.wlock:
                self.h2.send_headers(sid, [(":status", "404")])
            self.send_body(sid, b"not here\n")
            return
        ctype, data = found
        with self.wlock:
            self.h2.send_headers(sid, [(":status", "200"),
                                       ("content-type", ctype),
                                       ("content-length", str(len(data)))])
        self.send_body(sid, data)


@pytest.fixture
def asset_origins():
    """A factory of AssetOrigin, every one closed at teardown."""
    made = []

    def make(*args, **kw):
        o = AssetOrigin(*args, **kw)
        made.append(o)
        return o

    yield make
    for o in made:
        o.close()


def images(host, first):
    """[(path, png bytes, width)] of host's images; widths first+1 on,
    one per image, so that a body swapped between two requests (or two
    origins) shows in the widths the page reports."""
    out = []
    for i in range(IMAGES_PER_ORIGIN):
        n = first + i
        out.append(("/img/%s%02d.png" % (host[0], i),
                    png(n + 1, 2, (n * 11 % 256, 255 - n * 7 % 256, 64)),
                    n + 1))
    return out


def page(urls):
    """The HTML page: an <img> per absolute URL, then a script that,
    once the load event has fired (every image loaded or failed), writes
    how many decoded and their widths into the DOM that --dump-dom
    prints. The data: icon keeps Chromium from asking for a favicon."""
    tags = "".join('<img src="%s" alt="">\n' % u for u in urls)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n"
            "<title>weir intercepting</title></head><body>\n%s"
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
            "</script>\n</body></html>\n" % tags).encode()


# ---------------------------------------------------------------- chromium

def netlog_summary(netlog, proxy_port, prefixes):
    """What Chromium's net log shows, as (problems, connections to weir,
    [(test URL, net error, status line)], {host: proxy} of its HTTP/2
    sessions). Problems: a TCP connection anywhere but weir, a UDP
    datagram, a name lookup (the resolver rules answer every name but
    127.0.0.1 before any lookup: a lookup means a name escaped them), a
    request for a URL outside prefixes (a fetch of Chromium's own) that
    neither failed (BACKGROUND_ERRORS) nor got an error status (weir's
    403 for a port it does not allow, 502 for a name it cannot
    resolve)."""
    weir = "127.0.0.1:%d" % proxy_port
    bad = []
    to_weir = 0
    urls = {}
    errors = {}
    statuses = {}
    h2_sessions = {}
    for kind, source, sid, phase, params in netlog_events(netlog):
        seen = transport_event(kind, params, weir)
        if seen is not None:
            if seen is True:
                to_weir += 1
            elif seen:
                bad.append(seen)
        elif kind == "HTTP2_SESSION" and "host" in params:
            h2_sessions[params["host"]] = str(params.get("proxy"))
        elif (kind == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS"
              and source == "URL_REQUEST" and params.get("headers")):
            statuses[sid] = params["headers"][0]
        elif kind == "REQUEST_ALIVE" and source == "URL_REQUEST":
            if "url" in params:
                urls[sid] = params["url"]
            if "net_error" in params:
                errors[sid] = params["net_error"]
    ours = []
    for sid, url in sorted(urls.items()):
        if url.startswith(prefixes):
            ours.append((url, errors.get(sid, 0), statuses.get(sid)))
            continue
        if url.startswith("data:"):
            continue
        status = re.match(r"HTTP/\S+ (\d{3})", statuses.get(sid, ""))
        if errors.get(sid) in BACKGROUND_ERRORS or (
                sid not in errors and status and int(status.group(1)) >= 400):
            continue
        bad.append("request for %s ended with %s, %s"
                   % (url[:80], errors.get(sid, "no error"),
                      statuses.get(sid, "no response")))
    return bad, to_weir, ours, h2_sessions


# ---------------------------------------------------------------- the test

def test_chromium_through_mitm_loads_20_images_from_two_origins(
        weir, dns, pki, asset_origins):
    leaf_a = pki.leaf("a.test")
    leaf_b = pki.leaf("b.test")
    imgs_a = images("a.test", 0)
    imgs_b = images("b.test", IMAGES_PER_ORIGIN)
    files_b = {p: ("image/png", body) for p, body, _ in imgs_b}
    origin_b = asset_origins(files_b, cert=leaf_b.chain, key=leaf_b.key,
                             alpn=("http/1.1",))
    files_a = {p: ("image/png", body) for p, body, _ in imgs_a}
    origin_a = asset_origins(files_a, cert=leaf_a.chain, key=leaf_a.key,
                             alpn=("h2", "http/1.1"))
    host_a = "a.test:%d" % origin_a.port
    host_b = "b.test:%d" % origin_b.port
    # the page mixes the two origins' images (a, b, a, b, ...)
    urls = []
    for (pa, _, _), (pb, _, _) in zip(imgs_a, imgs_b):
        urls.append("https://%s%s" % (host_a, pa))
        urls.append("https://%s%s" % (host_b, pb))
    files_a["/"] = ("text/html; charset=utf-8", page(urls))
    widths = []
    for (_, _, wa), (_, _, wb) in zip(imgs_a, imgs_b):
        widths += [wa, wb]

    add_names(dns, "a.test", "b.test")
    port = start(weir, dns, pki, [origin_a.port, origin_b.port],
                 http=LOG_FORMAT)

    workdir = weir.path("chromium")
    os.makedirs(workdir)
    spki = spki_sha256(mitm_ca(pki).cert)
    p, netlog = run_chromium("https://%s/" % host_a, spki, workdir,
                             timeout=int(DEADLINE), proxy_port=port)
    err = p.stderr.decode(errors="replace")
    out = p.stdout.decode(errors="replace")
    assert p.returncode == 0, "chromium exited %d:\n%s" % (
        p.returncode, err[-3000:])

    prefixes = ("https://%s/" % host_a, "https://%s/" % host_b)
    bad, to_weir, requested, h2_sessions = netlog_summary(netlog, port,
                                                          prefixes)
    assert not bad, "chromium reached beyond weir: %s" % bad
    # one connection per origin at least (the net log was read at all)
    assert to_weir >= 2, "%d connections to weir in %s" % (to_weir, netlog)
    # Chromium asked for the page and the 20 images, once each, and got
    # a 200 for each (no certificate or tunnel error)
    # (the page declares a data: icon, so Chromium has no reason to ask
    # for /favicon.ico; should it, that request is left out here and
    # below, but it must have been decrypted all the same)
    requested = [r for r in requested if not r[0].endswith("/favicon.ico")]
    failed = [r for r in requested
              if r[1] != 0 or not re.match(r"HTTP/\S+ 200\b", r[2] or "")]
    assert not failed, ("requests that failed in chromium (url, net error, "
                        "status line): %s" % failed)
    want_urls = ["https://%s/" % host_a] + urls
    assert sorted(u for u, _, _ in requested) == sorted(want_urls), \
        requested
    # its HTTP/2 sessions: one with a.test, through weir; none with
    # b.test, which does not speak it
    assert host_a in h2_sessions, h2_sessions
    assert "127.0.0.1:%d" % port in h2_sessions[host_a], h2_sessions
    assert host_b not in h2_sessions, h2_sessions

    m = re.search(r'<p id="result">([^<]*)</p>', out)
    assert m, "no result in the dumped DOM:\n%s\n%s" % (out[-2000:],
                                                        err[-2000:])
    assert m.group(1) == "loaded %d of %d widths %s" % (
        len(urls), len(urls), ",".join(str(w) for w in widths))

    # an access log line is written as its request ends (a CONNECT's
    # once it is intercepted): a graceful stop makes sure they are all
    # there (the fixture's own stop then finds weir gone)
    weir.stop()
    with open(weir.path("logs", "access.log")) as f:
        lines = f.read().splitlines()
    log = "\n".join(lines)
    entries = []
    for line in lines:
        lm = LOG_LINE.match(line)
        assert lm, "unexpected access log line: %r\n%s" % (line, log)
        entries.append(lm.groups() + (line,))
    # (conn, mitm, proto, alpn, scheme, http_host, status, method,
    #  target, version, line)

    # Chromium's own background requests, if any, reached weir too
    # (CONNECTs to port 443, absolute-form http:// requests): none may
    # have been let through, nor decrypted (weir's resolver knows two
    # names, its CONNECT ports are the two origins')
    ours = {host_a, host_b}
    for e in entries:
        if e[5] not in ours:
            assert int(e[6]) >= 400 and e[1] == "-", (
                "a request not for the test origins was let through: %s"
                % e[10])
    entries = [e for e in entries if e[5] in ours]
    connects = [e for e in entries if e[7] == "CONNECT"]
    gets = [e for e in entries if e[7] != "CONNECT"]

    # the CONNECTs: each one was intercepted (decrypted), none tunnelled
    for e in connects:
        assert e[1:3] == ("intercepted", "HTTP/1.1"), e[10]
        assert (e[6], e[9]) == ("200", "HTTP/1.1"), e[10]
        assert e[5] == e[8], e[10]
    assert {e[8] for e in connects} == ours, log

    # the 21 GETs (the page and its 20 images), each once, all decrypted
    favicon = [e for e in gets if e[8] == "/favicon.ico"]
    gets = [e for e in gets if e[8] != "/favicon.ico"]
    for e in favicon:
        assert e[1] == "decrypted", e[10]
    want = sorted([(host_a, "/")] + [(host_a, pth) for pth, _, _ in imgs_a]
                  + [(host_b, pth) for pth, _, _ in imgs_b])
    assert sorted((e[5], e[8]) for e in gets) == want, log
    for (conn, mitm, proto, alpn, scheme, http_host, status, method,
         target, version, line) in gets:
        assert (mitm, scheme, method, status) == (
            "decrypted", "https", "GET", "200"), line
        if http_host == host_a:
            # a.test chose h2: HTTP/2 on the client leg as well
            assert (proto, alpn, version) == ("HTTP/2.0", "h2",
                                              "HTTP/2.0"), line
        else:
            assert (proto, alpn, version) == ("HTTP/1.1", "http/1.1",
                                              "HTTP/1.1"), line
    # HTTP/2 multiplexes: a.test's 11 requests came over at most two
    # decrypted connections (Chromium may open a spare one); each
    # decrypted connection is a CONNECT's, which the log also shows
    conns_a = {e[0] for e in gets if e[5] == host_a}
    assert len(conns_a) <= 2, "%d connections:\n%s" % (len(conns_a), log)
    conns = {e[0] for e in gets}
    assert conns <= {e[0] for e in connects}, log
    assert len(conns) <= to_weir, (to_weir, log)

    # the origins got every request once, over the protocol they chose
    served_a = [r for r in origin_a.served if r[1] != "/favicon.ico"]
    assert sorted(served_a) == sorted(
        [("h2", "/")] + [("h2", pth) for pth, _, _ in imgs_a]), served_a
    assert sorted(origin_b.served) == sorted(
        ("http/1.1", pth) for pth, _, _ in imgs_b), origin_b.served
