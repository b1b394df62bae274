"""Reloads (HUP): new workers with the new configuration, old ones
gone, no refused connection, no leaked descriptor or zombie."""

import signal
import threading
import time

from weirtest import (DEADLINE, WeirTimeout, connect, query,
                      stable_fd_count, wait_for, zombies)


def conf_value(weir, port, value, extra=""):
    weir.conf("worker_processes 2;\ntest_listen 127.0.0.1:%d;\n"
              "test_value %d;\n%s" % (port, value, extra), module=True)


def settled(weir):
    """Waits until only the current workers are left and reaped."""
    weir.settle()


def test_many_reloads(weir):
    port = weir.port()
    conf_value(weir, port, 0)
    weir.start()
    master = weir.master
    first = query(port)
    assert first["value"] == 0 and first["generation"] == 0

    # one reload first: the master may open things once (a channel, the
    # reload's own bookkeeping) that later reloads reuse
    conf_value(weir, port, 1)
    answer = weir.reload()
    assert answer["value"] == 1
    settled(weir)
    fds = stable_fd_count(master)

    generation = answer["generation"]
    reloads = 100
    # each reload waits at most DEADLINE for its generation (the hang
    # guard); how long 100 take is bench/'s business, not a test's
    for value in range(2, reloads + 2):
        conf_value(weir, port, value)
        answer = weir.reload()
        assert answer["value"] == value
        assert answer["generation"] > generation
        generation = answer["generation"]
        assert answer["pid"] in weir.workers()
        assert weir.pidfile_pid() == master

    settled(weir)
    assert weir.master == master and weir.proc.poll() is None
    assert zombies(master) == []
    # descriptors of the old cycles and old workers' channels are closed:
    # after 100 reloads the count is where it was after the first
    end = []
    try:
        wait_for(lambda: end.append(stable_fd_count(master))
                 or end[-1] <= fds)
    except WeirTimeout:
        pass
    assert end and end[-1] <= fds, (
        "master descriptors: %d after the first reload, %s after %d more"
        % (fds, end[-1:], reloads))
    assert generation >= reloads + 1


def test_invalid_reload_keeps_old_workers(weir):
    weir.allow.append(r'\[emerg\] .*unknown directive "bogus_directive"')
    port = weir.port()
    conf_value(weir, port, 7)
    weir.start()
    before = query(port)
    workers = weir.workers()

    conf_value(weir, port, 8, extra="bogus_directive on;\n")
    weir.signal(signal.SIGHUP)
    weir.wait_log(r'\[emerg\] .*unknown directive "bogus_directive" in %s:'
                  % weir.conf_path)

    # the old configuration still serves, from the same workers
    for _ in range(5):
        answer = query(port)
        assert answer["value"] == 7
        assert answer["generation"] == before["generation"]
    assert weir.workers() == workers

    # and a valid configuration afterwards is taken
    conf_value(weir, port, 9)
    answer = weir.reload()
    assert answer["value"] == 9
    settled(weir)
    assert not set(weir.workers()) & set(workers)


def test_reload_under_load_refuses_nothing(weir):
    port = weir.port()
    conf_value(weir, port, 0)
    weir.start()

    failures = []
    answers = []
    stop = threading.Event()
    # bounded: stops at the flag, at max_requests or at the deadline
    max_requests = 200000
    deadline = time.monotonic() + DEADLINE * 12

    def client():
        n = 0
        while (not stop.is_set() and n < max_requests
               and time.monotonic() < deadline):
            n += 1
            try:
                answers.append(query(port, timeout=DEADLINE)["value"])
            except (OSError, ValueError) as exc:
                failures.append(repr(exc))

    t = threading.Thread(target=client, daemon=True)
    t.start()
    try:
        for value in range(1, 51):
            conf_value(weir, port, value)
            assert weir.reload()["value"] == value
    finally:
        stop.set()
        t.join(timeout=DEADLINE)
    assert not t.is_alive(), "client thread did not stop"
    assert failures == [], "%d failed connections: %s" % (
        len(failures), failures[:5])
    assert len(answers) > 50
    assert max(answers) >= 40, "the client saw no recent generation"
    settled(weir)


def test_reload_changes_listen_port(weir):
    old_port = weir.port()
    new_port = weir.port()
    conf_value(weir, old_port, 1)
    weir.start()
    assert query(old_port)["value"] == 1

    conf_value(weir, new_port, 2)
    weir.signal(signal.SIGHUP)
    answer = wait_for(lambda: query(new_port), what="the new port")
    assert answer["value"] == 2
    assert answer["generation"] == 1

    def old_closed():
        try:
            connect(old_port, timeout=1.0).close()
        except ConnectionRefusedError:
            return True
        return False

    wait_for(old_closed, what="the old port to be closed")
    settled(weir)


def test_reload_adds_and_keeps_listeners(weir):
    kept = weir.port()
    added = weir.port()
    conf_value(weir, kept, 1)
    weir.start()
    conf_value(weir, kept, 2, extra="test_listen 127.0.0.1:%d;\n" % added)
    assert weir.reload()["value"] == 2
    assert query(added)["value"] == 2
    settled(weir)
    assert query(kept)["value"] == 2
