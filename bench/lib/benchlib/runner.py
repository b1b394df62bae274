"""Runs suites: starts the origin and the products, takes turns between
them step by step, measures, and collects one row per measurement.

Every process is started through procs.Proc and stopped in a finally
clause (bench/run also stops whatever is left on exit or Ctrl-C)."""

import os
import re
import signal
import subprocess
import sys
import time

from . import procs
from . import stats
from . import tlsgen
from .probe import Probe, origin_stats, parse_csv, parse_h2load, parse_wrk
from .probe import probe_cpu_pct, which

# the columns of results.csv, in order
COLUMNS = (
    'suite', 'arm', 'topology', 'product', 'tool', 'repeat', 'turn',
    'conns', 'hold', 'duration_s', 'requests', 'rps', 'errors',
    'err_connect', 'err_timeout', 'err_read', 'err_write', 'err_refused',
    'status_4xx', 'status_5xx', 'status_other', 'status_non2xx', 'p50_us',
    'p90_us', 'p99_us', 'p999_us', 'max_us', 'mean_us', 'meets', 'proxy_cpu_s',
    'cpu_us_per_req', 'rss_kib', 'hwm_kib', 'probe_cpu_pct',
    'origin_conns', 'origin_reqs', 'instr_n', 'instr_ir', 'reloads',
    'reload_max_s', 'note',
)

PROBE_COLUMNS = ('duration_s', 'requests', 'rps', 'errors', 'err_connect',
                 'err_timeout', 'err_read', 'err_write', 'err_refused',
                 'status_4xx',
                 'status_5xx', 'status_other', 'p50_us', 'p90_us',
                 'p99_us', 'p999_us', 'max_us', 'mean_us')


class Settings:
    """The run's options (from the command line)."""

    def __init__(self, **kw):
        self.repeat = 3
        self.concurrency = (8, 16, 32, 64)
        self.duration = 2.0
        self.warmup = 0.5
        self.pin = False
        self.workers = 1
        self.p99_ms = 50.0
        self.smoke = False
        self.hold = None          # idle connections; None: the suite's
        self.instr_n = (2000, 12000)
        self.instr_warmup = 200
        self.reloads = None       # reloads of the reload suite; None: its
        self.duration_given = False   # --duration given: it overrides a
        #                               suite's own duration (reload)
        self.__dict__.update(kw)


class Running:
    """A product up and serving: its process (None for direct), its port
    and its run folder; proxy: (origin port, CA to trust) when the
    client reaches it as a forward proxy (the MITM and tunnel arms)."""

    def __init__(self, product, proc, port, rundir, tls, proxy=None):
        self.product = product
        self.proc = proc
        self.port = port
        self.rundir = rundir
        self.tls = tls
        self.proxy = proxy

    def url(self, path, host='127.0.0.1'):
        if self.proxy:
            # the origin's URL, through the proxy
            return 'https://%s:%d%s' % (host, self.proxy[0], path)
        return '%s://127.0.0.1:%d%s' % ('https' if self.tls else 'http',
                                        self.port, path)

    def client_args(self, arm):
        """weir-probe's options for the way the client reaches it."""
        if self.proxy:
            return ['--proxy', '127.0.0.1:%d' % self.port,
                    '--cacert', self.proxy[1]] + \
                (['--new-host'] if arm.new_host else [])
        return []


class Runner:

    def __init__(self, settings, products, probe_path, rundir, tls_paths,
                 nofile, log):
        self.s = settings
        self.products = products
        self.probe = Probe(probe_path)
        self.rundir = rundir
        self.tls_paths = tls_paths
        self.nofile = nofile
        self.conns = max(12000, min(16384, nofile - 256))
        self.log = log
        self.rows = []
        self.notes = []           # (suite, text): shown in the summary
        self.failures = []        # (suite, text): make the run fail
        self.seq = 0
        self.dns_port = 0         # the run's DNS server (MITM suites)

    # ----- helpers

    def note(self, suite, text):
        self.notes.append((suite.name, text))
        self.log('  note: ' + text)

    def fail(self, suite, text):
        self.failures.append((suite.name, text))
        self.log('  FAILED: ' + text)

    def smoke_check(self, suite, row, what, name):
        """In a smoke run, a step with errors or without a 2xx answer
        fails the run (stats.smoke_problem); in a measuring run errors
        are figures (a step beyond what the product sustains)."""
        if not self.s.smoke:
            return
        why = stats.smoke_problem(row)
        if why:
            self.fail(suite, '%s: %s: see raw/%s.log' % (what, why, name))

    def cpu0(self):
        return ['taskset', '-c', '0'] if self.s.pin else []

    def cpu1(self):
        return ['taskset', '-c', '1'] if self.s.pin else []

    def subdir(self, *parts):
        d = os.path.join(self.rundir, *parts)
        os.makedirs(d, exist_ok=True)
        return d

    def steps(self, suite):
        if self.s.smoke:
            return (4,)
        return suite.concurrency or self.s.concurrency

    def suite_products(self, suite, arm):
        """The products of the suite (those asked for), with a note for
        each that cannot run the arm."""
        out = []
        for p in self.products:
            if p.name not in suite.products:
                continue
            why = p.available() or p.supports(arm)
            if why:
                self.note(suite, '%s %s skipped: %s' % (arm.name, p.name,
                                                        why))
                continue
            out.append(p)
        return out

    def start_origin(self, suite, alone=False, tls=False):
        """The origin shares CPU 0 with the generator, the proxy having
        CPU 1; with no proxy in the path (alone: the crosscheck of the
        generators) it takes the proxy's core, so each generator is
        measured by its own cost, not by what it leaves the origin.
        tls: a TLS listener (the crosscheck of an H2 TLS arm)."""
        d = self.subdir(suite.name)
        return self.probe.origin(
            d, prefix=self.cpu1() if alone else self.cpu0(),
            name='origin-tls' if tls else 'origin',
            tls=(self.tls_paths['cert'], self.tls_paths['key']) if tls
            else None)

    def start(self, product, arm, origin_port, rundir, single=False,
              wrapper=(), ready_timeout=10.0, workers=None, reload=False):
        """Renders the product's configuration into rundir and starts it
        (with workers workers, default --workers; reload: the way it can
        be reloaded, e.g. HAProxy's master-worker mode); returns Running.
        Raises procs.ProcError when it does not serve."""
        forward = product.forward(arm)
        # the listener's TLS: a forward proxy's is plain (TLS goes
        # through its CONNECT), as is l4's on the tunnel arm (it relays
        # the client's TLS)
        tls = arm.client_tls and arm.mode == 'reverse'
        if not product.proxy:
            return Running(product, None, origin_port, rundir, tls)
        port = procs.free_port()
        ctx = {'port': port, 'origin_port': origin_port, 'tls': tls,
               'mode': arm.mode, 'mitm': arm.mode == 'mitm',
               'ca': self.tls_paths['ca'],
               'mitm_cert': self.tls_paths.get('mitm_cert', ''),
               'mitm_key': self.tls_paths.get('mitm_key', ''),
               'mitm_confdir': self.tls_paths.get('mitm_confdir', ''),
               'dns_port': self.dns_port,
               'cert': self.tls_paths['cert'], 'key': self.tls_paths['key'],
               'pem': self.tls_paths['pem'],
               'workers': 1 if single else (workers or self.s.workers),
               'conns': self.conns, 'nofile': self.nofile, 'rundir': rundir,
               'single': single, 'reload': reload,
               'h2': arm.client == 'h2', 'origin_h2': arm.origin == 'h2',
               'origin_tls': arm.origin_tls, 'grpc': arm.grpc}
        conf = os.path.join(rundir, product.conf_name)
        with open(conf, 'w') as f:
            f.write(product.render(ctx))
        product.prepare(rundir, ctx)
        argv = list(wrapper) + product.argv(conf, ctx)
        proc = procs.Proc(product.name, argv, rundir, env=product.env(ctx),
                          cwd=rundir)
        try:
            if forward:
                # a CONNECT to the origin, then TLS and GET /tiny
                procs.wait_ready(proc, port, '/tiny', False, ready_timeout,
                                 via=(tlsgen.BENCH_DOMAIN, origin_port))
            else:
                # h2c arms: nginx 1.22 and HAProxy (proto h2) speak only
                # HTTP/2 there; TLS arms are checked over ALPN http/1.1
                procs.wait_ready(proc, port, '/tiny',
                                 tls or arm.mode == 'tunnel', ready_timeout,
                                 h2c=arm.client == 'h2' and not tls)
        except procs.ProcError:
            proc.stop(product.stop_signals, grace=2.0)
            raise
        proxy = None
        if forward:
            proxy = (origin_port, self.tls_paths['mitm_cert']
                     if arm.mode == 'mitm' else self.tls_paths['ca'])
        elif arm.mode == 'tunnel':
            # l4 relays the client's TLS to the origin: verified there
            tls = True
        return Running(product, proc, port, rundir, tls, proxy)

    def stop(self, running, signals=None, grace=5.0):
        if running and running.proc:
            running.proc.stop(signals or running.product.stop_signals,
                              grace)

    def run_probe(self, argv, name, timeout):
        """Runs one weir-probe client; returns its CSV row or None."""
        status, out, err = procs.run(self.cpu0() + argv, timeout,
                                     self.subdir('raw'), name)
        row = parse_csv(out)
        if row is None:
            self.log('  no CSV from weir-probe (status %s): %s'
                     % (status, procs.tail(err or out, 3)))
        return row

    def client_argv(self, arm, running, conns, duration, warmup=0,
                    requests=None):
        extra = list(arm.probe_args) + running.client_args(arm)
        if arm.mode == 'tunnel' and not running.proxy:
            extra += ['--cacert', self.tls_paths['ca']]
        # through a forward proxy, the origin by name (the run's DNS
        # server): Squid 5 matches no IP literal against an origin's
        # iPAddress names; --new-host names one label under it
        host = tlsgen.BENCH_DOMAIN if running.proxy else '127.0.0.1'
        return self.probe.client_argv(
            [running.url(arm.path, host)], conns, duration, warmup,
            requests, arm.method, arm.body, arm.new_conn, extra,
            h2=arm.client == 'h2', streams=arm.streams)

    # ----- one measurement

    def measure(self, suite, arm, running, conns, repeat, turn,
                origin_port, hold=0):
        """One step: warm-up (a separate probe run), then the "before"
        samples, the measured run, the "after" samples. Returns the row
        (also appended to self.rows)."""
        self.seq += 1
        name = '%04d-%s-%s-%s-r%d-c%d%s' % (
            self.seq, suite.name, arm.name, running.product.name, repeat,
            conns, '-hold' if hold else '')
        s = self.s
        warmup = 0 if s.smoke else s.warmup
        # the origin connections the proxy opens for the step count the
        # warm-up's: a burst that opens one per request shows there
        conns0 = origin_stats(origin_port, arm.origin_tls).get('connections')
        if warmup:
            self.run_probe(self.client_argv(arm, running, conns, warmup),
                           name + '-warmup', warmup + 30)
        pid = running.proc.pid if running.proc else None
        cpu0 = procs.cpu_seconds(pid) if pid else None
        row = self.run_probe(self.client_argv(arm, running, conns,
                                              s.duration),
                             name, s.duration + 30)
        cpu1 = procs.cpu_seconds(pid) if pid else None
        rss, hwm = procs.memory_kib(pid) if pid else (None, None)
        conns1 = origin_stats(origin_port, arm.origin_tls).get('connections')
        out = {c: '' for c in COLUMNS}
        out.update(suite=suite.name, arm=arm.name, topology=arm.topology,
                   product=running.product.name, tool='weir-probe',
                   repeat=repeat, turn=turn, conns=conns, hold=hold)
        if row is None:
            out['note'] = 'no result: see raw/%s.log' % name
            self.fail(suite, '%s %s c=%d: weir-probe gave no result'
                      % (arm.name, running.product.name, conns))
        else:
            for c in PROBE_COLUMNS:
                out[c] = row.get(c, '')
            out['meets'] = int(stats.meets(row, suite.p99_ms or s.p99_ms))
            out['probe_cpu_pct'] = _round(probe_cpu_pct(row), 1)
            if pid:
                out['proxy_cpu_s'] = round(cpu1 - cpu0, 3)
                per = stats.per_request(cpu1 - cpu0, row.get('requests'))
                out['cpu_us_per_req'] = _round(per and per * 1e6, 2)
                out['rss_kib'], out['hwm_kib'] = rss, hwm
            if not row.get('requests'):
                out['note'] = 'nothing measured: see raw/%s.log' % name
                self.fail(suite, '%s %s c=%d: no request succeeded'
                          % (arm.name, running.product.name, conns))
            else:
                self.smoke_check(suite, row, '%s %s c=%d' % (
                    arm.name, running.product.name, conns), name)
        if conns0 is not None and conns1 is not None:
            # minus our own /stats connection of the "after" sample
            out['origin_conns'] = conns1 - conns0 - 1
        if running.proc and not running.proc.alive():
            self.fail(suite, '%s died during %s' % (running.product.name,
                                                    name))
        self.rows.append(out)
        self.log('  %-8s %-16s r%d c=%-4d %s' % (
            running.product.name, arm.name, repeat, conns, _brief(out)))
        return out

    # ----- suites

    def run_suite(self, suite):
        self.log('== suite %s: %s' % (suite.name, suite.description))
        kind = {'ramp': self.run_ramp, 'idle': self.run_idle,
                'instr': self.run_instr,
                'crosscheck': self.run_crosscheck,
                'reload': self.run_reload}[suite.kind]
        try:
            kind(suite)
        except procs.ProcError as e:
            self.fail(suite, str(e))

    def arm_runnable(self, suite, arm):
        missing = self.probe.missing(arm.needs)
        if missing:
            self.note(suite, '%s skipped: this weir-probe lacks %s'
                      % (arm.name, ', '.join(missing)))
            return False
        if arm.path.startswith('/ws') and 'origin-ws' not in \
                self.probe.features:
            self.note(suite, '%s skipped: this weir-probe origin has no '
                      '/ws' % arm.name)
            return False
        return True

    def start_all(self, suite, arm, products, origin_port):
        running = []
        for p in products:
            d = self.subdir(suite.name, arm.name, p.name)
            try:
                running.append(self.start(p, arm, origin_port, d,
                                          wrapper=self.cpu1()))
            except procs.ProcError as e:
                self.fail(suite, '%s %s did not start: %s'
                          % (arm.name, p.name, e))
        return running

    def settle(self, running, quiet=0.05, window=0.2, limit=10.0):
        """Waits until the products sharing the proxy's core are idle
        (together under quiet of a core over window seconds; at most
        limit seconds) before a turn: a slow one (mitmproxy) may still be
        working off the previous turn's connections, and its CPU would
        be taken from the next product's. Not in a smoke run."""
        if self.s.smoke:
            return
        pids = [run.proc.pid for run in running if run.proc]
        end = time.monotonic() + limit
        while pids and time.monotonic() < end:
            t0 = sum(procs.cpu_seconds(p) for p in pids)
            time.sleep(window)
            if sum(procs.cpu_seconds(p) for p in pids) - t0 < quiet * window:
                return

    def start_dns(self, suite):
        """The run's DNS server (benchlib/dnsd.py) on CPU 0: on port 53
        when it is free (Squid asks no other port), else on a free one.
        Returns its Proc; self.dns_port is its port."""
        dnsd = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'dnsd.py')
        d = self.subdir(suite.name)
        for port in (53, 0):
            p = procs.Proc('dnsd', self.cpu0() + [
                sys.executable, '-I', dnsd, tlsgen.BENCH_DOMAIN, str(port)],
                d)
            try:
                m = p.wait_line(r'listening on 127\.0\.0\.1:(\d+)', 10)
            except procs.ProcError:
                p.stop()
                continue
            self.dns_port = int(m.group(1))
            if self.dns_port != 53:
                self.note(suite, 'the DNS server is on port %d, not 53: '
                          'Squid cannot resolve the mitm-newhost names'
                          % self.dns_port)
            return p
        raise procs.ProcError('the DNS server did not start: see %s/dnsd.err'
                              % d)

    def run_ramp(self, suite):
        """All products up at once; for each repeat and each step, each
        product takes its turn in the order rotated by the repeat."""
        dns = self.start_dns(suite) if suite.options.get('dns') else None
        try:
            self.ramp_arms(suite)
        finally:
            if dns:
                dns.stop()

    def ramp_arms(self, suite):
        origin, origin_port = self.start_origin(
            suite, tls=suite.options.get('origin_tls', False))
        try:
            for arm in suite.arms:
                if not self.arm_runnable(suite, arm):
                    continue
                products = self.suite_products(suite, arm)
                running = self.start_all(suite, arm, products, origin_port)
                try:
                    for r in range(self.s.repeat):
                        for c in self.steps(suite):
                            for turn, run in enumerate(
                                    stats.rotate(running, r)):
                                self.settle(running)
                                self.measure(suite, arm, run, c, r, turn,
                                             origin_port)
                finally:
                    for run in running:
                        self.stop(run)
        finally:
            origin.stop()

    def run_idle(self, suite):
        """Per repeat and product (rotated): a fresh proxy, a step with no
        idle connections, then `weir-probe hold` opens N idle ones and
        the same step runs again; RSS from the end of each step."""
        hold_n = self.s.hold or suite.options.get('hold', 10000)
        # HTTP/2 arms hold h2c connections with h2c.py, not weir-probe
        h2 = all(a.client == 'h2' for a in suite.arms)
        if not h2 and 'hold' not in self.probe.features:
            self.note(suite, 'skipped: this weir-probe has no hold command')
            return
        active = max(self.steps(suite)) + 50
        origin, origin_port = self.start_origin(suite)
        try:
            for arm in suite.arms:
                if not self.arm_runnable(suite, arm):
                    continue
                products = self.suite_products(suite, arm)
                holds = {}
                for p in products:
                    cap = p.max_connections(self.conns, self.nofile)
                    holds[p.name] = min(hold_n, cap - active)
                    if holds[p.name] < hold_n:
                        self.note(suite, '%s accepts at most %d connections '
                                  '(RLIMIT_NOFILE %d): it holds %d idle ones '
                                  'instead of %d' % (p.name, cap, self.nofile,
                                                     holds[p.name], hold_n))
                for r in range(self.s.repeat):
                    for turn, p in enumerate(stats.rotate(products, r)):
                        self.idle_turn(suite, arm, p, r, turn, origin_port,
                                       holds[p.name])
        finally:
            origin.stop()

    def idle_turn(self, suite, arm, product, r, turn, origin_port, hold_n):
        d = self.subdir(suite.name, arm.name, '%s-r%d' % (product.name, r))
        try:
            run = self.start(product, arm, origin_port, d,
                             wrapper=self.cpu1())
        except procs.ProcError as e:
            self.fail(suite, '%s did not start: %s' % (product.name, e))
            return
        hold = None
        try:
            for c in self.steps(suite):
                self.measure(suite, arm, run, c, r, turn, origin_port)
            hold, idle = self.probe.hold(run.url(arm.path), hold_n, d,
                                         prefix=self.cpu0(),
                                         timeout=60 + hold_n / 200,
                                         h2=arm.client == 'h2')
            if idle < hold_n:
                self.note(suite, '%s: only %d of %d idle connections open'
                          % (product.name, idle, hold_n))
                if self.s.smoke and idle == 0:
                    # the suite measured nothing it is for: the holder
                    # or the product is broken
                    self.fail(suite, '%s: no idle connection held'
                              % product.name)
            for c in self.steps(suite):
                self.measure(suite, arm, run, c, r, turn, origin_port,
                             hold=idle)
        except procs.ProcError as e:
            self.fail(suite, '%s: %s' % (product.name, e))
        finally:
            if hold:
                hold.stop((signal.SIGTERM,), grace=5.0)
            self.stop(run)

    def run_instr(self, suite):
        """Instructions per request under callgrind: for each arm and
        product, two runs of N1 and N2 requests; (Ir2 - Ir1) / (N2 - N1)
        cancels start-up and shutdown."""
        if which('valgrind') is None:
            self.note(suite, 'skipped: valgrind not found (bench/deps)')
            return
        n1, n2 = (50, 250) if self.s.smoke else self.s.instr_n
        warm = 10 if self.s.smoke else self.s.instr_warmup
        origin, origin_port = self.start_origin(suite)
        try:
            for arm in suite.arms:
                for p in self.suite_products(suite, arm):
                    if not p.proxy:
                        continue
                    for n in (n1, n2):
                        self.instr_run(suite, arm, p, n, warm, origin_port)
        finally:
            origin.stop()

    def instr_run(self, suite, arm, product, n, warm, origin_port):
        d = self.subdir(suite.name, arm.name, '%s-n%d' % (product.name, n))
        cg = os.path.join(d, 'callgrind.out')
        wrapper = ['valgrind', '--tool=callgrind',
                   '--callgrind-out-file=' + cg]
        out = {c: '' for c in COLUMNS}
        out.update(suite=suite.name, arm=arm.name, topology=arm.topology,
                   product=product.name, tool='callgrind', repeat=0,
                   turn=0, conns=4, hold=0, instr_n=n)
        try:
            run = self.start(product, arm, origin_port, d, single=True,
                             wrapper=wrapper, ready_timeout=60.0)
        except procs.ProcError as e:
            self.fail(suite, '%s %s under callgrind did not start: %s'
                      % (arm.name, product.name, e))
            return
        try:
            tag = '%s-%s-%s-n%d' % (suite.name, arm.name, product.name, n)
            self.run_probe(self.client_argv(arm, run, 4, 120,
                                            requests=warm),
                           tag + '-warmup', 150)
            row = self.run_probe(self.client_argv(arm, run, 4, 300,
                                                  requests=n),
                                 tag, 330)
        finally:
            self.stop(run, product.instr_stop_signals, grace=30.0)
        ir = callgrind_ir(cg)
        if row:
            for c in PROBE_COLUMNS:
                out[c] = row.get(c, '')
        out['instr_ir'] = ir if ir is not None else ''
        if ir is None or not row or not row.get('requests'):
            out['note'] = 'no result'
            self.fail(suite, '%s %s n=%d: no instruction count'
                      % (arm.name, product.name, n))
        else:
            self.smoke_check(suite, row, '%s %s n=%d' % (
                arm.name, product.name, n), tag)
        self.rows.append(out)
        self.log('  %-8s %-16s n=%-6d Ir %s, %s requests, %s errors'
                 % (product.name, arm.name, n, ir,
                    out['requests'], out['errors']))

    def run_crosscheck(self, suite):
        """Each arm on the direct path, one after the other."""
        for arm in suite.arms:
            if self.arm_runnable(suite, arm):
                self.crosscheck_arm(suite, arm)

    def crosscheck_arm(self, suite, arm):
        """The direct arm with weir-probe, wrk -t1 and h2load --h1 -t1 in
        turns: same concurrency, same (whole-second) duration. On an
        HTTP/2 arm: weir-probe --h2 -m M and h2load -t1 -m M (h2c with
        prior knowledge, both; on a TLS arm ALPN h2 to a TLS origin),
        wrk being HTTP/1 only."""
        tools = ['weir-probe']
        peers = ('wrk', 'h2load')
        if arm.client == 'h2':
            peers = ('h2load',)
            self.note(suite, '%s: wrk speaks HTTP/1 only: its ratio is '
                      'n/a' % arm.name)
        for t in peers:
            if which(t):
                tools.append(t)
            else:
                self.note(suite, '%s not found: its ratio is n/a' % t)
        duration = max(1, int(round(self.s.duration)))
        warmup = 0 if self.s.smoke else self.s.warmup
        origin, origin_port = self.start_origin(suite, alone=True,
                                                tls=arm.client_tls)
        try:
            direct = Running(None, None, origin_port, None, arm.client_tls)
            url = direct.url(arm.path)
            for r in range(self.s.repeat):
                for c in self.steps(suite):
                    if warmup:
                        self.run_probe(self.cross_probe_argv(
                            arm, url, c, warmup), 'crosscheck-warmup',
                            warmup + 30)
                    for turn, t in enumerate(stats.rotate(tools, r)):
                        self.cross_one(suite, arm, t, url, origin_port, c,
                                       duration, r, turn)
        finally:
            origin.stop()

    def cross_one(self, suite, arm, tool, url, origin_port, c, duration, r,
                  turn):
        self.seq += 1
        name = '%04d-%s-%s-%s-r%d-c%d' % (self.seq, suite.name, arm.name,
                                          tool, r, c)
        out = {col: '' for col in COLUMNS}
        out.update(suite=suite.name, arm=arm.name, topology=arm.topology,
                   product='direct', tool=tool, repeat=r, turn=turn,
                   conns=c, hold=0, duration_s=duration)
        # the origin's own count of the requests: a tool that miscounts
        # (or whose figure includes its warm-up) shows as a ratio off 1
        reqs0 = origin_stats(origin_port, arm.client_tls).get('requests')
        if tool == 'weir-probe':
            row = self.run_probe(self.cross_probe_argv(arm, url, c,
                                                       duration),
                                 name, duration + 30)
            if row:
                for col in PROBE_COLUMNS:
                    out[col] = row.get(col, '')
                out['probe_cpu_pct'] = _round(probe_cpu_pct(row), 1)
        else:
            if tool == 'wrk':
                argv = ['wrk', '-t1', '-c%d' % c, '-d%ds' % duration, url]
                parse = parse_wrk
            else:
                argv = h2load_argv(arm, url, c, duration)
                parse = parse_h2load
            _, text, err = procs.run(self.cpu0() + argv, duration + 30,
                                     self.subdir('raw'), name)
            row = parse(text + err)
            if row:
                out.update((k, v) for k, v in row.items() if v is not None)
        reqs1 = origin_stats(origin_port, arm.client_tls).get('requests')
        if reqs0 is not None and reqs1 is not None:
            # minus the "after" /stats request itself
            out['origin_reqs'] = reqs1 - reqs0 - 1
        if not row or not row.get('rps'):
            out['note'] = 'no result: see raw/%s.log' % name
            self.fail(suite, '%s c=%d gave no result' % (tool, c))
        else:
            self.smoke_check(suite, row, '%s c=%d' % (tool, c), name)
        self.rows.append(out)
        self.log('  %-10s r%d c=%-4d %s req/s' % (tool, r, c, out['rps']))

    def cross_probe_argv(self, arm, url, c, duration):
        return self.probe.client_argv([url], c, duration,
                                      h2=arm.client == 'h2',
                                      streams=arm.streams)

    def run_reload(self, suite):
        """Issue 13: per arm, repeat and product (order rotated by the
        repeat), a fresh proxy with the suite's workers; wrk (or
        weir-probe) loads it for the duration while its master gets the
        reload signal N times, evenly spaced, each time waiting (a
        bounded poll) until the master has started new workers."""
        opt = suite.options
        if self.s.smoke:
            duration = opt['smoke_duration']
            reloads = self.s.reloads or opt['smoke_reloads']
        else:
            duration = self.s.duration if self.s.duration_given else \
                opt['duration']
            reloads = self.s.reloads or opt['reloads']
        # wrk's -d takes whole seconds
        duration = max(1, int(round(duration)))
        h1tool = 'wrk' if which('wrk') else 'weir-probe'
        if h1tool != 'wrk':
            self.note(suite, 'wrk not found (bench/deps): weir-probe '
                      'client instead (it also reconnects and does not '
                      'retry a failed request)')
        origin, origin_port = self.start_origin(suite)
        try:
            for arm in suite.arms:
                # HTTP/2: weir-probe --h2 (wrk speaks HTTP/1 only; h2load
                # cannot count the refused streams apart)
                tool = 'weir-probe' if arm.client == 'h2' else h1tool
                if not self.arm_runnable(suite, arm):
                    continue
                products = []
                for p in self.suite_products(suite, arm):
                    if p.reload_signal is None:
                        self.note(suite, '%s %s skipped: %s'
                                  % (arm.name, p.name, p.reload_skip))
                    else:
                        products.append(p)
                for r in range(self.s.repeat):
                    for turn, p in enumerate(stats.rotate(products, r)):
                        self.reload_turn(suite, arm, p, r, turn,
                                         origin_port, tool, duration,
                                         reloads)
        finally:
            origin.stop()

    def reload_client(self, suite, arm, run, tool, conns, duration, name):
        """Starts the load of a reload turn in the background."""
        threads = suite.options.get('threads', 2)
        if tool == 'wrk':
            argv = ['wrk', '-t%d' % threads, '-c%d' % conns,
                    '-d%ds' % duration, run.url(arm.path)]
        else:
            argv = self.client_argv(arm, run, conns, duration)
        return procs.Proc(name, self.cpu0() + argv, self.subdir('raw'))

    def reload_turn(self, suite, arm, product, r, turn, origin_port, tool,
                    duration, reloads):
        self.seq += 1
        name = '%04d-%s-%s-%s-r%d' % (self.seq, suite.name, arm.name,
                                      product.name, r)
        workers = suite.options.get('workers', 2)
        conns = suite.concurrency[0]
        what = '%s %s r%d' % (arm.name, product.name, r)
        out = {c: '' for c in COLUMNS}
        out.update(suite=suite.name, arm=arm.name, topology=arm.topology,
                   product=product.name, tool=tool, repeat=r, turn=turn,
                   conns=conns, hold=0, duration_s=duration)
        d = self.subdir(suite.name, arm.name, '%s-r%d' % (product.name, r))
        try:
            run = self.start(product, arm, origin_port, d,
                             wrapper=self.cpu1(), workers=workers,
                             reload=True)
        except procs.ProcError as e:
            self.fail(suite, '%s did not start: %s' % (what, e))
            return
        client = None
        nproc = product.worker_processes(workers)
        try:
            pid = run.proc.pid
            # every worker up before the load starts
            if procs.wait_new_children(pid, (), nproc, 10.0) is None:
                raise procs.ProcError('%s: %d worker process(es) did not '
                                      'start' % (what, nproc))
            client = self.reload_client(suite, arm, run, tool, conns,
                                        duration, name)
            done, took = self.send_reloads(suite, run, client,
                                           duration, reloads, nproc, what)
            try:
                client.popen.wait(duration + 30)
            except subprocess.TimeoutExpired:
                self.fail(suite, '%s: %s still running after %d s'
                          % (what, tool, duration + 30))
            text = client.output()
            if not client.alive():
                client.keep_log(os.path.join(self.subdir('raw'),
                                             name + '.log'))
            row = parse_wrk(text) if tool == 'wrk' else parse_csv(text)
            out['reloads'] = done
            out['reload_max_s'] = _round(max(took, default=None), 3)
            if row is None:
                out['note'] = 'no result: see raw/%s.log' % name
                self.fail(suite, '%s: %s gave no result' % (what, tool))
            else:
                for c in PROBE_COLUMNS + ('status_non2xx',):
                    if row.get(c) is not None:
                        out[c] = row[c]
                self.reload_check(suite, product.name, row, what, name)
            if done < reloads:
                self.note(suite, '%s: %d of %d reloads done in %d s'
                          % (what, done, reloads, duration))
            if not run.proc.alive():
                self.fail(suite, '%s died during %s' % (product.name,
                                                        name))
            # before the stop (HAProxy's master logs an alert when its
            # worker is terminated): a worker that crashed or did not
            # start on a reload shows here, its master having replaced it
            self.reload_alerts(suite, product, os.path.join(
                d, product.error_log), what)
        except procs.ProcError as e:
            self.fail(suite, str(e))
        finally:
            if client:
                client.stop((signal.SIGTERM,), grace=2.0)
            self.stop(run)
        self.rows.append(out)
        errors = out['errors']
        if out.get('err_refused') and errors != '':
            # HTTP/2: refused streams (retried by a client) apart
            errors = '%s (+%s refused)' % (errors - out['err_refused'],
                                           out['err_refused'])
        self.log('  %-8s %-16s r%d %s requests, %s errors, %s reloads '
                 '(slowest %s s)' % (product.name, arm.name, r,
                                     out['requests'], errors,
                                     out['reloads'], out['reload_max_s']))

    def reload_check(self, suite, product, row, what, name):
        """A reload turn's result: nothing answered fails any run; in a
        smoke run weir's errors fail it too (issue 13: zero), while the
        other products' errors stay figures (nginx loses requests on a
        reload by design)."""
        if not row.get('requests'):
            self.fail(suite, '%s: no request succeeded' % what)
        elif product == 'weir':
            self.smoke_check(suite, stats.without_refused(row), what, name)

    def reload_alerts(self, suite, product, path, what):
        bad = log_alerts(path)
        if not bad:
            return
        text = '%s: %d [alert]/[emerg]/[crit] line(s) in %s: %s' % (
            what, len(bad), os.path.relpath(path, self.rundir), bad[0])
        if self.s.smoke and product.name == 'weir':
            self.fail(suite, text)
        else:
            self.note(suite, text)

    def send_reloads(self, suite, run, client, duration, n, workers, what):
        """Sends the product's reload signal to its master (the master
        alone: the workers must not see it) n times at duration / (n + 1)
        intervals from now, while the client runs; after each, polls
        until the master has started workers new worker processes. Stops
        early when a reload does not take, the client is done, or the
        next reload would come in the last half interval. Returns
        (reloads done, [seconds each took to take])."""
        interval = duration / float(n + 1)
        t0 = time.monotonic()
        took = []
        for i in range(1, n + 1):
            at = t0 + i * interval
            # pacing between reloads, not a readiness wait
            wait = at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if time.monotonic() > t0 + duration - interval / 2 or \
                    not client.alive():
                break
            pid = run.proc.pid
            old = procs.children(pid)
            try:
                os.kill(pid, run.product.reload_signal)
            except ProcessLookupError:
                break
            t = procs.wait_new_children(pid, old, workers, 10.0)
            if t is None:
                self.fail(suite, '%s: reload %d did not take (no %d new '
                          'worker process(es) after 10 s)'
                          % (what, i, workers))
                break
            took.append(t)
        return len(took), took


def h2load_argv(arm, url, conns, duration):
    """h2load, one thread, for the crosscheck: --h1 on an HTTP/1 arm;
    on an HTTP/2 one (h2c prior knowledge for http://) -m streams."""
    argv = ['h2load', '-t1', '-c%d' % conns]
    if arm.client == 'h2':
        argv.append('-m%d' % arm.streams)
    else:
        argv.insert(1, '--h1')
    return argv + ['-D%d' % duration, url]


def log_alerts(path):
    """The lines of an error log at [alert], [emerg] or [crit]."""
    try:
        with open(path, errors='replace') as f:
            return [l.rstrip() for l in f
                    if re.search(r'\[(alert|emerg|crit)\]', l, re.I)]
    except OSError:
        return []


def callgrind_ir(path):
    """Ir from a callgrind out file's summary: (or totals:) line."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    for key in ('summary', 'totals'):
        m = re.search(r'^%s:\s+(\d+)' % key, text, re.M)
        if m:
            return int(m.group(1))
    return None


def _round(x, nd):
    return '' if x is None else round(x, nd)


def _brief(row):
    if row.get('rps') in ('', None):
        return row.get('note', '')
    text = '%8.0f req/s  p99 %6.2f ms  err %s' % (
        row['rps'], (row['p99_us'] or 0) / 1000.0, row['errors'])
    if row.get('cpu_us_per_req') not in ('', None):
        text += '  cpu %5.1f us/req' % row['cpu_us_per_req']
    if row.get('origin_conns') not in ('', None):
        text += '  origin conns %s' % row['origin_conns']
    return text
