#!/usr/bin/python3
"""pytorch_loaders.py — batches delivered into a PyTorch loop, from baton's Loader or from the
peer: torch.utils.data.DataLoader over the same RecordIO shards, decoding with Pillow in worker
processes as the peer's users do (an index from the .idx files, random crop with 4 px of padding,
horizontal flip, normalisation with dataset.json's mean and std; pin_memory off, persistent
workers). The loop consumes each batch as a training step would begin: the tensors made from it
(torch.from_numpy, no copy, for baton), summed once so no read is skipped.

  pytorch_loaders.py DATASET --loader baton|torch [--workers N] [--batch 128] [--epochs 2]
The last line is JSON: loader, workers, batches, samples, launch_s, batches_per_s, samples_per_s,
epoch_s, and for baton the bytes fetched per epoch against the dataset's. The rates are
`baton bench-io`'s: every batch over the time from the first batch to the last (the launch apart)."""
import argparse
import glob
import io
import json
import os
import struct
import time

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

MAGIC = 0xCED7230A


class RecordIO(Dataset):
    """The shards' records by their .idx offsets (MXNet's "key\\toffset" lines)."""

    def __init__(self, folder, augment=True):
        meta = json.load(open(os.path.join(folder, "dataset.json")))
        self.augment = augment
        self.mean, self.std = np.float32(meta["mean"][0]), np.float32(meta["std"][0])
        self.channels = meta["shape"][2] if "shape" in meta else 1
        self.items = []
        for rec in sorted(glob.glob(os.path.join(folder, "*.rec"))):
            offs = [int(l.split("\t")[1]) for l in open(rec[:-4] + ".idx") if l.strip()]
            size = os.path.getsize(rec)
            self.items += [(rec, o, (offs[i + 1] if i + 1 < len(offs) else size) - o) for i, o in enumerate(offs)]
        self.files = {}

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, off, n = self.items[i]
        f = self.files.get(path) or self.files.setdefault(path, open(path, "rb"))
        f.seek(off)
        rec = f.read(n)
        magic, lrec = struct.unpack_from("<II", rec, 0)
        assert magic == MAGIC and lrec >> 29 == 0, "single-part records only"
        body = rec[8:8 + (lrec & ((1 << 29) - 1))]
        flag, label = struct.unpack_from("<If", body, 0)
        img = Image.open(io.BytesIO(body[24 + 4 * flag:]))
        img = np.asarray(img.convert("L" if self.channels == 1 else "RGB"), dtype=np.float32) / 255.0
        if img.ndim == 2:
            img = img[:, :, None]
        if self.augment:
            h, w, _ = img.shape
            pad = np.pad(img, ((4, 4), (4, 4), (0, 0)))
            y, x = np.random.randint(0, 9, 2)
            img = pad[y:y + h, x:x + w]
            if np.random.rand() < 0.5:
                img = img[:, ::-1]
        img = (img - self.mean) / self.std
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), int(label)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--loader", choices=["baton", "torch"], required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--mode", default=None)
    a = p.parse_args()
    t0 = time.perf_counter()
    if a.loader == "baton":
        import baton
        dl = baton.Loader(a.folder, mode=a.mode, batch=a.batch, threads=a.workers, epochs=a.epochs, crop_pad=4,
                          flip=True, seed=1)
    else:
        dl = DataLoader(RecordIO(a.folder), batch_size=a.batch, shuffle=True, num_workers=a.workers,
                        persistent_workers=a.workers > 0, pin_memory=False)
    launch, epochs, n, nb, acc = None, [], 0, 0, 0.0
    for _ in range(a.epochs):
        e0 = time.perf_counter()
        for x, y in dl:
            if launch is None:
                launch = time.perf_counter() - t0
            x, y = torch.as_tensor(x), torch.as_tensor(y)
            acc += float(x[0, 0, 0, 0]) + int(y[0])
            n += len(y)
            nb += 1
        epochs.append(time.perf_counter() - e0)
    run = time.perf_counter() - t0 - launch
    out = {"loader": a.loader, "workers": a.workers, "batches": nb, "samples": n, "launch_s": round(launch, 3),
           "batches_per_s": round(nb / run, 2), "samples_per_s": round(n / run, 1),
           "epoch_s": [round(e, 3) for e in epochs]}
    if a.loader == "baton":
        st = dl.stats()
        out.update(mode=st["mode"], epoch_fetched=st["epoch_fetched"], dataset_bytes=st["dataset_bytes"])
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
