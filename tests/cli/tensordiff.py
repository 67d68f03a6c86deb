#!/usr/bin/env python3
"""tensordiff.py A B — compares two safetensors files of the same tensors (F32/I64): prints the largest
relative difference over tensors (max|a-b| / max|a| per tensor), the tensor it is in, and the
relative difference of all weights together (||a-b|| / ||a||, L2 over every element); exits 1 when the names, shapes or dtypes differ. Used by the data-parallel tests (the
ranks' reduction order differs from one process's, so weights agree to rounding, not bytes)."""
import json, struct, sys


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8:8 + n])
    head.pop("__metadata__", None)
    body = raw[8 + n:]
    out = {}
    for name, t in head.items():
        b, e = t["data_offsets"]
        fmt = {"F32": "f", "I64": "q"}[t["dtype"]]
        cnt = (e - b) // struct.calcsize(fmt)
        out[name] = (t["dtype"], tuple(t["shape"]), struct.unpack("<%d%s" % (cnt, fmt), body[b:e]))
    return out


a, b = load(sys.argv[1]), load(sys.argv[2])
if a.keys() != b.keys():
    print("different tensors")
    sys.exit(1)
worst, where, num, den = 0.0, "", 0.0, 0.0
for name in sorted(a):
    da, sa, va = a[name]
    db, sb, vb = b[name]
    if da != db or sa != sb:
        print("%s: %s %s against %s %s" % (name, da, sa, db, sb))
        sys.exit(1)
    scale = max((abs(x) for x in va), default=0.0)
    diff = max((abs(x - y) for x, y in zip(va, vb)), default=0.0)
    rel = diff / scale if scale > 0 else diff
    num += sum((x - y) ** 2 for x, y in zip(va, vb))
    den += sum(x * x for x in va)
    if rel > worst:
        worst, where = rel, name
print("%.3g %s %.3g" % (worst, where, (num / den) ** 0.5 if den > 0 else num ** 0.5))
