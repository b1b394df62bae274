"""Pure figures: medians, the ramp's sustainable and peak steps, and
same-run ratios. No processes, no files: tests/integration/test_bench.py
checks these."""


def median(values):
    """The median of the values that are not None; None if none."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2.0


def meets(step, p99_ms):
    """The objective: something measured, zero errors, p99 <= p99_ms."""
    return (bool(step.get('requests')) and step.get('errors', 1) == 0
            and step.get('p99_us') is not None
            and step['p99_us'] <= p99_ms * 1000.0)


def sustainable(steps, p99_ms):
    """The highest step (by concurrency) that meets the objective, or
    None. steps: dicts with conns, requests, errors, p99_us, rps."""
    ok = [s for s in steps if meets(s, p99_ms)]
    return max(ok, key=lambda s: s['conns']) if ok else None


def peak(steps):
    """The step with the highest throughput, or None."""
    ok = [s for s in steps if s.get('rps') is not None]
    return max(ok, key=lambda s: s['rps']) if ok else None


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def ratio_median(a_by_repeat, b_by_repeat):
    """The median over repeats of a[r] / b[r]: both products measured
    in the same repeat, next to each other, so the machine's drift
    cancels in each ratio before the median. Dicts repeat -> value."""
    return median(ratio(a_by_repeat.get(r), b_by_repeat[r])
                  for r in b_by_repeat)


def rotate(items, r):
    """The turn order of repeat r: A B C, then B C A, then C A B, ..."""
    items = list(items)
    if not items:
        return items
    r %= len(items)
    return items[r:] + items[:r]


def per_request(delta, requests):
    """delta / requests, or None when nothing was measured."""
    if delta is None or not requests:
        return None
    return delta / requests


def check(op, value, threshold):
    """True / False for a goal's comparison; None if value is None."""
    if value is None:
        return None
    if op == '>=':
        return value >= threshold
    if op == '<=':
        return value <= threshold
    if op == 'within':
        return abs(value - 1.0) <= threshold
    raise ValueError(op)


# the error kinds of a weir-probe row, in the order its report gives them
_ERROR_KINDS = (('connect', 'err_connect'), ('timeout', 'err_timeout'),
                ('read', 'err_read'), ('write', 'err_write'),
                ('refused', 'err_refused'), ('4xx', 'status_4xx'), ('5xx', 'status_5xx'),
                ('other status', 'status_other'))


def without_refused(row):
    """row with its refused HTTP/2 streams (REFUSED_STREAM, or above a
    GOAWAY's last-stream-id: a client retries them) out of its errors:
    what a reload must not lose."""
    refused = row.get('err_refused') or 0
    if not refused:
        return row
    out = dict(row)
    out['errors'] = (row.get('errors') or 0) - refused
    out['err_refused'] = 0
    return out


def smoke_problem(row):
    """Why a measured row of a smoke run shows a product not working, or
    None. A smoke run judges no speed, but every step of it is light
    enough that a working proxy answers it whole: any error (a 4xx or
    5xx answer, a truncated body, a timeout, a refused connection) or no
    2xx answer at all means the product, its configuration or the
    harness is broken. row: weir-probe's CSV (parse_csv) or the dict of
    parse_wrk / parse_h2load (errors, requests only)."""
    if not row:
        return 'no result'
    errors = row.get('errors')
    if errors:
        kinds = ['%s %s' % (name, row[col]) for name, col in _ERROR_KINDS
                 if row.get(col)]
        return '%s error(s)%s' % (errors, ' (%s)' % ', '.join(kinds)
                                  if kinds else '')
    if not row.get('requests'):
        return 'no request succeeded'
    if 'status_2xx' in row and not row['status_2xx']:
        return 'no 2xx answer'
    return None
