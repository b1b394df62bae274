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
