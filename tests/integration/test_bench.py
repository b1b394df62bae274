"""The benchmark harness' pure parts (bench/lib/benchlib): ramp
selection, medians and ratios, template and configuration rendering,
CSV and report parsing. No process is started: `make test` runs the
harness itself as its own stage (bench/run --smoke)."""

import os
import signal
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'bench', 'lib'))

from benchlib import arms, products, report, stats, template  # noqa: E402
from benchlib.probe import (parse_csv, parse_h2load, parse_stats,  # noqa
                            parse_wrk, probe_cpu_pct)
from benchlib.runner import (COLUMNS, Runner, Settings,  # noqa: E402
                             callgrind_ir, log_alerts)


def step(conns, rps, errors=0, p99_ms=1.0, requests=1000):
    return {'conns': conns, 'rps': rps, 'errors': errors,
            'p99_us': p99_ms * 1000.0, 'requests': requests}


def test_sustainable_is_the_highest_step_meeting_the_objective():
    steps = [step(8, 100), step(16, 180), step(32, 200, p99_ms=60),
             step(64, 210, errors=1)]
    assert stats.sustainable(steps, 50)['conns'] == 16
    assert stats.sustainable(steps, 100)['conns'] == 32
    assert stats.peak(steps)['conns'] == 64


def test_sustainable_none_and_empty_steps():
    assert stats.sustainable([step(8, 100, errors=3)], 50) is None
    assert stats.sustainable([step(8, 0, requests=0)], 50) is None
    assert stats.sustainable([], 50) is None
    assert stats.peak([]) is None


def test_median_and_ratios():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 2, 3]) == 2.5
    assert stats.median([None, 5]) == 5
    assert stats.median([]) is None
    # per-repeat ratios first, then the median: 1.2, 0.5, 1.5
    weir = {0: 120, 1: 50, 2: 150}
    nginx = {0: 100, 1: 100, 2: 100}
    assert stats.ratio_median(weir, nginx) == pytest.approx(1.2)
    assert stats.ratio_median({0: 1}, {0: 0}) is None
    assert stats.ratio_median({}, {0: 1}) is None


def test_rotation_alternates_the_order():
    assert stats.rotate('ABC', 0) == ['A', 'B', 'C']
    assert stats.rotate('ABC', 1) == ['B', 'C', 'A']
    assert stats.rotate('ABC', 4) == ['B', 'C', 'A']
    assert stats.rotate([], 3) == []


def test_goal_checks():
    assert stats.check('>=', 1.2, 1.15)
    assert not stats.check('<=', 0.9, 0.85)
    assert stats.check('within', 0.86, 0.15)
    assert not stats.check('within', 1.2, 0.15)
    assert stats.check('>=', None, 1.0) is None


def test_template_sections_and_variables():
    t = 'listen {{port}}{{#tls}} ssl{{/tls}};{{^tls}} plain{{/tls}} $host'
    assert template.render(t, {'port': 80, 'tls': True}) == \
        'listen 80 ssl; $host'
    assert template.render(t, {'port': 80, 'tls': False}) == \
        'listen 80; plain $host'
    with pytest.raises(KeyError):
        template.render('{{nope}}', {})


def ctx(tls, single=False):
    return {'port': 20200, 'origin_port': 20201, 'tls': tls,
            'cert': '/r/leaf.crt', 'key': '/r/leaf.key', 'pem': '/r/p.pem',
            'workers': 1, 'conns': 16384, 'nofile': 20000, 'rundir': '/r',
            'single': single}


@pytest.mark.parametrize('name', products.PRODUCT_NAMES)
@pytest.mark.parametrize('tls', (False, True))
def test_every_peer_configuration_renders(name, tls):
    p = products.make([name], '/bin/true')[0]
    if not p.proxy or 'reverse' not in p.modes:
        return
    text = p.render(ctx(tls))
    assert '{{' not in text and '}}' not in text
    assert '20200' in text and '20201' in text
    assert ('/r/leaf.crt' in text or '/r/p.pem' in text) == tls


def mitm_ctx(mode):
    c = ctx(False)
    c.update(mode=mode, mitm=mode == 'mitm', ca='/r/ca.crt',
             mitm_cert='/r/mitm-ca.crt', mitm_key='/r/mitm-ca.key',
             mitm_confdir='/r/mitmproxy', dns_port=20202)
    return c


def test_forward_proxies_render_the_mitm_and_tunnel_arms():
    """weir, Squid and mitmproxy as forward proxies: the CONNECT port
    allowed, decryption with the run's interception CA and the origin
    verified against the run's CA on mitm arms, neither on tunnel arms;
    l4 runs the tunnel arm as a plain relay; the reverse-only peers run
    no forward arm."""
    weir, squid, mitm, l4, nginx = products.make(
        ['weir', 'squid', 'mitmproxy', 'l4', 'nginx'], '/bin/true')
    text = weir.render(mitm_ctx('mitm'))
    lines = [x.strip() for x in text.splitlines()]
    for line in ('forward_proxy on;', 'forward_proxy_connect_ports 20201;',
                 'mitm on;', 'mitm_certificate /r/mitm-ca.crt;',
                 'mitm_certificate_key /r/mitm-ca.key;',
                 'proxy_ssl_trusted_certificate /r/ca.crt;',
                 'resolver 127.0.0.1:20202 ipv6=off valid=3600s;',
                 'listen 127.0.0.1:20200 backlog=4096;'):
        assert line in lines, (line, text)
    text = weir.render(mitm_ctx('tunnel'))
    assert 'forward_proxy on;' in text and 'mitm on;' not in text, text
    assert 'proxy_pass' in weir.render(ctx(True))

    text = squid.render(mitm_ctx('mitm'))
    assert '{{' not in text
    lines = text.splitlines()
    assert 'http_port 127.0.0.1:20200 ssl-bump tls-cert=/r/mitm-ca.crt ' \
        'tls-key=/r/mitm-ca.key generate-host-certificates=on ' \
        'dynamic_cert_mem_cache_size=64MB' in lines, text
    assert 'ssl_bump bump all' in lines and \
        'tls_outgoing_options cafile=/r/ca.crt' in lines
    assert 'acl origin_port port 20201' in lines
    text = squid.render(mitm_ctx('tunnel'))
    assert 'http_port 127.0.0.1:20200' in text.splitlines()
    assert 'ssl_bump bump all' not in text and 'tls-cert' not in text

    argv = mitm.argv('/r/mitmproxy.txt', mitm_ctx('mitm'))
    assert '--ignore-hosts' not in argv and 'confdir=/r/mitmproxy' in argv
    assert 'ssl_verify_upstream_trusted_ca=/r/ca.crt' in argv
    assert '--ignore-hosts' in mitm.argv('/r/x', mitm_ctx('tunnel'))

    lines = [x.strip() for x in l4.render(mitm_ctx('tunnel')).splitlines()]
    assert 'mode tcp' in lines and 'server origin 127.0.0.1:20201' in lines
    # /bin/true: a weir without modules
    assert 'mitm module' in weir.supports(arms.MITM_H1)
    for arm in (arms.MITM_H1, arms.MITM_H2, arms.MITM_NEWHOST):
        assert 'n/a' in nginx.supports(arm) and 'n/a' in l4.supports(arm)
    assert squid.supports(arms.MITM_H1) is None
    assert 'HTTP/2' in squid.supports(arms.MITM_H2)
    assert l4.supports(arms.CONNECT_TUNNEL) is None
    assert not l4.forward(arms.CONNECT_TUNNEL)
    assert weir.forward(arms.CONNECT_TUNNEL)
    assert 'n/a' in squid.supports(arms.TWIN_H1)
    assert weir.supports(arms.TWIN_H1) is None


def test_weir_and_nginx_are_configured_alike():
    for name in ('weir', 'nginx'):
        p = products.make([name], '/bin/true')[0]
        text = p.render(ctx(True))
        for line in ('access_log off;', 'keepalive 1024;',
                     'keepalive_requests 1000000;', 'proxy_buffers 8 16k;',
                     'proxy_http_version 1.1;', 'worker_connections 16384;',
                     'proxy_set_header Connection $connection_upgrade;',
                     'ssl_protocols TLSv1.3;'):
            assert line in text, (name, line)
    weir = products.make(['weir'], '/bin/true')[0]
    assert 'master_process off;' in weir.render(ctx(False, single=True))
    assert 'master_process' not in weir.render(ctx(False))


def test_haproxy_modes_and_connection_limit():
    h, l4 = products.make(['haproxy', 'l4'], '/bin/true')
    lines = [x.strip() for x in h.render(ctx(False)).splitlines()]
    assert 'mode http' in lines and 'mode tcp' not in lines
    assert 'server origin 127.0.0.1:20201 pool-max-conn 1024' in lines
    text = l4.render(ctx(True))
    lines = [x.strip() for x in text.splitlines()]
    assert 'mode tcp' in lines and 'mode http' not in lines
    assert 'bind 127.0.0.1:20200 ssl crt /r/p.pem' in lines
    # two descriptors per connection
    assert h.max_connections(16384, 20000) == 9950
    assert h.max_connections(16384, 65536) == 16384


def test_direct_is_not_applicable_to_tls_arms():
    d = products.make(['direct'], '/bin/true')[0]
    assert d.supports(arms.TINY) is None
    assert 'n/a' in d.supports(arms.TLS_TINY)


def test_suites_are_well_formed():
    names = [s.name for s in arms.SUITES]
    assert len(names) == len(set(names))
    for s in arms.SUITES:
        armnames = {a.name for a in s.arms}
        for g in s.goals:
            assert g.arm in armnames, (s.name, g.text)
    assert [s.name for s in arms.select('post,same')] == ['same', 'post']
    assert len(arms.select('all')) == len(arms.SUITES)
    with pytest.raises(KeyError):
        arms.select('nope')


CSV = ('proto,connections,mode,method,body,rate,duration_s,requests,rps,'
       'bytes_read,bytes_written,errors,err_connect,err_timeout,err_read,'
       'err_write,status_other,status_2xx,status_3xx,status_4xx,status_5xx,'
       'p50_us,p90_us,p99_us,p999_us,max_us,mean_us,cpu_user_s,cpu_sys_s\n'
       'http/1.1,8,keep-alive,GET,0,0,2.000,40000,20000.0,1,2,0,0,0,0,0,0,'
       '40000,0,0,0,300.1,500,900.5,1500,4000,350,0.50,0.70\n')


def test_probe_csv_parsing_by_header_name():
    row = parse_csv('some text\n' + CSV)
    assert row['proto'] == 'http/1.1' and row['requests'] == 40000
    assert row['p99_us'] == 900.5
    assert probe_cpu_pct(row) == pytest.approx(60.0)
    # a cpu_pct column added at the end is read when present
    lines = CSV.splitlines()
    row = parse_csv(lines[0] + ',cpu_pct\n' + lines[1] + ',55.5\n')
    assert probe_cpu_pct(row) == 55.5
    assert parse_csv('no csv here\n') is None


def probe_row(requests, errors=0, status_2xx=None, **kinds):
    """A weir-probe CSV line as bench/run reads it: 2xx = requests less
    the 3xx/4xx/5xx/other given, errors = the error kinds + 4xx + 5xx +
    other, as the probe counts them."""
    cols = dict(err_connect=0, err_timeout=0, err_read=0, err_write=0,
                status_other=0, status_3xx=0, status_4xx=0, status_5xx=0)
    cols.update(kinds)
    if status_2xx is None:
        status_2xx = requests - cols['status_3xx'] - cols['status_4xx'] \
            - cols['status_5xx'] - cols['status_other']
    errors += sum(cols[k] for k in cols if k != 'status_3xx')
    header, line = CSV.splitlines()
    values = dict(zip(header.split(','), line.split(',')))
    values.update((k, str(v)) for k, v in cols.items())
    values.update(requests=str(requests), errors=str(errors),
                  status_2xx=str(status_2xx))
    return parse_csv(header + '\n'
                     + ','.join(values[k] for k in header.split(',')))


def test_smoke_fails_a_step_with_errors_or_no_2xx():
    assert stats.smoke_problem(probe_row(4000)) is None
    # a weir answering 500 to everything: complete responses, all errors
    assert stats.smoke_problem(probe_row(4000, status_5xx=4000)) == \
        '4000 error(s) (5xx 4000)'
    # one 404 among the answers
    assert stats.smoke_problem(probe_row(4000, status_4xx=1)) == \
        '1 error(s) (4xx 1)'
    # truncated bodies: read errors, the other answers whole
    assert stats.smoke_problem(probe_row(3990, err_read=10)) == \
        '10 error(s) (read 10)'
    assert stats.smoke_problem(probe_row(0, err_connect=50)) == \
        '50 error(s) (connect 50)'
    # no error but nothing in 2xx (redirects only): not working either
    assert stats.smoke_problem(probe_row(4000, status_3xx=4000)) == \
        'no 2xx answer'
    assert stats.smoke_problem(probe_row(0)) == 'no request succeeded'
    assert stats.smoke_problem(None) == 'no result'
    # wrk and h2load rows have no status columns: their errors count
    assert stats.smoke_problem({'rps': 1.0, 'requests': 9,
                                'errors': 2}) == '2 error(s)'
    assert stats.smoke_problem({'rps': 1.0, 'requests': 9,
                                'errors': 0}) is None


def test_smoke_check_fails_the_run_only_in_smoke_mode():
    failures = {}
    for smoke in (True, False):
        r = Runner.__new__(Runner)      # no processes: only what it needs
        r.s = Settings(smoke=smoke)
        r.failures = []
        r.log = lambda text: None
        r.smoke_check(arms.select('same')[0],
                      probe_row(4000, status_5xx=4000), 'h1-tiny weir c=4',
                      '0001-same')
        r.smoke_check(arms.select('same')[0], probe_row(4000),
                      'h1-tiny nginx c=4', '0002-same')
        failures[smoke] = r.failures
    assert failures[True] == [('same', 'h1-tiny weir c=4: 4000 error(s) '
                               '(5xx 4000): see raw/0001-same.log')]
    # a measuring run keeps errors as figures (a step beyond capacity)
    assert failures[False] == []


def test_tool_output_parsing():
    wrk = ('Running 2s test @ http://127.0.0.1:1/tiny\n'
           '  52345 requests in 2.00s, 8.1MB read\n'
           '  Socket errors: connect 0, read 2, write 0, timeout 1\n'
           'Requests/sec:  26172.50\n')
    assert parse_wrk(wrk) == {'rps': 26172.5, 'requests': 52345,
                              'errors': 3, 'err_connect': 0, 'err_read': 2,
                              'err_write': 0, 'err_timeout': 1,
                              'status_non2xx': 0}
    # the reload suite's figures: each kind, non-2xx among the errors
    row = parse_wrk(wrk.replace('Requests/sec',
                                '  Non-2xx or 3xx responses: 4\n'
                                'Requests/sec'))
    assert row['status_non2xx'] == 4 and row['errors'] == 7
    row = parse_wrk('  10 requests in 1.00s, 1KB read\nRequests/sec: 10\n')
    assert row['errors'] == 0 and row['err_read'] == 0
    h2 = ('finished in 2.00s, 24000.50 req/s, 3.2MB/s\n'
          'requests: 48001 total, 48009 started, 48001 done, 48000 '
          'succeeded, 1 failed, 0 errored, 0 timeout\n')
    assert parse_h2load(h2) == {'rps': 24000.5, 'requests': 48000,
                                'errors': 1}
    assert parse_stats('connections 12\nrequests 3400\nopen 2\n') == \
        {'connections': 12, 'requests': 3400, 'open': 2}


def test_callgrind_totals(tmp_path):
    p = tmp_path / 'cg.out'
    p.write_text('version: 1\nevents: Ir\nfn=main\n0 5\nsummary: 123456\n')
    assert callgrind_ir(str(p)) == 123456
    p.write_text('events: Ir\ntotals: 99\n')
    assert callgrind_ir(str(p)) == 99
    assert callgrind_ir(str(tmp_path / 'none')) is None


def row(product, repeat, conns, rps, cpu=None, p99_ms=1.0, errors=0):
    r = {c: '' for c in COLUMNS}
    r.update(suite='same', arm='h1-tiny', product=product, repeat=repeat,
             conns=conns, rps=rps, requests=int(rps), errors=errors,
             p99_us=p99_ms * 1000, cpu_us_per_req=cpu if cpu else '')
    return r


def test_report_ramp_figures_and_ratios():
    rows = [row('weir', 0, 8, 100, 10), row('weir', 0, 16, 150, 9),
            row('nginx', 0, 8, 90, 12), row('nginx', 0, 16, 100, 12),
            row('weir', 1, 8, 100, 10), row('weir', 1, 16, 200, 8,
                                               errors=2),
            row('nginx', 1, 8, 80, 11), row('nginx', 1, 16, 90, 11)]
    ref, figs = report.ramp_figures(rows, 50)
    assert ref == 16
    assert figs['weir'][0]['sustainable'] == 150
    assert figs['weir'][1]['sustainable'] == 100   # c=16 had errors
    assert figs['weir'][1]['peak'] == 200
    # ratios per repeat (150 / 100, 100 / 90), then the median
    assert report.ratio_of(figs, "sustainable") == pytest.approx(
        (1.5 + 100 / 90) / 2)
    assert report.ratio_of(figs, 'cpu') == pytest.approx(
        (9 / 12 + 8 / 11) / 2)
    assert report.ratio_of(figs, 'sustainable', b='caddy') is None


def test_report_idle_and_instr_figures():
    rows = []
    for hold, rps, rss in ((0, 100, 10000), (10000, 95, 20000)):
        r = row('weir', 0, 50, rps)
        r.update(hold=hold, rss_kib=rss)
        rows.append(r)
    f = report.idle_figures(rows)['weir'][0]
    assert f['cost'] == pytest.approx(0.95)
    assert f['per_idle'] == pytest.approx(1024.0)
    rows = []
    for n, ir in ((2000, 50_000_000), (12000, 250_000_000)):
        r = row('weir', 0, 4, 1)
        r.update(requests=n, instr_ir=ir)
        rows.append(r)
    assert report.instr_figures(rows)['weir']['per_req'] == 20000


def test_reload_suite_products():
    s = arms.suite('reload')
    assert s.kind == 'reload' and s.concurrency == (32,)
    assert s.options['workers'] == 2 and s.options['reloads'] == 50
    assert [g.metric for g in s.goals] == ['reload_errors'] * 4
    weir, nginx, haproxy, caddy = products.make(
        ['weir', 'nginx', 'haproxy', 'caddy'], '/bin/true')
    assert weir.reload_signal == nginx.reload_signal == signal.SIGHUP
    assert weir.worker_processes(2) == nginx.worker_processes(2) == 2
    # HAProxy: master-worker mode for the reload suite only, one worker
    # process of nbthread threads
    assert haproxy.reload_signal == signal.SIGUSR2
    assert haproxy.worker_processes(2) == 1
    c = ctx(False)
    assert '-W' not in haproxy.argv('/r/h.cfg', c)
    c['reload'] = True
    assert haproxy.argv('/r/h.cfg', c)[1:] == ['-W', '-db', '-f', '/r/h.cfg']
    assert haproxy.error_log == 'haproxy.err'
    # Caddy is skipped with a note saying why
    assert caddy.reload_signal is None and 'admin' in caddy.reload_skip


def test_log_alerts_any_case(tmp_path):
    p = tmp_path / 'error.log'
    p.write_text('2026/12/02 [warn] 1#0: x\n2026/12/02 [alert] 1#0: y\n'
                 '[ALERT]    (7) : Current worker (8) exited\n[notice] z\n')
    assert [l[-1] for l in log_alerts(str(p))] == ['y', 'd']
    assert log_alerts(str(tmp_path / 'none')) == []


def reload_row(product, repeat, requests, arm='h1-tiny', **errors):
    r = {c: '' for c in COLUMNS}
    kinds = dict(err_connect=0, err_read=0, err_write=0, err_timeout=0,
                 status_non2xx=0)
    kinds.update(errors)
    r.update(suite='reload', arm=arm, product=product, tool='wrk',
             repeat=repeat, conns=32, duration_s=25, requests=requests,
             rps=requests / 25.0, errors=sum(kinds.values()), reloads=50,
             reload_max_s=0.02, **kinds)
    return r


def test_report_reload_figures_and_goal():
    rows = [reload_row('weir', 0, 1000), reload_row('weir', 1, 1100),
            reload_row('weir', 2, 900),
            reload_row('nginx', 0, 800, err_read=30),
            reload_row('nginx', 1, 900, err_read=40, status_non2xx=2),
            reload_row('nginx', 2, 700, err_read=20)]
    figs = report.reload_figures(rows)
    assert stats.median(f['errors'] for f in figs['nginx'].values()) == 30
    assert figs['nginx'][1]['non2xx'] == 2
    assert report.reload_errors(figs, 'weir') == 0
    # the goal counts every repeat: one bad repeat is not a median away
    assert report.reload_errors(figs, 'nginx') == 92
    suite = arms.suite('reload')

    def goals(rows, repeat=3):
        sm = report.Summary([suite], rows, Settings(repeat=repeat),
                            {'title': 't', 'date': 'd', 'command': 'c',
                             'weir': 'w', 'layout': 'l', 'settings': 's'},
                            [], [])
        text = sm.build()
        return text, sm.goals

    text, gs = goals(rows)
    assert '| weir | 1000 | 40 | 0 | 0 | 0 | 0 | 0 | 0 | 50 |' in text
    assert gs[0] == ('reload', 'reload H1: weir errors == 0',
                     '0 in 3000 requests (nginx: 92 in 2400)', 'met')
    # no TLS rows: no verdict for an arm that did not run
    assert len(gs) == 1
    rows[1] = reload_row('weir', 1, 1100, err_read=1)
    assert goals(rows)[1][0][3] == 'missed'
    # a count, not a ratio: one repeat gives a plain verdict
    assert goals(rows[:1], repeat=1)[1][0][3] == 'met'


def test_reload_smoke_fails_on_weir_errors_only():
    failures = {}
    for smoke in (True, False):
        r = Runner.__new__(Runner)      # no processes: only what it needs
        r.s = Settings(smoke=smoke)
        r.failures = []
        r.log = lambda text: None
        suite = arms.suite('reload')
        r.reload_check(suite, 'weir', parse_wrk(
            '  9 requests in 2s\n  Socket errors: connect 0, read 3, '
            'write 0, timeout 0\nRequests/sec: 4.5\n'), 'h1-tiny weir r0',
            '0001-reload')
        # nginx loses requests on a reload: a figure, even in a smoke
        r.reload_check(suite, 'nginx', parse_wrk(
            '  9 requests in 2s\n  Socket errors: connect 0, read 7, '
            'write 0, timeout 0\nRequests/sec: 4.5\n'), 'h1-tiny nginx r0',
            '0002-reload')
        # nothing answered at all is a broken product or harness
        r.reload_check(suite, 'nginx', {'rps': 0.0, 'requests': 0,
                                        'errors': 0}, 'h1tls-tiny nginx r0',
                       '0003-reload')
        failures[smoke] = r.failures
    assert failures[True] == [
        ('reload', 'h1-tiny weir r0: 3 error(s) (read 3): see '
         'raw/0001-reload.log'),
        ('reload', 'h1tls-tiny nginx r0: no request succeeded')]
    assert failures[False] == [
        ('reload', 'h1tls-tiny nginx r0: no request succeeded')]


def test_reload_h2_refused_counted_apart():
    # weir-probe --h2 counts streams refused (REFUSED_STREAM, above a
    # GOAWAY's last-stream-id) in its errors: the reload suite takes them
    # out (a client retries them) and shows them in their own column
    rows = [reload_row('weir', 0, 1000, arm='h2c-tiny', err_refused=7),
            reload_row('nginx', 0, 900, arm='h2c-tiny', err_refused=3,
                       err_read=2)]
    for r in rows:
        r['tool'] = 'weir-probe'
    figs = report.reload_figures(rows)
    assert figs['weir'][0]['errors'] == 0
    assert figs['weir'][0]['refused'] == 7
    assert report.reload_errors(figs, 'nginx') == 2
    sm = report.Summary([arms.suite('reload')], rows, Settings(repeat=1),
                        {'title': 't', 'date': 'd', 'command': 'c',
                         'weir': 'w', 'layout': 'l', 'settings': 's'},
                        [], [])
    text = sm.build()
    assert '| weir | 1000 | 40 | 0 | 0 | 0 | 0 | 0 | 0 | 7 | 50 |' in text
    assert [g[3] for g in sm.goals] == ['met']
    row = {'requests': 10, 'errors': 4, 'err_refused': 4, 'status_2xx': 10}
    assert stats.smoke_problem(stats.without_refused(row)) is None
    row['errors'] = 5
    assert stats.smoke_problem(stats.without_refused(row)) is not None


# ----- HTTP/2 arms (issue 14)

def h2ctx(tls, h2=True):
    c = ctx(tls)
    c['h2'] = h2
    return c


def bind_line(product, c):
    p = products.make([product], '/bin/true')[0]
    text = p.render(c)
    return [x.strip() for x in text.splitlines()
            if x.strip().startswith(('listen ', 'bind ', 'protocols '))]


def test_h2_arms_render_the_peers_for_http2():
    # TLS: ALPN h2 for every product; h2c: prior knowledge
    assert bind_line('weir', h2ctx(True)) == [
        'listen 127.0.0.1:20200 ssl http2 backlog=4096;']
    assert bind_line('weir', h2ctx(False)) == [
        'listen 127.0.0.1:20200 http2 backlog=4096;']
    assert bind_line('weir', h2ctx(True, h2=False)) == [
        'listen 127.0.0.1:20200 ssl backlog=4096;']
    assert bind_line('nginx', h2ctx(True)) == [
        'listen 127.0.0.1:20200 ssl http2 backlog=4096;']
    assert bind_line('nginx', h2ctx(False)) == [
        'listen 127.0.0.1:20200 http2 backlog=4096;']
    # nginx 1.22 on a plain http2 listener speaks only HTTP/2: H1 arms
    # must not get it
    assert bind_line('nginx', h2ctx(False, h2=False)) == [
        'listen 127.0.0.1:20200 backlog=4096;']
    assert bind_line('haproxy', h2ctx(True)) == [
        'bind 127.0.0.1:20200 ssl crt /r/p.pem alpn h2,http/1.1']
    assert bind_line('haproxy', h2ctx(False)) == [
        'bind 127.0.0.1:20200 proto h2']
    assert bind_line('haproxy', h2ctx(False, h2=False)) == [
        'bind 127.0.0.1:20200']
    # l4 relays HTTP/2 bytes to the origin (h2c): ALPN h2 on TLS
    assert bind_line('l4', h2ctx(True)) == [
        'bind 127.0.0.1:20200 ssl crt /r/p.pem alpn h2']
    assert bind_line('l4', h2ctx(True, h2=False)) == [
        'bind 127.0.0.1:20200 ssl crt /r/p.pem']
    assert bind_line('l4', h2ctx(False)) == ['bind 127.0.0.1:20200']
    assert bind_line('caddy', h2ctx(True))[0] == 'protocols h1 h2'
    assert bind_line('caddy', h2ctx(False))[0] == 'protocols h1 h2c'
    assert bind_line('caddy', h2ctx(False, h2=False))[0] == 'protocols h1'


def test_h2_arms_and_suites():
    names = {a.name: a for s in arms.SUITES for a in s.arms}
    for n in ('h2tls-tiny', 'h2c-tiny', 'h2tls-64k', 'h2tls-256k',
              'h2-post64k', 'h2tls-newconn'):
        a = names[n]
        assert a.client == 'h2' and '--h2' in a.needs, n
        assert a.client_tls == n.startswith('h2tls'), n
    assert names['h2tls-tiny'].streams == 8
    assert names['h2tls-newconn'].new_conn
    assert names['h2-post64k'].body == 65536
    assert arms.suite('h2').concurrency == (4, 8, 16)   # x 8 streams
    assert 'h2tls-tiny' in [a.name for a in arms.suite('instr').arms]
    assert arms.suite('h2-idle').kind == 'idle'
    assert arms.suite('h2-idle').arms[0].client_tls is False
    goals = {(g.arm, g.metric, g.peer): (g.op, g.threshold)
             for s in arms.SUITES for g in s.goals}
    assert goals[('h2tls-tiny', 'throughput', 'nginx')] == ('>=', 1.3)
    assert goals[('h2tls-tiny', 'throughput', 'haproxy')] == ('>=', 1.05)
    assert goals[('h2tls-tiny', 'cpu', 'nginx')] == ('<=', 0.75)
    assert goals[('h2tls-tiny', 'instr', 'nginx')] == ('<=', 0.8)
    for a in ('h2tls-64k', 'h2tls-256k', 'h2-post64k'):
        assert goals[(a, 'throughput', 'haproxy')] == ('>=', 1.0)
    assert goals[('h2c-tiny', 'idle_rss', 'nginx')] == ('<=', 1.0)
    assert goals[('h2c-tiny', 'crosscheck', 'h2load')] == ('within', 0.15)


def test_h2_client_command_lines():
    from benchlib.probe import Probe
    from benchlib.runner import h2load_argv
    p = Probe.__new__(Probe)
    p.path = 'wp'
    argv = p.client_argv(['https://x/tiny'], 16, 2, h2=True, streams=8)
    assert argv[argv.index('--h2') + 1:argv.index('--h2') + 3] == \
        ['-m', '8']
    # a new connection per request is one stream: no -m
    argv = p.client_argv(['https://x/tiny'], 4, 2, new_conn=True, h2=True,
                         streams=8)
    assert '--h2' in argv and '-m' not in argv and '--new-conn' in argv
    assert '--h2' not in p.client_argv(['http://x/'], 4, 2)
    h2c = arms.suite('crosscheck-h2').arms[0]
    assert h2load_argv(h2c, 'http://u/', 16, 2) == \
        ['h2load', '-t1', '-c16', '-m8', '-D2', 'http://u/']
    assert h2load_argv(arms.TINY, 'http://u/', 16, 2) == \
        ['h2load', '--h1', '-t1', '-c16', '-D2', 'http://u/']


def test_weir_without_the_http2_module_is_not_applicable(tmp_path):
    fake = tmp_path / 'weir'
    fake.write_text('#!/bin/sh\necho "modules: weir_core_module '
                    'weir_http_module" >&2\n')
    fake.chmod(0o755)
    w = products.make(['weir'], str(fake))[0]
    h2 = arms.suite('h2').arms[0]
    assert 'HTTP/2 module' in w.supports(h2)
    assert w.supports(arms.TINY) is None
    fake.write_text('#!/bin/sh\necho "modules: weir_core_module '
                    'weir_http_v2_module" >&2\n')
    w = products.make(['weir'], str(fake))[0]
    assert w.supports(h2) is None
    # nginx without http_v2_module is n/a too
    n = products.make(['nginx'], '/bin/true')[0]
    n.binary = str(fake)
    fake.write_text('#!/bin/sh\necho "configure arguments: '
                    '--with-http_ssl_module" >&2\n')
    assert 'http_v2_module' in n.supports(h2)
    assert n.supports(arms.TLS_TINY) is None
    n = products.make(['nginx'], '/bin/true')[0]
    n.binary = str(fake)
    fake.write_text('#!/bin/sh\necho "configure arguments: '
                    '--with-http_v2_module" >&2\n')
    assert n.supports(h2) is None
    # direct runs only the h2c HTTP/2 arms
    d = products.make(['direct'], '/bin/true')[0]
    assert d.supports(arms.suite('h2').arms[1]) is None
    assert 'n/a' in d.supports(h2)


def test_h2c_request_and_frames():
    from benchlib import h2c
    req = h2c.request(8080, '/tiny')
    assert req.startswith(h2c.PREFACE)
    frames, rest = h2c.parse_frames(req[len(h2c.PREFACE):])
    assert rest == b''
    assert [(t, f, s) for t, f, s, _ in frames] == [
        (h2c.SETTINGS, 0, 0), (h2c.HEADERS, 0x5, 1)]
    # :method GET, :scheme http, :path /tiny, :authority 127.0.0.1:8080
    assert frames[1][3] == b'\x82\x86\x04\x05/tiny\x01\x0e127.0.0.1:8080'
    # a response: SETTINGS (ACKed), HEADERS :status 200 (after a table
    # size update), DATA with END_STREAM split across two reads
    resp = (h2c.frame(h2c.SETTINGS, 0, 0, b'\x00\x03\x00\x00\x00\x80') +
            h2c.frame(h2c.HEADERS, h2c.END_HEADERS, 1, b'\x3f\xe1\x1f\x88') +
            h2c.frame(h2c.DATA, h2c.END_STREAM, 1, b'x' * 64))
    c = h2c.Conn()
    c.feed(resp[:20])
    assert not c.done and c.out == h2c.frame(h2c.SETTINGS, h2c.ACK, 0)
    c.feed(resp[20:])
    assert c.done and c.status == 200 and c.failed is None
    assert h2c.status_of(b'\x8d') == 404 and h2c.status_of(b'\x48') is None
    c = h2c.Conn()
    c.feed(h2c.frame(h2c.RST_STREAM, 0, 1, b'\x00\x00\x00\x07'))
    assert c.failed == 'RST_STREAM'


def test_report_crosscheck_per_arm():
    suite = arms.suite('crosscheck-h2')
    rows = []
    for arm, probe_rps, h2load_rps in (('h2c-tiny', 100.0, 90.0),
                                       ('h2tls-tiny', 100.0, 50.0)):
        for tool, rps in (('weir-probe', probe_rps), ('h2load', h2load_rps)):
            r = {c: '' for c in COLUMNS}
            r.update(suite=suite.name, arm=arm, product='direct', tool=tool,
                     repeat=0, conns=16, rps=rps, requests=int(rps))
            rows.append(r)
    sm = report.Summary([suite], rows, Settings(repeat=1),
                        {'title': 't', 'date': 'd', 'command': 'c',
                         'weir': 'w', 'layout': 'l', 'settings': 's'},
                        [], [])
    text = sm.build()
    assert '### h2c-tiny' in text and '### h2tls-tiny' in text
    # each goal judged on its own arm's rows
    assert [(g[1], g[2], g[3]) for g in sm.goals] == [
        ('crosscheck H2: h2load within +-15% of weir-probe', '0.90',
         'met'),
        ('crosscheck H2 TLS: h2load within +-15% of weir-probe', '0.50',
         'missed')]


def test_report_twin_goals_compare_two_arms_of_weir():
    """The MITM goals compare weir on an arm with weir on its twin arm
    of the same suite, repeat by repeat: a ratio of CPU per request,
    and the difference in microseconds (new host vs cached host)."""
    suite = arms.suite('mitm-newhost')
    rows = []
    for rep, (twin, cached, new) in enumerate(((100, 150, 500),
                                               (120, 200, 600),
                                               (110, 160, 900))):
        for arm, cpu in (('h1tls-newconn-to-tls', twin),
                         ('mitm-newconn', cached), ('mitm-newhost', new)):
            r = row('weir', rep, 8, 1000, cpu)
            r.update(suite='mitm-newhost', arm=arm)
            rows.append(r)
        r = row('squid', rep, 8, 500, 2000)
        r.update(suite='mitm-newhost', arm='mitm-newhost')
        rows.append(r)
    sm = report.Summary([suite], rows, Settings(repeat=3),
                        {'title': 't', 'date': 'd', 'command': 'c',
                         'weir': 'w', 'layout': 'l', 'settings': 's'},
                        [], [])
    text = sm.build()
    got = {g[1]: g[2:] for g in sm.goals}
    # differences 350, 400, 740: the median 400
    assert got['new host: <= 0.5 ms more proxy CPU than a cached one'] \
        == ('400 us', 'met'), got
    # ratios 1.5, 1.67, 1.45: the median 1.5
    assert got["new tunnel to a cached host: CPU <= 2 x weir's new TLS "
               "connection"] == ('1.50', 'met'), got
    assert '| mitm-newhost / mitm-newconn | CPU us/request, difference | ' \
        '400 us |' in text, text
    assert '| weir / squid |' in text
