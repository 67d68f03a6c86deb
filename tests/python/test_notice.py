"""test_notice.py — baton.Notice against `baton imds` (the metadata emulator): a spot interruption
and a rebalance recommendation seen through IMDSv2; SIGTERM and Ctrl-C as notices while it is open
(and Ctrl-C a KeyboardInterrupt again once it is closed, or with signals=False); a garbage-answering
service is never a notice; wait() times out. Closing — on the thread that made it or another, by
close() or by dropping it, before or after a signal came — gives back exactly the handlers and the
signal masks of before (the defects issue, item 5): 20 rounds of each."""
import os
import subprocess
import sys
import textwrap
import time

import baton
from harness import BATON, check, done, run


def imds(*args):
    p = subprocess.Popen([BATON, "imds", "--listen", "127.0.0.1:0", *args], stdout=subprocess.PIPE, text=True)
    url = p.stdout.readline().strip().split()[-1]
    return p, url


p, url = imds("--interrupt-after", "1", "--imdsv2-only")
try:
    n = baton.Notice(endpoint=url, poll=0.1, signals=False)
    check(not n and n.event is None and "ec2" in n.watching, "no notice yet; watching %s" % n.watching)
    t0 = time.time()
    ev = n.wait(10)
    check(ev is not None and ev["kind"] == "terminate" and ev["source"] == "imds-v2" and time.time() - t0 < 5,
          "the interruption through IMDSv2: %s" % ev)
    check(bool(n) and n.event["kind"] == "terminate" and 100 < ev["seconds_left"] <= 121, "latched: %s" % n.event)
    n.close()
    check(n.event["kind"] == "terminate", "still readable after close")
finally:
    p.kill()

p, url = imds("--rebalance-after", "0.5")
try:
    with baton.Notice(endpoint=url, poll=0.1, signals=False) as n:
        ev = n.wait(10, rebalance=True)
        check(ev is not None and ev["kind"] == "rebalance" and not n, "a rebalance recommendation, not a stop: %s" % ev)
finally:
    p.kill()

p, url = imds("--garbage", "--interrupt-after", "0")
try:
    with baton.Notice(endpoint=url, poll=0.05, signals=False) as n:
        t0 = time.time()
        ev = n.wait(1.0)
        check(ev is None and not n and time.time() - t0 < 3, "garbage answers are never a notice")
finally:
    p.kill()

with baton.Notice(endpoint="http://127.0.0.1:9", poll=0.05, signals=False) as n:
    t0 = time.time()
    check(n.wait(0.3) is None and time.time() - t0 < 2, "wait(0.3) with nothing to see: None")

SIG = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, %r)
    import baton
    baton.Notice(signals=True).close()   # closed before any signal: Python's Ctrl-C is back
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(2)
        print("no interrupt")
    except KeyboardInterrupt:
        print("KeyboardInterrupt after close")
    n = baton.Notice(signals=True)
    os.kill(os.getpid(), signal.%s)
    ev = n.wait(5)
    print(ev["kind"], ev["source"], bool(n), flush=True)
    sys.exit(baton.EXIT_INTERRUPTED)
""")
here = os.path.dirname(baton.__file__) + "/.."
for sig, kind in (("SIGTERM", "sigterm"), ("SIGINT", "sigint")):
    r = run(sys.executable, "-c", SIG % (here, sig), timeout=30)
    lines = r.stdout.split("\n") + [""]
    check(lines[0] == "KeyboardInterrupt after close", "Python's Ctrl-C back after close: %s" % lines)
    check(r.returncode == 75 and lines[1] == "%s %s True" % (kind, kind), "%s while a Notice is open is a notice: %s %s" % (
        sig, r.stdout, r.stderr[-300:]))

PLAIN = textwrap.dedent("""
    import os, signal, sys, threading
    sys.path.insert(0, %r)
    import baton
    n = baton.Notice(endpoint="http://127.0.0.1:9", signals=False)
    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    try:
        n.wait()
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
""")
t0 = time.time()
r = run(sys.executable, "-c", PLAIN % here, timeout=30)
check(r.stdout.strip() == "KeyboardInterrupt" and time.time() - t0 < 10,
      "signals=False: Ctrl-C interrupts wait() (%s %s)" % (r.stdout, r.stderr[-300:]))
check(baton.EXIT_INTERRUPTED == 75, "EXIT_INTERRUPTED is 75")

# Closing gives back exactly what was there: the main thread's mask (a Notice closed or dropped on
# another thread used to leave SIGTERM and SIGINT blocked in it, so the process ignored both), and
# the handlers, also after a signal came (every later Ctrl-C and SIGTERM used to be ignored).
BACK = textwrap.dedent("""
    import os, signal, sys, threading, time
    sys.path.insert(0, %r)
    import baton
    ROUNDS = 20
    SIGS = {signal.SIGTERM, signal.SIGINT}
    def mask():
        return signal.pthread_sigmask(signal.SIG_BLOCK, []) & SIGS
    got = []
    def mine(s, f):
        got.append(s)
    def ctrl_c():   # True when Ctrl-C is Python's KeyboardInterrupt again, in this thread
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(200):
                time.sleep(0.01)
        except KeyboardInterrupt:
            return True
        return False
    def closer(n, how):
        if how == "close":
            n[0].close()
        n.clear()   # the last reference: dropped on this thread
    bad = {"mask": 0, "ctrl-c": 0, "handler": 0, "term": 0, "event": 0}
    signal.signal(signal.SIGTERM, mine)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT), mask()
    for r in range(ROUNDS):
        for how in ("close", "drop"):                # closed on another thread
            n = [baton.Notice(signals=True)]
            t = threading.Thread(target=closer, args=(n, how))
            t.start()
            t.join()
            bad["mask"] += mask() != before[2]
            bad["handler"] += (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) != before[:2]
            bad["ctrl-c"] += not ctrl_c()
        for sig in (signal.SIGTERM, signal.SIGINT):  # a signal came, then closed (here or elsewhere)
            n = baton.Notice(signals=True)
            os.kill(os.getpid(), sig)
            ev = n.wait(5)
            bad["event"] += ev is None or ev["kind"] != ("sigterm" if sig == signal.SIGTERM else "sigint")
            if r %% 2:
                n.close()
            else:
                t = threading.Thread(target=closer, args=([n], "close"))
                t.start()
                t.join()
            del n
            bad["mask"] += mask() != before[2]
            bad["handler"] += (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) != before[:2]
            bad["ctrl-c"] += not ctrl_c()
            del got[:]
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(200):
                if got:
                    break
                time.sleep(0.01)
            bad["term"] += got != [signal.SIGTERM]
    print(" ".join("%%s=%%d" %% kv for kv in sorted(bad.items())), flush=True)
    # and with the default SIGTERM: after a notice and close, SIGTERM ends the process again
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    n = baton.Notice(signals=True)
    os.kill(os.getpid(), signal.SIGTERM)
    n.wait(5)
    n.close()
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    print("SIGTERM ignored", flush=True)
""")
r = run(sys.executable, "-c", BACK % here, timeout=300)
out = r.stdout.split("\n")
check(out[0] == "ctrl-c=0 event=0 handler=0 mask=0 term=0",
      "20 rounds: a Notice closed or dropped on another thread, or closed after a signal, gives back the "
      "masks and handlers (Ctrl-C a KeyboardInterrupt, SIGTERM the program's handler): %s %s" % (r.stdout, r.stderr[-500:]))
check(r.returncode == -15 and "SIGTERM ignored" not in r.stdout,
      "after a SIGTERM notice and close, the default SIGTERM ends the process again (exit %s)" % r.returncode)
done()
