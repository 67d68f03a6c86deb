"""test_threads.py — one baton.Loader used from several threads (the defects issue, item 4), and a
Loader or Checkpoints inherited by a forked child (item 6). Threads: a call
from a second thread while another is inside the Loader is a UsageError, never a use of memory being
replaced; close() from another thread waits for the call in progress (whose wait gives up within
0.1 s) and leaves no thread behind; load_state_dict() from another thread during a next() is refused;
two threads iterating never get the same sample twice. Each case 20 rounds (the sanitizer build runs
this file too, with ASan and UBSan preloaded). Fork: a child that closes a live Loader, uses it, or
exits with it open ends cleanly (a UsageError for the use), never joining threads it does not have;
a child that closes the parent's Checkpoints while the parent's save is in flight leaves the
parent's lock, folder and save intact."""
import os
import threading
import time

import baton
from harness import TMP, check, done, pack

FM = pack(os.path.join(TMP, "fm"))
ROUNDS = 20


def tasks():
    return len(os.listdir("/proc/self/task"))


def iterate(l, stop, got, errs, count=None):
    try:
        while not stop.is_set():
            empty = True
            for b in l:
                empty = False
                got.extend(int(p) for p in b.positions)
                if stop.is_set() or (count and len(got) >= count):
                    return
            if empty:   # the last epoch is over
                return
    except baton.Error as e:
        errs.append(e)


base = tasks()
# 1. close() from another thread while the first next() opens the pipeline, or while it waits
crashes, wrong = 0, []
for r in range(ROUNDS):
    l = baton.Loader(FM, batch=64, epochs=None, threads=2)
    stop, got, errs = threading.Event(), [], []
    t = threading.Thread(target=iterate, args=(l, stop, got, errs))
    t.start()
    time.sleep(0.001 * (r % 5))
    l.close()   # waits for the call in progress
    stop.set()
    t.join(10)
    crashes += t.is_alive()
    wrong += [e for e in errs if not isinstance(e, baton.UsageError)]
check(crashes == 0 and not wrong, "close() from another thread: the iterating thread ends (%d hung), with UsageError at most: %s"
      % (crashes, wrong[:2]))
time.sleep(0.2)
check(tasks() <= base, "no thread left after close(): %d threads, %d before" % (tasks(), base))

# 2. several threads closing while one iterates
for r in range(ROUNDS):
    l = baton.Loader(FM, batch=64, epochs=None, threads=2)
    stop, got, errs = threading.Event(), [], []
    t = threading.Thread(target=iterate, args=(l, stop, got, errs))
    t.start()
    closers = [threading.Thread(target=l.close) for _ in range(3)]
    [c.start() for c in closers]
    [c.join(10) for c in closers]
    stop.set()
    t.join(10)
    crashes += t.is_alive() + sum(c.is_alive() for c in closers)
check(crashes == 0, "three closers and an iterator: every thread ends")
try:
    l.close()
    closed_ok = True
except baton.Error:
    closed_ok = False
check(closed_ok, "close() of a closed Loader is harmless")

# 3. load_state_dict from another thread during next(): refused while the call is in progress
refused = applied = 0
for r in range(ROUNDS):
    l = baton.Loader(FM, batch=64, epochs=None, threads=2)
    state = l.state_dict()
    stop, got, errs = threading.Event(), [], []
    t = threading.Thread(target=iterate, args=(l, stop, got, errs))
    t.start()
    time.sleep(0.002 * (r % 5))
    try:
        l.load_state_dict(state)
        applied += 1
    except baton.UsageError:
        refused += 1
    stop.set()
    t.join(10)
    crashes += t.is_alive()
    l.close()
check(crashes == 0 and refused + applied == ROUNDS, "load_state_dict from another thread: refused %d, applied between calls %d"
      % (refused, applied))

# 4. two threads iterating one epoch: no sample twice, every sample once
dups = missing = 0
for r in range(ROUNDS // 4):
    l = baton.Loader(FM, batch=64, epochs=1, threads=2)
    stop, got, errs = threading.Event(), [], []
    ts = [threading.Thread(target=iterate, args=(l, stop, got, errs)) for _ in range(2)]
    [t.start() for t in ts]
    [t.join(30) for t in ts]
    # the second thread's UsageErrors end its loop early; then the first finishes the epoch
    if len(got) < 10000 and not stop.is_set():
        iterate(l, stop, got, errs)
    dups += len(got) - len(set(got))
    missing += 10000 - len(set(got))
    l.close()
check(dups == 0, "two threads iterating: %d samples delivered twice" % dups)
check(missing == 0, "the epoch still completes: %d samples missing" % missing)

# 5. fork: the child never touches the parent's threads, locks or folders
import numpy as np
import sys


def in_child(fn):
    """fn() in a forked child: its exit status (0: fn returned; 3: fn raised; a signal: negative)."""
    pid = os.fork()
    if pid == 0:
        try:
            fn()
            code = 0
        except BaseException as e:   # noqa: B902 - the child reports everything as its status
            print("child: %r" % e, file=sys.stderr, flush=True)
            code = 3
        sys.stdout.flush()
        os._exit(code)
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st)


def use_in_child(l):
    try:
        next(iter(l))
    except baton.UsageError as e:
        if "forked child" in str(e):
            return
    raise AssertionError("no UsageError")


bad = []
for r in range(ROUNDS):
    l = baton.Loader(FM, batch=64, epochs=None, threads=2)
    it = iter(l)
    held = next(it)   # the pipeline's threads run; a batch is held
    for what, fn in (("close", l.close), ("use", lambda: use_in_child(l)), ("exit", lambda: None)):
        code = in_child(fn)
        if code != 0:
            bad.append((what, code))
    nxt = next(it)
    if len(nxt.labels) != 64:
        bad.append(("parent", len(nxt.labels)))
    del held, nxt
    l.close()
check(not bad, "a child closing, using or leaving open the parent's Loader ends cleanly, and the parent goes on: %s" % bad[:4])
pid = os.fork()
if pid == 0:   # a child that exits through the interpreter's own finalisation with a live Loader
    l = baton.Loader(FM, batch=64, epochs=None)
    next(iter(l))
    if os.fork() == 0:
        sys.exit(0)   # the grandchild: finalisation frees l, which is its parent's
    os.wait()
    os._exit(0)
_, st = os.waitpid(pid, 0)
check(os.waitstatus_to_exitcode(st) == 0, "finalisation in a child with a live Loader: status %d" % os.waitstatus_to_exitcode(st))

bad = []
for r in range(ROUNDS):
    d = os.path.join(TMP, "ck-fork-%d" % r)
    ck = baton.Checkpoints(d, keep=2)
    ck.save(1, {"w": np.arange(1 << 20, dtype=np.float32)}, {"r": r})   # in the background
    code = in_child(ck.close)
    if code != 0:
        bad.append(("child close", code))
    if in_child(lambda: ck.save(2, {"w": np.zeros(1, dtype=np.float32)}, {})) != 3:
        bad.append("a child's save was not refused")
    if not os.path.exists(os.path.join(d, ".lock")):
        bad.append("the parent's lock is gone")
    ck.wait()
    got = ck.load()
    if got is None or got.step != 1 or got.state.get("r") != r:
        bad.append(("load", got and got.step))
    ck.close()
check(not bad, "a child closing the parent's Checkpoints mid-save: the parent's lock, folder and save intact: %s" % bad[:4])
done()
