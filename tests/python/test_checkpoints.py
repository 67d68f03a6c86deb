"""test_checkpoints.py — baton.Checkpoints: every dtype saved and read back (BF16 too), the files
`baton ckpt verify|ls|show` read; a save copies before it returns; retention; the folder's lock;
a damaged newest checkpoint moved aside and the one before loaded; due() by steps, seconds and
Daly's interval and the fleet's progress file; wrong input as baton.Error; baton.torch's round trip
of a model, an optimizer and the generators; load() while a background save commits and retention
(keep=1) removes the folder before it (the defects issue, item 7): never an error, never None."""
import json
import os
import subprocess
import sys
import time

import numpy as np

import baton
from harness import SAN, TMP, baton as cli, check, done, raises, run


def arrays():
    rng = np.random.default_rng(5)
    t = {
        "w.f32": rng.standard_normal((3, 4)).astype(np.float32),
        "w.f64": rng.standard_normal(7),
        "w.f16": rng.standard_normal((2, 2)).astype(np.float16),
        "n.i64": np.array(42, dtype=np.int64),                    # 0-d, as num_batches_tracked
        "n.i32": np.arange(-5, 5, dtype=np.int32),
        "n.i16": np.arange(6, dtype=np.int16).reshape(2, 3),
        "n.i8": np.array([-128, 127], dtype=np.int8),
        "n.u8": np.arange(256, dtype=np.uint8),
        "n.bool": np.array([True, False, True]),
        "n.u16": np.array([65535], dtype=np.uint16),
        "n.u32": np.array([1, 2 ** 32 - 1], dtype=np.uint32),
        "n.u64": np.array([2 ** 64 - 1], dtype=np.uint64),
        "empty": np.zeros((0, 3), dtype=np.float32),
        "deep": np.arange(256, dtype=np.float32).reshape((2,) * 8),
    }
    return t


D = os.path.join(TMP, "c1")
t = arrays()
bf = ("BF16", np.array([0x3F80, 0xC000, 0x7F80], dtype=np.uint16).view(np.int16))   # 1.0, -2.0, inf as bfloat16 bits
opt = {"state.0.momentum_buffer": np.ones(5, np.float32), "rng.cpu": np.arange(16, dtype=np.uint8)}
state = {"loader": {"seed": 1, "epoch": 0, "position": 128}, "note": "é ünïcode", "lr": [0.1, 0.01]}
with baton.Checkpoints(D, keep=2) as ck:
    ck.save(5, dict(t, **{"w.bf16": bf}), state, optim=opt, sync=True)
    check(ck.last_committed and ck.last_committed.endswith("ckpt-000000005"), "committed: %s" % ck.last_committed)
    c = ck.load()
check(c is not None and c.step == 5 and c.path.endswith("ckpt-000000005"), "load() finds step 5")
same = all(np.array_equal(c.tensors[k], v) and c.tensors[k].dtype == v.dtype and c.tensors[k].shape == v.shape
           for k, v in t.items())
check(same, "every dtype and shape reads back equal (%s)" % {k: (str(c.tensors[k].dtype), c.tensors[k].shape)
                                                               for k in c.tensors})
check(list(c.tensors) == list(t) + ["w.bf16"], "tensors in the order given")
check(c.dtypes["w.bf16"] == "BF16" and np.array_equal(c.tensors["w.bf16"].view(np.int16), bf[1]),
      "BF16 as its raw bits, its dtype named")
check(c.dtypes["n.bool"] == "BOOL" and c.dtypes["w.f16"] == "F16" and c.dtypes["n.u64"] == "U64", "dtype names")
check(c.state == state, "state round trip: %s" % (c.state,))
check(set(c.optim) == set(opt) and np.array_equal(c.optim["rng.cpu"], opt["rng.cpu"]), "optim tensors")

r = cli("ckpt", "verify", D)
check(r.returncode == 0, "baton ckpt verify: %s%s" % (r.stdout, r.stderr))
r = cli("ckpt", "show", D)
check(r.returncode == 0 and "w.bf16" in r.stdout and "BF16" in r.stdout and '"kind"' in r.stdout,
      "baton ckpt show lists the tensors: %s" % r.stdout[-800:])
sj = json.load(open(os.path.join(c.path, "state.json")))
check(sj == {"step": 5, "kind": "baton-python", "state": state}, "state.json: %s" % sj)
man = open(os.path.join(c.path, "MANIFEST")).read().split("\n")
check(man[0] == "baton-ckpt 1" and len([l for l in man if l]) == 4, "MANIFEST: %s" % man)

# ---- the save copies before it returns; retention keeps 2; wait() is the commit
D2 = os.path.join(TMP, "c2")
ck = baton.Checkpoints(D2, keep=2)
big = np.zeros(4 << 20, dtype=np.float32)
for step in range(1, 6):
    big[:] = step
    ck.save(step, {"big": big}, {"step_seen": step})
    big[:] = -1   # at once: the checkpoint must hold `step`
last = ck.wait()
check(last and last.endswith("ckpt-000000005"), "wait() returns the newest commit: %s" % last)
names = sorted(n for n in os.listdir(D2) if n.startswith("ckpt-"))
check(names == ["ckpt-000000004", "ckpt-000000005"], "retention keeps 2: %s" % names)
c = ck.load()
check(c.step == 5 and float(c.tensors["big"].min()) == 5 and float(c.tensors["big"].max()) == 5,
      "the saved values are those at save(), not later changes")
c4 = ck.load(os.path.join(D2, "ckpt-000000004"))
check(c4.step == 4 and c4.state == {"step_seen": 4}, "load(path) reads a given folder")
check([d["step"] for d in ck.list()] == [5, 4] and all(d["ok"] for d in ck.list(verify=True)), "list()")

# ---- the lock: a second opener, here or in another process, is refused naming the holder
e = raises(baton.BusyError, baton.Checkpoints, D2)
check(e is not None and str(os.getpid()) in str(e), "a second Checkpoints on the folder: BusyError (%s)" % e)
r = run(sys.executable, "-c", "import baton\ntry:\n baton.Checkpoints(%r)\nexcept baton.BusyError as e:\n print('busy', e)" % D2)
check(r.stdout.startswith("busy") and str(os.getpid()) in r.stdout, "another process: BusyError (%s%s)" % (r.stdout, r.stderr))
ck.close()
check(raises(baton.UsageError, ck.save, 6, {}, match="closed") is not None, "a closed Checkpoints says so")
with baton.Checkpoints(D2) as again:   # released by close
    check(again.latest()[0] == 5, "reopened after close")

# ---- a damaged newest checkpoint: moved aside, the one before loaded
p = os.path.join(D2, "ckpt-000000005", "model.safetensors")
b = bytearray(open(p, "rb").read())
b[-3] ^= 0x10
open(p, "wb").write(b)
with baton.Checkpoints(D2) as ck:
    c = ck.load()
    check(c is not None and c.step == 4, "the damaged step 5 is skipped, step 4 loaded")
    check(os.path.isdir(os.path.join(D2, ".ckpt-000000005.corrupt")) and not os.path.exists(os.path.join(D2, "ckpt-000000005")),
          "step 5 moved aside: %s" % sorted(os.listdir(D2)))
r = cli("ckpt", "ls", D2)
check("corrupt" in r.stdout or "aside" in r.stdout or "5" in r.stdout, "baton ckpt ls shows it: %s" % r.stdout)
D3 = os.path.join(TMP, "c3")
os.makedirs(os.path.join(D3, "ckpt-000000009"))
open(os.path.join(D3, "ckpt-000000009", "MANIFEST"), "w").write("garbage\n")
with baton.Checkpoints(D3) as ck:
    check(ck.load() is None and ck.latest() is None, "only a damaged folder: a fresh start (None)")

# ---- due(): steps, seconds, auto; the progress file
D4 = os.path.join(TMP, "c4")
with baton.Checkpoints(D4, every=3) as ck:
    check([s for s in range(1, 10) if ck.due(s)] == [3, 6, 9], "every=3 steps")
with baton.Checkpoints(D4, every="0.3s") as ck:
    a = ck.due(1)
    time.sleep(0.35)
    check(not a and ck.due(2), "every=0.3s")
    ck.save(2, {"x": np.zeros(1)})
    check(not ck.due(3), "the clock restarts at a save")
os.environ["BATON_CKPT_EVERY"] = "auto"
os.environ["BATON_SPOT_MTBI_S"] = "3600"
pf = os.path.join(TMP, "progress")
os.environ["BATON_PROGRESS_FILE"] = pf
with baton.Checkpoints(D4 + "-auto") as ck:   # a run of its own: D4 holds step 2 already
    iv = ck.interval
    check(iv["auto"] and iv["mtbi_s"] == 3600, "a fleet worker's environment: auto, its hazard (%s)" % iv)
    check(ck.due(1), "auto: the first save at once (to measure its cost)")
    ck.save(1, {"x": np.zeros(1 << 20, np.float32)})
    iv = ck.interval
    check(iv["tau_s"] >= 1 and iv["delta_s"] > 0 and not ck.due(2), "then Daly's interval: %s" % iv)
    ck.due(17)
    check(open(pf).read().strip().lstrip("0") == "17", "due(17) wrote the progress file")
for k in ("BATON_CKPT_EVERY", "BATON_SPOT_MTBI_S", "BATON_PROGRESS_FILE"):
    del os.environ[k]
check(raises(baton.UsageError, baton.Checkpoints, D4, every="soon", match="soon") is not None, "every='soon' refused")
check(raises(baton.UsageError, baton.Checkpoints, D4, keep=0) is not None, "keep=0 refused")

# ---- wrong input: errors, never a crash
with baton.Checkpoints(os.path.join(TMP, "c5")) as ck:
    check(raises(baton.UsageError, ck.save, 1, {"a": np.zeros((4, 4))[:, ::2]}, match="contiguous") is not None,
          "a strided array is refused")
    check(raises(baton.UsageError, ck.save, 1, {"a": np.array(["x"], dtype=object)}) is not None, "object arrays")
    check(raises(baton.UsageError, ck.save, 1, {1: np.zeros(1)}, match="strings") is not None, "a non-string name")
    check(raises(baton.UsageError, ck.save, 1, {"a": ("F12", np.zeros(1))}, match="dtype") is not None, "a bad dtype")
    check(raises(baton.UsageError, ck.save, 1, {"a": ("BF16", np.zeros(1, np.float32))}) is not None,
          "a dtype whose size is not the buffer's")
    check(raises(baton.UsageError, ck.save, 1, [1, 2]) is not None, "tensors not a mapping")
    check(raises(baton.UsageError, ck.save, 1, {}, {"f": open}, match="state['f']") is not None,
          "a state state.json cannot hold: UsageError naming its path (test_state.py has the rest)")
    ck.save(2, {}, None, sync=True)
    check(ck.load().state is None and ck.load().tensors == {}, "an empty checkpoint")
e = raises(baton.Error, baton.Checkpoints, "/proc/nope/ckpt")
check(e is not None and "/proc/nope" in str(e), "an uncreatable folder: %s" % e)

# ---- a checkpoint of baton train reads too (its whole state.json as state)
if not SAN:
    FM = os.path.join(TMP, "fm")
    cli("pack", "--from", "fashion-mnist", "--split", "test", "--out", FM, "--quiet")
    r = cli("train", "--data", FM, "--model", "lenet", "--batch", "64", "--max-steps", "3", "--ckpt-dir",
            os.path.join(TMP, "tr"), "--quiet", "--threads", "1")
    with baton.Checkpoints(os.path.join(TMP, "tr")) as ck:
        c = ck.load()
    check(c.step == 3 and c.state["model"] == "lenet" and "conv1.weight" in c.tensors and
          c.tensors["conv1.weight"].shape == (32, 1, 3, 3), "a baton train checkpoint: %s" % list(c.tensors)[:3])

# ---- baton.torch: a model, an optimizer and the generators, back exactly
try:
    import torch
except ImportError:
    torch = None
if torch is not None and not SAN:
    import baton.torch as bt

    def make():
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 26 * 26, 3))
        return m, torch.optim.Adam(m.parameters(), lr=1e-3)

    m, o = make()
    for _ in range(3):
        o.zero_grad()
        m(torch.randn(8, 1, 28, 28)).sum().backward()
        o.step()
    with baton.Checkpoints(os.path.join(TMP, "t1")) as ck:
        bt.save(ck, 3, m, o, {"epoch": 1}, sync=True)
        after = torch.rand(4)
        m2, o2 = make()
        torch.manual_seed(123)
        c = bt.load(ck, m2, o2)
    check(c.step == 3 and c.state["epoch"] == 1, "baton.torch.load: step and state")
    check(all(torch.equal(a, b) for a, b in zip(m.state_dict().values(), m2.state_dict().values())),
          "the model's state_dict back exactly")
    s1, s2 = o.state_dict(), o2.state_dict()
    check(s1["param_groups"] == s2["param_groups"] and
          all(torch.equal(s1["state"][k][n], s2["state"][k][n]) for k in s1["state"] for n in s1["state"][k]),
          "the optimizer's state back exactly")
    check(torch.equal(torch.rand(4), after), "the CPU generator restored")
    mb = torch.nn.Linear(3, 2).to(torch.bfloat16)
    with baton.Checkpoints(os.path.join(TMP, "t2")) as ck:
        bt.save(ck, 1, mb, sync=True)
        mb2 = torch.nn.Linear(3, 2).to(torch.bfloat16)
        bt.load(ck, mb2)
    check(all(torch.equal(a, b) for a, b in zip(mb.state_dict().values(), mb2.state_dict().values())),
          "a bfloat16 model back exactly")
    # twelve GPUs' generator states go back in device order (sorted as text, rng.cuda.10 came
    # before rng.cuda.2); no GPU here: the CUDA calls are stood in for
    states = {"rng.cuda.%d" % i: np.full(4, i, np.uint8) for i in range(12)}
    fake = type("C", (), {"optim": states, "dtypes": {}, "tensors": {}, "state": {}})()
    given = []
    real = torch.cuda.is_available, torch.cuda.set_rng_state_all
    torch.cuda.is_available, torch.cuda.set_rng_state_all = (lambda: True), given.extend
    try:
        bt.unflatten(fake)
    finally:
        torch.cuda.is_available, torch.cuda.set_rng_state_all = real
    check([int(t[0]) for t in given] == list(range(12)), "CUDA generators restored in device order: %s"
          % [int(t[0]) for t in given])

# the defects issue, item 7 and 8: a step below the newest in the folder, a step past 2^64, a tensor name with a NUL
DL = os.path.join(TMP, "ck-lower")
with baton.Checkpoints(DL, keep=2) as ck:
    ck.save(10, {"w": np.zeros(3, np.float32)}, {}, sync=True)
    e = raises(baton.UsageError, ck.save, 5, {"w": np.zeros(3, np.float32)}, {})
    check(e is not None and "step 5 is below the newest checkpoint" in str(e) and "(step 10)" in str(e),
          "a save below the newest step is refused naming both: %s" % e)
    check(raises(baton.UsageError, ck.save, 2 ** 64 + 5, {"w": np.zeros(3, np.float32)}, {}) is not None,
          "a step past 2^64 is refused, not wrapped")
    e = raises(baton.UsageError, ck.save, 11, {"a\0b": np.zeros(3, np.float32), "a\0c": np.zeros(1, np.float32)}, {})
    check(e is not None and "NUL" in str(e), "a tensor name holding a NUL is refused: %s" % e)
    ck.save(11, {"w": np.ones(3, np.float32)}, {}, sync=True)
    got = ck.load()
    check(got is not None and got.step == 11, "the folder goes on at the next step")

# ---- load() during a background save with keep=1: the save's commit and its retention (which
# removes the folder before it) never make load() fail or find nothing
DK = os.path.join(TMP, "keep1")
big = {"w": np.arange(1 << 20, dtype=np.float32)}   # 4 MiB: the commit takes a moment
errors, nones, behind = [], 0, 0
with baton.Checkpoints(DK, keep=1) as ck:
    ck.save(1, big, {"s": 1}, sync=True)
    for step in range(2, 2 + (60 if SAN else 300)):
        ck.save(step, big, {"s": step})   # committed in the background
        try:
            got = ck.load()
        except baton.Error as e:
            errors.append(str(e))
            continue
        if got is None:
            nones += 1
        elif got.step != step or got.state["s"] != step or got.tensors["w"][-1] != (1 << 20) - 1:
            behind += 1
    ck.wait()
check(not errors and nones == 0 and behind == 0,
      "load() during background saves with keep=1: %d errors %s, %d None, %d not the save just made"
      % (len(errors), errors[:2], nones, behind))
check(sorted(os.listdir(DK)) == [".lock", "ckpt-%09d" % step], "one checkpoint kept, nothing moved aside: %s"
      % sorted(os.listdir(DK)))

# ---- a state.json whose "step" the library reads but Python's json does not (a key cut short at a
# NUL by the C parser): a FormatError naming the file, not a SystemError
DS = os.path.join(TMP, "stepless")
with baton.Checkpoints(DS) as ck:
    ck.save(7, {"w": np.ones(2, np.float32)}, {}, sync=True)
folder = os.path.join(DS, "ckpt-000000007")
text = b'{"step\\u0000": 7}\n'
with open(os.path.join(folder, "state.json"), "wb") as f:
    f.write(text)
lines = open(os.path.join(folder, "MANIFEST")).read().splitlines()
lines = [("state.json %d %08x" % (len(text), baton.crc32c(text))) if l.startswith("state.json ") else l for l in lines]
with open(os.path.join(folder, "MANIFEST"), "w") as f:
    f.write("\n".join(lines) + "\n")
with baton.Checkpoints(DS) as ck:
    e = raises(baton.FormatError, ck.load)
    check(e is not None and "state.json" in str(e), "a state.json without a step Python can read: FormatError: %s" % e)

# ---- wait(deadline=...): the interruption's commit planned by the notice's deadline. Without a
# remote: committed and verified, nothing to upload. With a remote (a folder store) and time: uploaded
# before it returns. With no time left (a deadline inside the margin): committed locally, the upload
# left to the next machine and nothing claimed remotely; the next opener of the folder uploads it.
DD, RU = os.path.join(TMP, "dl"), os.path.join(TMP, "dl-remote")
with baton.Checkpoints(DD) as ck:
    ck.save(3, {"w": np.ones(8, np.float32)}, {})
    r = ck.wait(deadline={"kind": "sigterm", "deadline": time.time() + 30})
check(r["step"] == 3 and r["upload"] == "none" and r["commit_s"] >= 0 and 20 < r["margin_s"] <= 30 and
      r["checkpoint"].endswith("ckpt-000000003"), "wait(deadline=event) without a remote: %s" % r)
with baton.Checkpoints(DD, uri=RU) as ck:
    ck.save(4, {"w": np.ones(8, np.float32)}, {})
    r = ck.wait(deadline=time.time() + 30)
check(r["upload"] == "done" and r["upload_at"] >= r["commit_at"] and
      os.path.isfile(os.path.join(RU, "ckpt-000000004", "MANIFEST")), "wait(deadline) with time: uploaded: %s" % r)
with baton.Checkpoints(DD, uri=RU) as ck:
    ck.save(5, {"w": np.ones(8, np.float32)}, {})
    r = ck.wait(deadline=time.time() + 1, margin=5)
# the background upload save() queued is cut when the notice is handled, unless it finished first
# (a local folder copies in milliseconds): then it is said to be done, and it is
check((r["step"] == 5 and r["upload"] == "left to the next machine" and "no time left" in r["why"] and
       not os.path.exists(os.path.join(RU, "ckpt-000000005", "MANIFEST"))) or
      (r["upload"] == "done" and "before the notice" in r["why"] and
       os.path.isfile(os.path.join(RU, "ckpt-000000005", "MANIFEST"))),
      "wait(deadline) without time: left to the next machine and nothing claimed, or said done only when done: %s" % r)
with baton.Checkpoints(DD, uri=RU) as ck:
    check(ck.latest()[0] == 5, "the next machine resumes from the local commit")
    ck.wait()
check(os.path.isfile(os.path.join(RU, "ckpt-000000005", "MANIFEST")), "and uploads what was left to it")
e = raises(baton.UsageError, baton.Checkpoints(os.path.join(TMP, "dl2")).wait, deadline="soon")
check(e is not None and "deadline" in str(e), "wait(deadline='soon'): UsageError: %s" % e)

# ---- every= that is not text (a lone surrogate): a UsageError, not a SystemError
for bad in ("\udcff", "5m\x00"):
    e = raises(baton.UsageError, baton.Checkpoints, os.path.join(TMP, "ev"), every=bad)
    check(e is not None and "every" in str(e), "every=%r: UsageError: %s" % (bad, e))
done()
