"""HTTP/2 to clients (src/http/v2): h2 over TLS (ALPN) and h2c with
prior knowledge on a plain port (HTTP/1.1 still served there), the
directives, requests and responses through the usual modules, flow
control, limits, malformed requests and the graceful shutdown. Clients:
curl, nghttp, h2load and python h2 (h2client.py)."""

import os
import re
import socket
import subprocess

import hpack
import pytest

import h2raw
import tlspki
from h2client import H2Client
from h2raw import RawH2
from weirtest import DEADLINE, wait_for


def up(port):
    def accepts():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_for(accepts, what="port %d to accept" % port)


def start(weir, server, http_extra="", tls=None, listen="", main=""):
    """One server on 127.0.0.1:port (h2c when listen has no "ssl");
    returns (port, html directory)."""
    port = weir.port()
    html = weir.path("html")
    os.makedirs(html, exist_ok=True)
    certs = ""
    pre = ""
    if tls is not None:
        pre = tlspki.ssl_preamble()
        certs = ("        ssl_certificate %s;\n"
                 "        ssl_certificate_key %s;\n" % (tls.chain, tls.key))
    weir.conf(pre + main +
              "http {\n"
              "    types { text/html html; text/plain txt; }\n"
              "    default_type application/octet-stream;\n"
              "    access_log logs/access.log;\n"
              "%s\n"
              "    server {\n"
              "        listen 127.0.0.1:%d%s;\n"
              "        root %s;\n"
              "%s%s\n"
              "    }\n"
              "}\n" % (http_extra, port, listen, html, certs, server))
    weir.start(check_ports=False)
    up(port)
    return port, html


def curl(args, timeout=DEADLINE):
    p = subprocess.run(["curl", "-sS", "-k", "--max-time", str(timeout)]
                       + args, capture_output=True, timeout=timeout + 5)
    return p


# ---------------------------------------------------------------- h2c

def test_h2c_prior_knowledge_and_http1_same_port(weir):
    port, html = start(weir, "        http2 on;\n"
                       "        location /r { return 200 \"hello $http2 "
                       "$server_protocol\"; }\n")
    with open(os.path.join(html, "f.txt"), "w") as f:
        f.write("file body\n")

    p = curl(["--http2-prior-knowledge", "-w", "%{http_version}",
              "http://127.0.0.1:%d/r" % port])
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"hello h2c HTTP/2.02"

    p = curl(["--http2-prior-knowledge", "http://127.0.0.1:%d/f.txt"
              % port])
    assert p.stdout == b"file body\n"

    # the same port still speaks HTTP/1.1
    p = curl(["--http1.1", "-w", "%{http_version}",
              "http://127.0.0.1:%d/r" % port])
    assert p.stdout == b"hello  HTTP/1.11.1"


def test_http2_off_is_http1(weir):
    port, _ = start(weir, "        location / { return 200 ok; }\n")
    p = curl(["--http2-prior-knowledge", "http://127.0.0.1:%d/" % port])
    assert p.returncode != 0 or b"ok" != p.stdout


def test_listen_http2_parameter(weir):
    port, _ = start(weir, "        location / { return 200 \"$http2\"; }\n",
                    listen=" http2")
    p = curl(["--http2-prior-knowledge", "http://127.0.0.1:%d/" % port])
    assert p.stdout == b"h2c"


def test_h2_over_tls_alpn(weir, pki):
    leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    port, _ = start(weir, "        http2 on;\n"
                    "        location / { return 200 \"$http2 $https\"; }\n",
                    tls=leaf, listen=" ssl")
    p = curl(["--http2", "-w", " %{http_version}",
              "https://127.0.0.1:%d/" % port])
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"h2 on 2"

    c = H2Client(port, tls=True)
    assert c.alpn == "h2"
    r = c.response(c.request("GET", "/"))
    assert r.status == 200 and r.body == b"h2 on"
    c.close()

    # without http2: ALPN stays http/1.1
    p = curl(["--http1.1", "-w", " %{http_version}",
              "https://127.0.0.1:%d/" % port])
    assert p.stdout == b" on 1.1"


def test_nghttp_client(weir):
    port, html = start(weir, "        http2 on;\n")
    with open(os.path.join(html, "n.txt"), "w") as f:
        f.write("nghttp\n")
    p = subprocess.run(["nghttp", "-n", "-s",
                        "http://127.0.0.1:%d/n.txt" % port],
                       capture_output=True, timeout=DEADLINE)
    assert p.returncode == 0, p.stderr
    p = subprocess.run(["nghttp", "http://127.0.0.1:%d/n.txt" % port],
                       capture_output=True, timeout=DEADLINE)
    assert p.stdout == b"nghttp\n"


@pytest.mark.parametrize("tls", [False, True], ids=["h2c", "h2"])
def test_h2load_client(weir, pki, tls):
    """h2load (nghttp2's load generator) over h2c and TLS, 8 streams per
    connection on 4 connections, half the requests proxied to an
    HTTP/1.1 server block: every request succeeds and each arrived as
    HTTP/2.0 on one of the 4 connections (the access log)."""
    origin = weir.port()
    leaf = pki.leaf("localhost", ips=["127.0.0.1"]) if tls else None
    extra = ("    log_format h2load \"$server_port $server_protocol $http2 "
             "$connection $status $request_uri\";\n"
             "    server {\n"
             "        listen 127.0.0.1:%d;\n"
             "        access_log off;\n"
             "        location / { return 200 \"origin $request_uri\"; }\n"
             "    }\n" % origin)
    port, html = start(weir, "        http2 on;\n"
                       "        access_log logs/h2load.log h2load;\n"
                       "        location /p/ { proxy_pass http://127.0.0.1:%d; }\n"
                       % origin, http_extra=extra, tls=leaf,
                       listen=" ssl" if tls else "")
    with open(os.path.join(html, "f.txt"), "w") as f:
        f.write("static\n")
    base = "%s://127.0.0.1:%d" % ("https" if tls else "http", port)
    n = 2000
    p = subprocess.run(["h2load", "-n", str(n), "-c", "4", "-m", "8",
                        base + "/f.txt", base + "/p/x"],
                       capture_output=True, timeout=DEADLINE)
    out = p.stdout.decode()
    assert p.returncode == 0, out + p.stderr.decode()
    assert ("requests: %d total, %d started, %d done, %d succeeded, "
            "0 failed, 0 errored, 0 timeout" % (n, n, n, n)) in out, out
    assert "status codes: %d 2xx" % n in out, out
    if tls:
        assert "Application protocol: h2" in out, out

    log = weir.path("logs/h2load.log")

    def logged():
        with open(log) as f:
            return len(f.read().splitlines()) >= n

    wait_for(logged, what="the access log to hold every request")
    with open(log) as f:
        lines = [line.split() for line in f.read().splitlines()]
    assert len(lines) == n
    assert {tuple(x[1:3]) for x in lines} == {
        ("HTTP/2.0", "h2" if tls else "h2c")}
    assert {x[4] for x in lines} == {"200"}
    assert len({x[3] for x in lines}) == 4
    uris = [x[5] for x in lines]
    assert uris.count("/f.txt") == n // 2 and uris.count("/p/x") == n // 2


# ---------------------------------------------------------------- modules

def test_static_large_file_flow_control(weir):
    """1 MiB over a 64 KiB stream window: many DATA frames, each at most
    http2_chunk_size, WINDOW_UPDATEs from the client, the file read with
    pread (no sendfile on a stream)."""
    port, html = start(weir, "        http2 on;\n"
                       "        http2_chunk_size 4k;\n")
    data = bytes(range(256)) * 4096
    with open(os.path.join(html, "big.bin"), "wb") as f:
        f.write(data)

    import h2.events
    c = H2Client(port)
    sid = c.request("GET", "/big.bin")
    r = c.response(sid)
    assert r.status == 200
    assert r.header("content-length") == str(len(data))
    assert r.body == data
    frames = [e for e in c.events if isinstance(e, h2.events.DataReceived)]
    assert len(frames) >= len(data) // 4096
    assert max(len(e.data) for e in frames) <= 4096
    c.close()


def test_head_204_304_no_data(weir):
    port, html = start(weir, "        http2 on;\n"
                       "        location /nc { return 204; }\n")
    with open(os.path.join(html, "a.txt"), "w") as f:
        f.write("abc")

    import h2.events
    c = H2Client(port)
    s1 = c.request("HEAD", "/a.txt")
    s2 = c.request("GET", "/nc")
    r1 = c.response(s1)
    r2 = c.response(s2)
    assert r1.status == 200 and r1.body == b""
    assert r1.header("content-length") == "3"
    assert r2.status == 204 and r2.body == b""
    lm = r1.header("last-modified")
    s3 = c.request("GET", "/a.txt", headers=[("if-modified-since", lm)])
    r3 = c.response(s3)
    assert r3.status == 304 and r3.body == b""
    data_sids = {e.stream_id for e in c.events
                 if isinstance(e, h2.events.DataReceived)}
    assert not data_sids & {s1, s2, s3}
    c.close()


def test_bytes_sent_of_responses_without_body(weir):
    """$bytes_sent of HEAD, 204 (return) and 304 counts their HEADERS
    frame (9 + its payload) as for any response; $body_bytes_sent is 0.
    They used to be logged as 0: the request ended before the frame
    went out."""
    port, html = start(weir, "        http2 on;\n"
                       "        location /nc { return 204; }\n",
                       http_extra="    log_format sent '$request_method "
                                  "$uri $status $bytes_sent "
                                  "$body_bytes_sent';\n"
                                  "    access_log logs/sent.log sent;\n")
    with open(os.path.join(html, "a.txt"), "w") as f:
        f.write("abc")

    c = RawH2(port)
    c.send(c.headers(1, "/a.txt", method="HEAD"))
    c.stream_end(1)
    c.send(c.headers(3, "/nc"))
    c.stream_end(3)
    c.send(c.headers(5, "/a.txt"))
    c.stream_end(5)
    lm = [v for k, v in hpack.Decoder().decode(
        [f for f in c.frames if f.type == h2raw.HEADERS
         and f.sid == 1][0].payload) if k == "last-modified"][0]
    c.send(c.headers(7, "/a.txt", extra=[("if-modified-since", lm)]))
    c.stream_end(7)
    heads = {f.sid: 9 + len(f.payload) for f in c.frames
             if f.type == h2raw.HEADERS}
    assert c.status == {1: 200, 3: 204, 5: 200, 7: 304}, c.status
    c.close()

    def logged():
        try:
            with open(weir.path("logs", "sent.log")) as f:
                return f.read().count("\n") >= 4
        except OSError:
            return False

    wait_for(logged, what="the access log lines")
    with open(weir.path("logs", "sent.log")) as f:
        lines = f.read().splitlines()
    assert lines == ["HEAD /a.txt 200 %d 0" % heads[1],
                     "GET /nc 204 %d 0" % heads[3],
                     "GET /a.txt 200 %d 3" % (heads[5] + 3),
                     "GET /a.txt 304 %d 0" % heads[7]], (lines, heads)


def test_error_page_add_header_access_log(weir):
    port, html = start(weir,
                       "        http2 on;\n"
                       "        error_page 404 /nf.txt;\n"
                       "        add_header X-Proto $server_protocol;\n"
                       "        add_header Connection keep-alive;\n"
                       "        location /r { return 200 \"r\"; }\n",
                       http_extra="    log_format h2 '$request "
                                  "$server_protocol [$http2] $status';\n"
                                  "    access_log logs/h2.log h2;\n")
    with open(os.path.join(html, "nf.txt"), "w") as f:
        f.write("not here\n")

    c = H2Client(port)
    r = c.response(c.request("GET", "/missing"))
    assert r.status == 404 and r.body == b"not here\n"
    r = c.response(c.request("GET", "/r"))
    assert r.status == 200 and r.header("x-proto") == "HTTP/2.0"
    # connection-specific fields never go out on HTTP/2
    assert r.header("connection") is None
    c.close()

    def logged():
        try:
            with open(weir.path("logs", "h2.log")) as f:
                return f.read().count("\n") >= 2
        except OSError:
            return False

    wait_for(logged, what="the access log lines")
    with open(weir.path("logs", "h2.log")) as f:
        lines = f.read().splitlines()
    assert "GET /missing HTTP/2.0 HTTP/2.0 [h2c] 404" in lines
    assert "GET /r HTTP/2.0 HTTP/2.0 [h2c] 200" in lines


def test_many_concurrent_streams(weir):
    port, _ = start(weir, "        http2 on;\n"
                    "        location / { return 200 \"$uri\"; }\n")
    c = H2Client(port)
    sids = {c.request("GET", "/s%d" % i): i for i in range(100)}
    for sid, i in sids.items():
        r = c.response(sid)
        assert r.status == 200 and r.body == ("/s%d" % i).encode()
    c.close()


def test_post_body_to_origin_h2_to_h1(weir, make_origin):
    """A POST (buffered) goes to an HTTP/1.1 origin as a correct request:
    Host from :authority, the cookie crumbs joined, nothing
    connection-specific, the body whole."""
    o = make_origin()
    port, _ = start(weir, "        http2 on;\n"
                    "        client_body_buffer_size 16k;\n"
                    "        location / { proxy_pass http://%s;\n"
                    "            proxy_set_header Host $host; }\n"
                    % o.addr)
    body = bytes(range(256)) * 1200          # 300 KiB: a temporary file
    c = H2Client(port, authority="app.test")
    sid = c.request("POST", "/echo?x=1",
                    headers=[("cookie", "a=1"), ("cookie", "b=2"),
                             ("x-h", "v")],
                    body=body)
    r = c.response(sid)
    assert r.status == 200, r.headers
    assert r.body == body
    req = o.requests[-1]
    assert req.method == "POST" and req.target == "/echo?x=1"
    assert req.version == "HTTP/1.1"
    assert req.header("host") == "app.test"
    assert req.header_all("cookie") == ["a=1; b=2"]
    assert req.header("x-h") == "v"
    assert req.header("content-length") == str(len(body))
    assert req.header("transfer-encoding") is None
    c.close()
    weir.allow.append("buffered to a temporary file")


def test_post_without_content_length_to_return(weir, make_origin):
    o = make_origin()
    port, _ = start(weir, "        http2 on;\n"
                    "        location / { proxy_pass http://%s; }\n"
                    % o.addr)
    c = H2Client(port)
    sid = c.request("POST", "/echo", body=b"x" * 1000)
    r = c.response(sid)
    assert r.status == 200 and r.body == b"x" * 1000
    assert o.requests[-1].header("content-length") == "1000"
    c.close()


@pytest.mark.parametrize("case", ["no_path", "uppercase", "connection",
                                  "cl_mismatch", "space_in_path"])
def test_malformed_requests_never_reach_origin(weir, make_origin, case):
    import h2.errors
    o = make_origin()
    port, _ = start(weir, "        http2 on;\n"
                    "        location / { proxy_pass http://%s; }\n"
                    % o.addr)
    c = H2Client(port, validate=False)
    base = [(":method", "GET"), (":scheme", "http"),
            (":authority", "a.test")]
    body = None
    if case == "no_path":
        hdrs = base
    elif case == "uppercase":
        hdrs = base + [(":path", "/x"), ("X-Upper", "1")]
    elif case == "connection":
        hdrs = base + [(":path", "/x"), ("connection", "close")]
    elif case == "space_in_path":
        hdrs = base + [(":path", "/a b")]
    else:
        hdrs = [(":method", "POST"), (":scheme", "http"),
                (":authority", "a.test"), (":path", "/x"),
                ("content-length", "10")]
        body = b"12345"
    sid = c.request(None, None, pseudo=hdrs, body=body)
    r = c.response(sid)
    if case == "space_in_path":
        assert r.status == 400 or r.reset is not None
    else:
        assert r.reset == h2.errors.ErrorCodes.PROTOCOL_ERROR, (r.status,
                                                                r.reset)
    # the connection still serves
    ok = c.response(c.request("GET", "/fine"))
    assert ok.status == 200
    assert [q.path for q in o.requests] == ["/fine"]
    c.close()


def nghttp(urls, timeout=DEADLINE):
    p = subprocess.run(["nghttp", "-v"] + urls, capture_output=True,
                       timeout=timeout)
    text = p.stdout.decode("latin-1")
    opened = [int(x) for x in re.findall(
        r"send HEADERS frame <[^>]*stream_id=(\d+)>", text)]
    goaways = [int(x) for x in re.findall(
        r"recv GOAWAY frame.*\n.*last_stream_id=(\d+)", text)]
    return p, text, opened, goaways


def test_keepalive_requests_goaway(weir):
    port, _ = start(weir, "        http2 on;\n"
                    "        keepalive_requests 3;\n"
                    "        location / { return 200 ok; }\n")
    url = "http://127.0.0.1:%d/" % port
    p, text, opened, goaways = nghttp([url, url + "a", url + "b"])
    assert p.returncode == 0, text
    assert text.count(":status: 200") == 3, text
    assert goaways == [opened[2]], text


def test_goaway_on_reload_streams_finish(weir, make_origin):
    """A reload: GOAWAY (2^31-1, then the last stream after the PING),
    and the stream in flight still gets its whole answer (nghttp: python
    h2 stops at the first GOAWAY)."""
    o = make_origin()
    conf = ("        http2 on;\n"
            "        location / { proxy_pass http://%s; }\n" % o.addr)
    port, _ = start(weir, conf)
    p = subprocess.Popen(["nghttp", "-v", "http://127.0.0.1:%d/delay-head/"
                          "700" % port], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        wait_for(lambda: len(o.requests) == 1, what="the origin's request")
        weir.reload(weir.conf_text, module=False)
        out, err = p.communicate(timeout=DEADLINE)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = out.decode("latin-1")
    assert p.returncode == 0, text
    opened = [int(x) for x in re.findall(
        r"send HEADERS frame <[^>]*stream_id=(\d+)>", text)]
    goaways = [int(x) for x in re.findall(
        r"recv GOAWAY frame.*\n.*last_stream_id=(\d+)", text)]
    assert goaways == [2147483647, opened[0]], text
    assert ":status: 200" in text, text


def test_redirects_made_absolute_over_h2(weir):
    """A relative Location made absolute and the trailing-slash redirect
    need the local address, which a stream (fd -1) cannot ask the
    kernel: the session's is used."""
    port, html = start(weir, "        http2 on;\n"
                       "        location /r { return 302 /target; }\n")
    os.makedirs(os.path.join(html, "dir"), exist_ok=True)
    for path, want in (("/r", "http://127.0.0.1:%d/target" % port),
                       ("/dir", "http://127.0.0.1:%d/dir/" % port)):
        p = curl(["--http2-prior-knowledge", "-o", "/dev/null", "-w",
                  "%{http_code} %{redirect_url} %{http_version}",
                  "http://127.0.0.1:%d%s" % (port, path)])
        assert p.returncode == 0, p.stderr
        code, url, version = p.stdout.decode().split(" ")
        assert version == "2", p.stdout
        assert code in ("301", "302"), p.stdout
        assert url == want, p.stdout
