"""verify_trainer.py — a small trainer for test_verify_resume.sh: softmax regression with momentum
SGD and a little gradient noise, in NumPy, on baton.Loader, baton.Checkpoints and baton.Notice; it
resumes exactly, unless --bug breaks one thing on purpose:

  loader-after  the loader's state is saved one batch ahead (as a loop that fetched its next batch
                before saving): the first step after a resume trains on the wrong samples
  optimizer     the momentum buffers are not saved (zero after a resume): the loss differs from
                the second step after a resume
  rng           the noise generator's state is not saved (reseeded after a resume): the weights
                differ at the next checkpoint (run with --no-loss to see it there)

Exit 0 at --steps, 75 after a checkpoint on an interruption notice, SIGTERM or Ctrl-C."""
import argparse
import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # one summation order, run after run
import numpy as np  # noqa: E402

import baton  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--data", required=True)
ap.add_argument("--ckpt", required=True)
ap.add_argument("--steps", type=int, default=40)
ap.add_argument("--every", type=int, default=5)
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--bug", choices=["", "loader-after", "optimizer", "rng"], default="")
ap.add_argument("--no-loss", action="store_true")
a = ap.parse_args()

loader = baton.Loader(a.data, batch=a.batch, seed=7, epochs=None, threads=1)
ckpt = baton.Checkpoints(a.ckpt, every=a.every)
notice = baton.Notice()
rng = np.random.default_rng(11)
W = np.zeros((784, 10))
b = np.zeros(10)
mW, mb = np.zeros_like(W), np.zeros_like(b)
step = saved = 0
loss = None
c = ckpt.load()
if c:
    step = saved = c.step
    W, b = c.tensors["W"].copy(), c.tensors["b"].copy()
    if a.bug != "optimizer":
        mW, mb = c.optim["mW"].copy(), c.optim["mb"].copy()
    if a.bug != "rng":
        rng.bit_generator.state = json.loads(c.state["rng"])
    loader.load_state_dict(c.state["loader"])


def save(sync):
    global saved
    saved = step
    st = loader.state_dict()
    if a.bug == "loader-after":
        st = dict(st, position=min(st["position"] + a.batch, st["samples"]))
    ckpt.save(step, {"W": W, "b": b}, {"loader": st, "rng": json.dumps(rng.bit_generator.state)},
              optim={"mW": mW, "mb": mb}, sync=sync)


while step < a.steps:
    for xb, yb in loader:
        x = np.asarray(xb, dtype=np.float64).reshape(len(yb), -1)
        z = x @ W + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        n = len(yb)
        loss = -np.log(p[np.arange(n), yb] + 1e-12).mean()
        p[np.arange(n), yb] -= 1
        p /= n
        gW = x.T @ p + rng.standard_normal(W.shape) * 1e-3
        gb = p.sum(axis=0)
        mW = 0.9 * mW + gW
        mb = 0.9 * mb + gb
        W = W - 0.05 * mW
        b = b - 0.05 * mb
        step += 1
        baton.log_step(step, None if a.no_loss else loss)
        if notice or ckpt.due(step):
            save(sync=bool(notice))
        if notice:
            ckpt.wait()
            sys.exit(baton.EXIT_INTERRUPTED)
        if step >= a.steps:
            break
if saved != step:
    save(sync=True)
ckpt.wait()
print(json.dumps({"step": step, "loss": None if loss is None else float(loss)}))
