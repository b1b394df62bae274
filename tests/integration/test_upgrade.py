"""Binary upgrade on the fly: USR2 starts a new master from the binary on
disk with the listening sockets inherited, WINCH stops the old workers,
QUIT ends the old master; no connection is refused throughout."""

import os
import signal
import threading
import time

from weirtest import DEADLINE, alive, children, query, wait_for


def read_pid(path):
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    return int(text) if text.endswith("\n") else None


def test_usr2_binary_upgrade(weir):
    port = weir.port()
    weir.conf("worker_processes 1;\ntest_listen 127.0.0.1:%d;\n" % port,
              module=True)
    weir.start()
    old_master = weir.master
    (old_worker,) = weir.workers()
    oldbin = weir.pid_path + ".oldbin"

    failures = []
    pids = set()
    stop = threading.Event()
    deadline = time.monotonic() + DEADLINE * 6

    def client():
        n = 0
        while (not stop.is_set() and n < 100000
               and time.monotonic() < deadline):
            n += 1
            try:
                pids.add(query(port, timeout=DEADLINE)["pid"])
            except (OSError, ValueError) as exc:
                failures.append(repr(exc))

    t = threading.Thread(target=client, daemon=True)
    t.start()
    try:
        weir.signal(signal.SIGUSR2)

        # the pid file moves to .oldbin, and the new master writes its own
        wait_for(lambda: read_pid(oldbin) == old_master,
                 what="the pid file to move to .oldbin")
        new_master = wait_for(
            lambda: (lambda p: p if p and p != old_master else None)(
                read_pid(weir.pid_path)),
            what="the new master's pid file")
        weir.seen.add(new_master)
        assert alive(new_master)
        assert new_master in children(old_master)

        def new_workers():
            w = [p for p in children(new_master)]
            return w if len(w) == 1 else None

        (new_worker,) = wait_for(new_workers, what="the new master's worker")
        weir.seen.add(new_worker)

        # both generations of workers answer on the inherited socket
        wait_for(lambda: old_worker in pids and new_worker in pids,
                 what="both the old and the new worker to answer")

        # WINCH: the old workers stop gracefully, the old master stays
        weir.signal(signal.SIGWINCH, old_master)
        wait_for(lambda: children(old_master) == [new_master],
                 what="the old worker to exit")
        assert alive(old_master)
        for _ in range(10):
            assert query(port)["pid"] == new_worker

        # QUIT: the old master goes, the new one serves on
        weir.signal(signal.SIGQUIT, old_master)
        assert weir.proc.wait(timeout=DEADLINE) == 0
        wait_for(lambda: not os.path.exists(oldbin),
                 what="the .oldbin pid file to be removed")
        assert read_pid(weir.pid_path) == new_master
        for _ in range(10):
            assert query(port)["pid"] == new_worker
    finally:
        stop.set()
        t.join(timeout=DEADLINE)

    # from now on the fixture stops the new master
    weir.master = new_master
    assert not t.is_alive()
    assert failures == [], "%d failed connections: %s" % (
        len(failures), failures[:5])

    weir.stop()
    assert not os.path.exists(weir.pid_path)


def test_usr2_then_quit_new_master_keeps_old(weir):
    """The way back: after USR2, quitting the new master leaves the old
    master (and its pid file) serving."""
    port = weir.port()
    weir.conf("worker_processes 1;\ntest_listen 127.0.0.1:%d;\n" % port,
              module=True)
    weir.start()
    old_master = weir.master
    (old_worker,) = weir.workers()
    oldbin = weir.pid_path + ".oldbin"

    weir.signal(signal.SIGUSR2)
    new_master = wait_for(
        lambda: (lambda p: p if p and p != old_master else None)(
            read_pid(weir.pid_path)),
        what="the new master's pid file")
    weir.seen.add(new_master)
    wait_for(lambda: len(children(new_master)) == 1,
             what="the new master's worker")
    weir.seen.update(children(new_master))

    tree = [new_master] + children(new_master)
    weir.signal(signal.SIGQUIT, new_master)
    weir.wait_gone(tree)

    # the old master takes its pid file back and still serves
    wait_for(lambda: read_pid(weir.pid_path) == old_master,
             what="the pid file to be restored")
    assert not os.path.exists(oldbin)
    assert query(port)["pid"] == old_worker
