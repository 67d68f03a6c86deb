"""test_state.py — what a checkpoint's state holds (the defects issue, item 11): inf and nan, NumPy
scalars (their types kept), small arrays and tensors (bit for bit, bfloat16 too), dicts with
integer keys, all back as they were given and state.json still plain JSON; a value it cannot hold
is a baton.UsageError naming its path (state['sched']['f']); baton.torch.save/load's scheduler=,
scaler= and loader= slots: ReduceLROnPlateau (its inf), OneCycleLR and a GradScaler resume to the
same learning rates."""
import json
import math
import os

import numpy as np

import baton
from harness import BATON, TMP, check, done, pack, raises, run, skip

try:
    import torch
except ImportError:
    torch = None


def same(a, b):
    """Equal values of equal types, nan equal to nan, arrays and tensors bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if torch is not None and isinstance(a, torch.Tensor):
        def raw(t):
            return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        return a.dtype == b.dtype and a.shape == b.shape and raw(a) == raw(b)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, np.floating) and np.isnan(a):
        return bool(np.isnan(b))
    return a == b


state = {"best": float("inf"), "worst": -math.inf, "nan": math.nan, "lr": 0.1, "n": 3, "ok": True, "none": None,
         "np": {"f64": np.float64(0.1), "f32": np.float32(1.5), "f16": np.float16(-2.0), "inf32": np.float32("inf"),
                "i64": np.int64(-7), "u8": np.uint8(200), "b": np.bool_(True), "nan64": np.float64("nan")},
         "arr": np.array([[1.5, np.nan], [np.inf, -0.0]], np.float32), "iarr": np.arange(6, dtype=np.int16).reshape(2, 3),
         "intkeys": {0: "a", 7: [1, 2]}, "tag": {"$baton": "mine"}, "list": [math.inf, {"x": np.int32(3)}]}
if torch is not None:
    state["t"] = {"f32": torch.tensor([0.5, float("nan"), -0.0]), "bf16": torch.tensor([1.0, -2.5], dtype=torch.bfloat16),
                  "i64": torch.tensor(41), "empty": torch.zeros(0, 3), "bool": torch.tensor([True, False])}

D = os.path.join(TMP, "state")
with baton.Checkpoints(D) as ck:
    ck.save(1, {"w": np.ones(2, np.float32)}, state, sync=True)
    c = ck.load()
check(same(state, c.state), "the state back as given (types, inf, nan, arrays, tensors, int keys): %s" % (c.state,))
sj = json.load(open(os.path.join(c.path, "state.json")))
check(sj["state"]["best"] == {"$baton": "float", "value": "inf"} and sj["state"]["np"]["f32"] ==
      {"$baton": "numpy", "dtype": "float32", "value": 1.5}, "state.json is plain JSON with tagged values: %s"
      % {k: sj["state"][k] for k in ("best", "np")})
r = run(BATON, "ckpt", "show", c.path)
check(r.returncode == 0, "baton ckpt show reads it: %s" % r.stderr[-300:])

# ---- what it cannot hold: a UsageError naming the path
with baton.Checkpoints(os.path.join(TMP, "bad")) as ck:
    for st, path in (({"sched": {"f": open}}, "state['sched']['f']"), ({"a": [1, {"b": object()}]}, "state['a'][1]['b']"),
                     ({"big": np.zeros(1 << 19)}, "state['big']"), ({"k": {(1, 2): 3}}, "state['k']")):
        e = raises(baton.UsageError, ck.save, 1, {}, st)
        check(e is not None and path in str(e), "%s: UsageError naming %s: %s" % (list(st), path, e))
    check(ck.latest() is None, "nothing saved by them")

if torch is None:
    skip("no torch: the scheduler and scaler slots")
    done()
import baton.torch as bt   # noqa: E402

torch.manual_seed(0)


def make():
    m = torch.nn.Linear(4, 2)
    o = torch.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)
    return (m, o, torch.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1, factor=0.5),
            torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available()))


m, o, s, sc = make()
for loss in (1.0, 1.0, 1.0, 1.0):   # plateaus: the lr halves
    s.step(loss)
check(s.state_dict()["best"] == 1.0 and math.isinf(s.state_dict()["mode_worse"]), "the scheduler holds an inf")
FM = pack(os.path.join(TMP, "fm"))
l = baton.Loader(FM, batch=1000, seed=3)
next(l), next(l)
T = os.path.join(TMP, "torch")
with baton.Checkpoints(T) as ck:
    bt.save(ck, 5, m, o, {"epoch": 0}, scheduler=s, scaler=sc, loader=l, sync=True)
    m2, o2, s2, sc2 = make()
    l2 = baton.Loader(FM, batch=1000, seed=3)
    c = bt.load(ck, m2, o2, scheduler=s2, scaler=sc2, loader=l2)
check(c.step == 5 and c.state["epoch"] == 0, "the state beside the slots")
check(same(s.state_dict(), s2.state_dict()), "ReduceLROnPlateau's state back exactly: %s" % s2.state_dict())
check(sc.state_dict() == sc2.state_dict() and c.state["scaler"] == sc.state_dict(), "the GradScaler's state back")
check(l2.state_dict() == l.state_dict() and l2.position == 2000, "the loader at the next sample")
for loss in (1.0, 0.5, 0.5, 0.5):
    s.step(loss), s2.step(loss)
check([g["lr"] for g in o.param_groups] == [g["lr"] for g in o2.param_groups], "the same learning rates after")
with baton.Checkpoints(T) as ck:
    m3, o3, s3, sc3 = make()
    e = raises(baton.UsageError, bt.save, ck, 6, m3, o3, {"loader": {}}, loader=l)
    check(e is not None and "loader" in str(e), "state's own 'loader' and loader=: UsageError %s" % e)

# ---- OneCycleLR: its own bound method is left to the constructor
def one():
    m = torch.nn.Linear(4, 2)
    o = torch.optim.SGD(m.parameters(), lr=0.1)
    return m, o, torch.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=20)

m, o, s = one()
for _ in range(7):
    o.step(), s.step()
with baton.Checkpoints(os.path.join(TMP, "one")) as ck:
    bt.save(ck, 7, m, o, scheduler=s, sync=True)
    m2, o2, s2 = one()
    bt.load(ck, m2, o2, scheduler=s2)
lrs = []
for _ in range(5):
    o.step(), s.step(), o2.step(), s2.step()
    lrs.append((s.get_last_lr(), s2.get_last_lr()))
check(all(a == b for a, b in lrs), "OneCycleLR resumed: the same learning rates (%s)" % (lrs[-1],))
with baton.Checkpoints(os.path.join(TMP, "one")) as ck:
    e = raises(baton.UsageError, bt.load, ck, m2, o2, scaler=sc2)
    check(e is not None and "scaler" in str(e), "load(scaler=) from a checkpoint without one: UsageError %s" % e)
l.close(), l2.close()
done()
