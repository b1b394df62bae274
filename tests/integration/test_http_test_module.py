"""The HTTP module API exercised end to end by a third-party-style
module: tests/modules/weir_test_module builds weir_test_http_module.so,
loaded here with load_module. Its content-phase handler (test_answer)
answers a fixed response and its header filter (test_header) adds a
response header to whatever the location answers."""

import http.client
import os

import weirtest


HTTP_MODULE = os.path.join(weirtest.WEIR_BUILD_DIR,
                           "weir_test_http_module.so")


def get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def module_conf(weir, port):
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    with open(os.path.join(html, "file.txt"), "w") as f:
        f.write("from the static module\n")
    weir.conf("""
load_module %s;
http {
    server {
        listen 127.0.0.1:%d;
        root html;

        location /answer {
            test_answer "answered by a loaded module";
        }

        location /both {
            test_answer "both";
            test_header X-Test-Module both;
        }

        location / {
            test_header X-Test-Module static;
        }
    }
}
""" % (HTTP_MODULE, port))


@weirtest.requires_module("weir_test_http_module")
def test_loaded_module_answers_and_filters(weir):
    port = weir.port()
    module_conf(weir, port)
    weir.start()

    # the content-phase handler answers before the static module
    status, headers, body = get(port, "/answer")
    assert status == 200
    assert body == b"answered by a loaded module"
    assert headers["Content-Type"] == "text/plain"
    assert "X-Test-Module" not in headers

    # the header filter runs for the module's own answer ...
    status, headers, body = get(port, "/both")
    assert (status, body) == (200, b"both")
    assert headers["X-Test-Module"] == "both"

    # ... and for a response of a built-in module: the handler declined
    status, headers, body = get(port, "/file.txt")
    assert (status, body) == (200, b"from the static module\n")
    assert headers["X-Test-Module"] == "static"

    # and for an error page
    status, headers, _ = get(port, "/missing")
    assert status == 404
    assert headers["X-Test-Module"] == "static"


@weirtest.requires_module("weir_test_http_module")
def test_loaded_module_directives_are_checked(weir):
    port = weir.port()
    weir.conf("""
load_module %s;
http {
    server {
        listen 127.0.0.1:%d;
        location / {
            test_header X-A a;
            test_header X-B b;
        }
    }
}
""" % (HTTP_MODULE, port))
    weir.allow.append("directive is duplicate")
    res = weir.run(["-t"])
    assert res.returncode == 1
    line = weirtest.line_of(weir.conf_path, "test_header X-B b;")
    assert ('"test_header" directive is duplicate in %s:%d'
            % (weir.conf_path, line)) in res.stderr, res.stderr
