"""baton for your own trainer: its data path, checkpoints and interruption notices from Python.

The work is done by baton's C library (libbaton); this package only names it:

    import baton, baton.torch

    loader = baton.Loader("s3://bucket/ds/", mode="pipe", batch=128, seed=1, epochs=10)
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
            position in each global batch; state_dict()/load_state_dict() resume mid-epoch exactly.
Checkpoints save(step, tensors, state, optim) committed in the background with baton's protocol
            (lock, MANIFEST last, retention, S3 copy); due(step), wait(), latest(), load().
Notice      true once an interruption notice came; wait(timeout).
Error       what the library reports, with its message; CorruptError, FormatError, NotFoundError,
            NetworkError, BusyError, NoSpaceError, DeniedError, UsageError below it.

docs/pytorch.md has the walk-through, examples/pytorch/train.py a whole trainer.
"""
from baton import _baton
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

try:  # DataLoader(loader, batch_size=None) iterates an IterableDataset; without torch, a plain iterable
    from torch.utils.data import IterableDataset as _Iterable
    from torch.utils.data import get_worker_info as _worker_info
except ImportError:  # pragma: no cover - torch is optional
    _Iterable = object
    _worker_info = None


class Loader(_baton.Loader, _Iterable):
    __doc__ = _baton.Loader.__doc__ + """

Iterating yields the batches of one epoch (from the cursor), then stops; iterate again for the
next epoch, up to epochs (None: no end). A batch is (images, labels) — float32 (n, C, H, W) and
int64 (n,) NumPy arrays in the pipeline's own memory, valid while referenced — with .epoch,
.index, .positions (uint64) and .total (the global batch's size; n is this rank's part).
normalize: True (dataset.json's mean and std), False (pixels / 255), or (mean, std).
Inside torch.utils.data.DataLoader use batch_size=None and num_workers=0: baton decodes in its
own threads (threads=), and worker processes would each read the whole dataset."""

    def __iter__(self):
        if _worker_info is not None and _worker_info() is not None:
            raise UsageError("baton.Loader in a DataLoader worker process: use num_workers=0 "
                             "(baton decodes in its own threads; each worker would read everything)")
        return _baton.Loader.__iter__(self)


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
