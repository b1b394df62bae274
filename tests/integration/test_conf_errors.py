"""Configuration errors: `weir -t` on a bad configuration prints the
canonical [emerg] line naming file and line, then "test failed", and
exits 1."""

import re

import pytest

from weirtest import BADABI_MODULE, TEST_MODULE, query, run_weir


HEAD = "error_log logs/error.log info;\n"


def t_fails(weir, text, name="weir.conf"):
    """Writes text verbatim (no preamble), runs -t, checks the failure
    lines and returns (conf path, stderr lines)."""
    weir.allow.append(r"\[emerg\]")
    path = weir.conf(text, preamble=False, events=False, name=name)
    res = run_weir(["-t", "-c", path], prefix=weir.prefix, env=weir.env())
    lines = res.stderr.splitlines()
    assert res.returncode == 1, res.stderr
    assert "weir: configuration file %s test failed" % path in lines, \
        res.stderr
    assert "syntax is ok" not in res.stderr
    return path, lines


def expect(weir, text, reason, line):
    path, lines = t_fails(weir, text)
    want = "weir: [emerg] %s in %s:%d" % (reason, path, line)
    assert want in lines, "want %r in:\n%s" % (want, "\n".join(lines))


CASES = [
    ("unknown_directive",
     HEAD + "events {\n}\nfoo bar;\n",
     'unknown directive "foo"', 4),

    ("not_allowed_here",
     HEAD + "events {\n    worker_processes 2;\n}\n",
     '"worker_processes" directive is not allowed here', 3),

    ("no_arguments",
     HEAD + "daemon;\nevents {\n}\n",
     'invalid number of arguments in "daemon" directive', 2),

    ("too_many_arguments",
     HEAD + "events {\n}\ndaemon on off;\n",
     'invalid number of arguments in "daemon" directive', 4),

    ("duplicate",
     HEAD + "daemon off;\n\ndaemon off;\nevents {\n}\n",
     '"daemon" directive is duplicate', 4),

    ("flag_value",
     HEAD + "daemon maybe;\nevents {\n}\n",
     'invalid value "maybe" in "daemon" directive, it must be "on" or "off"',
     2),

    ("setter_invalid_value",
     HEAD + "events {\n    worker_connections many;\n}\n",
     '"worker_connections" directive invalid value', 3),

    # no final newline: the end of file is on the last line itself
    ("eof_expecting_brace",
     HEAD + "events {\n    worker_connections 16;",
     'unexpected end of file, expecting "}"', 3),

    ("eof_expecting_semicolon",
     HEAD + "events {\n}\ndaemon off",
     'unexpected end of file, expecting ";" or "}"', 4),

    ("unexpected_close_brace",
     HEAD + "events {\n}\n}\n",
     'unexpected "}"', 4),

    ("unexpected_close_brace_in_args",
     HEAD + "events {\n}\ndaemon off }\n",
     'unexpected "}"', 4),

    ("unexpected_open_brace",
     HEAD + "events {\n}\n{\n}\n",
     'unexpected "{"', 4),

    ("unexpected_semicolon",
     HEAD + "events {\n}\n;\n",
     'unexpected ";"', 4),

    ("block_without_brace",
     HEAD + "events;\n",
     'directive "events" has no opening "{"', 2),
]


@pytest.mark.parametrize("text,reason,line", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_canonical_error(weir, text, reason, line):
    expect(weir, text, reason, line)


def test_error_also_goes_to_the_startup_log(weir):
    expect(weir, HEAD + "events {\n}\nfoo bar;\n", 'unknown directive "foo"',
           4)
    # the log named on the command line's prefix (logs/error.log) gets the
    # same line with a time stamp
    log = weir.log()
    assert re.search(r'\[emerg\] \d+#\d+: unknown directive "foo" in %s:4'
                     % re.escape(weir.conf_path), log), log


def test_unexpected_end_of_parameter_in_g(weir):
    weir.allow.append(r"\[emerg\]")
    path = weir.conf(HEAD + "events {\n}\n", preamble=False, events=False)
    res = run_weir(["-t", "-c", path, "-g", "worker_processes 2"],
                   prefix=weir.prefix, env=weir.env())
    assert res.returncode == 1
    assert any(line.startswith('weir: [emerg] unexpected end of parameter, '
                               'expecting ";" in ')
               for line in res.stderr.splitlines()), res.stderr


def test_missing_include(weir):
    missing = weir.path("conf", "missing.conf")
    expect(weir, HEAD + "events {\n}\ninclude missing.conf;\n",
           'open() "%s" failed (2: No such file or directory)' % missing, 4)


def test_error_inside_included_file_names_that_file(weir):
    weir.write("conf/conf.d/a.conf", "worker_processes 2;\n")
    bad = weir.write("conf/conf.d/b.conf", "# second file\nfoo;\n")
    path, lines = t_fails(weir, HEAD + "include conf.d/*.conf;\n"
                          "events {\n}\n")
    assert 'weir: [emerg] unknown directive "foo" in %s:2' % bad in lines, \
        "\n".join(lines)


def test_include_glob_reads_every_match(weir):
    port = weir.port()
    weir.write("conf/conf.d/a.conf", "test_value 42;\n")
    weir.write("conf/conf.d/b.conf", "test_listen 127.0.0.1:%d;\n" % port)
    weir.conf("include conf.d/*.conf;\n", module=True)
    res = weir.run(["-t"])
    assert res.returncode == 0, res.stderr
    # the helper finds listeners in weir.conf only: name it
    weir.conf_text += "test_listen 127.0.0.1:%d;\n" % port
    weir.start()
    assert query(port)["value"] == 42


def test_include_glob_without_match_is_fine(weir):
    weir.conf("include conf.d/*.conf;\n")
    res = weir.run(["-t"])
    assert res.returncode == 0, res.stderr


def test_load_module_missing_file(weir):
    missing = weir.path("modules", "weir_nope_module.so")
    path, lines = t_fails(weir, "load_module %s;\n" % missing + HEAD
                          + "events {\n}\n")
    prefix = 'weir: [emerg] dlopen() "%s" failed (' % missing
    suffix = ") in %s:1" % path
    assert any(line.startswith(prefix) and line.endswith(suffix)
               for line in lines), "\n".join(lines)


def test_load_module_relative_path_uses_prefix(weir):
    path, lines = t_fails(weir, "load_module modules/nope.so;\n" + HEAD
                          + "events {\n}\n")
    want = 'weir: [emerg] dlopen() "%s" failed (' \
        % weir.path("modules", "nope.so")
    assert any(line.startswith(want) for line in lines), "\n".join(lines)


def test_load_module_bad_abi(weir):
    path, lines = t_fails(weir, "load_module %s;\n" % BADABI_MODULE + HEAD
                          + "events {\n}\n")
    bad = [line for line in lines if "is not binary compatible" in line]
    assert bad, "\n".join(lines)
    line = bad[0]
    assert line.startswith("weir: [emerg] ")
    assert line.endswith(" in %s:1" % path)
    assert BADABI_MODULE in line
    assert '"weir-abi=999,ptr=8,debug=0,ssl=0,pcre2=0"' in line
    # weir's own signature, as -V shows it
    version = run_weir(["-V"])
    m = re.search(r"^module abi signature: (\S+)$",
                  version.stdout + version.stderr, re.M)
    if m:
        assert '"%s"' % m.group(1) in line, line
    sigs = re.findall(r"weir-abi=\d+,ptr=\d+,debug=[01],ssl=[01],pcre2=[01]",
                      line)
    assert len(set(sigs)) == 2, "both signatures must be named: " + line


def test_load_module_too_late(weir):
    expect(weir, HEAD + "events {\n}\nload_module %s;\n" % TEST_MODULE,
           '"load_module" directive is specified too late', 4)


def test_load_module_twice(weir):
    t_fails(weir, "load_module %s;\nload_module %s;\n"
            % (TEST_MODULE, TEST_MODULE) + HEAD + "events {\n}\n")


def test_module_directive_unknown_without_load_module(weir):
    expect(weir, HEAD + "test_value 1;\nevents {\n}\n",
           'unknown directive "test_value"', 2)


def test_module_directive_invalid_value(weir):
    expect(weir, "load_module %s;\n" % TEST_MODULE + HEAD
           + "test_value abc;\nevents {\n}\n",
           '"test_value" directive invalid value', 3)


def test_unknown_directive_in_events(weir):
    expect(weir, HEAD + "events {\n    bogus on;\n}\n",
           'unknown directive "bogus"', 3)
