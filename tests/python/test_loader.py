"""test_loader.py — baton.Loader on local data: exactly the samples `baton train --sample-log`
trains on, in each mode (mount, file, cache, pipe); rank/world parts that make up the W = 1
batches; an exact resume from state_dict(); no shuffle; normalisation and layouts; zero-copy
batches that outlive a pipeline; bad input as baton.Error (never a crash or a hang); Ctrl-C while
waiting; 1,000 open/iterate/close cycles without growth; a DataLoader around it; world > batch
refused, prefetch buffers over 1 GiB a warning naming their size, the Loader's state read from a
signal handler while next() waits (the defects issue, item 8).
(Over HTTP and S3 servers: tests/servers/test_python.sh.)"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np

import baton
from harness import TMP, baton as cli, check, done, pack, raises, run, sample_lines, SAN

FM = pack(os.path.join(TMP, "fm"))
N = 10000


def sample_log(mode, steps, batch=64, seed=7, extra=()):
    """What baton train trains on: lines "epoch position rank label crc" (mlp: the fastest model)."""
    d = os.path.join(TMP, "train-%s-%d" % (mode, seed))
    log = d + ".samples"
    r = cli("train", "--data", FM, "--model", "mlp", "--epochs", "2", "--batch", str(batch), "--seed", str(seed),
            "--mode", mode, "--ckpt-dir", d, "--max-steps", str(steps), "--sample-log", log, "--quiet", "--threads", "1",
            *extra)
    check(r.returncode == 0, "baton train --mode %s: %s" % (mode, r.stderr))
    with open(log) as f:
        return [l.split() for l in f]


def loader_lines(l, count, rank=0):
    out = []
    while len(out) < count:
        got = False
        for b in l:
            got = True
            out += sample_lines(b, rank)
            if len(out) >= count:
                break
        if not got:
            break
    return out[:count]


# ---- parity with baton train, mode by mode (mount and file share the indexed order, pipe the streamed one)
steps = 200   # 1.27 epochs of 157 batches
for mode in ("mount", "file", "cache", "pipe"):
    ref = sample_log(mode, steps)
    kw = {"local_dir": os.path.join(TMP, "copy-" + mode)} if mode in ("file", "cache") else {}
    with baton.Loader(FM, mode=mode, batch=64, seed=7, epochs=2, **kw) as l:
        got = loader_lines(l, len(ref))
    check(len(ref) == 12752, "%s: train logged %d samples" % (mode, len(ref)))
    check(got == ref, "%s: the Loader yields exactly what baton train trained on (first difference at %s)" % (
        mode, next((i for i, (a, b) in enumerate(zip(got, ref)) if a != b), len(got))))

# ---- file mode: the copy filled while epoch 0 reads it (the default), or downloaded first
# (download_first=True, SageMaker's File mode): the same batches; the store's bytes once, in epoch 0
# or at the open
runs = {}
for first in (False, True):
    with baton.Loader(FM, mode="file", batch=64, seed=7, epochs=2, download_first=first,
                      local_dir=os.path.join(TMP, "fill-%d" % first)) as l:
        labels = [b.labels.copy() for b in l]
        runs[first] = (labels, l.stats())
(la, sa), (lb, sb) = runs[False], runs[True]
check(len(la) == len(lb) and all(np.array_equal(a, b) for a, b in zip(la, lb)),
      "file mode: the filled copy and the download first yield the same batches")
check(sa["epoch_fetched"] == [sa["dataset_bytes"], 0] and sa["open_fetched"] < sa["dataset_bytes"] / 10 and
      sa["record_requests"] > 0, "file mode, filled while read: the dataset once, in epoch 0: %s" % sa)
check(sb["epoch_fetched"] == [0, 0] and sb["open_fetched"] >= sb["dataset_bytes"] and sb["record_requests"] == 0,
      "file mode, download_first: the dataset once, at the open: %s" % sb)

# ---- rank/world: the parts of each global batch together are the W = 1 batch, in order
with baton.Loader(FM, batch=64, seed=3, epochs=1) as one, \
        baton.Loader(FM, batch=64, seed=3, epochs=1, rank=0, world=2) as r0, \
        baton.Loader(FM, batch=64, seed=3, epochs=1, rank=1, world=2) as r1:
    check(len(one) == len(r0) == len(r1) == 157, "157 batches at any world size")
    same, count = True, 0
    for a, b0, b1 in zip(one, r0, r1):
        merged = np.empty_like(a.images)
        merged[0::2], merged[1::2] = b0.images, b1.images
        labels = np.empty_like(a.labels)
        labels[0::2], labels[1::2] = b0.labels, b1.labels
        same &= np.array_equal(merged, a.images) and np.array_equal(labels, a.labels)
        same &= b0.total == b1.total == len(a.labels) and b0.index == b1.index == a.index
        count += len(b0.labels) + len(b1.labels)
    check(same and count == N, "rank 0 and 1 of 2 hold the even and odd samples of every W = 1 batch (%d)" % count)
w3 = [baton.Loader(FM, batch=100, seed=3, epochs=1, rank=r, world=3) for r in range(3)]
seen = sorted(int(p) for l in w3 for b in l for p in b.positions)
check(seen == list(range(N)), "3 ranks see each position of the epoch once")

# ---- exact resume: stop anywhere, save state_dict(), continue in a new Loader
ref = loader_lines(baton.Loader(FM, batch=50, seed=11, epochs=2, mode="pipe"), 2 * N)
for cut in (1, 37, 199, 200, 250, 399):
    a = baton.Loader(FM, batch=50, seed=11, epochs=2, mode="pipe")
    for _ in range(cut):   # next(loader) goes on from the cursor (test_epochs.py: passes)
        try:
            next(a)
        except StopIteration:   # an epoch's end: the next call is the next epoch's
            next(a)
    st = json.loads(json.dumps(a.state_dict()))   # through JSON, as a checkpoint holds it
    a.close()
    b2 = baton.Loader(FM, batch=50, seed=11, epochs=2, mode="pipe")
    b2.load_state_dict(st)
    rest = loader_lines(b2, 2 * N)
    k = cut * 50
    check(rest == ref[k:], "resume after batch %d (%s) continues at the next sample" % (cut, st))
bad = baton.Loader(FM, batch=50, seed=12, epochs=2)
check(raises(baton.UsageError, bad.load_state_dict, st, match="seed 11") is not None,
      "a state of another seed is refused, naming it")
check(raises(baton.UsageError, bad.load_state_dict, {"seed": 1}, match='"epoch"') is not None,
      "a state without a cursor is refused")
st2 = dict(st, samples=123)
check(raises(baton.UsageError, baton.Loader(FM, batch=50, seed=11).load_state_dict, st2, match="123") is not None,
      "a state of another dataset size is refused")

# ---- no shuffle: records in file order; epochs the same
with baton.Loader(FM, batch=1000, shuffle=False, epochs=2, normalize=False) as l:
    e0 = [b.images.copy() for b in l]
    e1 = [b.images.copy() for b in l]
    check(all(np.array_equal(a, b) for a, b in zip(e0, e1)), "shuffle=False: every epoch in the same order")
# the first record of the first shard is sample 0: compare with the file's own first image bytes
with open(os.path.join(FM, "test-00000.rec"), "rb") as f:
    head = f.read(8 + 24 + 784)
check(np.array_equal((e0[0][0].reshape(-1) * 255).round().astype(np.uint8), np.frombuffer(head[32:], np.uint8)),
      "shuffle=False, normalize=False: the first image is the first record's pixels / 255")

# ---- normalisation and layout
m = json.load(open(os.path.join(FM, "dataset.json")))
mean, std = m["mean"][0], m["std"][0]
a = next(iter(baton.Loader(FM, batch=8, seed=1, normalize=False)))
b = next(iter(baton.Loader(FM, batch=8, seed=1)))
c = next(iter(baton.Loader(FM, batch=8, seed=1, normalize=([0.5], [0.25]))))
d = next(iter(baton.Loader(FM, batch=8, seed=1, layout="nhwc")))
check(a.images.min() >= 0 and a.images.max() <= 1, "normalize=False: pixels in [0, 1]")
check(np.allclose(b.images, (a.images - mean) / std, atol=1e-5), "normalize=True: dataset.json's mean and std")
check(np.allclose(c.images, (a.images - 0.5) / 0.25, atol=1e-5), "normalize=(mean, std)")
check(d.images.shape == (8, 28, 28, 1) and np.array_equal(d.images[..., 0], b.images[:, 0]), "layout nhwc")
check(a.images.dtype == np.float32 and a.labels.dtype == np.int64 and a.positions.dtype == np.uint64,
      "float32 images, int64 labels, uint64 positions")
check(raises(baton.UsageError, baton.Loader, FM, normalize=([1, 2], [1])) is not None, "normalize of 2 channels")
for kw, what in (({"batch": 0}, "batch"), ({"world": 2, "rank": 2}, "rank"), ({"mode": "tape"}, "tape"),
                 ({"threads": 0}, "threads"), ({"epochs": 0}, "epochs"), ({"layout": "chw"}, "layout")):
    check(raises(baton.UsageError, baton.Loader, FM, **kw, match=what) is not None, "bad %s refused" % kw)

# ---- zero copy and lifetime: arrays share the pipeline's memory and outlive load_state_dict/close
l = baton.Loader(FM, batch=16, seed=5, epochs=1, depth=4)
it = iter(l)
b0 = next(it)
check(not b0.images.flags.owndata and b0.images.base is not None, "images are a view, not a copy")
keep = b0.images.copy()
l.load_state_dict({"seed": 5, "epoch": 0, "position": 160, "batch": 16, "samples": N})
b1 = next(iter(l))
l.close()
check(np.array_equal(keep, b0.images) and int(b1.positions[0]) == 160, "a held batch survives a reseek and a close")
check(raises(baton.UsageError, len, l, match="closed") is not None, "a closed Loader says so")
del b0, b1
l = baton.Loader(FM, batch=16, seed=5, epochs=1, depth=3)
held = [b for _, b in zip(range(3), l)]
check(raises(baton.UsageError, next, l, match="depth") is not None,
      "holding every batch buffer is an error that says what to do, not a hang")
del held

# ---- bad input: messages from the library, never a crash or a hang
def broken(name, edit):
    d = os.path.join(TMP, name)
    subprocess.run(["cp", "-r", FM, d], check=True)
    edit(d)
    return d

def err_of(uri, **kw):
    try:
        with baton.Loader(uri, epochs=1, **kw) as l:
            for _ in l:
                pass
    except baton.Error as e:
        return e
    return None

e = err_of(os.path.join(TMP, "nowhere"))
check(isinstance(e, baton.NotFoundError) and "nowhere" in str(e) and e.status == "not found",
      "a missing folder: NotFoundError naming it (%r)" % e)
d = broken("nojson", lambda d: os.remove(os.path.join(d, "dataset.json")))
e = err_of(d)
check(isinstance(e, baton.Error) and "dataset.json" in str(e), "a missing dataset.json (%s)" % e)
d = broken("badjson", lambda d: open(os.path.join(d, "dataset.json"), "w").write('{"version": 1, "samples": "x"'))
e = err_of(d)
check(isinstance(e, baton.Error) and "dataset.json" in str(e), "a damaged dataset.json (%s)" % e)
def truncate(d):
    p = os.path.join(d, "test-00003.rec")
    os.truncate(p, os.path.getsize(p) - 5000)
for mode in ("mount", "pipe", "file"):
    d = broken("trunc-" + mode, truncate)
    kw = {"local_dir": os.path.join(TMP, "tc-" + mode)} if mode == "file" else {}
    e = err_of(d, mode=mode, **kw)
    check(isinstance(e, baton.Error) and "test-00003.rec" in str(e), "%s: a truncated shard named (%s)" % (mode, e))
# a shard that is not the file dataset.json lists (issue 30: another pack's shard under this
# dataset.json): refused in every mode, named, never read as records
def flip(d):   # the same size, another CRC32C: only the checksum tells
    p = os.path.join(d, "test-00000.rec")
    b = bytearray(open(p, "rb").read())
    b[5000] ^= 0x10
    open(p, "wb").write(bytes(b))
def grow(d):   # a larger file: its size tells at the first byte
    with open(os.path.join(d, "test-00003.rec"), "ab") as f:
        f.write(b"\0" * 5000)
for name, edit, shard in (("flip", flip, "test-00000.rec"), ("grow", grow, "test-00003.rec")):
    for mode in ("pipe", "cache", "mount", "file"):
        d = broken(name + "-" + mode, edit)
        kw = {"local_dir": os.path.join(TMP, name + "c-" + mode)} if mode in ("file", "cache") else {}
        e = err_of(d, mode=mode, **kw)
        check(isinstance(e, baton.Error) and shard in str(e) and "dataset.json" in str(e),
              "%s: a shard that does not match dataset.json (%s) refused, named (%s)" % (mode, name, e))
def fifo(d):
    p = os.path.join(d, "test-00001.rec")
    os.remove(p)
    os.mkfifo(p)
d = broken("fifo", fifo)
t0 = time.time()
e = err_of(d)
check(isinstance(e, baton.Error) and "test-00001.rec" in str(e) and time.time() - t0 < 10,
      "a FIFO where a shard should be: an error at once (%s)" % e)

# ---- Ctrl-C while waiting for a batch: KeyboardInterrupt within a second, then a clean exit
STALL = textwrap.dedent("""
    import http.server, os, signal, sys, threading, time
    sys.path.insert(0, %r)
    import baton
    root = %r
    class H(http.server.SimpleHTTPRequestHandler):
        def __init__(s, *a, **k): super().__init__(*a, directory=root, **k)
        def log_message(s, *a): pass
        def do_GET(s):
            if s.path.endswith(".rec"): time.sleep(60)   # the shards never come
            return super().do_GET()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    l = baton.Loader("http://127.0.0.1:%%d/" %% srv.server_address[1], mode="pipe", epochs=1)
    threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    t0 = time.time()
    try:
        next(iter(l))
    except KeyboardInterrupt:
        print("interrupted after %%.2f s" %% (time.time() - t0), flush=True)
    print("threads", threading.active_count(), flush=True)
""") % (os.path.dirname(baton.__file__) + "/..", FM)
t0 = time.time()
r = run(sys.executable, "-c", STALL, timeout=60)
took = time.time() - t0
lines = r.stdout.split("\n")
check(r.returncode == 0 and lines[0].startswith("interrupted after"), "Ctrl-C: KeyboardInterrupt (%s %s)" % (r.stdout, r.stderr[-500:]))
if lines[0].startswith("interrupted after"):
    check(float(lines[0].split()[2]) < 2.0, "KeyboardInterrupt within a second of the signal (%s)" % lines[0])
check(took < 20, "the interpreter exits at once afterwards (%.1f s), its threads gone" % took)

# ---- 1,000 open/iterate/close cycles: no growth in memory, threads or descriptors
def usage():
    st = dict(l.split(":", 1) for l in open("/proc/self/status"))
    return int(st["VmRSS"].split()[0]), len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd"))

def cycle(i):
    with baton.Loader(FM, batch=64, seed=i, epochs=1, mode="pipe" if i % 2 else "mount", block=512) as l:
        for k, b in enumerate(l):
            if k == 3:
                break

rounds = 300 if SAN else 1000
for i in range(50):
    cycle(i)
rss0, th0, fd0 = usage()
t0 = time.time()
for i in range(rounds):
    cycle(i)
rss1, th1, fd1 = usage()
print("%d open/iterate/close cycles: %.1f s" % (rounds, time.time() - t0), flush=True)
check(rss1 - rss0 < 16 * 1024 and th1 == th0 and fd1 == fd0,
      "%d cycles in %.1f s: RSS %d -> %d kB, threads %d -> %d, fds %d -> %d" % (
          rounds, time.time() - t0, rss0, rss1, th0, th1, fd0, fd1))

# ---- file mode, 4 ranks of one machine started at once on one URI (the default local folder, one
# per URI): every rank opens, and each shard is downloaded once on the machine — the ranks a
# launcher places (torchrun's LOCAL_RANK/LOCAL_WORLD_SIZE) split the downloads, ranks started by
# hand take turns. Several rounds each, each in a fresh cache folder. (11 of 16 such starts failed
# with "rename: No such file or directory".)
RANK = textwrap.dedent("""
    import sys
    sys.path.insert(0, %r)
    import baton, time
    r = int(sys.argv[1])
    time.sleep(max(0, float(sys.argv[3]) - time.time()))   # all four open at once
    l = baton.Loader(sys.argv[2], mode="file", batch=100, rank=r, world=4, seed=1)
    n = sum(len(b.labels) for b in l)
    st = l.stats()
    print(n, st["downloads"], flush=True)
""") % (os.path.dirname(baton.__file__) + "/..")
nshards = len(json.load(open(os.path.join(FM, "dataset.json")))["shards"])
for launcher in (True, False):
    bad = []
    for rnd in range(2 if SAN else 3):
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "xdg-%d-%d" % (launcher, rnd)))
        env.pop("LOCAL_RANK", None), env.pop("OMPI_COMM_WORLD_LOCAL_RANK", None)
        procs, at = [], time.time() + (5 if SAN else 1.5)   # past the four interpreters' start
        for r in range(4):
            e = dict(env, LOCAL_RANK=str(r), LOCAL_WORLD_SIZE="4") if launcher else env
            procs.append(subprocess.Popen([sys.executable, "-c", RANK, str(r), FM, str(at)], env=e, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
        got = [o[0].split() for o in outs]
        if any(o[2] != 0 for o in outs) or [int(g[0]) for g in got] != [2500] * 4 or \
                sum(int(g[1]) for g in got) != nshards:
            bad.append([(o[2], o[0].strip(), o[1].strip().splitlines()[-1:]) for o in outs])
    check(not bad, "4 ranks in file mode on one URI started at once (%s): every rank opens, %d downloads in all: %s"
          % ("LOCAL_RANK from the launcher" if launcher else "by hand", nshards, bad[:2]))

# ---- world > batch: some ranks would never get a sample; refused, naming both. A last partial
# batch smaller than the world gives the ranks past its end an empty batch, so every rank takes the
# same number of steps.
e = raises(baton.UsageError, baton.Loader, FM, batch=2, world=4, rank=3)
check(e is not None and "world 4 > batch 2" in str(e), "world > batch refused: %s" % e)
sizes = [[len(b.labels) for b in baton.Loader(FM, batch=N - 2, world=4, rank=r, depth=2)] for r in range(4)]
check(sizes == [[2500, 1], [2500, 1], [2499, 0], [2499, 0]], "the last batch of 2 over 4 ranks: %s" % sizes)

# ---- prefetch buffers: depth batches of decoded images, allocated whole at the first batch; over
# 1 GiB a warning names the size (checked before any is allocated: the Loader is closed unused)
import warnings
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    baton.Loader(FM, batch=16384, depth=64).close()
    baton.Loader(FM, batch=128, depth=4).close()
msgs = [str(x.message) for x in w]
check(len(msgs) == 1 and "3.3 GB of prefetch buffers" in msgs[0] and "10000 samples" in msgs[0],
      "batch=16384, depth=64 on 10,000 samples: one warning naming the size: %s" % msgs)
e = raises(baton.UsageError, baton.Loader, FM, batch=16384, depth=64, crop="center", size=4096)
check(e is not None and "more than this machine's" in str(e), "prefetch buffers beyond the machine's memory refused: %s" % e)

# ---- the Loader read from a signal handler while next() waits for a batch (state_dict() for a
# checkpoint, stats(), len(), info): the cursor after the last batch handed out. 8 rounds, each
# batch long enough (4,096 crops on one thread: 0.3 s, 1 s under the sanitizers) for next()'s
# 0.1 s waits to run the handler inside it.
seen, errs, inside, waiting = [], [], [False], [0]
def on_alarm(s, f):
    if inside[0]:
        try:
            seen.append((l.state_dict()["position"], l.stats()["mode"], len(l), l.info["samples"]))
        except Exception as ex:
            errs.append(repr(ex))
        try:
            l.set_epoch(l.epoch)   # refused only inside next() (else a no-op): the reads above ran during its wait
        except baton.UsageError:
            waiting[0] += 1
old_alarm = signal.signal(signal.SIGALRM, on_alarm)
for r in range(8):
    l = baton.Loader(FM, batch=4096, threads=1, depth=2, crop="random-resized", size=112, dtype="uint8", seed=r)
    signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
    it = iter(l)
    for k in range(2):
        inside[0] = True
        next(it)
        inside[0] = False
    signal.setitimer(signal.ITIMER_REAL, 0)
    l.close()
signal.signal(signal.SIGALRM, old_alarm)
check(not errs and waiting[0] > 0 and all(p in (0, 4096, 8192) and m == "mount" and n == 3 and k == N
                                         for p, m, n, k in seen),
      "state_dict(), stats(), len(), info from a signal handler during next(): %d reads (%d during its wait), errors %s"
      % (len(seen), waiting[0], errs[:2]))

# ---- through torch's DataLoader (batch_size=None): the same batches, as tensors
try:
    import torch
    from torch.utils.data import DataLoader
except ImportError:
    torch = None
if torch is not None and not SAN:
    a = [b.labels.copy() for b in baton.Loader(FM, batch=128, seed=2)]
    dl = DataLoader(baton.Loader(FM, batch=128, seed=2), batch_size=None)
    got, kinds = [], set()
    for x, y in dl:
        got.append(y.numpy().copy())
        kinds.add((type(x), type(y)))
    check(len(got) == len(a) and all(np.array_equal(p, q) for p, q in zip(a, got)) and
          kinds == {(torch.Tensor, torch.Tensor)}, "DataLoader(loader, batch_size=None) yields the same batches as tensors")
    dl = DataLoader(baton.Loader(FM, batch=128, seed=2), batch_size=None, num_workers=1)
    check(raises(Exception, lambda: next(iter(dl)), match="num_workers=0") is not None,
          "a DataLoader with worker processes is refused, saying why")

done()
