"""benchlib: the pieces of weir's benchmark harness (bench/run).

    arms      what is measured: arms, suites and goals, as data
    products  who is measured: weir, the peers, the direct ceiling
    template  the tiny template language of bench/peers/
    procs     processes: start, wait, stop; CPU time and RSS from /proc
    probe     weir-probe (client, origin, hold), wrk, h2load; CSV parsing
    tlsgen    the per-run CA and leaf certificate (openssl CLI)
    stats     pure figures: medians, ramp selection, ratios
    runner    runs suites and collects rows
    report    results.csv, summary.md and the goals
"""
