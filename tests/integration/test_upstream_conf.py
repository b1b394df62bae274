"""The upstream{} block and its "server" lines: `weir -t` accepts a valid
block (even one nothing uses yet) and names file:line and the reason for
each error."""

import pytest

from weirtest import run_weir


HEAD = "error_log logs/error.log info;\nevents {\n}\n"

# the first line of the http block's body in a configuration built by
# conf_text(): HEAD is 3 lines, "http {" the 4th
FIRST = 5


def conf_text(body):
    return HEAD + "http {\n" + body + "}\n"


def t_run(weir, text):
    path = weir.conf(text, preamble=False, events=False)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    return path, res


def expect(weir, body, reason, line):
    weir.allow.append(r"\[emerg\]")
    path, res = t_run(weir, conf_text(body))
    lines = res.stderr.splitlines()
    assert res.returncode == 1, res.stderr
    assert "weir: configuration file %s test failed" % path in lines, \
        res.stderr
    want = "weir: [emerg] %s in %s:%d" % (reason, path, line)
    assert want in lines, "want %r in:\n%s" % (want, res.stderr)


def test_valid_block_passes(weir):
    sock = weir.path("logs", "origin.sock")
    body = ("    upstream backend {\n"
            "        server 127.0.0.1:8081 weight=5 max_fails=3 "
            "fail_timeout=30s;\n"
            "        server localhost:8082 max_conns=10;\n"
            "        server [::1]:8083 down;\n"
            "        server 127.0.0.2 backup;\n"
            "        server unix:%s;\n"
            "    }\n"
            "    upstream other {\n"
            "        server 127.0.0.1:9000 max_fails=0 fail_timeout=1m;\n"
            "    }\n" % sock)
    path, res = t_run(weir, conf_text(body))
    assert res.returncode == 0, res.stderr
    assert "test is successful" in res.stderr


CASES = [
    ("empty_block",
     "    upstream b {\n    }\n",
     "no servers are inside upstream", FIRST + 1),

    ("weight_zero",
     "    upstream b {\n        server 127.0.0.1 weight=0;\n    }\n",
     'invalid parameter "weight=0"', FIRST + 1),

    ("weight_not_a_number",
     "    upstream b {\n        server 127.0.0.1 weight=x;\n    }\n",
     'invalid parameter "weight=x"', FIRST + 1),

    ("weight_empty",
     "    upstream b {\n        server 127.0.0.1 weight=;\n    }\n",
     'invalid parameter "weight="', FIRST + 1),

    ("max_fails_negative",
     "    upstream b {\n        server 127.0.0.1 max_fails=-1;\n    }\n",
     'invalid parameter "max_fails=-1"', FIRST + 1),

    ("fail_timeout_invalid",
     "    upstream b {\n        server 127.0.0.1 fail_timeout=soon;\n"
     "    }\n",
     'invalid parameter "fail_timeout=soon"', FIRST + 1),

    ("max_conns_invalid",
     "    upstream b {\n        server 127.0.0.1 max_conns=many;\n    }\n",
     'invalid parameter "max_conns=many"', FIRST + 1),

    ("unknown_parameter",
     "    upstream b {\n        server 127.0.0.1:80;\n"
     "        server 127.0.0.1:81 slow_start=10s;\n    }\n",
     'invalid parameter "slow_start=10s"', FIRST + 2),

    ("host_not_found",
     "    upstream b {\n        server no-such-host.invalid:8080;\n    }\n",
     'host not found in upstream "no-such-host.invalid:8080"', FIRST + 1),

    ("invalid_port",
     "    upstream b {\n        server 127.0.0.1:99999;\n    }\n",
     'invalid port "127.0.0.1:99999" in upstream "b"', FIRST + 1),

    ("bare_port",
     "    upstream b {\n        server 8080;\n    }\n",
     'invalid address "8080" in upstream "b"', FIRST + 1),

    ("duplicate_upstream",
     "    upstream b {\n        server 127.0.0.1;\n    }\n"
     "    upstream b {\n        server 127.0.0.2;\n    }\n",
     'duplicate upstream "b"', FIRST + 3),

    ("server_without_address",
     "    upstream b {\n        server;\n    }\n",
     'invalid number of arguments in "server" directive', FIRST + 1),

    ("upstream_inside_server",
     "    server {\n        upstream b {\n            server 127.0.0.1;\n"
     "        }\n    }\n",
     '"upstream" directive is not allowed here', FIRST + 1),

    ("unknown_directive_in_block",
     "    upstream b {\n        server 127.0.0.1;\n        listen 80;\n"
     "    }\n",
     '"listen" directive is not allowed here', FIRST + 2),

    ("upstream_without_name",
     "    upstream {\n        server 127.0.0.1;\n    }\n",
     'invalid number of arguments in "upstream" directive', FIRST),

    ("upstream_name_with_port",
     "    upstream b:80 {\n        server 127.0.0.1;\n    }\n",
     'invalid upstream name "b:80"', FIRST),

    # weights are summed and multiplied by the balancers: bounded
    ("weight_too_big",
     "    upstream b {\n        server 127.0.0.1 weight=1000001;\n"
     "    }\n",
     'invalid parameter "weight=1000001"', FIRST + 1),

    ("weight_int64_max",
     "    upstream b {\n"
     "        server 127.0.0.1 weight=9223372036854775807;\n"
     "        server 127.0.0.2 weight=9223372036854775807;\n    }\n",
     'invalid parameter "weight=9223372036854775807"', FIRST + 1),

    ("unix_path_too_long",
     "    upstream b {\n        server unix:/tmp/%s;\n    }\n" % ("a" * 120),
     'too long path in the unix domain socket "unix:/tmp/%s" in upstream'
     ' "b"' % ("a" * 120), FIRST + 1),

    ("unix_no_path",
     "    upstream b {\n        server unix:;\n    }\n",
     'no path in the unix domain socket "unix:" in upstream "b"', FIRST + 1),
]


@pytest.mark.parametrize("body,reason,line", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_upstream_conf_error(weir, body, reason, line):
    expect(weir, body, reason, line)


def _need_hash(weir):
    """The hash balancer comes from another module: skip when this build
    does not have it."""
    weir.allow.append(r"\[emerg\]")
    path, res = t_run(weir, conf_text(
        "    upstream probe {\n        hash $uri;\n"
        "        server 127.0.0.1;\n    }\n"))
    if 'unknown directive "hash"' in res.stderr:
        pytest.skip("no hash balancer in this build")


def test_backup_refused_when_balancer_comes_first(weir):
    _need_hash(weir)
    expect(weir,
           "    upstream b {\n        hash $uri;\n"
           "        server 127.0.0.1:80 backup;\n    }\n",
           'balancing method does not support parameter "backup"',
           FIRST + 2)


def test_backup_refused_when_balancer_comes_after(weir):
    _need_hash(weir)
    expect(weir,
           "    upstream b {\n        server 127.0.0.1:80;\n"
           "        server 127.0.0.1:81 backup;\n        hash $uri;\n"
           "    }\n",
           'balancing method of upstream "b" does not support parameter '
           '"backup" of server "127.0.0.1:81"',
           FIRST + 2)
