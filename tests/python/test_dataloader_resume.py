"""test_dataloader_resume.py — dropout through torch's DataLoader(loader, batch_size=None) resumes
exactly (the defects issue, item 9): DataLoader draws its base seed from torch's global generator at
each iter(), so a run resumed from a mid-epoch checkpoint would draw once more than the run that
saved and every later dropout mask would differ; baton.torch.load puts the generators back again
when that pass begins. In process (a checkpoint mid-epoch and one at an epoch's end), then
examples/pytorch/train.py --dataloader --dropout SIGKILLed twice and restarted: weights and
optimizer state byte-identical to an uninterrupted run. And the example's progress lines (item 15):
every N steps, in order before the final JSON line in a file."""
# plain build only: under the sanitizers it reached no line of src/ that the sanitizer pass's other
# tests do not, and cost 48 CPU-seconds of its torch runs (scripts/san-select.sh's rule, applied to
# the Python files)
import json
import os
import re
import signal
import subprocess
import sys
import time

import baton
from harness import TMP, check, done, pack, skip

try:
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader
except ImportError:
    torch = None
if torch is None:
    skip("no torch")
    done()
import baton.torch as bt   # noqa: E402

FM = pack(os.path.join(TMP, "fm"))
torch.set_num_threads(1)


def trainer(d, save_at, stop_at=None):
    """Two epochs of 20 batches with dropout through a DataLoader, resuming from d; a checkpoint at
    step save_at; returns at stop_at (as if killed) or the weights' bytes at the end."""
    torch.manual_seed(1)
    m = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 64), torch.nn.ReLU(), torch.nn.Dropout(0.5),
                            torch.nn.Linear(64, 10))
    o = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    torch.manual_seed(99)   # a restarted process's generator is anyone's: the checkpoint's must win
    with baton.Loader(FM, batch=500, seed=5, epochs=2) as loader, baton.Checkpoints(d) as ck:
        c = bt.load(ck, m, o)
        step = c.step if c else 0
        if c:
            loader.load_state_dict(c.state["loader"])
        dl = DataLoader(loader, batch_size=None)
        for epoch in range(loader.epoch, 2):
            for x, y in dl:
                loss = F.cross_entropy(m(x), y)
                o.zero_grad(), loss.backward(), o.step()
                step += 1
                if step == save_at:
                    bt.save(ck, step, m, o, {"loader": loader.state_dict()}, sync=True)
                if step == stop_at:
                    return None
    check(step == 40, "40 steps (%d)" % step)
    return b"".join(t.detach().numpy().tobytes() for t in m.state_dict().values())


REF = trainer(os.path.join(TMP, "ref"), 0)
for save_at, what in ((7, "mid-epoch"), (20, "at the epoch's end")):
    d = os.path.join(TMP, "cut%d" % save_at)
    trainer(d, save_at, stop_at=save_at + 2)
    got = trainer(d, save_at)
    check(got == REF, "dropout through a DataLoader, resumed from a checkpoint %s: the weights of the uninterrupted "
          "run" % what)

# ---- the example, killed and restarted
HERE = os.path.dirname(os.path.abspath(__file__))
EX = os.path.join(HERE, "..", "..", "examples", "pytorch", "train.py")
STEPS = 24
ARGS = [sys.executable, EX, "--data", FM, "--epochs", "1", "--batch", "128", "--deterministic", "--threads", "2",
        "--dataloader", "--dropout", "0.3", "--max-steps", str(STEPS), "--every", "4", "--log-every", "5", "--log-s", "0"]
ENV = dict(os.environ, OMP_NUM_THREADS="2")


def final(d):
    return os.path.join(d, "ckpt-%09d" % STEPS)


def files(d):
    return [open(os.path.join(d, f), "rb").read() for f in ("model.safetensors", "optim.safetensors")]


R = os.path.join(TMP, "ex-ref")
out = os.path.join(TMP, "ex-ref.out")
with open(out, "w") as f:
    rc = subprocess.run(ARGS + ["--ckpt", R], env=ENV, stdout=f, stderr=subprocess.PIPE, text=True)
lines = open(out).read().splitlines()
check(rc.returncode == 0 and os.path.isdir(final(R)), "the uninterrupted run: %s %s" % (lines[-1:], rc.stderr[-400:]))
prog = [l for l in lines if l.startswith("step ")]
pat = re.compile(r"step (\d+) of 79, epoch 0, loss [0-9.]+, accuracy [0-9.]+, \d+ samples/s$")
steps = [int(m.group(1)) if m else -1 for m in map(pat.match, prog)]
check(steps == list(range(5, STEPS + 1, 5)), "a progress line every 5 steps, baton train's words: %s" % prog[:3])
check(lines and lines[-1].startswith("{") and all(l.startswith("step ") for l in lines[:-1]),
      "in a file: the progress lines in order, then the JSON line: %s" % lines[-2:])

K = os.path.join(TMP, "ex-killed")
kills = 0
for at in (8, 16):
    p = subprocess.Popen(ARGS + ["--ckpt", K], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.time() + 120
    while time.time() < end and p.poll() is None and not os.path.isdir(os.path.join(K, "ckpt-%09d" % at)):
        time.sleep(0.005)
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
        kills += 1
    p.wait()
r = subprocess.run(ARGS + ["--ckpt", K], env=ENV, capture_output=True, text=True)
j = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1]) if "{" in r.stdout else {}
check(r.returncode == 0 and j.get("step") == STEPS and 0 < j.get("resumed_from", 0) < STEPS,
      "the restart finishes (%s, %s)" % (j, r.stderr[-300:]))
check(kills >= 1 and os.path.isdir(final(K)) and files(final(K)) == files(final(R)),
      "--dataloader --dropout 0.3, SIGKILLed %d times mid-epoch and restarted: weights and optimizer state "
      "byte-identical to the uninterrupted run" % kills)
done()
