"""_state.py — a checkpoint's state as the JSON of state.json, and back, holding what PyTorch's
state dicts hold (a scheduler's, a GradScaler's, an optimizer's) exactly.

Contract:
  - None, bools, ints, strings, finite floats, lists and dicts with string keys are plain JSON
    (a float's shortest repr, which reads back to the same double); tuples come back as lists.
  - Everything else is an object tagged "$baton", still plain JSON (`baton ckpt show` prints it):
      {"$baton": "float", "value": "inf" | "-inf" | "nan"}             a non-finite float
      {"$baton": "numpy", "dtype": "float32", "value": 0.5}           a NumPy scalar (its type kept;
                                                                       value "inf"/"-inf"/"nan" too)
      {"$baton": "ndarray" | "tensor", "dtype": "float32", "shape": [2, 3],
       "data": "<base64 of the C-order little-endian bytes>"}         a NumPy array or a torch
                                                                       tensor (up to MAX_BYTES; back
                                                                       on the CPU, bit for bit)
      {"$baton": "dict", "items": [[key, value], ...]}               a dict with a key that is not
                                                                       a string (or is "$baton")
  - A value none of these holds raises baton.UsageError naming its path, e.g.
    "state['sched']['anneal_func']: a method is not a value state.json holds".
"""
import base64
import inspect
import json
import math
import sys

MAX_BYTES = 1 << 20   # larger arrays belong in the checkpoint's tensors (safetensors), not its state

_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _usage(msg):
    from baton import UsageError
    return UsageError(msg)


def _float_value(x):
    return x if math.isfinite(x) else ("nan" if x != x else "inf" if x > 0 else "-inf")


def _key_path(path, k):
    return "%s[%r]" % (path, k)


def _array(kind, dtype, shape, raw, path):
    if len(raw) > MAX_BYTES:
        raise _usage("%s: a %s of %d bytes; state.json holds small ones (up to %d bytes): save it among "
                     "the checkpoint's tensors" % (path, kind, len(raw), MAX_BYTES))
    return {"$baton": kind, "dtype": dtype, "shape": list(shape), "data": base64.b64encode(raw).decode("ascii")}


def encode(v, path="state"):
    """v as JSON-able values (see the contract); path names v in errors."""
    if v is None or isinstance(v, (bool, str)):
        return v
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.generic):   # before int/float: np.float64 is a float
        dt = v.dtype
        if dt.kind in "biuf" and dt.itemsize <= 8:
            x = v.item()
            return {"$baton": "numpy", "dtype": dt.name, "value": _float_value(x) if dt.kind == "f" else x}
        raise _usage("%s: a NumPy %s scalar is not a value state.json holds" % (path, dt.name))
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        x = float(v)
        return x if math.isfinite(x) else {"$baton": "float", "value": _float_value(x)}
    if isinstance(v, (list, tuple)):
        return [encode(x, "%s[%d]" % (path, i)) for i, x in enumerate(v)]
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v) and "$baton" not in v:
            return {k: encode(x, _key_path(path, k)) for k, x in v.items()}
        items = []
        for k, x in v.items():
            if not (k is None or isinstance(k, (bool, int, float, str))):
                raise _usage("%s: a key of type %s is not a key state.json holds" % (path, type(k).__name__))
            items.append([encode(k, path), encode(x, _key_path(path, k))])
        return {"$baton": "dict", "items": items}
    if np is not None and isinstance(v, np.ndarray):
        if v.dtype.kind not in "biufc" or v.dtype.hasobject:
            raise _usage("%s: a NumPy array of %s is not a value state.json holds" % (path, v.dtype))
        a = np.ascontiguousarray(v, dtype=v.dtype.newbyteorder("<"))
        return _array("ndarray", v.dtype.newbyteorder("=").name, v.shape, a.tobytes(), path)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.Tensor):
        import numpy as np
        t = v.detach().cpu().contiguous()
        name = str(t.dtype).replace("torch.", "")
        if t.dtype == torch.bfloat16:
            raw = t.view(torch.int16).numpy().astype("<i2").tobytes()
        else:
            try:
                raw = np.ascontiguousarray(t.numpy(), dtype=t.numpy().dtype.newbyteorder("<")).tobytes()
            except (TypeError, RuntimeError):
                raise _usage("%s: a tensor of %s is not a value state.json holds" % (path, name)) from None
        return _array("tensor", name, t.shape, raw, path)
    what = "a method" if inspect.ismethod(v) else "a function" if callable(v) else "a value of type %s" % type(v).__name__
    raise _usage("%s: %s is not a value state.json holds" % (path, what))


def decode(v, path="state"):
    """The values encode() was given, from its JSON."""
    if isinstance(v, list):
        return [decode(x, "%s[%d]" % (path, i)) for i, x in enumerate(v)]
    if not isinstance(v, dict):
        return v
    tag = v.get("$baton")
    if tag is None:
        return {k: decode(x, _key_path(path, k)) for k, x in v.items()}
    try:
        if tag == "float":
            return _NONFINITE[v["value"]]
        if tag == "numpy":
            import numpy as np
            x = v["value"]
            return np.dtype(v["dtype"]).type(_NONFINITE.get(x, x) if isinstance(x, str) else x)
        if tag == "dict":
            return {decode(k, path): decode(x, _key_path(path, k)) for k, x in v["items"]}
        if tag in ("ndarray", "tensor"):
            import numpy as np
            raw = base64.b64decode(v["data"], validate=True)
            shape = tuple(int(n) for n in v["shape"])
            if tag == "tensor":
                import torch
                if v["dtype"] == "bfloat16":
                    a = np.frombuffer(raw, dtype="<i2").astype(np.int16).reshape(shape)
                    return torch.from_numpy(a.copy()).view(torch.bfloat16)
                dt = torch.empty((), dtype=getattr(torch, v["dtype"])).numpy().dtype
                a = np.frombuffer(raw, dtype=dt.newbyteorder("<")).astype(dt).reshape(shape)
                return torch.from_numpy(a.copy())
            dt = np.dtype(v["dtype"])
            return np.frombuffer(raw, dtype=dt.newbyteorder("<")).astype(dt).reshape(shape).copy()
    except (KeyError, ValueError, TypeError, AttributeError) as e:
        from baton import FormatError
        raise FormatError("state.json: %s: a damaged \"$baton\" %s value (%s)" % (path, tag, e)) from None
    from baton import FormatError
    raise FormatError("state.json: %s: unknown \"$baton\" kind %r" % (path, tag))


def dumps(doc):
    """state.json's text for doc ({"step", "kind", "state"}): each top-level key's path is its name."""
    return json.dumps({k: encode(x, k) for k, x in doc.items()}, allow_nan=False, separators=(",", ":"))


def loads(text):
    """The doc dumps() was given, from state.json's text."""
    doc = json.loads(text)
    return {k: decode(x, k) for k, x in doc.items()} if isinstance(doc, dict) else decode(doc, "state.json")
