"""baton.torch — a PyTorch model's and optimizer's state as named arrays for baton.Checkpoints,
and back. Type adaptation only: the copying, writing, commit, upload and verification are the C
library's.

    baton.torch.save(ckpt, step, model, optimizer, loader=loader, scheduler=sched, scaler=scaler)
    c = baton.torch.load(ckpt, model, optimizer, loader=loader, scheduler=sched, scaler=scaler)
    # None on a fresh start; else c.step, c.state (and the loader at the next sample)

model.safetensors holds model.state_dict() under its own names (PyTorch's safetensors loader
reads it unchanged); optim.safetensors the optimizer's tensors ("state.<param>.<key>") and the
random generators' states ("rng.cpu", "rng.cuda.<i>"); the optimizer's other values (param groups,
steps kept as numbers) ride in state.json under "optimizer"; a scheduler's, a GradScaler's and a
Loader's state dicts under "scheduler", "scaler" and "loader" (baton._state keeps inf, nan, NumPy
scalars and small tensors exact).

The generators are restored at load, and once more when the pass of the Loader at the loaded
cursor begins (a mid-epoch checkpoint): torch's DataLoader draws its base seed from the global
generator at each iter(), where the run that saved drew nothing, so without this every later
dropout mask would differ.
"""
import numpy as np
import torch

import baton

_BITS = {torch.bfloat16: ("BF16", torch.int16)}


def _module(model):
    return model.module if hasattr(model, "module") and isinstance(model.module, torch.nn.Module) else model


def _array(t):
    """A tensor as a C-contiguous host array (or a (dtype, array) pair for dtypes NumPy lacks)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype in _BITS:
        name, raw = _BITS[t.dtype]
        return (name, t.view(raw).numpy())
    return t.numpy()


def _tensor(a, dtype_name):
    """A checkpoint's array (C-contiguous, any rank, 0-d included) as a tensor sharing its memory."""
    if dtype_name == "BF16":   # its bits, as uint16: torch takes them as int16
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def flatten(model=None, optimizer=None, rng=True):
    """(tensors, optim, meta): the model's state_dict as arrays, the optimizer's tensors and the
    generators' states as arrays, and the optimizer's other values (JSON)."""
    tensors = {k: _array(v) for k, v in _module(model).state_dict().items()} if model is not None else {}
    optim, meta = {}, None
    if optimizer is not None:
        sd = optimizer.state_dict()
        rest = {}
        for pid, st in sd["state"].items():
            for key, v in st.items():
                if torch.is_tensor(v):
                    optim["state.%s.%s" % (pid, key)] = _array(v)
                else:
                    rest.setdefault(str(pid), {})[key] = v
        meta = {"param_groups": sd["param_groups"], "state": rest}
    if rng:
        optim["rng.cpu"] = torch.get_rng_state().numpy()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            for i, s in enumerate(torch.cuda.get_rng_state_all()):
                optim["rng.cuda.%d" % i] = s.numpy()
    return tensors, optim, meta


def unflatten(c, model=None, optimizer=None, rng=True):
    """Load a baton.Checkpoint's arrays into the model (strictly: every name and shape) and the
    optimizer, and restore the generators."""
    if model is not None:
        sd = {k: _tensor(v, c.dtypes.get(k)) for k, v in c.tensors.items()}
        _module(model).load_state_dict(sd, strict=True)
    if optimizer is not None:
        meta = (c.state or {}).get("optimizer") if isinstance(c.state, dict) else None
        if meta is None:
            raise KeyError("the checkpoint holds no optimizer state (saved without one?)")
        state = {}
        for name, a in c.optim.items():
            if not name.startswith("state."):
                continue
            pid, key = name[len("state."):].split(".", 1)
            state.setdefault(int(pid), {})[key] = _tensor(a, c.dtypes.get(name))
        for pid, rest in meta.get("state", {}).items():
            state.setdefault(int(pid), {}).update(rest)
        groups = [dict(g) for g in meta["param_groups"]]
        for g, now in zip(groups, optimizer.param_groups):   # JSON made tuples (Adam's betas) lists
            for k, v in g.items():
                if isinstance(v, list) and isinstance(now.get(k), tuple):
                    g[k] = tuple(v)
        optimizer.load_state_dict({"state": state, "param_groups": groups})
    if rng:
        cpu = torch.from_numpy(np.array(c.optim["rng.cpu"])) if "rng.cpu" in c.optim else None
        cuda = [torch.from_numpy(np.array(c.optim[k])) for k in sorted(
            (k for k in c.optim if k.startswith("rng.cuda.")), key=lambda k: int(k[len("rng.cuda."):]))]   # .10 after .9

        def restore():
            if cpu is not None:
                torch.set_rng_state(cpu)
            if cuda and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(cuda)
        restore()
        st = c.state.get("loader") if isinstance(c.state, dict) else None
        baton._resume_at(st if isinstance(st, dict) else None, restore)


def _scheduler_state(s):
    """A scheduler's state_dict() less its own bound methods (OneCycleLR's anneal_func): the scheduler
    its constructor makes again has them."""
    return {k: v for k, v in s.state_dict().items() if not (callable(v) and getattr(v, "__self__", None) is s)}


_SLOTS = ("scheduler", "scaler", "loader")


def save(ckpt, step, model, optimizer=None, state=None, sync=False, *, scheduler=None, scaler=None, loader=None):
    """Save model and optimizer (and the generators) with state (a dict of what state.json holds:
    baton._state) at step; scheduler, scaler (a GradScaler) and loader (a baton.Loader) under their
    names in the state."""
    tensors, optim, meta = flatten(model, optimizer)
    full = dict(state or {})
    if meta is not None:
        full["optimizer"] = meta
    for key, obj in zip(_SLOTS, (scheduler, scaler, loader)):
        if obj is None:
            continue
        if key in full:
            raise baton.UsageError("baton.torch.save: state has a %r of its own and %s= was given: one of them"
                                   % (key, key))
        full[key] = _scheduler_state(obj) if key == "scheduler" else obj.state_dict()
    ckpt.save(step, tensors, full, optim=optim, sync=sync)


def load(ckpt, model, optimizer=None, path=None, *, scheduler=None, scaler=None, loader=None):
    """The newest checkpoint that verifies (or the folder path) loaded into model and optimizer (and
    scheduler, scaler, loader); returns the baton.Checkpoint (its .step and .state), or None when
    there is none."""
    c = ckpt.load(path)
    if c is None:
        return None
    st = c.state if isinstance(c.state, dict) else {}
    for key, obj in zip(_SLOTS, (scheduler, scaler, loader)):
        if obj is not None and key not in st:
            raise baton.UsageError("baton.torch.load: %s holds no %s state (saved without %s=?)" % (c.path, key, key))
    unflatten(c, model, optimizer)
    if scheduler is not None:
        scheduler.load_state_dict(st["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(st["scaler"])
    if loader is not None:
        loader.load_state_dict(st["loader"])
    return c
