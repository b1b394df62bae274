"""The event loop: backends, connection limits, reuseport, unix and IPv6
listeners, multi_accept."""

import os
import socket

import pytest

from weirtest import (DEADLINE, connect, ipv6_available, line_of,
                      parse_answer, query, read_all, run_weir, wait_for)


@pytest.mark.parametrize("backend", ["epoll", "poll"])
def test_use_backend_serves(weir, backend):
    port = weir.port()
    weir.conf("worker_processes 1;\ntest_listen 127.0.0.1:%d;\n"
              "events {\n    use %s;\n}\n" % (port, backend), module=True)
    weir.start()
    for _ in range(20):
        assert query(port)["value"] == 0
    # concurrent clients too: several connections open before any is read
    socks = [connect(port) for _ in range(10)]
    try:
        for s in socks:
            assert parse_answer(read_all(s))["value"] == 0
    finally:
        for s in socks:
            s.close()


def test_use_kqueue_fails_on_linux(weir):
    weir.allow.append(r"\[emerg\]")
    path = weir.conf("events {\n    use kqueue;\n}\n")
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 1
    lines = res.stderr.splitlines()
    want = ('weir: [emerg] invalid event type "kqueue" in %s:%d'
            % (path, line_of(path, "kqueue")))
    assert want in lines, res.stderr
    assert "weir: configuration file %s test failed" % path in lines


def test_use_unknown_backend_fails(weir):
    weir.allow.append(r"\[emerg\]")
    path = weir.conf("events {\n    use select_please;\n}\n")
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 1
    assert 'invalid event type "select_please"' in res.stderr


def test_worker_connections_exhausted_then_recovers(weir):
    port = weir.port()
    weir.conf("worker_processes 1;\ntest_listen 127.0.0.1:%d;\n"
              "test_delay 1s;\n"
              "events {\n    worker_connections 8;\n}\n" % port,
              module=True)
    weir.start()

    socks = []
    try:
        for _ in range(20):
            socks.append(connect(port, timeout=DEADLINE))
        answered, closed = 0, 0
        for s in socks:
            try:
                data = read_all(s)
            except ConnectionResetError:
                data = b""
            if data:
                assert parse_answer(data)["value"] == 0
                answered += 1
            else:
                closed += 1
    finally:
        for s in socks:
            s.close()

    # the connections the worker holds are served; the ones beyond its
    # limit are closed (or wait in the queue): none hangs
    assert answered >= 1, "no held connection was served"
    assert answered + closed == 20
    weir.wait_log(r"\[warn\] .*worker_connections are not enough")

    # recovered: new connections are served again
    wait_for(lambda: query(port)["value"] == 0,
             what="the worker to serve again")
    socks = [connect(port, timeout=DEADLINE) for _ in range(4)]
    try:
        for s in socks:
            assert parse_answer(read_all(s))["value"] == 0
    finally:
        for s in socks:
            s.close()


def test_reuseport_spreads_over_workers(weir):
    port = weir.port()
    weir.conf("worker_processes 2;\n"
              "test_listen 127.0.0.1:%d reuseport;\n" % port, module=True)
    weir.start()
    workers = set(weir.workers())
    seen = {}
    for _ in range(500):
        a = query(port)
        assert a["pid"] in workers
        seen[a["worker"]] = a["pid"]
        if len(seen) == 2:
            break
    assert sorted(seen) == [0, 1], "only worker(s) %s answered" % seen
    assert set(seen.values()) == workers


def test_reuseport_reload(weir):
    port = weir.port()
    body = ("worker_processes 2;\ntest_listen 127.0.0.1:%d reuseport;\n"
            "test_value %d;\n")
    weir.conf(body % (port, 1), module=True)
    weir.start()
    weir.conf(body % (port, 2), module=True)
    assert weir.reload()["value"] == 2
    weir.settle()
    for _ in range(20):
        assert query(port)["value"] == 2


def test_unix_socket_listener(weir):
    path = weir.path("t.sock")
    weir.conf("test_listen unix:%s;\n" % path, module=True)
    weir.start()
    assert os.path.exists(path)
    answer = query("unix:" + path)
    assert answer["value"] == 0
    assert answer["pid"] in weir.workers()


def test_ipv6_loopback_listener(weir):
    reason = ipv6_available()
    if reason:
        pytest.skip(reason)
    port = weir.port(socket.AF_INET6)
    weir.conf("test_listen [::1]:%d;\n" % port, module=True)
    weir.start()
    assert query(("::1", port))["value"] == 0
    # IPv6 only: the IPv4 loopback is not served on that port
    with pytest.raises(ConnectionRefusedError):
        connect(port, timeout=1.0)


def test_two_families_same_port(weir):
    reason = ipv6_available()
    if reason:
        pytest.skip(reason)
    port = weir.port()
    weir.conf("test_listen 127.0.0.1:%d;\ntest_listen [::1]:%d;\n"
              % (port, port), module=True)
    weir.start()
    assert query(port)["value"] == 0
    assert query(("::1", port))["value"] == 0


def test_multi_accept(weir):
    port = weir.port()
    weir.conf("worker_processes 1;\ntest_listen 127.0.0.1:%d;\n"
              "events {\n    multi_accept on;\n}\n" % port, module=True)
    weir.start()
    socks = [connect(port) for _ in range(32)]
    try:
        for s in socks:
            assert parse_answer(read_all(s))["value"] == 0
    finally:
        for s in socks:
            s.close()


def test_duplicate_test_listen_fails(weir):
    weir.allow.append(r"\[emerg\]")
    port = weir.port()
    path = weir.conf("test_listen 127.0.0.1:%d;\ntest_listen 127.0.0.1:%d;\n"
                     % (port, port), module=True)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 1
    assert "duplicate listen" in res.stderr


def test_listen_backlog_option(weir):
    port = weir.port()
    weir.conf("test_listen 127.0.0.1:%d backlog=16;\n" % port, module=True)
    weir.start()
    assert query(port)["value"] == 0


@pytest.mark.parametrize("param,message", [
    ("backlog=0", 'invalid backlog "backlog=0"'),
    ("ipv6only=on", "ipv6only is valid only for IPv6 addresses"),
    ("fast", 'invalid parameter "fast"'),
])
def test_listen_bad_option(weir, param, message):
    weir.allow.append(r"\[emerg\]")
    port = weir.port()
    path = weir.conf("test_listen 127.0.0.1:%d %s;\n" % (port, param),
                     module=True)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    assert res.returncode == 1
    assert message in res.stderr
    assert "in %s:%d" % (path, line_of(path, "test_listen")) in res.stderr
