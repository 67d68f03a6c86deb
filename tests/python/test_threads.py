"""test_threads.py — one baton.Loader used from several threads (the defects issue, item 4): a call
from a second thread while another is inside the Loader is a UsageError, never a use of memory being
replaced; close() from another thread waits for the call in progress (whose wait gives up within
0.1 s) and leaves no thread behind; load_state_dict() from another thread during a next() is refused;
two threads iterating never get the same sample twice. Each case 20 rounds (the sanitizer build runs
this file too, with ASan and UBSan preloaded)."""
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
done()
