#!/usr/bin/python3
"""pytorch_train_peer.py — examples/pytorch/train.py with its one baton-specific function,
open_loader, replaced by torch.utils.data.DataLoader over the same shards (bench/pytorch_loaders.py's
RecordIO dataset: Pillow in worker processes, normalised, no augmentation, as the example's baton
Loader), so that the two end-to-end figures differ in the loader alone. Takes the example's
arguments; --loader-threads is the DataLoader's worker count. No exact resume (the peer has no
cursor): run it uninterrupted."""
import importlib.util
import json
import os
import sys

from torch.utils.data import DataLoader

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_loaders import RecordIO  # noqa: E402

spec = importlib.util.spec_from_file_location(
    "example", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "pytorch", "train.py"))
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)


class Batch:
    def __init__(self, x, y):
        self.pair, self.total = (x.numpy(), y.numpy()), len(y)

    def __iter__(self):
        return iter(self.pair)


class PeerLoader:
    """What the example asks of its loader, over a DataLoader."""

    def __init__(self, a, rank, world):
        ds = RecordIO(a.data, augment=False)
        meta = json.load(open(os.path.join(a.data, "dataset.json")))
        h, w, c = meta["shape"]
        self.info = {"shape": (c, h, w), "classes": meta["classes"]}
        self.dl = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.loader_threads,
                             persistent_workers=a.loader_threads > 0, pin_memory=False)
        self.epoch = 0

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        for x, y in self.dl:
            yield Batch(x, y)
        self.epoch += 1

    def set_epoch(self, e):   # DataLoader's shuffle draws its own order each epoch
        self.epoch = e

    def state_dict(self):
        return {"epoch": self.epoch}

    def load_state_dict(self, s):
        self.epoch = s["epoch"]


example.open_loader = PeerLoader
if __name__ == "__main__":
    sys.exit(example.main())
