"""gRPC through weir (`proxy_http_version 2`, docs/http/proxy.md): Debian's
python3-grpcio as the client and as the server, HTTP/2 on both sides
(h2c, and TLS to the server), every kind of call: unary,
server-streaming, client-streaming, bidirectional; grpc-status and
grpc-message intact; a deadline on the client cancels the server's call
(RST_STREAM CANCEL through weir), and a server that aborts reaches the
client with its status.

Methods are generic handlers over raw bytes (no generated stubs)."""

import socket
import threading
import time
from concurrent import futures

import pytest

grpc = pytest.importorskip("grpc")

import tlspki                                          # noqa: E402
from weirtest import wait_for                          # noqa: E402

SVC = "/weir.test.Echo/"


def ident(b):
    return b


class Servicer:
    def __init__(self):
        self.cancelled = threading.Event()

    def unary(self, req, ctx):
        if req == b"fail":
            ctx.abort(grpc.StatusCode.NOT_FOUND, "no such thing: fail")
        return b"echo:" + req

    def server_stream(self, req, ctx):
        for i in range(int(req)):
            yield b"part %d" % i

    def client_stream(self, it, ctx):
        return b"+".join(it)

    def bidi(self, it, ctx):
        for m in it:
            yield m.upper()

    def slow(self, req, ctx):
        deadline = time.time() + 10
        while ctx.is_active() and time.time() < deadline:
            time.sleep(0.02)
        if not ctx.is_active():
            self.cancelled.set()
        return b"too late"


def grpc_server(tls=None):
    s = Servicer()
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(
            s.unary, request_deserializer=ident, response_serializer=ident),
        "ServerStream": grpc.unary_stream_rpc_method_handler(
            s.server_stream, request_deserializer=ident,
            response_serializer=ident),
        "ClientStream": grpc.stream_unary_rpc_method_handler(
            s.client_stream, request_deserializer=ident,
            response_serializer=ident),
        "Bidi": grpc.stream_stream_rpc_method_handler(
            s.bidi, request_deserializer=ident, response_serializer=ident),
        "Slow": grpc.unary_unary_rpc_method_handler(
            s.slow, request_deserializer=ident, response_serializer=ident),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("weir.test.Echo", handlers),))
    if tls:
        with open(tls.key, "rb") as f:
            key = f.read()
        with open(tls.chain, "rb") as f:
            chain = f.read()
        creds = grpc.ssl_server_credentials([(key, chain)])
        port = server.add_secure_port("127.0.0.1:0", creds)
    else:
        port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port, s


@pytest.fixture(params=["h2c", "h2tls"])
def grpc_origin(request, pki):
    leaf = None
    if request.param == "h2tls":
        leaf = pki.leaf("localhost", ips=["127.0.0.1"])
    server, port, servicer = grpc_server(leaf)
    yield request.param, port, servicer
    server.stop(0)


def start(weir, kind, port, pki):
    wport = weir.port()
    if kind == "h2c":
        pre, url, loc = "", "http://127.0.0.1:%d" % port, ""
    else:
        pre = tlspki.ssl_preamble()
        url = "https://127.0.0.1:%d" % port
        loc = ("proxy_ssl_verify on;\n"
               "proxy_ssl_trusted_certificate %s;\n"
               "proxy_ssl_name localhost;\n" % pki.ca_cert)
    weir.conf(pre +
              "http {\n"
              "    server {\n"
              "        listen 127.0.0.1:%d http2;\n"
              "        location / {\n"
              "            proxy_http_version 2;\n"
              "            proxy_request_buffering off;\n"
              "            proxy_buffering off;\n"
              "            proxy_pass %s;\n"
              "%s"
              "        }\n"
              "    }\n"
              "}\n" % (wport, url, loc))
    weir.start(check_ports=False)

    def up():
        socket.create_connection(("127.0.0.1", wport), timeout=1).close()
        return True

    wait_for(up, what="the HTTP port to accept")
    return wport


def channel(wport):
    return grpc.insecure_channel("127.0.0.1:%d" % wport)


def call(ch, kind, name):
    make = getattr(ch, kind)
    return make(SVC + name, request_serializer=ident,
                response_deserializer=ident)


def test_all_call_kinds(weir, grpc_origin, pki):
    kind, port, _ = grpc_origin
    wport = start(weir, kind, port, pki)
    with channel(wport) as ch:
        assert call(ch, "unary_unary", "Unary")(b"hi", timeout=10) \
            == b"echo:hi"
        got = list(call(ch, "unary_stream", "ServerStream")(b"5",
                                                             timeout=10))
        assert got == [b"part %d" % i for i in range(5)]
        assert call(ch, "stream_unary", "ClientStream")(
            iter([b"a", b"b", b"c"]), timeout=10) == b"a+b+c"
        got = list(call(ch, "stream_stream", "Bidi")(
            iter([b"x", b"yy", b"zzz"]), timeout=10))
        assert got == [b"X", b"YY", b"ZZZ"]


def test_status_and_message(weir, grpc_origin, pki):
    kind, port, _ = grpc_origin
    wport = start(weir, kind, port, pki)
    with channel(wport) as ch:
        with pytest.raises(grpc.RpcError) as e:
            call(ch, "unary_unary", "Unary")(b"fail", timeout=10)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        assert e.value.details() == "no such thing: fail"


def test_deadline_cancels_the_server_call(weir, grpc_origin, pki):
    kind, port, servicer = grpc_origin
    wport = start(weir, kind, port, pki)
    with channel(wport) as ch:
        with pytest.raises(grpc.RpcError) as e:
            call(ch, "unary_unary", "Slow")(b"", timeout=0.5)
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        # the client's RST_STREAM went through weir to the server
        assert servicer.cancelled.wait(10)
        # and the session serves the next call
        assert call(ch, "unary_unary", "Unary")(b"again", timeout=10) \
            == b"echo:again"
