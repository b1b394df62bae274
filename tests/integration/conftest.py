"""Fixtures of weir's integration suite.

Environment:
  WEIR_BIN          the weir binary under test (default build/test/weir)
  WEIR_BUILD_DIR    its build directory, which holds weir_test_module.so
                    (default build/test)
  WEIR_SANITIZER=1  the binary is an ASan/UBSan build: every weir process
                    writes sanitizer reports under its prefix's logs/, and
                    any report fails the test
  WEIR_TEST_TMPDIR  where the temporary prefixes go (default: the system's
                    temporary directory); the prefix of a failed test is
                    kept there for inspection
"""

import os
import shutil
import tempfile

import pytest

import weirtest


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture(scope="session", autouse=True)
def weir_binary():
    problems = weirtest.ensure_binary()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
    return weirtest.WEIR_BIN


@pytest.fixture
def make_weir(request):
    """A factory of Weir instances, each in its own temporary prefix.

    At teardown every instance is stopped with QUIT (all its processes
    must be gone), and its logs must hold no [crit], [alert], [emerg]
    or sanitizer line beyond the patterns the test put in
    instance.allow.
    """
    instances = []
    tmp_root = os.environ.get("WEIR_TEST_TMPDIR") or None
    if tmp_root:
        os.makedirs(tmp_root, exist_ok=True)

    def make():
        # short paths: unix socket paths must fit in 108 bytes
        root = tempfile.mkdtemp(prefix="weir-", dir=tmp_root)
        # workers run as an unprivileged user when the suite runs as root
        # and reopen their logs by path (USR1): they must reach them
        os.chmod(root, 0o755)
        w = weirtest.Weir(root)
        instances.append(w)
        return w

    yield make

    errors = []
    for w in instances:
        try:
            w.stop()
        except AssertionError as exc:
            errors.append(str(exc))
        left = w.kill_all()
        if left:
            errors.append("weir processes left behind (killed): %s" % left)
        try:
            w.check_logs()
        except AssertionError as exc:
            errors.append("%s\nprefix: %s" % (exc, w.prefix))

    failed = errors or any(getattr(request.node, "rep_" + when, None)
                           is not None
                           and getattr(request.node, "rep_" + when).failed
                           for when in ("setup", "call"))
    for w in instances:
        if failed:
            print("kept prefix for inspection: %s" % w.prefix)
        else:
            shutil.rmtree(w.prefix, ignore_errors=True)

    if errors:
        pytest.fail("\n\n".join(errors), pytrace=False)


@pytest.fixture
def weir(make_weir):
    """One Weir instance (see make_weir)."""
    return make_weir()


# ---- the test origin of the proxy tests (origin.py)

@pytest.fixture
def make_origin():
    """A factory of started origin.Origin instances (keyword arguments as
    Origin takes them). At teardown every one is stopped: its listener
    and connections closed, its threads joined."""
    import origin as origin_lib

    origins = []

    def make(**kw):
        o = origin_lib.Origin(**kw)
        origins.append(o)
        return o.start()

    yield make

    errors = []
    for o in origins:
        try:
            o.stop()
        except Exception as exc:
            errors.append(str(exc))
    if errors:
        pytest.fail("\n".join(errors), pytrace=False)


@pytest.fixture
def origin(make_origin):
    """One started origin.Origin named "origin" (see make_origin)."""
    return make_origin()


@pytest.fixture
def blackhole():
    """An address whose connect() hangs (origin.BlackHole); skips the
    test when the accept queue cannot be shown full on this system."""
    import origin as origin_lib

    bh = origin_lib.BlackHole()
    try:
        if not bh.reliable or not bh.probe():
            pytest.skip("cannot make a connect() hang here: the accept "
                        "queue of a backlog-0 listener did not fill")
        yield bh
    finally:
        bh.close()


@pytest.fixture
def dns():
    """A started dnsserver.DNSServer on loopback (the resolver tests'
    names), stopped at teardown."""
    import dnsserver

    d = dnsserver.DNSServer().start()
    try:
        yield d
    finally:
        d.stop()


# ---- TLS: the test PKI (tlspki.py) and the ssl module's preamble

@pytest.fixture(scope="session")
def pki():
    """A tlspki.PKI in a temporary directory removed at the end of the
    session: a test CA and certificates generated at run time with the
    openssl CLI, each once per session (see tlspki.py)."""
    import tlspki

    tmp_root = os.environ.get("WEIR_TEST_TMPDIR") or None
    if tmp_root:
        os.makedirs(tmp_root, exist_ok=True)
    root = tempfile.mkdtemp(prefix="weir-pki-", dir=tmp_root)
    try:
        yield tlspki.PKI(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def ssl_preamble():
    """The lines a configuration needs before anything else for the ssl
    module to be there: its load_module on a dynamic build, "" when it
    is built in. Fails (never skips) when the build has neither."""
    import tlspki

    try:
        return tlspki.ssl_preamble()
    except AssertionError as exc:
        pytest.fail(str(exc), pytrace=False)


# ---- the protocol of the protocol-neutral tests (protoclient.py)

@pytest.fixture(params=["h1", "h2"])
def proto(request):
    """Runs the test over HTTP/1.1 ("h1") and over HTTP/2 ("h2"): for
    its duration protoclient.PROTO names the protocol, which the test
    file's helpers use to enable HTTP/2 and to send requests."""
    import protoclient

    protoclient.PROTO = request.param
    try:
        yield request.param
    finally:
        protoclient.PROTO = "h1"
