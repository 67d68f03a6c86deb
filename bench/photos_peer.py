#!/usr/bin/python3
"""photos_peer.py — photographs into a PyTorch loop: torchvision's recipe on the original files
(ImageFolder, RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize, in DataLoader
worker processes, persistent, pin_memory off) or baton's Loader on the packed shards (crop=
"random-resized", size=224, flip=True). The loop takes each batch as a training step would begin
(a tensor made from it, one value read).

  photos_peer.py --loader torch --folder DIR [--workers N] [--batch 128] [--seconds 60]
  photos_peer.py --loader baton --data URI [--mode M] [--threads N] [--dtype float32|uint8] [...]
The last line is JSON: loader, workers, samples, launch_s (start to the first batch), samples_per_s
(the batches after the first over their time), peak RSS of this process and its workers in MB.
--seconds bounds the run (an epoch of 125k images on 2 cores takes minutes)."""
import argparse
import json
import os
import time

import torch


def rss_mb(pids):
    tot = 0
    for p in pids:
        try:
            for l in open("/proc/%d/status" % p):
                if l.startswith("VmHWM:"):
                    tot += int(l.split()[1])
        except OSError:
            pass
    return tot / 1024


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--loader", choices=["torch", "baton"], required=True)
    p.add_argument("--folder"), p.add_argument("--data"), p.add_argument("--mode", default=None)
    p.add_argument("--workers", type=int, default=2), p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=128), p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--size", type=int, default=224), p.add_argument("--dtype", default="float32")
    a = p.parse_args()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    if a.loader == "torch":
        from torch.utils.data import DataLoader
        from torchvision import datasets, transforms
        tf = transforms.Compose([transforms.RandomResizedCrop(a.size), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(), transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
        dl = DataLoader(datasets.ImageFolder(a.folder, tf), batch_size=a.batch, shuffle=True, num_workers=a.workers,
                        persistent_workers=a.workers > 0, pin_memory=False)
    else:
        import baton
        dl = baton.Loader(a.data, mode=a.mode, batch=a.batch, threads=a.threads, epochs=None, seed=1,
                          crop="random-resized", size=a.size, flip=True, dtype=a.dtype)
    launch, n, t1, acc = None, 0, None, 0.0
    for x, y in dl:
        x = torch.as_tensor(x)
        acc += float(x[0, 0, 0, 0])
        if launch is None:
            launch, t1 = time.perf_counter() - t0, time.perf_counter()
            continue
        n += len(y)
        if time.perf_counter() - t1 > a.seconds:
            break
    run = time.perf_counter() - t1
    pids = [os.getpid()]
    if a.loader == "torch" and a.workers and getattr(dl, "_iterator", None) is not None:
        pids += [w.pid for w in getattr(dl._iterator, "_workers", [])]
    out = {"loader": a.loader, "workers": a.workers if a.loader == "torch" else a.threads, "samples": n,
           "launch_s": round(launch, 3), "samples_per_s": round(n / run, 1) if run > 0 else 0,
           "peak_rss_mb": round(rss_mb(pids), 1)}
    print(json.dumps(out), flush=True)
    os._exit(0)   # DataLoader's workers are not waited for


if __name__ == "__main__":
    main()
