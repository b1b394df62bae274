"""The phase engine, the filter chains and location selection.

`weir -V` prints the chains built from the compiled-in modules; requests
check where they land (exact, prefix, ^~, regex, nested, named and
internal locations), the internal redirection cycle limit (500), the
client_max_body_size check made when the location is chosen (413), and
the answers of the core content step (403 for a directory, 404)."""

import os
import re
import socket

import protoclient
from weirtest import connect, run_weir, wait_for

PHASES = ["post_read", "server_rewrite", "find_config", "rewrite",
          "post_rewrite", "preaccess", "access", "post_access",
          "precontent", "content", "log"]


def chains():
    """The chains that `weir -V` prints, as {title: [entries]}."""
    res = run_weir(["-V"])
    assert res.returncode == 0, res.stderr
    out = res.stdout + res.stderr
    assert "phases:" in out, out
    lines = out[out.index("phases:"):].splitlines()
    found = {}
    for line in lines[1:1 + len(PHASES)]:
        m = re.match(r"^  ([a-z_]+):((?: \S+)*)$", line)
        assert m, "bad phase line %r in:\n%s" % (line, out)
        found[m.group(1)] = m.group(2).split()
    for line in lines[1 + len(PHASES):]:
        m = re.match(r"^((?:request )?(?:body|header) filters):((?: \S+)*)$",
                     line)
        if m:
            found[m.group(1)] = m.group(2).split()
    return found, out


# the chains of the default build (every optional module of this slice
# compiled in); a module that adds or moves a handler or filter updates
# this table in the same change
EXPECTED = {
    "post_read": [],
    "server_rewrite": ["return(100)"],
    "find_config": ["core(0)"],
    "rewrite": ["return(100)"],
    "post_rewrite": ["core(0)"],
    "preaccess": [],
    "access": ["access(100)"],
    "post_access": ["core(0)"],
    "precontent": ["try_files(500)"],
    "content": ["forward_proxy(100)", "index(800)", "static(900)",
                "core(100000)"],
    "log": ["log(100)"],
    "header filters": ["not_modified", "headers", "range", "protocol"],
    "body filters": ["range", "protocol"],
    "request body filters": ["save"],
}


def test_V_prints_the_exact_chains():
    found, out = chains()
    expected = dict(EXPECTED)
    if re.search(r"^modules:.* weir_http_ssl_module\b", out, re.M):
        # built in (--with-http_ssl_module): client certificates are
        # checked in post_read; a loaded .so is not in weir -V's chains
        expected["post_read"] = ["ssl(100)"]
    if re.search(r"^modules:.* weir_http_mitm_module\b", out, re.M):
        # built in (--with-http_mitm_module): the onboarding page answers
        # before the forward proxy would look its name up
        expected["content"] = ["mitm_onboarding(90)"] + EXPECTED["content"]
    assert found == expected, out


def test_V_prints_the_chains():
    found, out = chains()
    assert [p for p in PHASES if p in found] == PHASES, out

    # every phase entry is name(order), orders ascending within a phase
    for phase in PHASES:
        orders = []
        for entry in found[phase]:
            m = re.match(r"^([A-Za-z0-9_]+)\((-?\d+)\)$", entry)
            assert m, "bad entry %r in %s" % (entry, phase)
            orders.append(int(m.group(2)))
        assert orders == sorted(orders), (phase, found[phase])

    # the core's own steps
    assert found["find_config"] == ["core(0)"]
    assert found["post_rewrite"] == ["core(0)"]
    assert found["post_access"] == ["core(0)"]
    assert found["content"][-1] == "core(100000)"

    # the modules of this slice, where the brief put them
    assert "try_files(500)" in found["precontent"]
    if "static(900)" in found["content"]:
        assert found["content"].index("static(900)") \
            == len(found["content"]) - 2
    if "index(800)" in found["content"] and "static(900)" in found["content"]:
        assert found["content"].index("index(800)") \
            < found["content"].index("static(900)")

    # the protocol writes at the bottom of both response chains, the save
    # filter at the bottom of the request body chain
    assert found["header filters"][-1] == "protocol", out
    assert found["body filters"][-1] == "protocol", out
    assert found["request body filters"][-1] == "save", out
    assert found["header filters"].count("protocol") == 1
    assert found["body filters"].count("protocol") == 1


# ---- a running server

def start_http(weir, server_body, http_extra=""):
    port = weir.port()
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    weir.conf("http {\n%s\n    server {\n        listen 127.0.0.1:%d;\n"
              "%s        root %s;\n%s\n    }\n}\n"
              % (http_extra, port, protoclient.conf_line(), html,
                 server_body))
    weir.start(check_ports=False)

    def up():
        try:
            connect(("127.0.0.1", port), timeout=1.0).close()
            return True
        except OSError:
            return False

    wait_for(up, what="the http port")
    return port


def get(port, path, method="GET", headers=None, body=None):
    """One request over the protocol of the test (protoclient.PROTO)."""
    return protoclient.request(port, method, path, headers, body)


LOCATIONS = r"""
        location / { return 200 "root"; }
        location = /exact { return 200 "exact"; }
        location = / { return 200 "slash"; }
        location /dir/ { return 200 "dir"; }
        location /dir/deeper/ { return 200 "deeper"; }
        location ^~ /images/ {
            return 200 "images";
            location /images/sub/ { return 200 "sub"; }
            location ~ \.gif$ { return 200 "nested-gif"; }
        }
        location ~ \.png$ { return 200 "png"; }
        location ~ \.(png|txt)$ { return 200 "second"; }
        location ~* \.JPG$ { return 200 "jpg"; }
        location /int/ { internal; return 200 "internal"; }
"""

SELECTION = [
    ("/", "slash"),
    ("/x", "root"),
    ("/exact", "exact"),
    ("/exact/", "root"),
    ("/exactly", "root"),
    ("/dir/", "dir"),
    ("/dir/a", "dir"),
    ("/dir/deeper/a", "deeper"),
    ("/dir/a.png", "png"),          # a regex beats a prefix
    ("/a.txt", "second"),           # regexes in order, first match wins
    ("/A.jpg", "jpg"),              # ~* is caseless
    ("/a.JPG", "jpg"),
    ("/images/a.png", "images"),    # ^~ stops the regex search
    ("/images/sub/a.png", "sub"),   # nested prefix
    ("/images/b.gif", "nested-gif"),  # nested regex
]


def test_location_selection(weir, proto):
    port = start_http(weir, LOCATIONS)
    for path, name in SELECTION:
        status, _, body = get(port, path)
        assert (status, body.decode()) == (200, name), path


def test_internal_location_is_not_found_from_outside(weir, proto):
    port = start_http(weir, LOCATIONS)
    status, _, _ = get(port, "/int/x")
    assert status == 404


def test_named_location_and_internal_redirect(weir, proto):
    port = start_http(weir, r"""
        location /n { try_files /nofile @named; }
        location @named { return 200 "named"; }
        location /r { try_files /nofile /int/target; }
        location /int/ { internal; return 200 "internal $uri"; }
    """)
    status, _, body = get(port, "/n")
    assert (status, body) == (200, b"named")
    status, _, body = get(port, "/r")
    assert (status, body) == (200, b"internal /int/target")


def test_internal_redirection_cycle_is_500(weir, proto):
    port = start_http(weir, r"""
        location /loop { try_files /nofile /loop; }
    """)
    status, _, _ = get(port, "/loop")
    assert status == 500
    wait_for(lambda: "rewrite or internal redirection cycle while "
             "internally redirecting to \"/loop\"" in weir.log(),
             what="the cycle error in the log")


def test_named_location_missing_is_500(weir, proto):
    port = start_http(weir, r"""
        location /n { try_files /nofile @nowhere; }
    """)
    status, _, _ = get(port, "/n")
    assert status == 500
    wait_for(lambda: 'could not find named location "@nowhere"'
             in weir.log(), what="the error in the log")


def test_too_large_content_length_is_413(weir, proto):
    port = start_http(weir, r"""
        client_max_body_size 10;
        location / { return 200 "ok"; }
        location /big/ { client_max_body_size 1k; return 200 "big"; }
    """)
    status, _, _ = get(port, "/x", "POST", body=b"y" * 100)
    assert status == 413
    wait_for(lambda: "client intended to send too large body: 100 bytes"
             in weir.log(), what="the 413 reason in the log")

    # the limit of the location chosen counts
    status, _, body = get(port, "/big/x", "POST", body=b"y" * 100)
    assert (status, body) == (200, b"big")

    # within the limit
    status, _, body = get(port, "/x", "POST", body=b"y" * 10)
    assert (status, body) == (200, b"ok")


def test_too_large_body_with_expect_gets_no_continue(weir):
    port = start_http(weir, r"""
        client_max_body_size 10;
        location / { return 200 "ok"; }
    """)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                  b"Expect: 100-continue\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    assert data.startswith(b"HTTP/1.1 413"), data


def test_content_fallback_statuses(weir, proto):
    port = start_http(weir, r"""
        location / { }
    """)
    os.makedirs(weir.path("html", "emptydir"))
    status, _, _ = get(port, "/emptydir/")
    assert status == 403
    wait_for(lambda: re.search(r'directory index of "[^"]*/emptydir/" is '
                               r'forbidden', weir.log()) is not None,
             what="the 403 reason in the log")

    status, _, _ = get(port, "/missing")
    assert status == 404


def test_access_phase_denies_before_content(weir, proto):
    port = start_http(weir, r"""
        location /open/ { }
        location /closed/ { deny all; }
    """)
    for d in ("open", "closed"):
        os.makedirs(weir.path("html", d))
        with open(weir.path("html", d, "f.txt"), "w") as f:
            f.write("file\n")
    status, _, body = get(port, "/open/f.txt")
    assert (status, body) == (200, b"file\n")
    status, _, _ = get(port, "/closed/f.txt")
    assert status == 403
    wait_for(lambda: "access forbidden by rule" in weir.log(),
             what="the access error in the log")
