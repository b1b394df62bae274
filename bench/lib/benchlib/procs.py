"""Processes: start them in their own process group with their output in
files, wait for a line or for readiness, stop them (and everything they
started), and read their CPU time and memory from /proc."""

import http.client
import os
import re
import resource
import signal
import socket
import ssl
import subprocess
import time

from . import h2c as h2cmod

CLK_TCK = os.sysconf('SC_CLK_TCK')


class ProcError(Exception):
    pass


class Proc:
    """A child process in its own session (so that stop() reaches its
    whole tree), stdout and stderr in RUNDIR/NAME.out and NAME.err."""

    live = []       # every Proc not stopped yet: stop_all() at exit

    def __init__(self, name, argv, rundir, env=None, cwd=None):
        self.name = name
        self.argv = argv
        self.out_path = os.path.join(rundir, name + '.out')
        self.err_path = os.path.join(rundir, name + '.err')
        self.cmd_path = os.path.join(rundir, name + '.cmd')
        with open(self.cmd_path, 'w') as f:
            f.write(' '.join(argv) + '\n')
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        out = open(self.out_path, 'wb')
        err = open(self.err_path, 'wb')
        try:
            self.popen = subprocess.Popen(argv, stdout=out, stderr=err,
                                          stdin=subprocess.DEVNULL,
                                          env=full_env, cwd=cwd,
                                          start_new_session=True)
        except OSError as e:
            raise ProcError('%s: cannot run %s: %s' % (name, argv[0], e))
        finally:
            out.close()
            err.close()
        self.pid = self.popen.pid
        Proc.live.append(self)

    def alive(self):
        return self.popen.poll() is None

    def output(self):
        text = ''
        for p in (self.out_path, self.err_path):
            try:
                with open(p, errors='replace') as f:
                    text += f.read()
            except OSError:
                pass
        return text

    def wait_line(self, regex, timeout):
        """Waits until stdout or stderr has a line matching regex;
        returns the match. Raises ProcError on exit or timeout."""
        pat = re.compile(regex, re.M)
        end = time.monotonic() + timeout
        while True:
            m = pat.search(self.output())
            if m:
                return m
            if not self.alive():
                raise ProcError('%s exited (status %s) before "%s": %s'
                                % (self.name, self.popen.returncode, regex,
                                   tail(self.output())))
            if time.monotonic() > end:
                raise ProcError('%s: no "%s" after %.0f s: %s'
                                % (self.name, regex, timeout,
                                   tail(self.output())))
            time.sleep(0.02)

    def send(self, sig):
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, signals=(signal.SIGTERM,), grace=5.0):
        """Sends each signal in turn to the process group, waiting up to
        grace seconds after each; SIGKILL last. Returns the exit status."""
        for sig in tuple(signals) + (signal.SIGKILL,):
            if not self.alive():
                break
            self.send(sig)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        # whatever the leader left behind in its group
        self.send(signal.SIGKILL)
        try:
            self.popen.wait(5)
        except subprocess.TimeoutExpired:
            pass
        if self in Proc.live:
            Proc.live.remove(self)
        return self.popen.returncode

    def keep_log(self, path):
        """Writes the command, exit status, stdout and stderr to path in
        the form of run()'s logs, and removes the separate files."""
        parts = []
        for p in (self.out_path, self.err_path):
            try:
                with open(p, errors='replace') as f:
                    parts.append(f.read())
            except OSError:
                parts.append('')
        with open(path, 'w') as f:
            f.write('$ %s\n# status %s\n%s\n# stderr\n%s'
                    % (' '.join(self.argv), self.popen.returncode, parts[0],
                       parts[1]))
        for p in (self.out_path, self.err_path, self.cmd_path):
            try:
                os.unlink(p)
            except OSError:
                pass

    @classmethod
    def stop_all(cls):
        for p in list(cls.live):
            p.stop(grace=1.0)


def tail(text, lines=6):
    return ' | '.join(text.strip().splitlines()[-lines:])


def run(argv, timeout, rundir=None, name=None):
    """Runs argv to its end; returns (status, stdout, stderr) and keeps
    them in rundir when given."""
    try:
        cp = subprocess.run(argv, capture_output=True, text=True,
                            timeout=timeout, stdin=subprocess.DEVNULL,
                            errors='replace')
        status, out, err = cp.returncode, cp.stdout, cp.stderr
    except subprocess.TimeoutExpired as e:
        status = 'timeout'
        out = e.stdout.decode(errors='replace') if e.stdout else ''
        err = e.stderr.decode(errors='replace') if e.stderr else ''
    except OSError as e:
        status, out, err = 'error', '', str(e)
    if rundir and name:
        with open(os.path.join(rundir, name + '.log'), 'w') as f:
            f.write('$ %s\n# status %s\n%s\n# stderr\n%s'
                    % (' '.join(argv), status, out, err))
    return status, out, err


def raise_nofile():
    """Raises RLIMIT_NOFILE as far as allowed, so that every child (the
    proxies, weir-probe hold) inherits it; returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for want in (max(hard, 65536), hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return want
        except (ValueError, OSError):
            continue
    return soft


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(port, path, tls=False, timeout=2.0, via=None):
    """One GET to 127.0.0.1:port; returns (status, body). via: (host,
    port) of the TLS origin that port, a forward proxy, is asked to
    CONNECT to (the GET goes over TLS inside the tunnel)."""
    if tls or via:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(['http/1.1'])
        conn = http.client.HTTPSConnection('127.0.0.1', port,
                                           timeout=timeout, context=ctx)
        if via:
            conn.set_tunnel(*via)
    else:
        conn = http.client.HTTPConnection('127.0.0.1', port,
                                          timeout=timeout)
    try:
        conn.request('GET', path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def wait_ready(proc, port, path, tls, timeout, h2c=False, via=None):
    """Polls until a GET of path through port answers 200 (connect plus
    one request; h2c: HTTP/2 with prior knowledge, for listeners that
    speak nothing else; via: through a CONNECT to that (host, port)), or
    raises ProcError."""
    end = time.monotonic() + timeout
    last = 'no attempt'
    while time.monotonic() < end:
        if not proc.alive():
            raise ProcError('%s exited (status %s): %s'
                            % (proc.name, proc.popen.returncode,
                               tail(proc.output())))
        try:
            if h2c:
                status = h2cmod.get(port, path)
            else:
                status, _ = http_get(port, path, tls, via=via)
            if status == 200:
                return
            last = 'status %s' % status
        except (OSError, http.client.HTTPException) as e:
            last = str(e) or type(e).__name__
        time.sleep(0.05)
    raise ProcError('%s not ready on port %d after %.0f s (%s): %s'
                    % (proc.name, port, timeout, last, tail(proc.output())))


def _children_map():
    kids = {}
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        st = _stat(int(d))
        if st:
            kids.setdefault(int(st[1]), []).append(int(d))
    return kids


def _stat(pid):
    """Fields of /proc/PID/stat from field 3 (state) on, or None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            s = f.read()
    except OSError:
        return None
    return s[s.rfind(')') + 2:].split()


def tree(pid):
    """pid and all its descendants that are alive."""
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, ()))
    return out


def children(pid):
    """The direct children of pid (a master's workers), alive or not yet
    reaped, from /proc/PID/task/PID/children, or by a scan of /proc
    where the kernel lacks that file."""
    try:
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return _children_map().get(pid, [])


def wait_new_children(pid, old, count, timeout):
    """Polls until pid has count children that are not in old (a reload
    took: the master started new workers); returns the seconds it took,
    or None after timeout or when pid is gone."""
    start = time.monotonic()
    while True:
        if _stat(pid) is None:
            return None
        if len(set(children(pid)) - set(old)) >= count:
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            return None
        time.sleep(0.01)


def cpu_seconds(pid):
    """utime + stime of pid's process tree (threads included), seconds.
    Children that exited and were waited for are counted by their parent
    (cutime, cstime)."""
    total = 0
    for p in tree(pid):
        st = _stat(p)
        if st:
            # fields 14-17 of stat: utime stime cutime cstime
            total += sum(int(x) for x in st[11:15])
    return total / CLK_TCK


def memory_kib(pid):
    """(VmRSS, VmHWM) summed over pid's process tree, KiB."""
    rss = hwm = 0
    for p in tree(pid):
        try:
            with open('/proc/%d/status' % p) as f:
                for line in f:
                    if line.startswith('VmRSS:'):
                        rss += int(line.split()[1])
                    elif line.startswith('VmHWM:'):
                        hwm += int(line.split()[1])
        except OSError:
            pass
    return rss, hwm
