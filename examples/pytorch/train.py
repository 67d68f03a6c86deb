#!/usr/bin/python3
"""A PyTorch ResNet trained on a baton dataset: any URI and input mode, resumable at the exact
sample, stopping cleanly on an interruption notice (exit 75), on CPU or CUDA, on one process or
data-parallel under torchrun or mpirun (docs/pytorch.md walks through the lines that are baton's).

  python3 examples/pytorch/train.py --data s3://bucket/fm/ --mode pipe --ckpt ckpt --epochs 5
  torchrun --nproc_per_node 2 --redirects 9:1 --tee 9:1 examples/pytorch/train.py --data DIR --ckpt ckpt
  mpirun -n 2 python3 examples/pytorch/train.py --data DIR --ckpt ckpt          (Open MPI: the same run)
  python3 examples/pytorch/train.py --data photos/ --crop random-resized --size 224 --model resnet50 \
      --device cuda --ckpt ckpt     (photographs of any size; uint8 batches normalised on the GPU)
Two processes on one machine (W = 2): Debian's torchrun (torch 1.13 on Python 3.11) takes
--nproc_per_node (it rejects --nproc-per-node) and crashes parsing its own defaults of --redirects
and --tee ("0" is None under 3.11's IntFlag); any mapping gets past that, and "9:1" (local rank 9's
stdout, which two processes do not have) changes nothing. Newer torch: torchrun --nproc-per-node 2.
While it trains, rank 0 prints a progress line every 30 s (--log-s) or N steps (--log-every):
`step S of T, epoch E, loss L, accuracy A, R samples/s` over the steps since the line before.
The last line printed is JSON: step, epochs, loss, accuracy, samples/s, the step it resumed from,
the newest checkpoint. --dataloader feeds the Loader through torch.utils.data.DataLoader
(batch_size=None), --dropout P adds dropout before the classifier: a resumed run still ends with
the weights of an uninterrupted one.
"""
import argparse, json, math, os, sys, time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import baton
import baton.torch


def norm(c, kind):   # group norm is per sample: the same result at any world size
    return nn.BatchNorm2d(c) if kind == "batch" else nn.GroupNorm(min(8, c), c)


class Block(nn.Module):
    def __init__(self, cin, cout, stride, kind):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), norm(cout, kind)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), norm(cout, kind)
        self.short = None if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), norm(cout, kind))

    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + (x if self.short is None else self.short(x)))


def resnet(depth, channels, classes, size, kind="batch", dropout=0.0):
    """ResNet-(6n+2) of He et al.; an ImageNet stem (7x7/2 and a max pool) for images over 64 px."""
    n, width = (depth - 2) // 6, 16 if size <= 64 else 64
    stem = [nn.Conv2d(channels, width, 3, 1, 1, bias=False)] if size <= 64 else [
        nn.Conv2d(channels, width, 7, 2, 3, bias=False)]
    stem += [norm(width, kind), nn.ReLU()] + ([nn.MaxPool2d(3, 2, 1)] if size > 64 else [])
    layers, cin = [], width
    for cout, stride in ((width, 1), (2 * width, 2), (4 * width, 2)):
        for i in range(n):
            layers.append(Block(cin, cout, stride if i == 0 else 1, kind))
            cin = cout
    head = [nn.Dropout(dropout)] if dropout > 0 else []
    return nn.Sequential(*stem, *layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), *head, nn.Linear(cin, classes))


def open_loader(a, rank, world):
    """The training data: baton's Loader (bench/pytorch.sh swaps in a DataLoader here). With a crop,
    images of any size: uint8 pixels on a GPU (a quarter of the bytes to copy; normalised there)."""
    crop = dict(crop=a.crop, size=a.size, flip=a.flip) if a.crop else {}
    if a.uint8 or (a.crop and a.device == "cuda"):
        crop["dtype"] = "uint8"
    return baton.Loader(a.data, mode=a.mode, batch=a.batch, seed=a.seed, epochs=a.epochs, rank=rank,
                        world=world, threads=a.loader_threads, **crop)


def on_device(t, loader, device):
    """A batch's images as the model's input: uint8 pixels are normalised here, on the device, with
    the dataset's per-channel statistics (what the Loader does itself for float32)."""
    x = t.to(device, non_blocking=True)
    if x.dtype != torch.uint8:
        return x
    mean = torch.tensor(loader.info["mean"], device=device).view(1, -1, 1, 1)
    std = torch.tensor(loader.info["std"], device=device).view(1, -1, 1, 1)
    return (x.float() / 255 - mean) / std


def make_model(a, c, classes, size):
    if a.model == "resnet":
        return resnet(a.depth, c, classes, size, a.norm, a.dropout)
    import torchvision   # Debian's python3-torchvision
    return getattr(torchvision.models, a.model)(num_classes=classes)


class Progress:
    """A line every --log-s seconds or --log-every steps, `baton train`'s words, flushed at once (in
    order with the final JSON line when stdout is a file): loss and accuracy over the steps since
    the line before, samples/s over its time (this rank's samples times the world)."""

    def __init__(self, a, step, total, world):
        self.every, self.secs, self.total, self.world = a.log_every, a.log_s, total, world
        self.last = (step, time.time(), 0, 0.0, 0.0)

    def step(self, step, epoch, seen, loss_sum, correct):
        s0, t0, n0, l0, c0 = self.last
        now = time.time()
        if not ((self.every and step - s0 >= self.every) or (self.secs and now - t0 >= self.secs)):
            return
        l, c = loss_sum.item(), correct.item()
        print("step %d of %d, epoch %d, loss %.4f, accuracy %.4f, %.0f samples/s" % (
            step, self.total, epoch, (l - l0) / max(step - s0, 1), (c - c0) / max(seen - n0, 1),
            (seen - n0) * self.world / max(now - t0, 1e-9)), flush=True)
        self.last = (step, now, seen, l, c)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True), p.add_argument("--mode", default=None)
    p.add_argument("--ckpt", required=True), p.add_argument("--ckpt-uri", default=None)
    p.add_argument("--every", default=None, help="checkpoint interval: steps, 90s, 5m, auto")
    p.add_argument("--epochs", type=int, default=2), p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1), p.add_argument("--seed", type=int, default=1)
    p.add_argument("--depth", type=int, default=8), p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--norm", default="batch", choices=["batch", "group"], help="group: the same at any world size")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--threads", type=int, default=2), p.add_argument("--loader-threads", type=int, default=2)
    p.add_argument("--deterministic", action="store_true", help="bit-exact resumes (and slower kernels)")
    p.add_argument("--model", default="resnet", help="resnet (ours, --depth) or a torchvision model: resnet50, ...")
    p.add_argument("--crop", default=None, choices=["random-resized", "center", "pad"],
                   help="random-resized: ImageNet's training crop (images of any size)")
    p.add_argument("--size", type=int, default=224), p.add_argument("--flip", action="store_true")
    p.add_argument("--uint8", action="store_true", help="uint8 batches normalised by torch (the default with a crop on cuda)")
    p.add_argument("--dropout", type=float, default=0.0, help="dropout before the classifier (ours)")
    p.add_argument("--dataloader", action="store_true", help="through torch's DataLoader(loader, batch_size=None) "
                   "(its batches are plain lists: under torchrun a last partial batch's loss is scaled by this rank's part)")
    p.add_argument("--log-s", type=float, default=30.0, help="seconds between progress lines (0: none by time)")
    p.add_argument("--log-every", type=int, default=0, help="steps between progress lines (0: by time only)")
    a = p.parse_args(argv)
    env = os.environ   # torchrun sets RANK/WORLD_SIZE, mpirun OMPI_COMM_WORLD_*
    rank = int(env.get("RANK", env.get("OMPI_COMM_WORLD_RANK", 0)))
    world = int(env.get("WORLD_SIZE", env.get("OMPI_COMM_WORLD_SIZE", 1)))
    local = int(env.get("LOCAL_RANK", env.get("OMPI_COMM_WORLD_LOCAL_RANK", 0)))
    notice = baton.Notice()   # SIGTERM, Ctrl-C and spot notices as `if notice:`
    if a.deterministic:
        env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    torch.manual_seed(a.seed), torch.set_num_threads(a.threads)
    device = torch.device("cuda", local) if a.device == "cuda" else torch.device("cpu")
    if world > 1:
        env.setdefault("MASTER_ADDR", "127.0.0.1"), env.setdefault("MASTER_PORT", "29511")
        dist.init_process_group("nccl" if a.device == "cuda" else "gloo", rank=rank, world_size=world)
    loader = open_loader(a, rank, world)
    c, h, w = loader.info["shape"]
    model = make_model(a, c, loader.info["classes"], h).to(device, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    ckpt = baton.Checkpoints(a.ckpt, uri=a.ckpt_uri, every=a.every) if rank == 0 else None
    step, done = 0, baton.torch.load(ckpt, model, opt) if ckpt else None
    resume = [done.step, done.state["loader"], opt.state_dict()] if done else [0, None, None]
    if world > 1:   # rank 0's checkpoint for every rank (DDP copies the weights from rank 0)
        dist.broadcast_object_list(resume, src=0)
        if resume[2] is not None and rank > 0:
            opt.load_state_dict(resume[2])
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local] if a.device == "cuda" else None)
    step = resume[0]
    if resume[1]:
        loader.load_state_dict(resume[1])
    total, saved, first = a.epochs * len(loader), step, step
    seen, t0, loss_sum, correct, stop = 0, time.time(), torch.zeros(()), torch.zeros(()), False
    limit = a.max_steps or None   # a run resumed at or past --max-steps trains nothing more
    data = loader
    if a.dataloader:   # tensors instead of NumPy views; the same batches in the same order
        from torch.utils.data import DataLoader
        data = DataLoader(loader, batch_size=None)
    log = Progress(a, step, total, world) if rank == 0 else None
    verify = bool(env.get("BATON_VERIFY_LOG"))   # (reading a loss waits for the device: only there)
    for epoch in range(loader.epoch, a.epochs):
        if limit and step >= limit:
            break
        model.train()
        loader.set_epoch(epoch)   # as with a DistributedSampler (the cursor stays where a resume put it)
        for batch in data:   # (images, labels) as NumPy views (tensors from a DataLoader); .total: the global batch's size
            images, labels = batch
            if not torch.is_tensor(images):
                images, labels = torch.from_numpy(images), torch.from_numpy(labels)
            x, y = on_device(images, loader, device), labels.to(device)
            x = x.contiguous(memory_format=torch.channels_last)   # oneDNN's and cuDNN's fast layout
            btotal = getattr(batch, "total", None) or len(y) * world   # a DataLoader's batch is a plain list
            for g in opt.param_groups:   # cosine schedule: a function of the step alone
                g["lr"] = 0.5 * a.lr * (1 + math.cos(math.pi * step / total))
            out = model(x)
            loss = F.cross_entropy(out, y, reduction="sum") * world / btotal
            opt.zero_grad(set_to_none=True), loss.backward(), opt.step()
            step, seen = step + 1, seen + len(y)
            loss_sum, correct = loss_sum + loss.detach().cpu(), correct + (out.argmax(1) == y).sum().cpu()
            if log:
                log.step(step, epoch, seen, loss_sum, correct)
                if verify:   # under `baton verify-resume`: each step's loss compared with an uninterrupted run's
                    baton.log_step(step, loss.item())
            stop = bool(notice)
            if world > 1:   # a notice on any rank stops every rank after the same step
                flag = torch.tensor([int(stop)], device=device)
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                stop = bool(flag.item())
            if ckpt and (stop or ckpt.due(step)):
                baton.torch.save(ckpt, step, model, opt, {"loader": loader.state_dict()})
                saved = step
            if stop or (limit and step >= limit):
                break
        if stop or (limit and step >= limit):
            break
    interruption = None
    if ckpt:
        if saved != step:
            baton.torch.save(ckpt, step, model, opt, {"loader": loader.state_dict()})
        if stop and notice:   # planned by the notice's deadline: committed and verified here, uploaded if it fits
            interruption = ckpt.wait(deadline=notice.event)
        else:
            ckpt.wait()   # committed (and uploaded) before the exit status says so
    el = time.time() - t0
    if rank == 0:
        res = {"step": step, "epoch": loader.epoch, "status": "stopped" if stop else "done",
               "loss": loss_sum.item() / max(step - first, 1), "accuracy": correct.item() / max(seen, 1),
               "samples_per_s": seen * world / el if el > 0 else 0}
        print(json.dumps(dict(res, stopped=stop, notice=notice.event, resumed_from=first,
                              checkpoint=ckpt.last_committed if ckpt else None, interruption=interruption)),
              flush=True)
        if interruption:
            res["interruption"] = interruption
        baton.result(**res)   # under a baton fleet: the report shows it beside the task's cost
    return baton.EXIT_INTERRUPTED if stop else 0


if __name__ == "__main__":
    sys.exit(main())
