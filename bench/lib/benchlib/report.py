"""results.csv and summary.md from the rows of a run: per arm a table
per product, the same-run ratios weir / peer (median over repeats), and
the goals of issue 6 with met / missed where the suite measures them."""

import csv
import os

from . import stats
from .runner import COLUMNS

# goals comparing two arms of weir (arms.Goal)
TWIN_METRICS = ('twin_throughput', 'twin_cpu', 'cpu_delta')

PEERS = ('nginx', 'haproxy', 'caddy', 'squid', 'mitmproxy', 'l4', 'direct')


def write_csv(path, rows):
    with open(path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction='ignore')
        w.writeheader()
        for r in rows:
            w.writerow(r)


def _num(v):
    return None if v in ('', None) else v


def ramp_figures(rows, p99_ms):
    """For the rows of one arm: {product: {repeat: figures}} where
    figures holds sustainable and peak req/s, and CPU us/request, RSS,
    HWM and probe CPU% at the reference step (the arm's highest
    concurrency, the same for every product)."""
    ref = max((r['conns'] for r in rows), default=None)
    out = {}
    for r in rows:
        out.setdefault(r['product'], {}).setdefault(r['repeat'], []).append(r)
    figs = {}
    for product, by_repeat in out.items():
        for rep, steps in by_repeat.items():
            steps = [s for s in steps if _num(s.get('rps')) is not None]
            sus = stats.sustainable(steps, p99_ms)
            pk = stats.peak(steps)
            at_ref = [s for s in steps if s['conns'] == ref]
            top = at_ref[0] if at_ref else {}
            figs.setdefault(product, {})[rep] = {
                'sustainable': sus['rps'] if sus else None,
                'sustainable_conns': sus['conns'] if sus else None,
                'peak': pk['rps'] if pk else None,
                'cpu': _num(top.get('cpu_us_per_req')),
                'rss': _num(top.get('rss_kib')),
                'hwm': _num(top.get('hwm_kib')),
                'probe_cpu': _num(top.get('probe_cpu_pct')),
                'origin_conns': max((s['origin_conns'] for s in steps
                                     if _num(s.get('origin_conns'))
                                     is not None), default=None),
                'errors': sum(s['errors'] or 0 for s in steps),
            }
    return ref, figs


def med(figs, product, key):
    return stats.median(f[key] for f in figs.get(product, {}).values())


def ratio_of(figs, key, a='weir', b='nginx'):
    """Median over repeats of a's key / b's key, None if either lacks."""
    if a not in figs or b not in figs:
        return None
    return stats.ratio_median({r: f[key] for r, f in figs[a].items()},
                              {r: f[key] for r, f in figs[b].items()})


def idle_figures(rows):
    """{product: {repeat: {rps0, rps1, rss0, rss1, idle}}}: without and
    with the idle connections."""
    figs = {}
    for r in rows:
        f = figs.setdefault(r['product'], {}).setdefault(r['repeat'], {})
        k = '1' if r['hold'] else '0'
        f['rps' + k] = _num(r.get('rps'))
        f['rss' + k] = _num(r.get('rss_kib'))
        if r['hold']:
            f['idle'] = r['hold']
    for by_rep in figs.values():
        for f in by_rep.values():
            f['cost'] = stats.ratio(f.get('rps1'), f.get('rps0'))
            if None not in (f.get('rss1'), f.get('rss0')) and f.get('idle'):
                f['per_idle'] = (f['rss1'] - f['rss0']) * 1024.0 / f['idle']
            else:
                f['per_idle'] = None
    return figs


def instr_figures(rows):
    """{product: Ir per request} from the two runs of each product."""
    by = {}
    for r in rows:
        if _num(r.get('instr_ir')) is None or not r.get('requests'):
            continue
        by.setdefault(r['product'], []).append((r['requests'],
                                                r['instr_ir']))
    out = {}
    for p, runs in by.items():
        runs.sort()
        if len(runs) >= 2 and runs[-1][0] != runs[0][0]:
            (n1, i1), (n2, i2) = runs[0], runs[-1]
            out[p] = {'n1': n1, 'ir1': i1, 'n2': n2, 'ir2': i2,
                      'per_req': (i2 - i1) / float(n2 - n1)}
    return out


def cross_figures(rows):
    """{conns: {tool: {repeat: rps}}}."""
    out = {}
    for r in rows:
        if _num(r.get('rps')) is None:
            continue
        out.setdefault(r['conns'], {}).setdefault(r['tool'], {})[
            r['repeat']] = r['rps']
    return out


def cross_counted(rows):
    """{tool: the tool's requests / the origin's count, farthest from 1
    over the steps}."""
    out = {}
    for r in rows:
        req, org = _num(r.get('requests')), _num(r.get('origin_reqs'))
        if not req or not org:
            continue
        x = req / org
        prev = out.get(r['tool'])
        if prev is None or abs(x - 1) > abs(prev - 1):
            out[r['tool']] = x
    return out


RELOAD_KEYS = ('requests', 'rps', 'errors', 'err_connect', 'err_read',
               'err_write', 'err_timeout', 'non2xx', 'refused', 'reloads',
               'reload_max_s')


def reload_figures(rows):
    """{product: {repeat: figures}} of the reload suite's rows (one per
    product and repeat): requests, req/s, errors and their kinds (non2xx:
    wrk's "Non-2xx or 3xx", or weir-probe's 4xx + 5xx + other), reloads
    done and the slowest reload's time to take."""
    figs = {}
    for r in rows:
        f = {k: _num(r.get(k)) for k in RELOAD_KEYS
             if k not in ('non2xx', 'refused')}
        # HTTP/2 streams refused (a client retries them): apart, not
        # among the errors
        f['refused'] = _num(r.get('err_refused'))
        if f['refused'] and f['errors'] is not None:
            f['errors'] -= f['refused']
        if _num(r.get('status_non2xx')) is not None:
            f['non2xx'] = r['status_non2xx']
        else:
            parts = [_num(r.get(k)) for k in ('status_4xx', 'status_5xx',
                                              'status_other')]
            f['non2xx'] = None if all(x is None for x in parts) else \
                sum(x or 0 for x in parts)
        figs.setdefault(r['product'], {})[r['repeat']] = f
    return figs


def reload_errors(figs, product):
    """The product's failed requests summed over its repeats (None when
    no repeat has a figure): the goal is zero in every repeat, which a
    median would hide."""
    errs = [f['errors'] for f in figs.get(product, {}).values()
            if f['errors'] is not None]
    return sum(errs) if errs else None


def fmt(v, spec='%.0f'):
    return 'n/a' if v is None else spec % v


class Summary:

    def __init__(self, suites, rows, settings, header, notes, failures):
        self.suites = suites
        self.rows = rows
        self.s = settings
        self.header = header
        self.notes = notes
        self.failures = failures
        self.lines = []
        self.goals = []           # (suite, text, figure, verdict)

    def w(self, line=''):
        self.lines.append(line)

    def rows_of(self, suite, arm=None):
        return [r for r in self.rows if r['suite'] == suite.name
                and (arm is None or r['arm'] == arm.name)]

    def build(self):
        self.w('# weir benchmark: ' + self.header['title'])
        self.w()
        for k in ('date', 'command', 'weir', 'layout', 'settings'):
            self.w('- %s: %s' % (k, self.header[k]))
        self.w()
        self.w('Only ratios between products measured in this run mean '
               'anything; absolute figures move by up to 30% between runs.')
        self.w()
        for suite in self.suites:
            self.w('## %s' % suite.name)
            self.w()
            self.w(suite.description + '.')
            self.w()
            {'ramp': self.ramp, 'idle': self.idle, 'instr': self.instr,
             'crosscheck': self.cross,
             'reload': self.reload}[suite.kind](suite)
            for sname, text in self.notes:
                if sname == suite.name:
                    self.w('- note: ' + text)
            for text, n in _counted(t for sname, t in self.failures
                                    if sname == suite.name):
                self.w('- **FAILED**: ' + text + (' (x%d)' % n if n > 1
                                                  else ''))
            self.w()
        self.w('## Goals')
        self.w()
        if self.goals:
            self.w('| suite | goal | figure | verdict |')
            self.w('| --- | --- | --- | --- |')
            for g in self.goals:
                self.w('| %s | %s | %s | %s |' % g)
        else:
            self.w('No goal measured by these suites.')
        if self.s.smoke:
            self.w()
            self.w('Smoke run: one short step, verdicts mean nothing.')
        return '\n'.join(self.lines) + '\n'

    def goal(self, suite, g, value, spec='%.2f', figure=None):
        ok = stats.check(g.op, value, g.threshold)
        if ok is None:
            verdict = 'n/a'
        elif self.s.repeat < 3 and g.metric not in ('instr', 'crosscheck',
                                                    'reload_errors'):
            verdict = ('met' if ok else 'missed') + ' (< 3 repeats)'
        else:
            verdict = 'met' if ok else 'missed'
        self.goals.append((suite.name, g.text,
                           figure if figure is not None and value is not None
                           else fmt(value, spec), verdict))

    # ----- per kind

    def ramp(self, suite):
        by_arm = {}
        for arm in suite.arms:
            rows = self.rows_of(suite, arm)
            if not rows:
                continue
            ref, figs = ramp_figures(rows, suite.p99_ms or self.s.p99_ms)
            by_arm[arm.name] = figs
            self.w('### %s: %s' % (arm.name, arm.label))
            self.w()
            self.w('Steps: %s connections; CPU, RSS and probe CPU at '
                   'c=%s; median of %d repeat(s).'
                   % (','.join(str(c) for c in sorted(
                       {r['conns'] for r in rows})), ref, self.s.repeat))
            self.w()
            head = ('| product | sustainable req/s | at c | peak req/s | '
                    'CPU us/req | RSS MiB | peak RSS MiB | probe CPU % | '
                    'origin conns | errors |')
            if suite.bound:
                head += ' of bound |'
            self.w(head)
            self.w('|' + ' --- |' * (head.count('|') - 1))
            for p in [p for p in ('weir',) + PEERS if p in figs]:
                line = '|' + ' %s |' * 10 % (
                    p, fmt(med(figs, p, 'sustainable')),
                    fmt(med(figs, p, 'sustainable_conns')),
                    fmt(med(figs, p, 'peak')),
                    fmt(med(figs, p, 'cpu'), '%.1f'),
                    fmt(_mib(med(figs, p, 'rss')), '%.1f'),
                    fmt(_mib(med(figs, p, 'hwm')), '%.1f'),
                    fmt(med(figs, p, 'probe_cpu'), '%.0f'),
                    fmt(med(figs, p, 'origin_conns')),
                    sum(f['errors'] for f in figs[p].values()))
                if suite.bound:
                    line += ' %s |' % fmt(stats.ratio(
                        med(figs, p, 'sustainable'), suite.bound), '%.3f')
                self.w(line)
            self.w()
            if 'weir' in figs:
                self.w('| weir / peer | sustainable | peak | CPU/request | '
                       'peak RSS |')
                self.w('| --- | --- | --- | --- | --- |')
                for peer in PEERS:
                    if peer in figs:
                        self.w('| weir / %s | %s | %s | %s | %s |' % (
                            peer,
                            fmt(ratio_of(figs, 'sustainable', b=peer),
                                '%.2f'),
                            fmt(ratio_of(figs, 'peak', b=peer), '%.2f'),
                            fmt(ratio_of(figs, 'cpu', b=peer), '%.2f'),
                            fmt(ratio_of(figs, 'hwm', b=peer), '%.2f')))
                self.w()
            for g in suite.goals:
                if g.arm != arm.name or g.metric in TWIN_METRICS:
                    continue
                if g.metric == 'bound':
                    self.goal(suite, g, stats.ratio(
                        med(figs, 'weir', 'sustainable'), g.bound))
                else:
                    key = {'throughput': 'sustainable', 'cpu': 'cpu',
                           'rss': 'hwm'}[g.metric]
                    self.goal(suite, g, ratio_of(figs, key, b=g.peer))
        self.twin_goals(suite, by_arm)

    def twin_goals(self, suite, by_arm):
        """The goals that compare weir on one arm with weir on another
        (its twin) of the same suite, repeat by repeat."""
        lines = []
        for g in suite.goals:
            if g.metric not in TWIN_METRICS:
                continue
            a = by_arm.get(g.arm, {}).get('weir', {})
            b = by_arm.get(g.peer, {}).get('weir', {})
            key = 'sustainable' if g.metric == 'twin_throughput' else 'cpu'
            if g.metric == 'cpu_delta':
                value = stats.median(
                    a[r]['cpu'] - b[r]['cpu'] for r in a
                    if r in b and None not in (a[r]['cpu'], b[r]['cpu']))
                spec = '%.0f us'
            else:
                value = stats.ratio_median(
                    {r: f[key] for r, f in a.items()},
                    {r: f[key] for r, f in b.items()})
                spec = '%.2f'
            lines.append('| %s / %s | %s | %s |' % (
                g.arm, g.peer, {'twin_throughput': 'sustainable req/s',
                                'twin_cpu': 'CPU/request',
                                'cpu_delta': 'CPU us/request, difference'}[
                                    g.metric], fmt(value, spec)))
            self.goal(suite, g, value, spec)
        if lines:
            self.w('| weir, arm / arm | figure | value |')
            self.w('| --- | --- | --- |')
            for line in lines:
                self.w(line)
            self.w()

    def idle(self, suite):
        rows = self.rows_of(suite)
        if not rows:
            return
        figs = idle_figures(rows)
        self.w('| product | req/s without | req/s with idle | with / '
               'without | idle conns | RSS MiB without | RSS MiB with | '
               'bytes per idle conn |')
        self.w('|' + ' --- |' * 8)
        for p in [p for p in ('weir',) + PEERS if p in figs]:
            f = figs[p].values()
            self.w('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
                p, fmt(stats.median(x.get('rps0') for x in f)),
                fmt(stats.median(x.get('rps1') for x in f)),
                fmt(stats.median(x.get('cost') for x in f), '%.2f'),
                fmt(stats.median(x.get('idle') for x in f)),
                fmt(_mib(stats.median(x.get('rss0') for x in f)), '%.1f'),
                fmt(_mib(stats.median(x.get('rss1') for x in f)), '%.1f'),
                fmt(stats.median(x.get('per_idle') for x in f))))
        self.w()
        for g in suite.goals:
            if g.metric == 'idle_cost':
                self.goal(suite, g, stats.median(
                    x.get('cost') for x in figs.get('weir', {}).values()))
            elif g.metric == 'idle_rss':
                self.goal(suite, g, stats.ratio_median(
                    {r: x.get('per_idle')
                     for r, x in figs.get('weir', {}).items()},
                    {r: x.get('per_idle')
                     for r, x in figs.get(g.peer, {}).items()}))

    def instr(self, suite):
        for arm in suite.arms:
            figs = instr_figures(self.rows_of(suite, arm))
            if not figs:
                continue
            self.w('### %s: %s' % (arm.name, arm.label))
            self.w()
            self.w('| product | N1 | Ir(N1) | N2 | Ir(N2) | Ir/request | '
                   'weir / product |')
            self.w('| --- | --- | --- | --- | --- | --- | --- |')
            weir = figs.get('weir', {}).get('per_req')
            for p in [p for p in ('weir',) + PEERS if p in figs]:
                f = figs[p]
                self.w('| %s | %d | %d | %d | %d | %.0f | %s |' % (
                    p, f['n1'], f['ir1'], f['n2'], f['ir2'], f['per_req'],
                    fmt(stats.ratio(weir, f['per_req']), '%.2f')))
            self.w()
            for g in suite.goals:
                if g.arm == arm.name:
                    self.goal(suite, g, stats.ratio(
                        weir, figs.get(g.peer, {}).get('per_req')))

    def cross(self, suite):
        for arm in suite.arms:
            self.cross_arm(suite, arm, len(suite.arms) > 1)

    def cross_arm(self, suite, arm, heading):
        figs = cross_figures(self.rows_of(suite, arm))
        if not figs:
            return
        if heading:
            self.w('### %s: %s' % (arm.name, arm.label))
            self.w()
        tools = ('weir-probe', 'wrk', 'h2load')
        self.w('| conns | weir-probe req/s | wrk req/s | h2load req/s | '
               'wrk / probe | h2load / probe |')
        self.w('| --- | --- | --- | --- | --- | --- |')
        worst = {}
        for c in sorted(figs):
            f = figs[c]
            probe = f.get('weir-probe', {})
            ratios = {}
            for t in tools[1:]:
                if t in f and probe:
                    ratios[t] = stats.ratio_median(f[t], probe)
                    if ratios[t] is not None:
                        prev = worst.get(t)
                        if prev is None or abs(ratios[t] - 1) > \
                                abs(prev - 1):
                            worst[t] = ratios[t]
            self.w('| %d | %s | %s | %s | %s | %s |' % (
                c, *(fmt(stats.median(f.get(t, {}).values()))
                     for t in tools),
                fmt(ratios.get('wrk'), '%.2f'),
                fmt(ratios.get('h2load'), '%.2f')))
        self.w()
        counted = cross_counted(self.rows_of(suite, arm))
        if counted:
            self.w("Each tool's own request count against the origin's "
                   "(GET /stats before and after): 1.00 = no request "
                   "miscounted (in-flight requests at the end make it "
                   "slightly lower); worst step:")
            self.w()
            self.w('| tool | requests / origin-counted requests |')
            self.w('| --- | --- |')
            for t in tools:
                if t in counted:
                    self.w('| %s | %.3f |' % (t, counted[t]))
            self.w()
        for g in suite.goals:
            if g.arm == arm.name:
                self.goal(suite, g, worst.get(g.peer))

    def reload(self, suite):
        for arm in suite.arms:
            rows = self.rows_of(suite, arm)
            if not rows:
                continue
            figs = reload_figures(rows)
            tools = sorted({r['tool'] for r in rows})
            self.w('### %s: %s' % (arm.name, arm.label))
            self.w()
            self.w('%s -c%s, %s s, %d worker(s); median of %d repeat(s) '
                   'per product; "all repeats": the sum.'
                   % (', '.join(tools), rows[0]['conns'],
                      fmt(_num(rows[0]['duration_s']), '%.0f'),
                      suite.options.get('workers', 2), self.s.repeat))
            self.w()
            h2 = arm.client == 'h2'
            self.w('| product | requests | req/s | errors | connect | read '
                   '| write | timeout | non-2xx |%s reloads | slowest '
                   'reload s | errors, all repeats |'
                   % (' refused (retried) |' if h2 else ''))
            self.w('|' + ' --- |' * (13 if h2 else 12))
            for p in [p for p in ('weir',) + PEERS if p in figs]:
                m = lambda k, spec='%.0f': fmt(stats.median(
                    f[k] for f in figs[p].values()), spec)
                cells = [p, m('requests'), m('rps'), m('errors'),
                         m('err_connect'), m('err_read'), m('err_write'),
                         m('err_timeout'), m('non2xx')]
                if h2:
                    cells.append(m('refused'))
                cells += [m('reloads'), m('reload_max_s', '%.3f'),
                          fmt(reload_errors(figs, p))]
                self.w('|' + ' %s |' * len(cells) % tuple(cells))
            self.w()
            for g in suite.goals:
                if g.arm != arm.name:
                    continue
                value = reload_errors(figs, 'weir')
                reqs = sum(f['requests'] or 0
                           for f in figs.get('weir', {}).values())
                peer = reload_errors(figs, g.peer)
                figure = '%s in %d requests' % (fmt(value), reqs)
                if peer is not None:
                    figure += ' (%s: %d in %d)' % (
                        g.peer, peer, sum(f['requests'] or 0 for f in
                                          figs[g.peer].values()))
                self.goal(suite, g, value, figure=figure)


def _counted(texts):
    """(text, times) in the order of first appearance."""
    counts = {}
    for t in texts:
        counts[t] = counts.get(t, 0) + 1
    return list(counts.items())


def _mib(kib):
    return None if kib is None else kib / 1024.0


def write(rundir, suites, rows, settings, header, notes, failures):
    write_csv(os.path.join(rundir, 'results.csv'), rows)
    text = Summary(suites, rows, settings, header, notes, failures).build()
    with open(os.path.join(rundir, 'summary.md'), 'w') as f:
        f.write(text)
    return text
