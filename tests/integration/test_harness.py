"""The suite's own teardown check (weirtest.Weir.check_logs): which log
lines fail a test and how a test allows one. No weir is started: the
lines are written into a prefix's logs by hand."""

import pytest

import weirtest


LINES = {
    "crit": "2026/01/01 00:00:00 [crit] 7#7: *3 accept4() failed (24: Too "
            "many open files)",
    "alert": "2026/01/01 00:00:00 [alert] 6#6: worker process 7 exited on "
             "signal 9",
    "emerg": "2026/01/01 00:00:00 [emerg] 6#6: unknown directive \"x\" in "
             "/p/conf/weir.conf:1",
    "error": "2026/01/01 00:00:00 [error] 7#7: *3 open() \"/p/html/x\" "
             "failed (2: No such file or directory)",
    "warn": "2026/01/01 00:00:00 [warn] 7#7: 1024 worker_connections are "
            "not enough",
}


def logged(weir, *names):
    with open(weir.error_log, "w") as f:
        for n in names:
            f.write(LINES[n] + "\n")


@pytest.mark.parametrize("level", ["crit", "alert", "emerg"])
def test_teardown_fails_on_a_bad_level(weir, level):
    logged(weir, "error", level, "warn")
    with pytest.raises(AssertionError) as e:
        weir.check_logs()
    assert LINES[level] in str(e.value)
    assert LINES["error"] not in str(e.value)
    # the test's own teardown must not fail on what this test wrote
    open(weir.error_log, "w").close()


@pytest.mark.parametrize("level", ["crit", "alert", "emerg"])
def test_teardown_allows_a_line_the_test_names(weir, level):
    logged(weir, level)
    weir.allow.append(r"\[%s\]" % level)
    weir.check_logs()


def test_teardown_passes_error_and_warn(weir):
    logged(weir, "error", "warn")
    weir.check_logs()
    assert weirtest.bad_lines([weir.error_log]) == []
