"""Compatibility with nginx 1.22 for responses and proxying (issue 13):
what an intercepted error keeps of the origin's answer, which answer
proxy_next_upstream relays once no attempt is left, add_header's
special headers seen by the conditional and range filters, and the
reason phrases weir writes. Each test says what nginx does."""

import pytest

from test_proxy import access_lines, get, start, upstream


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
