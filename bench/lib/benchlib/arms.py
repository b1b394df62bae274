"""What the harness measures, as data: arms, suites and goals.

An arm is one topology: client protocol x origin protocol x TLS on either
side x mode (reverse now; MITM later), plus the request the load
generator sends. Adding an HTTP/2 or HTTP/3 arm is adding an Arm here
(client='h2', ...), teaching the products that support it to render it
(products.py: Product.supports and the templates), and teaching the
client runner to speak it (probe.py: HTTP/2 is weir-probe's --h2 with
-m streams per connection).
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Arm:
    name: str
    client: str = 'h1'          # client protocol: h1, h2 (h3 later)
    client_tls: bool = False    # TLS between the client and the proxy
    origin: str = 'h1'          # origin protocol: h1, h2
    origin_tls: bool = False    # TLS between the proxy and the origin
    # reverse: a reverse proxy; mitm: a forward proxy that decrypts the
    # client's CONNECT (weir-probe --proxy --cacert: the interception
    # CA); tunnel: a forward proxy that relays it untouched
    mode: str = 'reverse'
    path: str = '/tiny'         # what the client asks for
    method: str = 'GET'
    body: int = 0               # request body bytes (POST)
    new_conn: bool = False      # a new connection per request
    probe_args: tuple = ()      # extra weir-probe client options
    needs: tuple = ()           # weir-probe features the arm needs
    streams: int = 1            # h2: streams in flight per connection
    grpc: bool = False          # gRPC calls: nginx can run it (grpc_pass)
    new_host: bool = False      # mitm: weir-probe --new-host

    @property
    def topology(self):
        side = lambda p, tls: p + ('tls' if tls else '')
        t = '%s->%s' % (side(self.client, self.client_tls),
                        side(self.origin, self.origin_tls))
        return t if self.mode == 'reverse' else '%s %s' % (self.mode, t)

    @property
    def label(self):
        what = '%s %s' % (self.method, self.path)
        if self.body:
            what += ' (%d B body)' % self.body
        if self.streams > 1:
            what += ', %d streams per connection' % self.streams
        if self.new_conn:
            what += ', new connection per request'
        if self.new_host:
            what += ' to a host not seen before'
        if self.probe_args:
            what += ', ' + ' '.join(self.probe_args)
        return '%s %s' % (self.topology, what)


@dataclass(frozen=True)
class Goal:
    """One goal of the issue, checked where its suite ran.

    metric: throughput | cpu | rss (weir / peer, same run, median of
    per-repeat ratios), twin_throughput | twin_cpu (weir on arm / weir
    on the arm named by peer, its twin in the same suite), cpu_delta
    (weir's CPU us/request on arm minus on the peer arm: median of the
    per-repeat differences), bound (weir / bound), idle_cost (weir's
    throughput with the idle connections / without), idle_rss (weir's
    RSS per idle connection / peer's), instr (weir's instructions per
    request / peer's), crosscheck (tool / weir-probe throughput),
    reload_errors (weir's failed requests during the reloads, summed
    over the repeats: a count, not a ratio).
    op: '>=' or '<=' threshold, or 'within' (|ratio - 1| <= threshold).
    """
    text: str
    arm: str
    metric: str
    op: str
    threshold: float
    peer: str = 'nginx'
    bound: float = 0.0


@dataclass(frozen=True)
class Suite:
    name: str
    kind: str                   # ramp | idle | instr | crosscheck | reload
    arms: tuple
    description: str
    products: tuple = ('weir', 'nginx', 'haproxy', 'caddy', 'direct', 'l4')
    concurrency: tuple = ()     # fixed steps; () = --concurrency
    goals: tuple = ()
    bound: float = 0.0          # a throughput bound to report against
    p99_ms: float = 0.0         # the objective's p99 bound; 0: --p99
    options: dict = field(default_factory=dict)


TINY = Arm('h1-tiny')
TLS_TINY = Arm('h1tls-tiny', client_tls=True)

SLOW_ORIGIN_BOUND = 128 / 0.015

# HTTP/2 to the proxy, HTTP/1.1 to the origin (issue 14): weir-probe
# --h2 -m 8; the ramp's steps are connections (x 8 streams in flight)
H2_STREAMS = 8
H2_STEPS = (4, 8, 16)


def _h2(name, tls=True, **kw):
    kw.setdefault('streams', H2_STREAMS)
    return Arm(name, client='h2', client_tls=tls, needs=('--h2',), **kw)


H2TLS_TINY = _h2('h2tls-tiny')
H2C_TINY = _h2('h2c-tiny', tls=False)

# HTTP/2 to the origin (issue 15): weir-probe origin speaks h2c on its
# plain listener and ALPN h2 on its TLS one; "origin conns" in the
# report is how many connections the proxy opened to it in a step (its
# warm-up included)
H1_TO_H2C = Arm('h1-to-h2c', origin='h2')
H2C_TO_H2C = _h2('h2c-to-h2c', tls=False, origin='h2')
H2TLS_TO_H2TLS = _h2('h2tls-to-h2tls', origin='h2', origin_tls=True)
H1_TO_H2TLS_64K = Arm('h1-to-h2tls-64k', origin='h2', origin_tls=True,
                      path='/size/65536')
H2TLS_TO_H2TLS_256K = _h2('h2tls-to-h2tls-256k', origin='h2',
                          origin_tls=True, path='/size/262144', streams=1)
# gRPC unary, h2c both sides: a 21-byte POST with the gRPC headers, a
# length-prefixed message back and the trailers (weir-probe origin /grpc)
GRPC_UNARY = _h2('grpc-unary', tls=False, origin='h2',
                 path='/grpc.Bench/Unary', method='POST', body=21,
                 grpc=True,
                 probe_args=('-H', 'content-type: application/grpc',
                             '-H', 'te: trailers'))


# Interception (issue 16): weir-probe --proxy to the forward proxy with
# --cacert the run's interception CA; the origin is the TLS one, verified
# by the proxy against the run's CA. Each MITM arm has its reverse twin:
# weir terminating TLS in front of the same TLS origin.
def _mitm(name, **kw):
    kw.setdefault('mode', 'mitm')
    kw.setdefault('needs', ('--proxy', '--cacert'))
    return Arm(name, client_tls=True, origin_tls=True, **kw)


TWIN_H1 = Arm('h1tls-to-h1tls', client_tls=True, origin_tls=True)
MITM_H1 = _mitm('mitm-h1')
MITM_H2 = _mitm('mitm-h2', client='h2', origin='h2', streams=H2_STREAMS,
                needs=('--h2', '--proxy', '--cacert'))
TWIN_NEWCONN = Arm('h1tls-newconn-to-tls', client_tls=True, origin_tls=True,
                   new_conn=True)
MITM_NEWCONN = _mitm('mitm-newconn', new_conn=True)
MITM_NEWHOST = _mitm('mitm-newhost', new_conn=True, new_host=True,
                     needs=('--proxy', '--cacert', '--new-host'))
CONNECT_TUNNEL = _mitm('connect-tunnel', mode='tunnel')
MITM_OPTIONS = {'origin_tls': True, 'dns': True}
MITM_PRODUCTS = ('weir', 'squid', 'mitmproxy')


def _ge_nginx(arm, what):
    return Goal('%s: weir >= 1.0 x nginx' % what, arm, 'throughput', '>=',
                1.0)


def _ge_haproxy(arm, what):
    return Goal('%s: weir >= 1.0 x HAProxy' % what, arm, 'throughput',
                '>=', 1.0, peer='haproxy')


SUITES = (
    Suite('same', 'ramp', (TINY, TLS_TINY),
          'tiny GET (64 B), H1 -> H1 and H1 TLS -> H1',
          goals=(
              Goal('tiny H1: weir >= 1.15 x nginx', 'h1-tiny', 'throughput',
                   '>=', 1.15),
              Goal('tiny H1: weir >= 1.0 x HAProxy', 'h1-tiny',
                   'throughput', '>=', 1.0, peer='haproxy'),
              Goal('tiny H1 TLS: weir >= 1.15 x nginx', 'h1tls-tiny',
                   'throughput', '>=', 1.15),
              Goal('tiny H1: CPU/request <= 0.85 x nginx', 'h1-tiny', 'cpu',
                   '<=', 0.85),
              Goal('tiny H1 TLS: CPU/request <= 0.85 x nginx', 'h1tls-tiny',
                   'cpu', '<=', 0.85),
              Goal('tiny H1: peak RSS <= nginx (same step)', 'h1-tiny',
                   'rss', '<=', 1.0),
              Goal('tiny H1 TLS: peak RSS <= nginx (same step)',
                   'h1tls-tiny', 'rss', '<=', 1.0),
          )),
    Suite('bodies', 'ramp',
          (Arm('h1tls-64k', client_tls=True, path='/size/65536'),
           Arm('h1tls-256k', client_tls=True, path='/size/262144')),
          '64 KiB and 256 KiB GET over H1 TLS',
          goals=(_ge_nginx('h1tls-64k', '64 KiB over TLS'),
                 _ge_nginx('h1tls-256k', '256 KiB over TLS'))),
    Suite('post', 'ramp',
          (Arm('h1-post64k', path='/echo', method='POST', body=65536),),
          '64 KiB POST, echoed back by the origin',
          goals=(_ge_nginx('h1-post64k', '64 KiB POST'),)),
    Suite('tls-cost', 'ramp',
          (Arm('h1tls-keepalive', client_tls=True),
           Arm('h1tls-newconn', client_tls=True, new_conn=True)),
          'tiny GET over TLS: keep-alive vs a new TLS connection per '
          'request (a full handshake each time)',
          goals=(_ge_nginx('h1tls-newconn', 'new TLS connection per '
                           'request'),)),
    Suite('slow-origin', 'ramp',
          (Arm('h1-delay15', path='/delay/15/tiny'),),
          'the origin answers after 15 ms; 128 clients: the bound is '
          '128 / 0.015 = 8,533 req/s',
          concurrency=(128,), bound=SLOW_ORIGIN_BOUND,
          goals=(Goal('slow origin: weir >= 95% of the 8,533 req/s bound',
                      'h1-delay15', 'bound', '>=', 0.95,
                      bound=SLOW_ORIGIN_BOUND),
                 _ge_nginx('h1-delay15', 'slow origin'))),
    Suite('idle', 'idle', (TINY,),
          'N idle keep-alive connections (--hold, 10,000 by default) held '
          'open by weir-probe hold while 50 clients send tiny GETs; '
          'compared with no idle connections',
          products=('weir', 'nginx', 'haproxy', 'caddy'),
          concurrency=(50,), options={'hold': 10000},
          goals=(Goal('idle: 10,000 idle connections cost weir <= 10% of '
                      'its throughput', 'h1-tiny', 'idle_cost', '>=', 0.90),
                 Goal('idle: weir RSS per idle connection <= nginx',
                      'h1-tiny', 'idle_rss', '<=', 1.0))),
    Suite('slow-consumer', 'ramp',
          (Arm('h1-slowread256k', path='/size/262144',
               probe_args=('--read-pause', '16384:8', '--rcvbuf', '16384'),
               needs=('--read-pause', '--rcvbuf')),),
          '256 KiB GET; the client reads 16 KiB then pauses 8 ms '
          '(16 pauses per response: p99 bound 1 s)',
          p99_ms=1000.0,
          goals=(_ge_nginx('h1-slowread256k', 'slow consumer'),)),
    Suite('early-response', 'ramp',
          (Arm('h1-early', path='/early', method='POST', body=65536),),
          '64 KiB POST that the origin answers after its first 8 KiB',
          goals=(_ge_nginx('h1-early', 'early response'),)),
    Suite('websocket', 'ramp',
          (Arm('h1-ws64', path='/ws', probe_args=('--ws', '64'),
               needs=('--ws',)),),
          'WebSocket echo of 64-byte messages: round trips per second',
          goals=(_ge_nginx('h1-ws64', 'WebSocket echo'),)),
    Suite('h2', 'ramp', (H2TLS_TINY, H2C_TINY),
          'tiny GET (64 B) over HTTP/2, TLS (ALPN h2) and h2c (prior '
          'knowledge), to an HTTP/1.1 origin; 8 streams per connection',
          concurrency=H2_STEPS,
          goals=(
              Goal('tiny H2 TLS: weir >= 1.3 x nginx', 'h2tls-tiny',
                   'throughput', '>=', 1.3),
              Goal('tiny H2 TLS: weir >= 1.05 x HAProxy', 'h2tls-tiny',
                   'throughput', '>=', 1.05, peer='haproxy'),
              Goal('tiny H2 TLS: CPU/request <= 0.75 x nginx',
                   'h2tls-tiny', 'cpu', '<=', 0.75),
          )),
    Suite('h2-bodies', 'ramp',
          (_h2('h2tls-64k', path='/size/65536'),
           _h2('h2tls-256k', path='/size/262144')),
          '64 KiB and 256 KiB GET over HTTP/2 TLS, 8 streams per '
          'connection',
          concurrency=H2_STEPS,
          goals=(_ge_haproxy('h2tls-64k', '64 KiB over H2 TLS'),
                 _ge_haproxy('h2tls-256k', '256 KiB over H2 TLS'))),
    Suite('h2-post', 'ramp',
          (_h2('h2-post64k', tls=False, path='/echo', method='POST',
               body=65536),),
          '64 KiB POST over h2c, 8 streams per connection, echoed back by '
          'the origin',
          concurrency=H2_STEPS,
          goals=(_ge_haproxy('h2-post64k', '64 KiB POST over H2'),)),
    Suite('h2-tls-cost', 'ramp',
          (_h2('h2tls-newconn', streams=1, new_conn=True),),
          'tiny GET over HTTP/2 TLS, a new connection (a full handshake, '
          'the preface and SETTINGS) per request'),
    Suite('h2-idle', 'idle', (H2C_TINY,),
          'N idle HTTP/2 connections (--hold, 10,000 by default; h2c: '
          'preface, SETTINGS and one GET each, held by bench/lib/'
          'benchlib/h2c.py) while 50 h2c clients x 8 streams send tiny '
          'GETs; compared with no idle connections',
          products=('weir', 'nginx', 'haproxy', 'caddy'),
          concurrency=(50,), options={'hold': 10000},
          goals=(Goal('idle H2: 10,000 idle connections cost weir <= 10% '
                      'of its throughput', 'h2c-tiny', 'idle_cost', '>=',
                      0.90),
                 Goal('idle H2: weir RSS per idle connection <= nginx',
                      'h2c-tiny', 'idle_rss', '<=', 1.0))),
    Suite('upstream-h2', 'ramp', (H1_TO_H2C, H2C_TO_H2C, GRPC_UNARY),
          'HTTP/2 to an h2c origin (prior knowledge): H1 clients and h2c '
          'clients (8 streams per connection), tiny GET, and gRPC unary '
          'calls (h2c, 8 streams per connection); how many origin '
          'connections each proxy opens is part of the result',
          products=('weir', 'nginx', 'haproxy', 'caddy', 'direct'),
          concurrency=(16, 64),
          goals=(
              Goal('H1 -> h2c: weir >= 1.1 x HAProxy', 'h1-to-h2c',
                   'throughput', '>=', 1.1, peer='haproxy'),
              Goal('H1 -> h2c: weir >= 3 x Caddy', 'h1-to-h2c',
                   'throughput', '>=', 3.0, peer='caddy'),
              Goal('H1 -> h2c: CPU/request <= 0.9 x HAProxy', 'h1-to-h2c',
                   'cpu', '<=', 0.9, peer='haproxy'),
          )),
    Suite('upstream-h2tls', 'ramp',
          (H2TLS_TO_H2TLS, H1_TO_H2TLS_64K, H2TLS_TO_H2TLS_256K),
          'HTTP/2 over TLS (ALPN h2) to a TLS origin: H2 TLS clients (16 x '
          '8 streams) tiny GET, H1 clients 64 KiB, H2 TLS 256 KiB streamed',
          products=('weir', 'haproxy', 'caddy', 'direct'),
          concurrency=(16,), options={'origin_tls': True},
          goals=(
              Goal('H2 TLS -> H2 TLS: weir >= 1.1 x HAProxy',
                   'h2tls-to-h2tls', 'throughput', '>=', 1.1,
                   peer='haproxy'),
              Goal('H2 TLS -> H2 TLS: weir >= 3 x Caddy', 'h2tls-to-h2tls',
                   'throughput', '>=', 3.0, peer='caddy'),
              Goal('H2 TLS -> H2 TLS: CPU/request <= 0.9 x HAProxy',
                   'h2tls-to-h2tls', 'cpu', '<=', 0.9, peer='haproxy'),
              Goal('256 KiB H2 TLS -> H2 TLS: weir >= 1.0 x HAProxy',
                   'h2tls-to-h2tls-256k', 'throughput', '>=', 1.0,
                   peer='haproxy'),
          )),
    Suite('mitm', 'ramp', (TWIN_H1, MITM_H1),
          'interception, HTTP/1.1: CONNECT once per connection, then '
          'keep-alive tiny GETs decrypted, the origin over TLS and '
          'verified; weir\'s reverse twin (TLS terminated in front of the '
          'same TLS origin) beside it; 32 connections',
          products=MITM_PRODUCTS, concurrency=(32,), options=MITM_OPTIONS,
          goals=(
              Goal('MITM H1: weir >= 0.9 x its reverse twin', 'mitm-h1',
                   'twin_throughput', '>=', 0.9, peer='h1tls-to-h1tls'),
              Goal('MITM H1: CPU/request <= 0.33 x Squid ssl_bump',
                   'mitm-h1', 'cpu', '<=', 0.33, peer='squid'),
              Goal('MITM H1: CPU/request <= 0.02 x mitmproxy', 'mitm-h1',
                   'cpu', '<=', 0.02, peer='mitmproxy'),
          )),
    Suite('mitm-h2', 'ramp', (H2TLS_TO_H2TLS, MITM_H2),
          'interception, HTTP/2 on both legs (ALPN h2 mirrored to the '
          'origin): 16 connections x 8 streams; weir\'s reverse twin '
          'h2tls-to-h2tls beside it',
          products=MITM_PRODUCTS, concurrency=(16,), options=MITM_OPTIONS,
          goals=(
              Goal('MITM H2: weir >= 0.9 x its reverse twin', 'mitm-h2',
                   'twin_throughput', '>=', 0.9, peer='h2tls-to-h2tls'),
              Goal('MITM H2: CPU/request <= 0.02 x mitmproxy', 'mitm-h2',
                   'cpu', '<=', 0.02, peer='mitmproxy'),
          )),
    Suite('mitm-newhost', 'ramp',
          (TWIN_NEWCONN, MITM_NEWCONN, MITM_NEWHOST),
          'interception, a new tunnel per request: to one host (its leaf '
          'cached) and to a host not seen before every time (weir-probe '
          '--new-host, names under bench.test from the run\'s DNS '
          'server: the minting rate); weir\'s own new TLS connection per '
          'request to the same TLS origin beside them; 8 connections',
          products=MITM_PRODUCTS, concurrency=(8,), options=MITM_OPTIONS,
          goals=(
              Goal('new host: <= 0.5 ms more proxy CPU than a cached one',
                   'mitm-newhost', 'cpu_delta', '<=', 500.0,
                   peer='mitm-newconn'),
              Goal('new tunnel to a cached host: CPU <= 2 x weir\'s new TLS '
                   'connection', 'mitm-newconn', 'twin_cpu', '<=', 2.0,
                   peer='h1tls-newconn-to-tls'),
          )),
    Suite('connect-tunnel', 'ramp', (CONNECT_TUNNEL,),
          'CONNECT without decryption: one tunnel per connection, then '
          'keep-alive tiny GETs over TLS end to end (the client verifies '
          'the origin); the l4 ceiling (HAProxy mode tcp) relays the same '
          'TLS bytes without a CONNECT; 32 connections',
          products=('weir', 'l4', 'squid', 'mitmproxy'), concurrency=(32,),
          options=MITM_OPTIONS,
          goals=(Goal('CONNECT tunnel: weir >= 1.0 x HAProxy TCP (l4)',
                      'connect-tunnel', 'throughput', '>=', 1.0,
                      peer='l4'),)),
    Suite('instr', 'instr', (TINY, TLS_TINY, H2TLS_TINY, H1_TO_H2C,
                             H2C_TO_H2C),
          'instructions per request under valgrind --tool=callgrind, '
          '(Ir(N2) - Ir(N1)) / (N2 - N1) at 4 connections (H2: x 8 '
          'streams)',
          products=('weir', 'nginx', 'haproxy'),
          goals=(Goal('tiny H1: instructions/request <= 0.85 x nginx',
                      'h1-tiny', 'instr', '<=', 0.85),
                 Goal('tiny H1 TLS: instructions/request <= 0.85 x nginx',
                      'h1tls-tiny', 'instr', '<=', 0.85),
                 Goal('tiny H2 TLS: instructions/request <= 0.8 x nginx',
                      'h2tls-tiny', 'instr', '<=', 0.8))),
    Suite('crosscheck', 'crosscheck', (TINY,),
          'the generator itself on the direct arm: weir-probe vs wrk -t1 '
          'vs h2load --h1 -t1, same concurrency and duration',
          products=('direct',),
          goals=(Goal('crosscheck: wrk within +-15% of weir-probe',
                      'h1-tiny', 'crosscheck', 'within', 0.15, peer='wrk'),
                 Goal('crosscheck: h2load within +-15% of weir-probe',
                      'h1-tiny', 'crosscheck', 'within', 0.15,
                      peer='h2load'))),
    Suite('crosscheck-h2', 'crosscheck', (H2C_TINY, H2TLS_TINY),
          'the HTTP/2 generator on the direct arm, h2c and TLS (ALPN h2) '
          'to the origin: weir-probe --h2 -m 8 vs h2load -t1 -m 8, same '
          'concurrency and duration',
          products=('direct',), concurrency=H2_STEPS,
          goals=(Goal('crosscheck H2: h2load within +-15% of weir-probe',
                      'h2c-tiny', 'crosscheck', 'within', 0.15,
                      peer='h2load'),
                 Goal('crosscheck H2 TLS: h2load within +-15% of '
                      'weir-probe', 'h2tls-tiny', 'crosscheck', 'within',
                      0.15, peer='h2load'))),
    Suite('reload', 'reload', (TINY, TLS_TINY, H2C_TINY, H2TLS_TINY),
          'issues 13 and 14: wrk -t2 -c32 (it does not retry a failed '
          'request; HTTP/2 arms: weir-probe --h2 -m 8, refused streams '
          'counted apart from the errors) '
          'for 25 s (smoke: 2 s) against a fresh proxy with 2 workers '
          '(whatever --workers says) while its master gets its reload '
          'signal (SIGHUP; HAProxy, in master-worker mode: SIGUSR2) 50 '
          'times (smoke: 3), evenly spaced, each time polling until the '
          'master has started new workers; every failed request counts',
          products=('weir', 'nginx', 'haproxy', 'caddy'),
          concurrency=(32,),
          options={'workers': 2, 'threads': 2, 'duration': 25,
                   'reloads': 50, 'smoke_duration': 2, 'smoke_reloads': 3},
          goals=(Goal('reload H1: weir errors == 0', 'h1-tiny',
                      'reload_errors', '<=', 0),
                 Goal('reload H1 TLS: weir errors == 0', 'h1tls-tiny',
                      'reload_errors', '<=', 0),
                 Goal('reload H2: weir errors (not refused) == 0',
                      'h2c-tiny', 'reload_errors', '<=', 0),
                 Goal('reload H2 TLS: weir errors (not refused) == 0',
                      'h2tls-tiny', 'reload_errors', '<=', 0))),
)

SUITE_NAMES = tuple(s.name for s in SUITES)


def suite(name):
    for s in SUITES:
        if s.name == name:
            return s
    raise KeyError(name)


def select(names):
    """Suites named by a comma-separated list ('all' for all), in the
    order of SUITES; raises KeyError for an unknown name."""
    wanted = [n.strip() for n in names.split(',') if n.strip()]
    if 'all' in wanted:
        return list(SUITES)
    for n in wanted:
        suite(n)
    return [s for s in SUITES if s.name in wanted]
