"""Helpers for weir's integration tests.

Every test drives real weir processes: a temporary prefix (conf/, logs/),
a configuration written inline by the test, free loopback ports, and the
test module (tests/modules/weir_test_module) answering one line per
connection:

    weir-test value=<V> generation=<G> pid=<PID> worker=<W>

Every wait is a bounded poll (wait_for); no test sleeps for readiness.
Traffic goes to 127.0.0.1, ::1 or unix sockets only.
"""

import os
import re
import select
import shutil
from signal import SIGHUP, SIGKILL, SIGQUIT
import socket
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _from_env(name, default):
    value = os.environ.get(name)
    if value:
        return os.path.abspath(value)
    return os.path.join(REPO, default)


WEIR_BIN = _from_env("WEIR_BIN", "build/test/weir")
WEIR_BUILD_DIR = _from_env("WEIR_BUILD_DIR", "build/test")
SANITIZER = os.environ.get("WEIR_SANITIZER", "") == "1"

TEST_MODULE = os.path.join(WEIR_BUILD_DIR, "weir_test_module.so")
BADABI_MODULE = os.path.join(WEIR_BUILD_DIR, "weir_test_badabi_module.so")

# how long anything may take before a test fails: the sanitizer build is
# several times slower
DEADLINE = 10.0 * (3 if SANITIZER else 1)
POLL = 0.02

# how much earlier than configured a timeout may fire: a timer re-armed
# within WEIR_TIMER_LAZY_DELAY (300 ms) keeps its old deadline, and the
# cached time lags by one event loop pass. A test of "X closes after its
# timeout" checks that the close comes no sooner than timeout - EARLY
# (a server closing at once fails), and bounds the wait only by DEADLINE
# (speed is not for tests to judge).
EARLY = 0.4

# lines that fail a test at teardown unless it allows them: [crit] is
# what weir logs when a system call or a library failed where it should
# not (an accept, a setsockopt, an SSL call), a bug as much as an alert
BAD_LINE = re.compile(r"\[crit\]|\[alert\]|\[emerg\]|AddressSanitizer"
                      r"|LeakSanitizer|runtime error:")

ANSWER = re.compile(r"^weir-test value=(-?\d+) generation=(\d+) pid=(\d+)"
                    r" worker=(\d+)\n$")


class WeirTimeout(AssertionError):
    pass


class WeirDied(Exception):
    """weir exited while a test waited for it: waiting longer is futile
    (wait_for lets this one through at once)."""


def wait_for(predicate, timeout=DEADLINE, interval=POLL, what=None):
    """Polls predicate until it returns something true; returns that.

    Raises WeirTimeout (an AssertionError) naming `what` after timeout
    seconds. Exceptions from predicate count as "not yet" (so it may,
    say, connect to a port not open yet) and the last one is reported.
    """
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            value = predicate()
            if value:
                return value
            last_exc = None
        except (OSError, ValueError, AssertionError) as exc:
            last_exc = exc
        if time.monotonic() >= deadline:
            desc = what or getattr(predicate, "__name__", "condition")
            extra = " (last error: %r)" % (last_exc,) if last_exc else ""
            raise WeirTimeout("timed out after %.1fs waiting for %s%s"
                              % (timeout, desc, extra))
        time.sleep(interval)


# ---------------------------------------------------------------- ports

_given_ports = set()


def free_port(family=socket.AF_INET):
    """A loopback TCP port that was free a moment ago (bind 0, release).

    The same port is never handed out twice in one run, so two listeners
    of one test never collide with each other.
    """
    host = "::1" if family == socket.AF_INET6 else "127.0.0.1"
    for _ in range(100):
        s = socket.socket(family, socket.SOCK_STREAM)
        try:
            s.bind((host, 0))
            port = s.getsockname()[1]
        finally:
            s.close()
        if port not in _given_ports:
            _given_ports.add(port)
            return port
    raise RuntimeError("no free port found")


def ipv6_available():
    """None when [::1] can be bound, else the reason it cannot."""
    if not socket.has_ipv6:
        return "Python has no IPv6 support"
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    except OSError as exc:
        return "no IPv6 socket: %s" % exc
    try:
        s.bind(("::1", 0))
    except OSError as exc:
        return "cannot bind [::1]: %s" % exc
    finally:
        s.close()
    return None


# ---------------------------------------------------------------- clients

def _target(addr):
    """(family, sockaddr) from a port, (host, port), "unix:/p" or "/p"."""
    if isinstance(addr, int):
        return socket.AF_INET, ("127.0.0.1", addr)
    if isinstance(addr, tuple):
        host = addr[0].strip("[]")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return family, (host, addr[1])
    path = str(addr)
    if path.startswith("unix:"):
        path = path[len("unix:"):]
    return socket.AF_UNIX, path


def connect(addr, timeout=5.0):
    family, sa = _target(addr)
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sa)
    except BaseException:
        s.close()
        raise
    return s


def read_all(s, limit=4096):
    """Reads until EOF (bounded by limit bytes and the socket timeout)."""
    data = b""
    while len(data) < limit:
        chunk = s.recv(limit - len(data))
        if not chunk:
            break
        data += chunk
    return data


def wait_accepting(port, host="127.0.0.1"):
    """Polls until a TCP connect to (host, port) succeeds."""
    def up():
        try:
            socket.create_connection((host, port), timeout=1).close()
            return True
        except OSError:
            return False

    wait_for(up, what="port %d to accept" % port)


def send_and_read_to_eof(port, data, timeout=DEADLINE, half_close=True):
    """Sends data to 127.0.0.1:port, half-closes (unless half_close is
    false: a proxied request may take the client's FIN for an abort), and
    returns everything the server sent until it closed (a reset ends it
    too), the wait bounded by timeout."""
    s = connect(("127.0.0.1", port), timeout=timeout)
    got = b""
    try:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r, _, _ = select.select([s], [], [], deadline - time.monotonic())
            if not r:
                break
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
    finally:
        s.close()
    return got


def _hexport(field):
    return int(field.rsplit(":", 1)[1], 16)


def accepted(sock):
    """Has the server accept()ed this client TCP connection yet?

    A connection still in the listen queue has no socket inode in
    /proc/net/tcp; accept() gives it one. This tells a test that a
    request is in flight in a worker, without sleeping.
    """
    local = sock.getsockname()[1]
    remote = sock.getpeername()[1]
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                lines = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if (_hexport(fields[1]) == remote
                    and _hexport(fields[2]) == local):
                return int(fields[9]) != 0
    return False


def parse_answer(data):
    text = data.decode("ascii", "replace")
    m = ANSWER.match(text)
    if not m:
        raise ValueError("not a test module answer: %r" % text)
    return {"value": int(m.group(1)), "generation": int(m.group(2)),
            "pid": int(m.group(3)), "worker": int(m.group(4))}


def query(addr, timeout=5.0):
    """Connects, reads the test module's line until the server closes,
    returns {"value", "generation", "pid", "worker"} as ints.

    addr: a port on 127.0.0.1, (host, port), or "unix:/path".
    """
    s = connect(addr, timeout)
    try:
        return parse_answer(read_all(s))
    finally:
        s.close()


# ---------------------------------------------------------------- /proc

def proc_stat(pid):
    """(state, ppid) of pid, or None when it does not exist."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # the command name may hold spaces and parentheses: split after the
    # last ")"
    rest = data[data.rindex(")") + 2:].split()
    return rest[0], int(rest[1])


def alive(pid):
    """Does pid exist and is it not a zombie?"""
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def _all_pids():
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def children(pid, zombies=False):
    """Pids whose parent is pid (zombies only when asked)."""
    result = []
    for p in _all_pids():
        st = proc_stat(p)
        if st is None or st[1] != pid:
            continue
        if st[0] in ("Z", "X") and not zombies:
            continue
        result.append(p)
    return sorted(result)


def zombies(pid):
    """Children of pid that exited and were not reaped."""
    return [p for p in children(pid, zombies=True)
            if proc_stat(p) is not None and proc_stat(p)[0] == "Z"]


def descendants(pid):
    result = []
    todo = [pid]
    while todo:
        for c in children(todo.pop(), zombies=True):
            result.append(c)
            todo.append(c)
    return result


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def stable_fd_count(pid, samples=5, timeout=DEADLINE):
    """The descriptor count of pid once it reads the same `samples` times
    in a row (a process may hold one for a moment: a reload, a child
    being reaped, a sanitizer's own files)."""
    seen = []

    def stable():
        seen.append(fd_count(pid))
        del seen[:-samples]
        return len(seen) == samples and len(set(seen)) == 1

    wait_for(stable, timeout=timeout,
             what="a stable descriptor count of %d" % pid)
    return seen[-1]


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


# ---------------------------------------------------------------- sanitizers

def sanitizer_env(logdir, env=None):
    """The environment for a weir process; with WEIR_SANITIZER=1 the
    sanitizers write their reports under logdir (scanned later)."""
    env = dict(os.environ if env is None else env)
    if SANITIZER:
        env["ASAN_OPTIONS"] = ("detect_leaks=1:log_path=%s"
                               % os.path.join(logdir, "asan"))
        env["UBSAN_OPTIONS"] = ("print_stacktrace=1:log_path=%s"
                                % os.path.join(logdir, "ubsan"))
    return env


def bad_lines(paths, allow=()):
    """Lines of the files that match BAD_LINE and no allowed pattern
    (regular expressions), as "file: line" strings."""
    found = []
    allowed = [re.compile(a) for a in allow]
    for path in paths:
        try:
            with open(path, "r", errors="replace") as f:
                for line in f:
                    if not BAD_LINE.search(line):
                        continue
                    if any(a.search(line) for a in allowed):
                        continue
                    found.append("%s: %s" % (os.path.basename(path),
                                             line.rstrip("\n")))
        except FileNotFoundError:
            pass
    return found


def sanitizer_reports(logdir):
    """Paths of sanitizer report files (asan.PID, ubsan.PID) in logdir."""
    try:
        names = os.listdir(logdir)
    except FileNotFoundError:
        return []
    return sorted(os.path.join(logdir, n) for n in names
                  if n.startswith("asan.") or n.startswith("ubsan."))


def check_sanitizer_reports(logdir, allow=()):
    """Fails with the first lines of every sanitizer report in logdir."""
    problems = []
    allowed = [re.compile(a) for a in allow]
    for path in sanitizer_reports(logdir):
        with open(path, "r", errors="replace") as f:
            text = f.read()
        if not text.strip():
            continue
        if allowed and all(any(a.search(line) for a in allowed)
                           for line in text.splitlines()
                           if BAD_LINE.search(line)):
            continue
        problems.append("%s:\n%s" % (path, text[:4000]))
    if problems:
        raise AssertionError("sanitizer reports:\n" + "\n".join(problems))


# ---------------------------------------------------------------- one-shots

def run_weir(args, prefix=None, timeout=DEADLINE, env=None, check_san=True):
    """Runs weir once (-t, -T, -v, -V, -h, -s ...) and returns the
    CompletedProcess (text stdout/stderr). With prefix, "-p prefix" is
    put first. Under WEIR_SANITIZER=1 the run's sanitizer reports fail
    the test."""
    cmd = [WEIR_BIN]
    if prefix is not None:
        cmd += ["-p", prefix.rstrip("/") + "/"]
    cmd += list(args)
    logdir = tempfile.mkdtemp(prefix="weir-san-")
    try:
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=timeout, env=sanitizer_env(logdir, env),
                             text=True, errors="replace")
        if check_san:
            check_sanitizer_reports(logdir)
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
    return res


# ---------------------------------------------------------------- weir

def line_of(path, needle, nth=1):
    """The 1-based number of the nth line of the file holding needle."""
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if needle in line:
                nth -= 1
                if nth == 0:
                    return number
    raise ValueError("%r not in %s" % (needle, path))


def _directive_present(body, name):
    return re.search(r"^\s*%s\b" % re.escape(name), body, re.M) is not None


class Weir:
    """One weir installation in a temporary prefix, and the processes
    started from it. Made by the `weir` fixture, which stops everything
    and checks the logs at teardown."""

    def __init__(self, root):
        self.prefix = root
        self.conf_dir = os.path.join(root, "conf")
        self.logs_dir = os.path.join(root, "logs")
        os.makedirs(self.conf_dir)
        os.makedirs(self.logs_dir)
        self.conf_path = os.path.join(self.conf_dir, "weir.conf")
        self.error_log = os.path.join(self.logs_dir, "error.log")
        self.pid_path = os.path.join(self.logs_dir, "weir.pid")
        self.stdout_path = os.path.join(self.logs_dir, "stdout")
        self.stderr_path = os.path.join(self.logs_dir, "stderr")
        self.proc = None           # the Popen of the started weir
        self.master = None         # the master's pid (daemon or not)
        self.seen = set()          # every weir pid we have seen
        self.allow = []            # log patterns this test allows
        self.conf_text = ""
        self.generation = -1       # the newest generation seen answering

    # ---- configuration

    def port(self, family=socket.AF_INET):
        return free_port(family)

    def path(self, *parts):
        return os.path.join(self.prefix, *parts)

    def conf(self, body, module=False, preamble=True, events=True,
             name="weir.conf"):
        """Writes conf/<name> and returns its path.

        With preamble, prepends "error_log logs/error.log info;",
        "pid logs/weir.pid;" and "daemon off;" (each only when the body
        does not set it itself) and, with module, the load_module of the
        test module. With events, appends "events { }" when the body has
        no events block (weir requires one). With neither, the body is
        written verbatim.
        """
        text = ""
        if preamble:
            if module:
                text += "load_module %s;\n" % TEST_MODULE
            if not _directive_present(body, "error_log"):
                text += "error_log logs/error.log info;\n"
            if not _directive_present(body, "pid"):
                text += "pid logs/weir.pid;\n"
            if not _directive_present(body, "daemon"):
                text += "daemon off;\n"
        text += body
        if (preamble or events) and not text.endswith("\n"):
            text += "\n"
        if events and not _directive_present(text, "events"):
            text += "events {\n}\n"
        path = os.path.join(self.conf_dir, name)
        with open(path, "w") as f:
            f.write(text)
        if name == "weir.conf":
            self.conf_text = text
        return path

    def write(self, relpath, text):
        path = os.path.join(self.prefix, relpath)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run(self, args, **kw):
        """A one-shot weir with this prefix and configuration (-t, -s)."""
        return run_weir(list(args) + ["-c", self.conf_path], self.prefix,
                        env=self.env(), **kw)

    def env(self):
        return sanitizer_env(self.logs_dir)

    # ---- what the configuration says

    def listen_addrs(self, text=None):
        """The addresses of the test_listen directives, as query() takes
        them."""
        text = self.conf_text if text is None else text
        addrs = []
        for m in re.finditer(r"^\s*test_listen\s+([^\s;]+)", text, re.M):
            a = m.group(1)
            if a.startswith("unix:"):
                addrs.append(a)
                continue
            m6 = re.match(r"^\[(.*)\]:(\d+)$", a)
            if m6:
                addrs.append((m6.group(1), int(m6.group(2))))
                continue
            host, _, port = a.rpartition(":")
            if host in ("", "*", "0.0.0.0"):
                host = "127.0.0.1"
            addrs.append((host, int(port)))
        return addrs

    def expected_workers(self, text=None):
        text = self.conf_text if text is None else text
        if re.search(r"^\s*master_process\s+off\s*;", text, re.M):
            return 0
        m = re.search(r"^\s*worker_processes\s+(\w+)\s*;", text, re.M)
        if m is None:
            return 1
        if m.group(1) == "auto":
            return os.sysconf("SC_NPROCESSORS_ONLN")
        return int(m.group(1))

    def delayed(self, text=None):
        text = self.conf_text if text is None else text
        m = re.search(r"^\s*test_delay\s+(\w+)\s*;", text, re.M)
        return m is not None and m.group(1) not in ("0", "0ms", "0s")

    # ---- processes

    def start(self, args=(), daemon=False, workers=None, check_ports=True):
        """Starts `weir -p PREFIX -c conf/weir.conf` and waits until it is
        ready: the pid file holds the master's pid, the expected number of
        workers are its children, and every test_listen address answers
        (or, with test_delay, accepts). Returns self."""
        assert self.proc is None or self.proc.poll() is not None, \
            "weir already started"
        cmd = [WEIR_BIN, "-p", self.prefix + "/", "-c", "conf/weir.conf"]
        cmd += list(args)
        out = open(self.stdout_path, "ab")
        err = open(self.stderr_path, "ab")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err,
                                         env=self.env(), cwd=self.prefix)
        finally:
            out.close()
            err.close()
        self.seen.add(self.proc.pid)

        if daemon:
            try:
                rc = self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                raise AssertionError("weir with daemon on did not detach")
            assert rc == 0, "weir exited %d:\n%s" % (rc, self.diagnostics())
            self.master = wait_for(self._pidfile_pid, what="the pid file")
        else:
            self.master = self.proc.pid

        self.seen.add(self.master)
        self.wait_ready(workers=workers, check_ports=check_ports)
        return self

    def start_fails(self, args=(), timeout=DEADLINE * 2):
        """Starts weir as start() does but expects it to exit by itself
        (a configuration that cannot run). Returns (exit code, stderr).
        If it keeps running, the fixture's teardown stops it."""
        cmd = [WEIR_BIN, "-p", self.prefix + "/", "-c", "conf/weir.conf"]
        cmd += list(args)
        err_path = self.stderr_path + ".fail"
        with open(err_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL,
                                         stderr=err, env=self.env(),
                                         cwd=self.prefix)
        self.master = self.proc.pid
        self.seen.add(self.master)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.workers()
            raise AssertionError("weir did not exit by itself:\n%s"
                                 % self.diagnostics())
        with open(err_path, errors="replace") as f:
            return rc, f.read()

    def _pidfile_pid(self):
        try:
            with open(self.pid_path) as f:
                text = f.read()
        except FileNotFoundError:
            return None
        if not text.endswith("\n"):
            return None  # being written
        return int(text)

    def pidfile_pid(self):
        return self._pidfile_pid()

    def _check_running(self):
        if self.proc is not None and self.master == self.proc.pid:
            rc = self.proc.poll()
            if rc is not None:
                raise WeirDied("weir exited with %d:\n%s"
                               % (rc, self.diagnostics()))
        elif not alive(self.master):
            raise WeirDied("weir master %d is gone:\n%s"
                           % (self.master, self.diagnostics()))

    def workers(self, master=None):
        """The master's live children (its workers)."""
        pids = children(self.master if master is None else master)
        self.seen.update(pids)
        return pids

    def wait_ready(self, workers=None, check_ports=True, master=None):
        master = self.master if master is None else master
        if workers is None:
            workers = self.expected_workers()
        addrs = self.listen_addrs() if check_ports else []
        delayed = self.delayed()

        def ready():
            self._check_running()
            if self.pidfile_pid() != master:
                return False
            if workers and len(self.workers(master)) != workers:
                return False
            # with test_delay a probe would leave a request in flight:
            # the workers being up (the master opened the sockets before
            # forking them) is enough then
            if not delayed:
                for a in addrs:
                    query(a, timeout=DEADLINE)
            return True

        try:
            wait_for(ready, what="weir to be ready")
        except WeirTimeout as exc:
            raise AssertionError("%s\n%s" % (exc, self.diagnostics()))

    def signal(self, sig, pid=None):
        os.kill(self.master if pid is None else pid, sig)

    def reload(self, body=None, module=True, wait=True, **kw):
        """Rewrites the configuration (when body is given), sends HUP and,
        with wait, waits until the first listener answers from a newer
        generation than any seen before. Returns that answer (or None).

        Old workers may still answer for a moment after that (they stop
        accepting when they get to their QUIT): settle() waits for them
        to be gone.
        """
        addrs = self.listen_addrs()
        if wait and addrs:
            # an old worker may answer with an older generation: remember
            # the newest one known
            self.generation = max(self.generation,
                                  query(addrs[0])["generation"])
        if body is not None:
            self.conf(body, module=module, **kw)
        self.signal(SIGHUP)
        if not wait or not addrs:
            return None
        new_addrs = self.listen_addrs()
        newest = self.generation

        def changed():
            a = query(new_addrs[0])
            return a if a["generation"] > newest else None

        answer = wait_for(changed, what="the reload to take effect")
        self.generation = answer["generation"]
        return answer

    def settle(self, workers=None):
        """Waits until only the current workers are left and every exited
        one has been reaped."""
        if workers is None:
            workers = self.expected_workers()

        def done():
            return (len(self.workers()) == workers
                    and not zombies(self.master))

        wait_for(done, what="old workers to exit and be reaped")

    def stop(self, sig=None, timeout=DEADLINE):
        """Stops the master with sig (default QUIT), waits for it and
        every process it had to be gone. SIGKILLs what is left and
        fails."""
        if sig is None:
            sig = SIGQUIT
        if self.master is None:
            return
        tree = set(descendants(self.master)) | {self.master}
        self.seen.update(tree)
        if alive(self.master):
            try:
                os.kill(self.master, sig)
            except ProcessLookupError:
                pass
        self.wait_gone(tree, timeout)

    def wait_gone(self, pids, timeout=DEADLINE):
        pids = set(pids)

        def gone():
            if self.proc is not None:
                self.proc.poll()  # reap our direct child
            return not any(alive(p) for p in pids)

        try:
            wait_for(gone, timeout=timeout, what="weir processes to exit")
        except WeirTimeout:
            left = self.kill_all(pids)
            raise AssertionError("processes left after %.1fs, killed: %s\n%s"
                                 % (timeout, left, self.diagnostics()))
        # our child may have become a zombie between the poll() and the
        # look at /proc: reap it, so that its exit status is known
        if self.proc is not None and self.proc.pid in pids:
            self.proc.wait(timeout=DEADLINE)

    def kill_all(self, pids=None):
        """SIGKILLs every live weir process of this instance; returns
        their pids."""
        left = []
        for p in sorted(self.seen if pids is None else pids):
            if alive(p) and "weir" in cmdline(p):
                left.append(p)
                try:
                    os.kill(p, SIGKILL)
                except ProcessLookupError:
                    pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                pass
        return left

    # ---- logs

    def log(self):
        try:
            with open(self.error_log, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def log_files(self):
        names = sorted(os.listdir(self.logs_dir))
        return [os.path.join(self.logs_dir, n) for n in names
                if n not in ("weir.pid", "stdout")
                and not n.endswith(".oldbin")]

    def wait_log(self, pattern, timeout=DEADLINE, path=None):
        """Waits for a line of the error log (or path) matching the
        regular expression; returns the match."""
        rx = re.compile(pattern)

        def found():
            try:
                with open(path or self.error_log, errors="replace") as f:
                    return rx.search(f.read())
            except FileNotFoundError:
                return None

        return wait_for(found, timeout=timeout, what="log line %r" % pattern)

    def check_logs(self):
        """Fails on [crit], [alert], [emerg] and sanitizer lines not
        allowed."""
        bad = bad_lines(self.log_files(), self.allow)
        if bad:
            raise AssertionError("unexpected log lines:\n" + "\n".join(bad))
        check_sanitizer_reports(self.logs_dir, self.allow)

    def diagnostics(self):
        out = ["prefix: %s" % self.prefix]
        for path in (self.stderr_path, self.error_log):
            try:
                with open(path, errors="replace") as f:
                    text = f.read()
            except FileNotFoundError:
                continue
            out.append("---- %s (last 40 lines)" % os.path.basename(path))
            out.extend(text.splitlines()[-40:])
        for path in sanitizer_reports(self.logs_dir):
            with open(path, errors="replace") as f:
                text = f.read()
            out.append("---- %s (first 40 lines)" % os.path.basename(path))
            out.extend(text.splitlines()[:40])
        return "\n".join(out)


def ensure_binary():
    """A clear failure when the weir under test or the test module is
    missing (nothing is skipped silently)."""
    problems = []
    if not os.access(WEIR_BIN, os.X_OK):
        problems.append("weir binary not found or not executable: %s "
                        "(set WEIR_BIN, or run `make test`)" % WEIR_BIN)
    if not os.path.exists(TEST_MODULE):
        problems.append("test module not found: %s (set WEIR_BUILD_DIR to "
                        "a build configured with --add-dynamic-module="
                        "tests/modules/weir_test_module)" % TEST_MODULE)
    return problems



def requires_module(name):
    """Decorates a test that loads the dynamic test module NAME.so from the
    build directory. `make test` builds every test module; a build without
    one is a broken test build, so the test fails (it never passes by
    skipping)."""
    import functools

    path = os.path.join(WEIR_BUILD_DIR, name + ".so")

    def decorate(test):
        @functools.wraps(test)
        def check(*args, **kwargs):
            assert os.path.exists(path), (
                "%s not built (configure --add-dynamic-module="
                "tests/modules/%s)" % (path, name))
            return test(*args, **kwargs)
        return check

    return decorate
