"""Compatibility with nginx 1.22 for responses and proxying (issue 13):
what an intercepted error keeps of the origin's answer, which answer
proxy_next_upstream relays once no attempt is left, add_header's
special headers seen by the conditional and range filters, and the
reason phrases weir writes. Each test says what nginx does."""

import calendar
import os

import pytest

import test_http_modules as modules
from test_proxy import Client, access_lines, get, start, upstream


def answer(make_origin, name, status, headers=()):
    """An origin that answers every request with status, "NAME says N"
    and headers."""
    def handler(req, w):
        w.read_body()
        w.respond(status, list(headers),
                  b"%s says %d\n" % (name.encode(), status))

    return make_origin(name=name, handler=handler)


# ---- proxy_intercept_errors

CHALLENGES = [("WWW-Authenticate", 'Basic realm="one"'),
              ("WWW-Authenticate", 'Bearer realm="two"')]


def test_intercepted_401_keeps_the_challenges(make_origin, weir):
    """nginx copies the origin's WWW-Authenticate into the error page's
    response for a 401 (ngx_http_upstream_intercept_errors): without it
    the client cannot answer the challenge. Every one of them, as nginx
    1.23 on (1.22 copies the first)."""
    o = answer(make_origin, "a", 401, CHALLENGES + [("X-Other", "1")])
    port = start(weir, o, location=(
        "            proxy_intercept_errors on;\n"
        "            error_page 401 /err;\n"), server=(
        "        location = /err { return 200 \"page\\n\"; }\n"))
    r = get(port, "/x")
    assert r.status == 401 and r.body == b"page\n", r
    assert r.header_all("www-authenticate") == [v for _, v in CHALLENGES]
    # the rest of the origin's head is the page's business, not kept
    assert r.header("x-other") is None and r.header("x-origin") is None


def test_intercepted_401_to_named_location(make_origin, weir):
    o = answer(make_origin, "a", 401, CHALLENGES[:1])
    port = start(weir, o, location=(
        "            proxy_intercept_errors on;\n"
        "            error_page 401 @auth;\n"), server=(
        "        location @auth { return 401 \"login\\n\"; }\n"))
    r = get(port, "/x")
    assert r.status == 401 and r.body == b"login\n", r
    assert r.header_all("www-authenticate") == [CHALLENGES[0][1]]


@pytest.mark.parametrize("status,name", [(405, "Allow"),
                                         (403, "WWW-Authenticate"),
                                         (407, "Proxy-Authenticate")])
def test_intercepted_other_statuses_keep_nothing(make_origin, weir,
                                                 status, name):
    """nginx 1.22 (and later) keeps only a 401's WWW-Authenticate: an
    intercepted 405 loses the origin's Allow, a 407 its
    Proxy-Authenticate."""
    o = answer(make_origin, "a", status, [(name, "x")])
    port = start(weir, o, location=(
        "            proxy_intercept_errors on;\n"
        "            error_page %d /err;\n" % status), server=(
        "        location = /err { return 200 \"page\\n\"; }\n"))
    r = get(port, "/x")
    assert r.status == status and r.body == b"page\n", r
    assert r.header(name) is None, r


# ---- proxy_next_upstream with no attempt left

NEXT_STATUSES = [403, 404, 429, 500, 502, 503, 504]


@pytest.mark.parametrize("status", NEXT_STATUSES)
def test_next_upstream_relays_the_last_answer(make_origin, weir, status):
    """Every server answers a status proxy_next_upstream retries on:
    nginx relays the last server's answer (ngx_http_upstream_test_next
    retries only while peer.tries > 1), not a page of its own."""
    a = answer(make_origin, "a", status, [("X-Mine", "yes")])
    b = answer(make_origin, "b", status, [("X-Mine", "yes")])
    port = start(weir, "u", upstream=upstream(
        "u", "%s max_fails=0" % a.addr, "%s max_fails=0" % b.addr),
        location=("            proxy_next_upstream error timeout "
                  "http_%d;\n" % status))
    r = get(port, "/x")
    assert r.status == status, r
    line = access_lines(weir, 1)[0]
    assert line[1] == "%d, %d" % (status, status), line
    last = "a" if line[2].endswith(a.addr) else "b"
    assert r.body == b"%s says %d\n" % (last.encode(), status), r
    assert r.header("x-origin") == last and r.header("x-mine") == "yes"
    assert len(a.requests) == 1 and len(b.requests) == 1


def test_next_upstream_single_server_relays(make_origin, weir):
    """One server: nothing to retry, its 404 is the answer."""
    a = answer(make_origin, "a", 404)
    port = start(weir, a, location=(
        "            proxy_next_upstream error timeout http_404;\n"))
    r = get(port, "/x")
    assert r.status == 404 and r.body == b"a says 404\n", r
    assert len(a.requests) == 1


def test_next_upstream_tries_limit_relays(make_origin, weir):
    """proxy_next_upstream_tries 2 of three servers that all answer 503:
    the second answer is relayed, the third server is not asked."""
    os_ = [answer(make_origin, n, 503) for n in ("a", "b", "c")]
    port = start(weir, "u", upstream=upstream(
        "u", *["%s max_fails=0" % o.addr for o in os_]), location=(
        "            proxy_next_upstream error timeout http_503;\n"
        "            proxy_next_upstream_tries 2;\n"))
    r = get(port, "/x")
    assert r.status == 503 and r.header("x-origin") is not None, r
    assert r.body == b"%s says 503\n" % r.header("x-origin").encode()
    assert sum(len(o.requests) for o in os_) == 2
    assert access_lines(weir, 1)[0][1] == "503, 503"


def test_next_upstream_timeout_relays(make_origin, weir):
    """proxy_next_upstream_timeout spent by the first attempt: its
    answer is relayed, no second server is asked."""
    def slow(req, w):
        w.read_body()
        w.wait(400)
        w.respond(500, [], b"slow says 500\n")

    a = make_origin(name="slow", handler=slow)
    b = make_origin(name="slow", handler=slow)
    port = start(weir, "u", upstream=upstream(
        "u", "%s max_fails=0" % a.addr, "%s max_fails=0" % b.addr),
        location=("            proxy_next_upstream error timeout "
                  "http_500;\n"
                  "            proxy_next_upstream_timeout 200ms;\n"))
    r = get(port, "/x")
    assert r.status == 500 and r.body == b"slow says 500\n", r
    assert len(a.requests) + len(b.requests) == 1


def test_next_upstream_exhausted_then_intercepted(make_origin, weir):
    """The last answer is what proxy_intercept_errors sees: with an
    error_page for it, the page is sent (as nginx)."""
    a = answer(make_origin, "a", 404)
    b = answer(make_origin, "b", 404)
    port = start(weir, "u", upstream=upstream("u", a.addr, b.addr),
                 location=(
                     "            proxy_next_upstream error http_404;\n"
                     "            proxy_intercept_errors on;\n"
                     "            error_page 404 /err;\n"), server=(
                     "        location = /err { return 200 \"page\\n\"; }\n"))
    r = get(port, "/x")
    assert r.status == 404 and r.body == b"page\n", r
    assert len(a.requests) == 1 and len(b.requests) == 1


# ---- add_header Last-Modified / ETag on static files

FILE_DATE = "Wed, 01 Jan 2020 00:00:00 GMT"
NEW_DATE = "Sat, 01 Jan 2022 00:00:00 GMT"


def static_site(weir):
    """weir serving the same 10-byte file (mtime FILE_DATE) under /plain/,
    /rm/ (Last-Modified and ETag removed), /rep/ (Last-Modified
    replaced by NEW_DATE), /tag/ (ETag replaced by "my") and /multi/
    (Cache-Control and Link). Returns the port."""
    port = weir.port()
    html = modules.http_conf(weir, port, (
        "        location /rm/ { add_header Last-Modified \"\";\n"
        "            add_header ETag \"\"; }\n"
        "        location /rep/ {\n"
        "            add_header Last-Modified \"%s\"; }\n"
        "        location /tag/ { add_header ETag '\"my\"'; }\n"
        "        location /multi/ { add_header Cache-Control no-store;\n"
        "            add_header Cache-Control \"\";\n"
        "            add_header Link \"<a>\"; add_header Link \"<b>\"; }\n"
        % NEW_DATE))
    t = calendar.timegm((2020, 1, 1, 0, 0, 0))
    for d in ("plain", "rm", "rep", "tag", "multi"):
        os.makedirs(os.path.join(html, d))
        f = os.path.join(html, d, "f.txt")
        with open(f, "w") as fp:
            fp.write("0123456789")
        os.utime(f, (t, t))
    modules.start(weir, port)
    return port


def test_add_header_empty_removes_last_modified_and_etag(weir):
    """nginx: an empty add_header Last-Modified or ETag removes the
    response's own (ngx_http_set_last_modified clears the time too)."""
    port = static_site(weir)
    r = get(port, "/plain/f.txt")
    assert r.header("last-modified") == FILE_DATE and r.header("etag")
    r = get(port, "/rm/f.txt")
    assert r.status == 200 and r.body == b"0123456789"
    assert r.header_all("last-modified") == [], r
    assert r.header_all("etag") == [], r
    # nothing to hold If-Range to: the whole file, as nginx
    r = get(port, "/rm/f.txt", headers=[("Range", "bytes=0-1"),
                                       ("If-Range", FILE_DATE)])
    assert r.status == 200 and r.body == b"0123456789", r
    r = get(port, "/rm/f.txt", headers=[("Range", "bytes=0-1")])
    assert r.status == 206 and r.body == b"01", r


def test_add_header_replaced_last_modified_and_if_range(weir):
    """nginx: add_header Last-Modified replaces the header and the time
    If-Range is compared with (the headers filter runs before the range
    filter), so the date the client was given gets its range."""
    port = static_site(weir)
    r = get(port, "/rep/f.txt")
    assert r.header_all("last-modified") == [NEW_DATE], r
    r = get(port, "/rep/f.txt", headers=[("Range", "bytes=0-1"),
                                        ("If-Range", NEW_DATE)])
    assert r.status == 206 and r.body == b"01", r
    assert r.header_all("last-modified") == [NEW_DATE], r
    r = get(port, "/rep/f.txt", headers=[("Range", "bytes=0-1"),
                                        ("If-Range", FILE_DATE)])
    assert r.status == 200 and r.body == b"0123456789", r


def test_add_header_replaced_last_modified_and_if_modified_since(weir):
    """nginx's not_modified filter runs before add_header: it compares
    If-Modified-Since with the file's time, not the replaced one (nginx
    1.22 answers 304 for FILE_DATE, 200 for NEW_DATE); the 304 carries
    the replaced header."""
    port = static_site(weir)
    r = get(port, "/rep/f.txt", headers=[("If-Modified-Since", FILE_DATE)])
    assert r.status == 304, r
    assert r.header_all("last-modified") == [NEW_DATE], r
    r = get(port, "/rep/f.txt", headers=[("If-Modified-Since", NEW_DATE)])
    assert r.status == 200 and r.body == b"0123456789", r


def test_add_header_replaced_etag(weir):
    """One ETag, the configured one; If-Range compares with it,
    If-None-Match with the file's (as nginx 1.22)."""
    port = static_site(weir)
    own = get(port, "/plain/f.txt").header("etag")
    r = get(port, "/tag/f.txt")
    assert r.header_all("etag") == ['"my"'], r
    r = get(port, "/tag/f.txt", headers=[("Range", "bytes=0-1"),
                                        ("If-Range", '"my"')])
    assert r.status == 206 and r.body == b"01", r
    r = get(port, "/tag/f.txt", headers=[("Range", "bytes=0-1"),
                                        ("If-Range", own)])
    assert r.status == 200, r
    r = get(port, "/tag/f.txt", headers=[("If-None-Match", own)])
    assert r.status == 304 and r.header_all("etag") == ['"my"'], r
    r = get(port, "/tag/f.txt", headers=[("If-None-Match", '"my"')])
    assert r.status == 200, r


def test_add_header_cache_control_and_link_add_lines(weir):
    """Cache-Control and Link are lists in nginx: each add_header adds
    a line, an empty value adds none."""
    port = static_site(weir)
    r = get(port, "/multi/f.txt")
    assert r.header_all("cache-control") == ["no-store"], r
    assert r.header_all("link") == ["<a>", "<b>"], r


# ---- reason phrases

# weir's phrase (RFC 9110) where nginx 1.22's differs or is missing;
# docs/compatibility.md lists them all. A change here is deliberate.
PHRASES = {
    302: "Found",                       # nginx: Moved Temporarily
    405: "Method Not Allowed",          # nginx: Not Allowed
    413: "Content Too Large",           # nginx: Request Entity Too Large
    414: "URI Too Long",                # nginx: Request-URI Too Large
    416: "Range Not Satisfiable",       # nginx: Requested Range Not ...
    503: "Service Unavailable",         # nginx: Service Temporarily ...
    504: "Gateway Timeout",             # nginx: Gateway Time-out
    431: "Request Header Fields Too Large",     # nginx: none
}


def status_line(port, target, method="GET"):
    """The status line of weir's answer to one request, as sent."""
    with Client(port) as c:
        c.send(("%s %s HTTP/1.1\r\nHost: client.example\r\n"
                "Connection: close\r\n\r\n" % (method, target)).encode())
        return c._line().decode("latin-1")


def test_reason_phrases_are_rfc9110(weir):
    port = start(weir, server="".join(
        "        location = /%d { return %d; }\n" % (code, code)
        for code in PHRASES))
    for code, phrase in PHRASES.items():
        assert status_line(port, "/%d" % code) \
            == "HTTP/1.1 %d %s" % (code, phrase)
        # the built-in page says the same
        with Client(port) as c:
            r = c.request("GET", "/%d" % code)
            if code != 302:
                assert ("<title>%d %s</title>" % (code, phrase)).encode() \
                    in r.body, r


def test_reason_phrase_of_the_origin_is_relayed(make_origin, weir):
    """A relayed answer keeps the origin's status line, as nginx."""
    def handler(req, w):
        w.respond(405, [], b"no\n", reason="Not Allowed")

    o = make_origin(name="a", handler=handler)
    port = start(weir, o)
    assert status_line(port, "/x") == "HTTP/1.1 405 Not Allowed"
