#!/usr/bin/python3
"""pytorch_bf16_peer.py — the PyTorch peer (../shared/peers/torch/bench.py) in mixed precision:
the same models (its models.py), the same measurement (training img/s of forward + loss + backward
+ SGD momentum step on a synthetic 28x28x1 batch, the median of REPS timed repeats; inference p50
latency at batch 64), with forward and loss under torch.autocast("cpu", dtype=torch.bfloat16) —
PyTorch's own CPU mixed precision: convolutions and linear layers in bfloat16 (oneDNN), weights,
optimizer and batch-norm statistics f32. Channels-last, as the f32 peer's best configuration.

  pytorch_bf16_peer.py --model resnet20 --threads 2 [--batch 128] [--train-seconds 4] [--reps 3] [--json]

With --json the last line is one object: {"peer": "pytorch-autocast-bf16", "model", "threads",
"batch", "train_img_per_s", "infer_b64_p50_ms", ...}."""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

PEER = os.environ.get("PEER_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                                                   "peers", "torch")
sys.path.insert(0, PEER)
from models import make  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet20", choices=["lenet", "resnet8", "resnet20"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--train-seconds", type=float, default=4.0)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--no-train", action="store_true", help="inference only")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(0)
    cl = torch.channels_last
    model = make(a.model).to(memory_format=cl)
    out = {"peer": "pytorch-autocast-bf16", "version": torch.__version__, "model": a.model, "threads": a.threads,
           "batch": a.batch}
    if not a.no_train:
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
        lossf = nn.CrossEntropyLoss()
        x = torch.randn(a.batch, 1, 28, 28).to(memory_format=cl)
        y = torch.randint(0, 10, (a.batch,))

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = lossf(model(x), y)
            loss.backward()
            opt.step()

        for _ in range(3):
            step()
        t0 = time.perf_counter()
        step()
        nsteps = max(3, int(a.train_seconds / (time.perf_counter() - t0)))
        rates = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            for _ in range(nsteps):
                step()
            rates.append(a.batch * nsteps / (time.perf_counter() - t0))
        out["train_img_per_s"] = round(statistics.median(rates), 1)
        print(f"{a.model} train b={a.batch} autocast bf16: {out['train_img_per_s']:.0f} img/s")
    model.eval()
    xi = torch.randn(64, 1, 28, 28).to(memory_format=cl)
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        for _ in range(5):
            model(xi)
        ts = []
        for _ in range(40):
            t0 = time.perf_counter()
            model(xi)
            ts.append((time.perf_counter() - t0) * 1e3)
    out["infer_b64_p50_ms"] = round(statistics.median(ts), 4)
    print(f"{a.model} infer b=64 autocast bf16: p50 {out['infer_b64_p50_ms']:.3f} ms")
    if a.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
