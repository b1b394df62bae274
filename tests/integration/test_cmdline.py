"""The command line: -v, -V, -h, -t, -q, -T, -g, -p."""

import os
import re

from weirtest import REPO, line_of, query, run_weir


def weir_version():
    with open(os.path.join(REPO, "src", "core", "weir.h")) as f:
        m = re.search(r'#define\s+WEIR_VERSION\s+"([^"]+)"', f.read())
    return m.group(1)


def output(res):
    return res.stdout + res.stderr


def test_v_prints_version():
    res = run_weir(["-v"])
    assert res.returncode == 0, res.stderr
    assert "weir/" + weir_version() in output(res)
    # -v is the short form: no build details
    assert "configure arguments" not in output(res)


def test_V_prints_build_details():
    res = run_weir(["-V"])
    assert res.returncode == 0, res.stderr
    out = output(res)
    assert "weir/" + weir_version() in out
    assert "built by" in out
    assert "configure arguments" in out
    assert "modules:" in out
    modules = out[out.index("modules:"):]
    assert re.search(r"\bweir_core_module\b", modules), out
    assert re.search(r"\bweir_epoll_module\b", modules), out


def test_h_lists_options():
    res = run_weir(["-h"])
    assert res.returncode == 0, res.stderr
    out = output(res)
    for opt in ("-v", "-V", "-t", "-T", "-q", "-s signal", "-p prefix",
                "-c filename", "-g directives"):
        assert opt in out, "%r missing from -h:\n%s" % (opt, out)
    for sig in ("stop", "quit", "reopen", "reload"):
        assert sig in out


def test_unknown_option_fails():
    res = run_weir(["-Z"])
    assert res.returncode != 0
    assert "invalid option" in res.stderr
    assert "Z" in res.stderr


def test_s_without_argument_fails():
    res = run_weir(["-s"])
    assert res.returncode != 0
    assert res.stderr.startswith("weir: ")


def test_t_good_config(weir):
    weir.conf("worker_processes 1;\n")
    res = weir.run(["-t"])
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        "weir: the configuration file %s syntax is ok" % weir.conf_path,
        "weir: configuration file %s test is successful" % weir.conf_path,
    ]
    assert weir.pidfile_pid() is None, "-t must not write the pid file"


def test_t_q_prints_nothing_on_success(weir):
    weir.conf("worker_processes 1;\n")
    res = weir.run(["-t", "-q"])
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    assert res.stderr == ""


def test_t_q_still_reports_errors(weir):
    weir.allow.append(r"\[emerg\]")
    path = weir.conf("bogus_directive 1;\n")
    res = weir.run(["-t", "-q"])
    assert res.returncode == 1
    assert ('weir: [emerg] unknown directive "bogus_directive" in %s:%d'
            % (path, line_of(path, "bogus"))) in res.stderr.splitlines()


def test_T_dumps_config_and_includes(weir):
    inc = weir.write("conf/extra.conf", "# included file\n"
                     "worker_rlimit_nofile 1024;\n")
    path = weir.conf("worker_processes 1;\ninclude extra.conf;\n")
    res = weir.run(["-T"])
    assert res.returncode == 0, res.stderr
    assert "syntax is ok" in res.stderr
    assert "test is successful" in res.stderr
    with open(path) as f:
        main_text = f.read()
    with open(inc) as f:
        inc_text = f.read()
    # nginx's form: "# configuration file PATH:" then the text
    assert "# configuration file %s:" % path in res.stdout
    assert "# configuration file %s:" % inc in res.stdout
    assert main_text in res.stdout
    assert inc_text in res.stdout
    assert res.stdout.index(path) < res.stdout.index(inc)


def test_g_directives_take_effect(weir):
    port = weir.port()
    weir.conf("test_listen 127.0.0.1:%d;\n" % port, module=True)
    weir.start(args=["-g", "worker_processes 3;"], workers=3)
    assert len(weir.workers()) == 3
    assert query(port)["value"] == 0


def test_g_duplicate_of_file_directive(weir):
    weir.allow.append(r"\[emerg\]")
    weir.conf("worker_processes 1;\n")
    res = weir.run(["-t", "-g", "worker_processes 2;"])
    assert res.returncode == 1
    assert '"worker_processes" directive is duplicate' in res.stderr


def test_p_prefix_resolves_relative_paths(weir):
    # relative -c, pid and error_log paths all resolve against -p, with or
    # without a trailing slash, whatever the current directory
    port = weir.port()
    weir.conf("error_log logs/other.log info;\n"
              "pid logs/other.pid;\n"
              "test_listen 127.0.0.1:%d;\n" % port, module=True)
    for prefix in (weir.prefix, weir.prefix + "/"):
        res = run_weir(["-t", "-c", "conf/weir.conf"], prefix=prefix)
        assert res.returncode == 0, res.stderr
        assert ("weir: the configuration file %s syntax is ok"
                % weir.conf_path) in res.stderr.splitlines()

    weir.pid_path = weir.path("logs", "other.pid")
    weir.error_log = weir.path("logs", "other.log")
    weir.start()
    assert os.path.exists(weir.path("logs", "other.pid"))
    weir.wait_log(r"test module worker 0 started")


def test_c_missing_file(weir):
    weir.allow.append(r"\[emerg\]")
    missing = weir.path("conf", "missing.conf")
    res = run_weir(["-t", "-c", missing], prefix=weir.prefix)
    assert res.returncode == 1
    lines = res.stderr.splitlines()
    assert any(line.startswith('weir: [emerg] open() "%s" failed '
                               '(2: No such file or directory)' % missing)
               for line in lines), res.stderr
    assert "weir: configuration file %s test failed" % missing in lines
