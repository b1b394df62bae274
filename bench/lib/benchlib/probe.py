"""The load generators and the origin: weir-probe (client, origin,
hold), wrk and h2load; their command lines and the parsing of their
output. Pure parsing functions are at the top (tested without
processes)."""

import csv
import http.client
import io
import os
import re
import sys

from . import procs

H2C_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'h2c.py')

# columns of weir-probe --csv read as numbers (any other column is text)
_TEXT_COLUMNS = ('proto', 'mode', 'method')


def parse_csv(text):
    """The last header + value pair of weir-probe --csv-header output, as
    a dict by column name (numbers converted); None if absent. Tolerates
    columns being added (cpu_pct) or missing."""
    lines = [l for l in text.splitlines() if l.strip()]
    for i in range(len(lines) - 2, -1, -1):
        if lines[i].startswith('proto,'):
            names = next(csv.reader(io.StringIO(lines[i])))
            values = next(csv.reader(io.StringIO(lines[i + 1])))
            if len(values) != len(names):
                return None
            row = {}
            for n, v in zip(names, values):
                row[n] = v if n in _TEXT_COLUMNS else _number(v)
            return row
    return None


def _number(v):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


def probe_cpu_pct(row):
    """The probe's CPU share of one core in the measured part: the
    cpu_pct column when the probe has it, else from user + sys time."""
    if row.get('cpu_pct') not in (None, ''):
        return float(row['cpu_pct'])
    d = row.get('duration_s') or 0
    if not d or 'cpu_user_s' not in row:
        return None
    return 100.0 * (row['cpu_user_s'] + row['cpu_sys_s']) / d


def parse_stats(body):
    """The origin's /stats answer: {'connections': N, ...}."""
    out = {}
    for line in body.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def parse_wrk(text):
    """{'rps', 'requests', 'errors', 'err_connect', 'err_read',
    'err_write', 'err_timeout', 'status_non2xx'} from wrk's report, or
    None. errors is their sum; status_non2xx is wrk's "Non-2xx or 3xx
    responses" (wrk does not split them by class)."""
    m = re.search(r'Requests/sec:\s+([\d.]+)', text)
    if not m:
        return None
    out = {'rps': float(m.group(1))}
    m = re.search(r'(\d+) requests in', text)
    out['requests'] = int(m.group(1)) if m else None
    m = re.search(r'Socket errors: connect (\d+), read (\d+), write (\d+), '
                  r'timeout (\d+)', text)
    kinds = [int(x) for x in m.groups()] if m else [0, 0, 0, 0]
    for k, v in zip(('err_connect', 'err_read', 'err_write', 'err_timeout'),
                    kinds):
        out[k] = v
    m = re.search(r'Non-2xx or 3xx responses: (\d+)', text)
    out['status_non2xx'] = int(m.group(1)) if m else 0
    out['errors'] = sum(kinds) + out['status_non2xx']
    return out


def parse_h2load(text):
    """{'rps', 'requests', 'errors'} from h2load's report, or None."""
    m = re.search(r'finished in [\d.]+\w*, ([\d.]+) req/s', text)
    if not m:
        return None
    out = {'rps': float(m.group(1))}
    m = re.search(r'requests: \d+ total, \d+ started, (\d+) done, '
                  r'(\d+) succeeded, (\d+) failed, (\d+) errored', text)
    if m:
        out['requests'] = int(m.group(2))
        out['errors'] = int(m.group(3)) + int(m.group(4))
    return out


class Probe:
    """weir-probe at path; features: the --options its client knows and
    whether it has the hold command."""

    def __init__(self, path):
        self.path = path
        _, out, err = procs.run([path, 'client', '-h'], 10)
        self.features = set(re.findall(r'(--[a-z][a-z0-9-]*)', out + err))
        _, out, err = procs.run([path, '-h'], 10)
        if re.search(r'\bhold\b', out + err):
            self.features.add('hold')
        _, out, err = procs.run([path, 'origin', '-h'], 10)
        if '/ws' in out + err:
            self.features.add('origin-ws')

    def missing(self, needs):
        return [n for n in needs if n not in self.features]

    def client_argv(self, urls, conns, duration, warmup=0, requests=None,
                    method='GET', body=0, new_conn=False, extra=(),
                    h2=False, streams=1):
        """h2: --h2 and, unless new_conn (one stream per connection),
        -m streams."""
        argv = [self.path, 'client', '-c', str(conns), '-d', _num(duration)]
        if h2:
            argv.append('--h2')
            if streams > 1 and not new_conn:
                argv += ['-m', str(streams)]
        for u in urls:
            argv += ['-u', u]
        if warmup:
            argv += ['-w', _num(warmup)]
        if requests:
            argv += ['-n', str(requests)]
        if method != 'GET':
            argv += ['-X', method]
        if body:
            argv += ['-b', str(body)]
        if new_conn:
            argv.append('--new-conn')
        argv += list(extra)
        argv.append('--csv-header')
        return argv

    def origin(self, rundir, prefix=(), name='origin', tls=None):
        """Starts an origin on a free port (tls: (cert, key), a TLS
        listener: HTTP/1.1 and, by ALPN, HTTP/2); returns (Proc,
        port)."""
        argv = [self.path, 'origin', '-l', '127.0.0.1:0']
        if tls:
            argv += ['--tls', tls[0], tls[1]]
        p = procs.Proc(name, list(prefix) + argv, rundir)
        m = p.wait_line(r'listening on 127\.0\.0\.1:(\d+)', 10)
        return p, int(m.group(1))

    def hold(self, url, conns, rundir, prefix=(), name='hold',
             timeout=60, h2=False):
        """Starts `weir-probe hold` (h2: h2c.py hold, weir-probe's being
        HTTP/1 only); returns (Proc, idle connections) once it says they
        are all open."""
        if h2:
            # its own -T a little under ours, so its count comes first
            argv = [sys.executable, '-I', H2C_PY, 'hold', '-c', str(conns),
                    '-u', url, '-T', _num(timeout - 5 if timeout > 10
                                          else timeout)]
            line = r'h2c hold: (\d+) idle'
        else:
            argv = [self.path, 'hold', '-c', str(conns), '-u', url]
            line = r'weir-probe hold: (\d+) idle'
        p = procs.Proc(name, list(prefix) + argv, rundir)
        m = p.wait_line(line, timeout)
        return p, int(m.group(1))


def origin_stats(port, tls=False):
    """The origin's /stats, or {} when it cannot be read."""
    try:
        status, body = procs.http_get(port, '/stats', tls)
    except (OSError, http.client.HTTPException):
        return {}
    if status != 200:
        return {}
    return parse_stats(body.decode(errors='replace'))


def _num(x):
    return ('%g' % x) if isinstance(x, float) else str(x)


def which(name):
    for d in os.environ.get('PATH', '/usr/bin:/bin').split(':') + \
            ['/usr/sbin', '/sbin']:
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None
