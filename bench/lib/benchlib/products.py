"""Who is measured: weir, the peers (nginx, HAProxy, Caddy; for the
MITM arms Squid with ssl_bump and mitmproxy's mitmdump), and the two
ceilings (direct: the client straight to the origin; l4: HAProxy in TCP
mode). A product renders its configuration from bench/peers/ and says
how it is started, stopped and run single-process under callgrind.

Adding a product: a Product subclass here with its template in
bench/peers/, and its name in PRODUCTS (and in the suites' product
lists in arms.py where it applies).
"""

import os
import pwd
import shutil
import signal
import subprocess

from . import probe as probemod
from . import procs
from . import template

PEERS_DIR = os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))), 'peers')


class Product:
    name = ''
    binary = ''             # the executable: a name on PATH or a path
    template = ''           # file in bench/peers/
    conf_name = ''          # the rendered file's name in the run dir
    stop_signals = (signal.SIGTERM,)
    instr_stop_signals = (signal.SIGQUIT, signal.SIGTERM)
    proxy = True            # False: no process of its own (direct)
    # the reload suite: the signal that makes the master start new
    # workers on a re-read configuration (the old ones drain and exit);
    # None: the product reloads otherwise, and reload_skip says how
    reload_signal = None
    reload_skip = 'no master process to reload'
    error_log = 'error.log'     # in the run dir: [alert] lines are read

    def path(self):
        if os.sep in self.binary:
            return self.binary if os.access(self.binary, os.X_OK) else None
        return probemod.which(self.binary)

    def available(self):
        """None when it can run here, else why not."""
        if self.path() is None:
            return '%s not found (%s): install it with bench/deps' % (
                self.name, self.binary)
        return None

    # speaks HTTP/2 to origins (the issue 15 arms)
    origin_h2 = False
    # HTTP/1.1 over TLS to origins (the MITM suites' reverse twins)
    origin_tls_h1 = False
    # the arm modes it runs: reverse (a reverse proxy), mitm (a forward
    # proxy decrypting CONNECT), tunnel (CONNECT relayed)
    modes = ('reverse',)

    def supports(self, arm):
        """None when the product can run the arm, else why not."""
        if arm.mode not in self.modes:
            return 'n/a: %s runs no %s arm' % (self.name, arm.mode)
        if arm.mode != 'reverse':
            return None
        if arm.client not in ('h1', 'h2') or arm.origin not in ('h1', 'h2') \
                or (arm.origin_tls and arm.origin != 'h2'
                    and not self.origin_tls_h1):
            return 'not yet: %s' % arm.topology
        if arm.origin == 'h2' and not self.origin_h2:
            return 'n/a: %s speaks no HTTP/2 to origins' % self.name
        return None

    def forward(self, arm):
        """True when the client talks to the product as to a forward
        proxy (--proxy): the MITM and tunnel arms, but for the l4
        ceiling, which the client reaches as the origin itself."""
        return arm.mode != 'reverse'

    def prepare(self, rundir, ctx):
        """Anything the product needs in its run folder before it
        starts."""

    def values(self, ctx):
        """The template's values: ctx (port, origin_port, tls, h2 (the
        client speaks HTTP/2), cert, key, pem, workers, conns, nofile,
        rundir, single) plus our own."""
        return dict(ctx)

    def template_for(self, ctx):
        return self.template

    def render(self, ctx):
        with open(os.path.join(PEERS_DIR, self.template_for(ctx))) as f:
            return template.render(f.read(), self.values(ctx))

    def argv(self, conf, ctx):
        raise NotImplementedError

    def max_connections(self, conns, nofile):
        """How many client connections the rendered configuration
        accepts at most."""
        return conns

    def worker_processes(self, workers):
        """How many worker processes its master runs for workers (what
        a reload replaces)."""
        return workers

    def env(self, ctx):
        return {}


class Weir(Product):
    name = 'weir'
    origin_h2 = True
    origin_tls_h1 = True
    modes = ('reverse', 'mitm', 'tunnel')
    template = 'weir.conf'
    conf_name = 'weir.conf'
    reload_signal = signal.SIGHUP

    def template_for(self, ctx):
        # the MITM and tunnel arms: a forward proxy
        return 'weir.conf' if ctx.get('mode', 'reverse') == 'reverse' \
            else 'weir-forward.conf'

    def __init__(self, binary):
        self.binary = os.path.abspath(binary)
        self._modules = None

    def modules(self):
        """The module names of `weir -V`'s modules: line (cached)."""
        if self._modules is None:
            _, out, err = procs.run([self.binary, '-V'], 10)
            self._modules = set()
            for line in (out + err).splitlines():
                if line.startswith('modules:'):
                    self._modules = set(line.split()[1:])
        return self._modules

    def supports(self, arm):
        why = Product.supports(self, arm)
        if why is None and arm.client == 'h2' and \
                'weir_http_v2_module' not in self.modules():
            why = 'n/a: this weir is built without the HTTP/2 module'
        if why is None and arm.mode == 'mitm' and \
                'weir_http_mitm_module' not in self.modules():
            why = 'n/a: this weir is built without the mitm module'
        return why

    def argv(self, conf, ctx):
        # master_process off (callgrind) is in the configuration
        return [self.path(), '-p', ctx['rundir'] + '/', '-c', conf,
                '-e', os.path.join(ctx['rundir'], 'startup.log')]


class Nginx(Product):
    name = 'nginx'
    binary = 'nginx'
    template = 'nginx.conf'
    conf_name = 'nginx.conf'
    reload_signal = signal.SIGHUP

    _configure = None

    def configure_args(self):
        """`nginx -V`'s configure arguments (cached; '' when it cannot
        run)."""
        if self._configure is None:
            path = self.path()
            _, out, err = procs.run([path, '-V'], 10) if path else \
                (None, '', '')
            self._configure = out + err
        return self._configure

    def supports(self, arm):
        if arm.grpc and arm.origin == 'h2' and not arm.origin_tls:
            # HTTP/2 to origins only for gRPC: grpc_pass (h2c)
            why = None
        else:
            why = Product.supports(self, arm)
        if why is None and arm.client == 'h2' and self.path() and \
                '--with-http_v2_module' not in self.configure_args():
            why = 'n/a: this nginx is built without http_v2_module'
        return why

    def argv(self, conf, ctx):
        g = 'daemon off;' + (' master_process off;' if ctx['single'] else '')
        for d in ('body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'):
            os.makedirs(os.path.join(ctx['rundir'], 'nginx-tmp', d),
                        exist_ok=True)
        return [self.path(), '-p', ctx['rundir'] + '/', '-c', conf,
                '-e', os.path.join(ctx['rundir'], 'startup.log'), '-g', g]


class HAProxy(Product):
    name = 'haproxy'
    origin_h2 = True
    origin_tls_h1 = True
    binary = 'haproxy'
    template = 'haproxy.cfg'
    conf_name = 'haproxy.cfg'
    l4 = False
    # SIGUSR1: soft stop (the process exits when its connections are done)
    instr_stop_signals = (signal.SIGUSR1, signal.SIGTERM)
    # the reload suite runs it in master-worker mode (-W): SIGUSR2
    # re-executes the master, which starts a new worker and tells the
    # old one to finish (soft stop)
    reload_signal = signal.SIGUSR2
    error_log = 'haproxy.err'   # no log section: alerts go to stderr

    def values(self, ctx):
        v = dict(ctx)
        v['l4'] = self.l4
        v['maxconn'] = self.maxconn(ctx)
        return v

    @staticmethod
    def maxconn(ctx):
        return min(ctx['conns'], (ctx['nofile'] - 100) // 2)

    def max_connections(self, conns, nofile):
        return self.maxconn({'conns': conns, 'nofile': nofile})

    def worker_processes(self, workers):
        # one worker process of nbthread threads
        return 1

    def argv(self, conf, ctx):
        return [self.path()] + (['-W'] if ctx.get('reload') else []) + \
            ['-db', '-f', conf]


class HAProxyL4(HAProxy):
    """The L4 ceiling: HAProxy in mode tcp; TLS terminated by the bind
    on TLS arms, bytes relayed."""
    name = 'l4'
    l4 = True
    origin_h2 = False
    origin_tls_h1 = False
    # connect-tunnel: the client's TLS relayed to the origin, no CONNECT
    modes = ('reverse', 'tunnel')

    def forward(self, arm):
        return False


class Caddy(Product):
    name = 'caddy'
    origin_h2 = True
    binary = 'caddy'
    template = 'Caddyfile'
    conf_name = 'Caddyfile'
    stop_signals = (signal.SIGINT, signal.SIGTERM)
    reload_skip = ('not comparable: Caddy reloads in-process through its '
                   'admin API (caddy reload; off here), with no worker '
                   'processes to replace')

    def argv(self, conf, ctx):
        return [self.path(), 'run', '--config', conf, '--adapter',
                'caddyfile']

    def env(self, ctx):
        d = ctx['rundir']
        return {'XDG_DATA_HOME': os.path.join(d, 'xdg-data'),
                'XDG_CONFIG_HOME': os.path.join(d, 'xdg-config'),
                'HOME': d, 'GOMAXPROCS': str(ctx['workers'])}


class Direct(Product):
    """The ceiling: the client straight to the origin, no proxy."""
    name = 'direct'
    proxy = False

    def available(self):
        return None

    origin_h2 = True
    origin_tls_h1 = True

    def supports(self, arm):
        # the probe origin speaks h2c too: direct runs the h2c arms
        if arm.client_tls != arm.origin_tls:
            return 'n/a: the origin speaks plain HTTP, the arm TLS'
        if arm.origin == 'h2' and arm.client != 'h2':
            return "n/a: the client does not speak the origin's HTTP/2"
        return Product.supports(self, arm)


class Squid(Product):
    """Debian's squid-openssl: ssl_bump for the MITM arms (HTTP/1.1
    only: Squid 5 speaks no HTTP/2), CONNECT spliced for the tunnel."""
    name = 'squid'
    binary = 'squid'
    template = 'squid.conf'
    conf_name = 'squid.conf'
    modes = ('mitm', 'tunnel')
    error_log = 'cache.log'
    certgen = '/usr/lib/squid/security_file_certgen'

    def supports(self, arm):
        why = Product.supports(self, arm)
        if why is None and arm.client != 'h1':
            why = 'n/a: Squid 5 speaks no HTTP/2'
        return why

    def values(self, ctx):
        v = dict(ctx)
        v['mitm_cert'] = os.path.join(ctx['rundir'], 'mitm-ca.crt')
        v['mitm_key'] = os.path.join(ctx['rundir'], 'mitm-ca.key')
        return v

    def prepare(self, rundir, ctx):
        """Its copy of the interception CA, the certificate database of
        security_file_certgen, the folder owned by the proxy user (Squid
        started as root runs as it)."""
        for k in ('mitm_cert', 'mitm_key'):
            shutil.copyfile(ctx[k], os.path.join(rundir,
                                                 os.path.basename(ctx[k])))
        db = os.path.join(rundir, 'ssl_db')
        if os.path.exists(db):
            shutil.rmtree(db)
        subprocess.run([self.certgen, '-c', '-s', db, '-M', '64MB'],
                       capture_output=True, check=False)
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam('proxy')
            except KeyError:
                return
            for d, _, files in os.walk(rundir):
                os.chown(d, pw.pw_uid, pw.pw_gid)
                for f in files:
                    os.chown(os.path.join(d, f), pw.pw_uid, pw.pw_gid)

    def argv(self, conf, ctx):
        return [self.path(), '-N', '-f', conf]


class Mitmproxy(Product):
    """mitmproxy's mitmdump (Debian 8.1): decrypting with the run's
    interception CA (its confdir), the origin verified against the
    run's CA; the tunnel arm with every host ignored (relayed)."""
    name = 'mitmproxy'
    binary = 'mitmdump'
    modes = ('mitm', 'tunnel')
    stop_signals = (signal.SIGINT, signal.SIGTERM)
    error_log = 'mitmproxy.err'

    def render(self, ctx):
        return '# mitmdump takes its settings on the command line\n'

    conf_name = 'mitmproxy.txt'

    def argv(self, conf, ctx):
        argv = [self.path(), '-q', '--listen-host', '127.0.0.1',
                '-p', str(ctx['port']),
                '--set', 'confdir=%s' % ctx['mitm_confdir'],
                '--set', 'ssl_verify_upstream_trusted_ca=%s' % ctx['ca'],
                '-s', os.path.join(PEERS_DIR, 'mitmproxy-addon.py')]
        if ctx['mode'] == 'tunnel':
            argv += ['--ignore-hosts', '.*']
        return argv

    def env(self, ctx):
        return {'HOME': ctx['rundir']}


PRODUCT_NAMES = ('weir', 'nginx', 'haproxy', 'caddy', 'direct', 'l4',
                 'squid', 'mitmproxy')


def make(names, weir_binary):
    """Product objects for the names, in the order given."""
    table = {'weir': lambda: Weir(weir_binary), 'nginx': Nginx,
             'haproxy': HAProxy, 'caddy': Caddy, 'direct': Direct,
             'l4': HAProxyL4, 'squid': Squid, 'mitmproxy': Mitmproxy}
    out = []
    for n in names:
        if n not in table:
            raise KeyError(n)
        out.append(table[n]())
    return out
