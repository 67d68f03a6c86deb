"""harness.py — the Python module's tests count checks the way tests/unit/check.h does: check(cond,
what) records a failure and goes on; done() prints "N passed, N failed, N skipped" and exits 1 when
a check failed (77 when a part was skipped). tests/cli/test_python.sh runs each tests/python/test_*.py
with /usr/bin/python3 against the build under test ($BATON_BUILD/python on PYTHONPATH)."""
import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback

passed = failed = skipped = 0
BATON = os.environ.get("BATON", "build/baton")
# the build under test, as an absolute path (the tests run from tests/python)
BUILD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", os.environ.get("BATON_BUILD", "build"))
TMP = tempfile.mkdtemp(prefix="baton-py-")


def _remove_tmp():
    if os.environ.get("BATON_KEEP_TMP") != "1":
        shutil.rmtree(TMP, ignore_errors=True)


atexit.register(_remove_tmp)   # also when a test ends by an exception or sys.exit before done()
SAN = "build-san" in os.environ.get("BATON_BUILD", "")   # the sanitizer build: slower, fewer rounds


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        where = traceback.extract_stack(limit=2)[0]
        print("FAIL: %s:%d: %s" % (os.path.basename(where.filename), where.lineno, what), file=sys.stderr,
              flush=True)
    return cond


def skip(why):
    global skipped
    skipped += 1
    print("skip - %s" % why, flush=True)


def raises(exc, fn, *args, match=None, **kw):
    """The exception fn raised when it is an exc (and its text holds match), else None."""
    try:
        fn(*args, **kw)
    except exc as e:
        return e if match is None or match in str(e) else None
    except Exception as e:  # the wrong one: say which
        print("  (raised %s: %s)" % (type(e).__name__, e), file=sys.stderr)
        return None
    return None


# A test started in the background of a non-interactive shell (`cmd &`) inherits SIGINT ignored,
# and so would every Python it starts — which then never raises KeyboardInterrupt, the very thing
# the Ctrl-C tests check. A handler of our own is reset to the default at exec, so children start
# as they would from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def run(*cmd, **kw):
    """A command's CompletedProcess (text output)."""
    return subprocess.run(list(cmd), capture_output=True, text=True, **kw)


def baton(*args, **kw):
    return run(BATON, *args, **kw)


def pack(out, split="test", *extra):
    r = baton("pack", "--from", "fashion-mnist", "--split", split, "--out", out, "--shard-mb", "1", "--quiet", *extra)
    if r.returncode:
        raise SystemExit("pack failed: " + r.stderr)
    return out


def sample_lines(b, rank):
    """A baton.Loader batch as `baton train --sample-log`'s lines: epoch, position, rank, label and
    the CRC32C of the sample's input bytes, as strings (import baton first)."""
    import baton
    x = b.images.reshape(len(b.labels), -1)
    return [[str(b.epoch), str(int(b.positions[i])), str(rank), str(int(b.labels[i])),
             "%08x" % baton.crc32c(x[i].tobytes())] for i in range(len(b.labels))]


def done():
    _remove_tmp()
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped), flush=True)
    sys.exit(1 if failed else 77 if skipped else 0)
