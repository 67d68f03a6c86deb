"""baton for your own trainer: its data path, checkpoints and interruption notices from Python.

The work is done by baton's C library (libbaton); this package only names it:

    import baton, baton.torch

    loader = baton.Loader("s3://bucket/ds/", mode="pipe", batch=128, seed=1)
    ckpt = baton.Checkpoints("ckpt", uri="s3://bucket/run1/", every="auto")
    notice = baton.Notice()                      # EC2/GCE notices, SIGTERM, Ctrl-C
    c = baton.torch.load(ckpt, model, opt)       # the newest that verifies, or None
    step = c.step if c else 0
    if c: loader.load_state_dict(c.state["loader"])
    for epoch in range(loader.epoch, 10):
        for x, y in loader:                      # NumPy views of the pipeline's memory
            ...train on torch.from_numpy(x), torch.from_numpy(y)...
            step += 1
            if notice or ckpt.due(step):
                baton.torch.save(ckpt, step, model, opt, {"loader": loader.state_dict()})
            if notice:
                ckpt.wait()
                raise SystemExit(baton.EXIT_INTERRUPTED)

Loader      a dataset (path, file://, http(s)://, s3://) in file, pipe, mount or cache mode as batches:
            the samples and order of `baton train` for the same seed, split over rank/world by
            position in each global batch (batch=, or PyTorch's per-process batch_size=);
            state_dict()/load_state_dict() resume mid-epoch exactly.
Checkpoints save(step, tensors, state, optim) committed in the background with baton's protocol
            (lock, MANIFEST last, retention, S3 copy); due(step), wait(), latest(), load().
Notice      true once an interruption notice came; wait(timeout).
Error       what the library reports, with its message; CorruptError, FormatError, NotFoundError,
            NetworkError, BusyError, NoSpaceError, DeniedError, UsageError below it.

docs/pytorch.md has the walk-through, examples/pytorch/train.py a whole trainer. help() of each
class explains every argument (all keyword-only after the first); importing baton loads neither
torch nor NumPy (baton.torch does).
"""


def _load_failed(e):
    """The ImportError of the C extension, with the folder it looked in for libbaton.so.N: the one
    setup.py built it against (baton/_built.py), or beside a make build ($ORIGIN/../..)."""
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from baton import _built
        where = "%s (libbaton %s, from %s, when the module was installed)" % (_built.LIBDIR, _built.VERSION,
                                                                              _built.FROM)
    except ImportError:
        where = "%s (a make build: the library beside build/python)" % os.path.dirname(os.path.dirname(here))
    return ImportError("baton: the C extension in %s cannot load: %s. It looks for libbaton in %s; install "
                       "the library there again, or reinstall the module against the one you have "
                       "(make install PREFIX=P; PKG_CONFIG_PATH=P/lib/pkgconfig pip install ./python)"
                       % (here, e, where), name=e.name, path=e.path)


try:
    from baton import _baton
except ImportError as _e:
    raise _load_failed(_e) from None
from baton._baton import (  # noqa: F401  (the public names)
    ABI_VERSION,
    EXIT_INTERRUPTED,
    Batch,
    BusyError,
    Checkpoints,
    CorruptError,
    DeniedError,
    Error,
    FormatError,
    NetworkError,
    NoSpaceError,
    NotFoundError,
    Notice,
    UsageError,
    __version__,
    crc32c,
    crop_box,
)

import sys as _sys

# torch is not imported here (it takes a second or more; numpy a tenth): only baton.torch imports it.
# A Loader is still a torch IterableDataset wherever torch is loaded, whenever it was: isinstance()
# consults an object's __class__, and a Loader's names, once torch.utils.data is imported, a class
# that derives from both (as unittest.mock's spec objects do), so DataLoader iterates it.
_dataset_class = None


def _torch_data():
    return _sys.modules.get("torch.utils.data")


def _as_dataset():
    """The Loader class that is also torch's IterableDataset (None while torch is not loaded)."""
    global _dataset_class
    if _dataset_class is None:
        data = _torch_data()
        if data is None or not hasattr(data, "IterableDataset"):
            return None
        _dataset_class = type("Loader", (Loader, data.IterableDataset), {"__module__": __name__, "__slots__": ()})
    return _dataset_class


def _dataloader_misuse(loader, data):
    """A UsageError when the caller is a DataLoader that batches the Loader's items (batch_size not
    None): each of them is a whole batch already. Looks up the frames of iter(dataloader)."""
    f, auto, size = _sys._getframe(2), None, None
    for _ in range(8):
        if f is None:
            break
        for name in ("self", "loader"):
            o = f.f_locals.get(name)
            if o is None or not type(o).__module__.startswith("torch.utils.data"):
                continue
            if auto is None and getattr(o, "dataset", None) is loader and hasattr(o, "auto_collation"):
                auto = bool(o.auto_collation)
            if isinstance(o, data.DataLoader) and o.dataset is loader:
                size = o.batch_size
        f = f.f_back
    if not auto:
        return None
    n = "1 (DataLoader's default)" if size == 1 else str(size)
    return UsageError("baton.Loader inside DataLoader(batch_size=%s): a Loader's items are whole batches, which the "
                      "DataLoader would stack %s at a time (%s); give it batch_size=None and the Loader its batch: "
                      "DataLoader(baton.Loader(uri, batch_size=%s, ...), batch_size=None)"
                      % (n, size if size is not None else "several",
                         "5-D images" if size == 1 else "more than depth= lets a caller hold",
                         size if size is not None else "N"))


# The generators' states of a checkpoint just loaded (baton.torch.load), put back when the pass of the
# Loader at its cursor begins: torch's DataLoader draws its base seed from the global generator at
# each iter(), before it asks the dataset for its iterator, and the run that saved drew none there.
_resume = None   # (the Loader state's (seed, epoch, position, batch, samples), a function restoring them)


def _resume_at(state, restore):
    """Call restore() when a Loader resumed at state (a Loader's state_dict(), mid-epoch) begins its
    next pass (None: forget it)."""
    global _resume
    _resume = None
    if state and 0 < state.get("position", 0) < state.get("samples", 0):
        _resume = (_cursor_key(state), restore)


def _cursor_key(st):
    return tuple(st.get(k) for k in ("seed", "epoch", "position", "batch", "samples"))


class _Pass:
    """One pass over a Loader: what iter(loader) returns (a newer iter() ends it)."""
    __slots__ = ("_loader", "_n")

    def __init__(self, loader, n):
        self._loader, self._n = loader, n

    def __iter__(self):
        return self

    def __next__(self):
        if self._loader._passes != self._n:
            raise UsageError("baton.Loader: an iterator of an earlier pass (a newer iter(loader) started "
                             "another; one pass at a time)")
        return _baton.Loader.__next__(self._loader)

    def __len__(self):
        return len(self._loader)


class Loader(_baton.Loader):
    __doc__ = _baton.Loader.__doc__ + """

Iterating yields the batches of one epoch (from the cursor), then stops; iterate again for the
next epoch, up to epochs (None, the default: no end). Each iter() is a pass: a pass that handed out
part of its batches (a peek with next(iter(loader)), a break) starts again at its own start when
iter() is called again (the epoch's start, or where load_state_dict() put the cursor), so a peek
skips nothing; next(loader) without iter() goes on from the cursor. set_epoch(e), as a
DistributedSampler's: the next pass is epoch e from its start (from the cursor when it is already
in epoch e, as after load_state_dict()). A batch is (images, labels) — float32 (n, C, H, W) and
int64 (n,) NumPy arrays in the pipeline's own memory, valid while referenced — with .epoch,
.index, .positions (uint64) and .total (the global batch's size; n is this rank's part).
normalize: True (dataset.json's mean and std), False (pixels / 255), or (mean, std).
Inside torch.utils.data.DataLoader use batch_size=None and num_workers=0: baton decodes in its
own threads (threads=), and worker processes would each read the whole dataset."""

    @property
    def __class__(self):   # torch's IterableDataset too, once torch is loaded (see _as_dataset)
        return _as_dataset() or Loader

    def __iter__(self):
        data = _torch_data()
        if data is not None and getattr(data, "get_worker_info", None) and data.get_worker_info() is not None:
            raise UsageError("baton.Loader in a DataLoader worker process: use num_workers=0 "
                             "(baton decodes in its own threads; each worker would read everything)")
        if data is not None and hasattr(data, "DataLoader"):
            e = _dataloader_misuse(self, data)
            if e is not None:
                raise e
        _baton.Loader.__iter__(self)   # a partial pass before this one starts again
        self._passes = getattr(self, "_passes", 0) + 1
        global _resume
        if _resume is not None and _resume[0] == _cursor_key(self.state_dict()):
            restore, _resume = _resume[1], None
            restore()
        return _Pass(self, self._passes)


def result(**figures):
    """Leave this run's result (final loss, accuracy, ...: numbers and strings) where a baton fleet
    reads it: $BATON_RESULT_FILE, written whole or not at all. The fleet's report shows it beside
    the task's cost, so the tasks of a sweep compare at a glance. Outside a fleet: does nothing."""
    import json
    import os
    path = os.environ.get("BATON_RESULT_FILE")
    if not path:
        return
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(figures, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def log_step(step, loss=None):
    """Log a finished step (and its loss, if given) for `baton verify-resume`, which compares a run
    interrupted and resumed with an uninterrupted one step by step: one JSON line appended to
    $BATON_VERIFY_LOG. The batches and checkpoints are logged by baton itself. step counts the
    steps done (the number you give Checkpoints.save). Without the variable: does nothing."""
    import os
    path = os.environ.get("BATON_VERIFY_LOG")
    if not path:
        return
    line = '{"ev":"loss","step":%d' % int(step)
    if loss is not None:
        v = float(loss)
        line += (',"loss":%r' if v - v == 0 else ',"loss":"%r"') % v   # nan and inf as strings
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, (line + "}\n").encode())
    finally:
        os.close(fd)


__all__ = ["Loader", "Checkpoints", "Notice", "Batch", "Error", "CorruptError", "FormatError",
           "NotFoundError", "NetworkError", "BusyError", "NoSpaceError", "DeniedError", "UsageError",
           "EXIT_INTERRUPTED", "ABI_VERSION", "__version__", "crc32c", "crop_box", "result"]
