"""The master and its workers: start, stop, respawn, signals, -s,
graceful shutdown with requests in flight, daemon mode."""

import os
import re
import signal
import socket
import time

import pytest

from weirtest import (DEADLINE, accepted, alive, connect,
                      parse_answer, proc_stat, query, read_all, wait_for)


def module_conf(weir, body="", port=None):
    port = port or weir.port()
    weir.conf("test_listen 127.0.0.1:%d;\n%s" % (port, body), module=True)
    return port


def test_start_and_quit(weir):
    port = module_conf(weir)
    weir.start()
    master = weir.master
    workers = weir.workers()
    assert len(workers) == 1
    assert weir.pidfile_pid() == master
    answer = query(port)
    assert answer == {"value": 0, "generation": 0, "pid": workers[0],
                      "worker": 0}
    weir.wait_log(r"\[notice\] \d+#\d+: test module initialised, value=0")
    weir.wait_log(r"\[notice\] %d#\d+: test module worker 0 started"
                  % workers[0])

    weir.stop(signal.SIGQUIT)
    assert weir.proc.returncode == 0
    for pid in [master] + workers:
        assert not alive(pid)
    assert not os.path.exists(weir.pid_path), "pid file not removed"
    with pytest.raises(ConnectionRefusedError):
        connect(port, timeout=1.0)


def test_term_stops_fast(weir):
    port = module_conf(weir)
    weir.start()
    tree = [weir.master] + weir.workers()
    query(port)
    weir.stop(signal.SIGTERM)
    assert weir.proc.returncode == 0
    assert not any(alive(p) for p in tree)
    assert not os.path.exists(weir.pid_path)


def test_int_stops_fast(weir):
    module_conf(weir)
    weir.start()
    weir.stop(signal.SIGINT)
    assert not os.path.exists(weir.pid_path)


def ncpu():
    return os.sysconf("SC_NPROCESSORS_ONLN")


@pytest.mark.parametrize("count", ["1", "2", "auto"])
def test_worker_processes(weir, count):
    port = module_conf(weir, "worker_processes %s;\n" % count)
    expected = ncpu() if count == "auto" else int(count)
    weir.start(workers=expected)
    workers = weir.workers()
    assert len(workers) == expected
    for n in range(expected):
        weir.wait_log(r"test module worker %d started" % n)
    answer = query(port)
    assert answer["pid"] in workers
    assert 0 <= answer["worker"] < expected


def test_killed_worker_is_respawned(weir):
    weir.allow.append(r"exited on signal 9")
    port = module_conf(weir, "worker_processes 1;\n")
    weir.start()
    (old,) = weir.workers()
    assert query(port)["pid"] == old

    os.kill(old, signal.SIGKILL)
    weir.wait_log(r"\[alert\] .*exited on signal 9")

    def respawned():
        w = weir.workers()
        return w if len(w) == 1 and w[0] != old else None

    (new,) = wait_for(respawned, what="a new worker")
    answer = wait_for(lambda: query(port), what="the new worker to answer")
    assert answer["pid"] == new
    assert answer["worker"] == 0
    assert not alive(old)
    assert weir.master == weir.pidfile_pid()


def count_lines(path, pattern):
    try:
        with open(path, errors="replace") as f:
            return len(re.findall(pattern, f.read()))
    except FileNotFoundError:
        return 0


def test_usr1_reopens_logs(weir):
    weir.allow.append(r"exited on signal 9")
    port = module_conf(weir)
    weir.start()
    query(port)
    weir.wait_log(r"test module answered")
    rotated = weir.error_log + ".1"
    os.rename(weir.error_log, rotated)

    weir.signal(signal.SIGUSR1)
    wait_for(lambda: os.path.exists(weir.error_log),
             what="the error log to be created again")

    # the worker's lines now go to the new file: the reopen reached it
    (worker,) = weir.workers()
    answered = r"\[info\] %d#\d+: .*test module answered" % worker

    def worker_line():
        query(port)
        return count_lines(weir.error_log, answered)

    wait_for(worker_line, what="a worker line in the new error log")

    # and nobody writes to the rotated file any more
    size = os.path.getsize(rotated)
    before = count_lines(weir.error_log, answered)
    query(port)
    wait_for(lambda: count_lines(weir.error_log, answered) > before,
             what="the next worker line")
    assert os.path.getsize(rotated) == size

    # the master reopened too: what it logs lands in the new file
    os.kill(worker, signal.SIGKILL)
    weir.wait_log(r"\[alert\] %d#\d+: .*exited on signal 9" % weir.master)
    assert os.path.getsize(rotated) == size


def test_s_reload_and_s_quit(weir):
    port = module_conf(weir, "test_value 1;\n")
    weir.start()
    master = weir.master
    assert query(port)["value"] == 1

    module_conf(weir, "test_value 2;\n", port=port)
    res = weir.run(["-s", "reload"])
    assert res.returncode == 0, res.stderr
    answer = wait_for(lambda: (lambda a: a if a["value"] == 2 else None)(
        query(port)), what="the reloaded value")
    assert answer["generation"] == 1
    assert weir.pidfile_pid() == master

    tree = [master] + weir.workers()
    res = weir.run(["-s", "quit"])
    assert res.returncode == 0, res.stderr
    weir.wait_gone(tree)
    assert weir.proc.wait(timeout=DEADLINE) == 0
    assert not os.path.exists(weir.pid_path)


def test_s_stop_and_reopen(weir):
    module_conf(weir)
    weir.start()
    res = weir.run(["-s", "reopen"])
    assert res.returncode == 0, res.stderr
    tree = [weir.master] + weir.workers()
    res = weir.run(["-s", "stop"])
    assert res.returncode == 0, res.stderr
    weir.wait_gone(tree)


def test_s_without_running_weir_fails(weir):
    weir.allow.append(r"\[error\]|\[emerg\]|\[alert\]")
    module_conf(weir)
    res = weir.run(["-s", "reload"])
    assert res.returncode != 0
    assert weir.pid_path in res.stderr


def test_s_unknown_signal(weir):
    module_conf(weir)
    res = weir.run(["-s", "dance"])
    assert res.returncode != 0
    assert "dance" in res.stderr


def wait_accepted(sock):
    wait_for(lambda: accepted(sock), what="the worker to accept")


def test_graceful_quit_finishes_requests_in_flight(weir):
    port = module_conf(weir, "worker_processes 1;\ntest_delay 500ms;\n")
    weir.start()
    s = connect(port, timeout=DEADLINE)
    try:
        wait_accepted(s)
        tree = [weir.master] + weir.workers()
        started = time.monotonic()
        weir.signal(signal.SIGQUIT)
        answer = parse_answer(read_all(s))
        assert answer["value"] == 0
        assert answer["pid"] in tree
    finally:
        s.close()
    weir.wait_gone(tree)
    # the answer held the stop back, but not much longer than its delay
    assert time.monotonic() - started < DEADLINE
    assert weir.proc.returncode == 0
    # new connections were refused meanwhile or after: the socket is gone
    with pytest.raises(ConnectionRefusedError):
        connect(port, timeout=1.0)


def test_worker_shutdown_timeout_cuts_requests(weir):
    port = module_conf(weir, "worker_processes 1;\n"
                       "worker_shutdown_timeout 200ms;\n"
                       "test_delay 5s;\n")
    weir.start()
    s = connect(port, timeout=DEADLINE)
    try:
        wait_accepted(s)
        (worker,) = weir.workers()
        tree = [weir.master, worker]
        started = time.monotonic()
        weir.signal(signal.SIGQUIT)
        try:
            data = read_all(s)
        except ConnectionResetError:
            data = b""
        elapsed = time.monotonic() - started
    finally:
        s.close()
    assert data == b"", "the request should have been cut: %r" % data
    weir.wait_gone(tree)
    # 200ms of grace, then the worker closes and exits: before the 5s
    # the request wanted (how much before is for bench/ to say;
    # wait_gone bounds the exit by DEADLINE)
    assert elapsed < 5, "connection closed after %.2fs" % elapsed


def test_daemon_on(weir):
    port = weir.port()
    weir.conf("daemon on;\ntest_listen 127.0.0.1:%d;\n" % port, module=True)
    weir.start(daemon=True)
    master = weir.master
    assert master != weir.proc.pid, "the master must detach"
    state, ppid = proc_stat(master)
    assert ppid != os.getpid() and ppid != weir.proc.pid
    # a session leader of its own, without our terminal
    assert os.getsid(master) == master
    assert weir.pidfile_pid() == master
    assert query(port)["value"] == 0
    assert query(port)["pid"] in weir.workers()

    tree = [master] + weir.workers()
    res = weir.run(["-s", "quit"])
    assert res.returncode == 0, res.stderr
    weir.wait_gone(tree)
    assert not os.path.exists(weir.pid_path)


def test_master_process_off(weir):
    port = module_conf(weir, "master_process off;\n")
    weir.start()
    assert weir.workers() == []
    assert query(port)["pid"] == weir.master
    weir.stop()


def test_pid_file_in_missing_directory_fails(weir):
    weir.allow.append(r"\[emerg\]|\[alert\]")
    weir.conf("pid nodir/weir.pid;\ntest_listen 127.0.0.1:%d;\n"
              % weir.port(), module=True)
    res = weir.run(["-t"])
    assert res.returncode == 0, res.stderr
    rc, err = weir.start_fails()
    assert rc != 0
    assert weir.path("nodir", "weir.pid") in err + weir.log()


def test_listen_address_in_use_fails(weir):
    weir.allow.append(r"\[emerg\]")
    busy = socket.socket()
    try:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        weir.conf("test_listen 127.0.0.1:%d;\n" % port, module=True)
        rc, err = weir.start_fails()
        assert rc != 0
        assert "Address already in use" in err + weir.log()
    finally:
        busy.close()
