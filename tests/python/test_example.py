"""test_example.py — examples/pytorch/train.py, a PyTorch ResNet on baton's Loader, Checkpoints and
Notice: SIGKILLed at random moments and while a checkpoint is being written, restarted each time,
it ends with weights and optimizer state byte-identical to an uninterrupted run; an interruption
notice mid-epoch stops it with exit 75 after a committed checkpoint and the rerun continues at the
next sample; two processes under torch.distributed (gloo), started with the torchrun line of the
example's docstring, train to the weights of one process with the same global batch, within rounding; on the local spot fleet (a job like docs/pytorch.yaml) two
interruptions with notice and one without lose nothing with notice and end byte-identical."""
# plain build only: under the sanitizers it reached 2 lines of src/ (an early return in
# src/fleet/fleet_deadline.c) that the sanitizer pass's other tests — the other Python files, the
# unit tests, tests/san-set.txt's scripts — do not, for 120 CPU-seconds of torch runs
# (scripts/san-select.sh's rule, applied to the Python files)
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np

import baton
from harness import BATON, BUILD_DIR, TMP, check, done, pack, run

HERE = os.path.dirname(os.path.abspath(__file__))
EX = os.path.join(HERE, "..", "..", "examples", "pytorch", "train.py")
FM = pack(os.path.join(TMP, "fm"))
COMMON = ["--data", FM, "--epochs", "1", "--batch", "128", "--deterministic", "--threads", "2"]
STEPS = 79   # 10000 samples in batches of 128
ENV = dict(os.environ, OMP_NUM_THREADS="2")


def train(ckpt, *extra, env=None, **kw):
    return run(sys.executable, EX, *COMMON, "--ckpt", ckpt, *extra, env=env or ENV, **kw)


def last_json(out):
    lines = [l for l in out.split("\n") if l.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def same_files(a, b):
    return all(open(os.path.join(a, f), "rb").read() == open(os.path.join(b, f), "rb").read()
               for f in ("model.safetensors", "optim.safetensors"))


def final(d, step=STEPS):
    return os.path.join(d, "ckpt-%09d" % step)


t0 = time.time()
REF = os.path.join(TMP, "ref")
r = train(REF, "--every", "10")
check(r.returncode == 0 and last_json(r.stdout).get("step") == STEPS, "the uninterrupted run: %s %s" % (
    r.stdout[-300:], r.stderr[-500:]))
print("uninterrupted: %.1f s" % (time.time() - t0), flush=True)

# ---- SIGKILL at random moments and while a checkpoint is being written
K = os.path.join(TMP, "killed")
rng = random.Random(int(os.environ.get("BATON_TEST_SEED", "7")))
kills = 10
during_write = killed = 0
for k in range(kills):
    p = subprocess.Popen([sys.executable, EX, *COMMON, "--ckpt", K, "--every", "4"], env=ENV,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if k % 2 == 0:   # at a random moment (start-up included)
        end = time.time() + rng.uniform(1.0, 5.0)
        while time.time() < end and p.poll() is None:
            time.sleep(0.01)
    else:            # as soon as a checkpoint folder is being written
        end = time.time() + 60
        while time.time() < end and p.poll() is None:
            if os.path.isdir(K) and any(n.startswith(".ckpt-") and ".tmp" in n for n in os.listdir(K)):
                break
            time.sleep(0.0005)
    if p.poll() is not None:
        break   # finished before this kill: enough kills happened
    p.send_signal(signal.SIGKILL)
    p.wait()
    killed += 1
    writing = os.path.isdir(K) and any(".tmp" in n for n in os.listdir(K))
    during_write += writing
    ls = subprocess.run([BATON, "ckpt", "ls", K], capture_output=True, text=True)
    check(" bad" not in ls.stdout or ", 0 bad" in ls.stdout, "after kill %d nothing damaged is listed: %s" % (k, ls.stdout))
r = train(K, "--every", "4")
check(r.returncode == 0 and last_json(r.stdout).get("step") == STEPS, "the last restart finishes: %s" % r.stderr[-500:])
check(killed >= min(kills, 3), "%d kills" % killed)
check(during_write >= 1, "%d of the kills landed while a checkpoint folder was being written" % during_write)
check(os.path.isdir(final(K)) and same_files(final(REF), final(K)),
      "after %d SIGKILLs (%d during a checkpoint write): weights and optimizer state byte-identical" % (
          killed, during_write))
print("%d kills, %d during writes: %.1f s" % (killed, during_write, time.time() - t0), flush=True)

# ---- an interruption notice mid-epoch: exit 75 after a committed checkpoint, the rerun goes on
N = os.path.join(TMP, "noticed")
im = subprocess.Popen([BATON, "imds", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
url = im.stdout.readline().strip().split()[-1]
env = dict(ENV, AWS_EC2_METADATA_SERVICE_ENDPOINT=url, BATON_NOTICE_POLL_S="0.05", AWS_EC2_METADATA_DISABLED="false")
p = subprocess.Popen([sys.executable, EX, *COMMON, "--ckpt", N, "--every", "10"], env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
end = time.time() + 120
while time.time() < end and p.poll() is None and not (os.path.isdir(N) and any(
        n.startswith("ckpt-") for n in os.listdir(N))):
    time.sleep(0.01)
urllib.request.urlopen(urllib.request.Request(url + "/baton/interrupt", method="PUT"), timeout=5).read()
out, err = p.communicate(timeout=120)
im.kill()
j = last_json(out)
check(p.returncode == 75 and j.get("stopped") and j["notice"]["kind"] == "terminate",
      "a notice: exit 75, stopped (%d, %s, %s)" % (p.returncode, out[-300:], err[-300:]))
stop = j.get("step", 0)
i = j.get("interruption") or {}
check(i.get("step") == stop and i.get("upload") == "none" and i.get("deadline") and
      j["notice"]["seen_at"] <= i["commit_at"] <= i["exit_at"] < i["deadline"] and i["margin_s"] > 60,
      "the result line's interruption: committed and exited inside EC2's deadline: %s" % i)
with baton.Checkpoints(N) as ck:
    c = ck.load()
check(c is not None and c.step == stop and 0 < stop < STEPS, "the checkpoint is of the step it stopped at (%s, %s)" % (
    c and c.step, stop))
check(c is not None and c.state["loader"]["position"] == stop * 128 and c.state["loader"]["epoch"] == 0,
      "its loader cursor is the next sample: %s" % (c and c.state["loader"]))
r = train(N, "--every", "10")
check(r.returncode == 0 and same_files(final(REF), final(N)), "the rerun continues there and ends byte-identical")

# ---- torch.distributed (gloo): 2 processes = 1 process with the same global batch, within rounding
def port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    n = s.getsockname()[1]
    s.close()
    return n

DD = ["--norm", "group", "--batch", "64", "--max-steps", "8", "--every", "off"]
def weights(d):
    with baton.Checkpoints(d) as ck:
        c = ck.load()
    return np.concatenate([c.tensors[k].astype(np.float64).ravel() for k in sorted(c.tensors)])

def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))

one = os.path.join(TMP, "w1")
r1 = train(one, *DD)
r1b = train(os.path.join(TMP, "w1t1"), *DD, "--threads", "1")
# W = 2 as the example's docstring starts it: its torchrun line, which works with Debian's torch
# 1.13 on Python 3.11 (its own --nproc-per-node and its default --redirects do not), on a free port
line = next((l.split() for l in open(EX).read().split('"""')[1].splitlines() if l.strip().startswith("torchrun ")), [])
check(line[:1] == ["torchrun"] and "--nproc_per_node" in line, "the example's docstring gives a torchrun line: %s" % line)
launch = line[1:line.index("examples/pytorch/train.py")] if "examples/pytorch/train.py" in line else []
tr = shutil.which("torchrun")
# torchrun's agent leaves a torchelastic_* folder in $TMPDIR: this test's own, removed at its end
proc = subprocess.run([tr, *launch, "--master_port", str(port()), EX, *COMMON, "--ckpt", os.path.join(TMP, "w2"),
                       *DD], env=dict(ENV, TMPDIR=TMP), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                      timeout=300) if tr and launch else None
ok = r1.returncode == 0 and r1b.returncode == 0 and proc is not None and proc.returncode == 0
check(ok, "W = 1 and W = 2 (%s) runs: %s" % (" ".join(line[:7]), proc and proc.stderr[-600:]))
if ok:
    w1, w2, floor = weights(one), weights(os.path.join(TMP, "w2")), weights(os.path.join(TMP, "w1t1"))
    d2, d0 = rel(w2, w1), rel(floor, w1)
    print("after 8 steps: W = 2 against W = 1 %.2e (relative L2); 1 thread against 2: %.2e" % (d2, d0), flush=True)
    # rounding: another summation order (the threads') moves the weights about as far
    check(d2 < 1e-3 and d2 <= 4 * max(d0, 1e-7),
          "two gloo ranks train to the weights of one process within rounding (%.2e; 1 against 2 threads %.2e)" % (
              d2, d0))

# ---- the local spot fleet: two interruptions with notice, one without. The market runs 240 times
# faster than the clock, but a notice is NOTICE_S seconds of the clock, not 2 minutes / 240 = 0.5 s:
# from notice to exit took 1.9-2.4 s under a load of 10 (the checkpoint, then Python and torch
# shutting down), 0.5 s was lost at a load of 8. Lest a longer notice let a script that ignores it
# finish in time, each noticed instance must end by the script's own exit 75 after a checkpoint at
# or past the step it reached, before the deadline (a kill at the deadline is 137, a finished run 0)
NOTICE_S = 8
SEED = os.path.join(TMP, "seed")
os.makedirs(SEED)
shutil.copy(EX, SEED)
shutil.copytree(FM, os.path.join(SEED, "data"))
job = os.path.join(TMP, "pt.yaml")
with open(job, "w") as f:
    f.write("""name: pt
command: %s train.py --data data --ckpt ckpt --epochs 1 --batch 128 --deterministic --threads 2
instance_types:
  - {name: c5.xlarge, on_demand_price: 0.17, spot_price: 0.051}
  - {name: m5.xlarge, on_demand_price: 0.192, spot_price: 0.0576}
zones: [us-east-1a, us-east-1b]
volume: {seed: %s}
market:
  time_scale: 240
  launch_delay: 20s
  notice: %ds
  capacity_cooldown: 2m
  interruptions:
    - {after_steps: 15}
    - {after_steps: 15, notice: 0}
    - {after_steps: 15}
env:
  OMP_NUM_THREADS: 2
""" % (sys.executable, SEED, NOTICE_S * 240))
S = os.path.join(TMP, "state")
t1 = time.time()
r = run(BATON, "fleet", "run", job, "--state", S, timeout=900)
check(r.returncode == 0, "baton fleet run: %s %s" % (r.stdout[-600:], r.stderr[-800:]))
st = json.loads(run(BATON, "fleet", "status", "pt", "--state", S, "--json").stdout or "{}")
tot = st.get("totals", {})
print("fleet: %.1f s; %s" % (time.time() - t1, {k: tot.get(k) for k in (
    "interruptions_with_notice", "interruptions_without_notice", "max_lost_steps_with_notice",
    "max_lost_steps_without_notice", "savings_pct")}), flush=True)
check(tot.get("interruptions_with_notice") == 2 and tot.get("interruptions_without_notice") == 1,
      "2 interruptions with notice, 1 without: %s" % tot)
check(tot.get("max_lost_steps_with_notice") == 0, "0 steps lost with notice")
noticed = [i for i in st.get("instances", []) if i.get("interruption") == "notice"]
print("notice to exit, seconds of the clock: %s (the notice: %d)" % (
    [round((i.get("t_end", 0) - i.get("t_notice", 0)) / 240, 2) for i in noticed], NOTICE_S), flush=True)
check(len(noticed) == 2 and all(i.get("exit_code") == 75 and i.get("checkpoint_step", -1) >= i.get("reached_step") > 0
                                and i.get("t_end", 1e9) - i.get("t_notice", 0) < NOTICE_S * 240 for i in noticed),
      "each noticed instance stopped itself after a checkpoint at the step it reached (exit 75), before the "
      "deadline: %s" % [{k: i.get(k) for k in ("exit_code", "reason", "reached_step", "checkpoint_step", "t_notice",
                                               "t_end")} for i in noticed])
vols = {i.get("volume") for i in st.get("instances", [])}
V = st["tasks"][0]["volume"] if st.get("tasks") else ""
check(len(vols) == 1 or (V and os.path.isdir(V) and sum(os.path.isdir(v) for v in vols if v) == 1),
      "one volume at the end: %s" % vols)
check(V and same_files(final(REF), final(os.path.join(V, "ckpt"))),
      "the fleet's final weights and optimizer state are byte-identical to the uninterrupted run")
check("savings_pct" in tot and "on demand" in r.stdout + r.stderr, "the cost report: %s" % r.stdout[-400:])
res = (st.get("tasks") or [{}])[0].get("result") or {}
check(res.get("status") == "done" and res.get("step") == STEPS and 0 < res.get("accuracy", 0) <= 1,
      "the report carries the script's result (baton.result): %s" % res)

# photographs of any size: random-resized crops; uint8 batches normalised by torch train as float32 ones
PH = os.path.join(TMP, "photos")
r = run(os.path.join(BUILD_DIR, "bench", "photos"), "--out", PH, "--n", "64",
        "--classes", "4", "--min", "40", "--max", "200")
r = r.returncode == 0 and run(BATON, "pack", "--from", "imagefolder:" + PH, "--out", PH + "-ds", "--quiet")
check(r and r.returncode == 0, "a photo-like dataset: %s" % (r and r.stderr))
PHC = ["--data", PH + "-ds", "--epochs", "1", "--batch", "16", "--deterministic", "--threads", "2", "--max-steps", "3"]
outs = [run(sys.executable, EX, *PHC, "--ckpt", os.path.join(TMP, "ph%d" % k), "--crop", crop, "--size", "32", *extra, env=ENV)
        for k, (crop, extra) in enumerate([("random-resized", ["--flip"]), ("center", []), ("center", ["--uint8"])])]
js = [last_json(o.stdout) for o in outs]
check(all(o.returncode == 0 for o in outs) and all(j.get("step") == 3 for j in js),
      "the example trains on random-resized and centre crops: %s" % [o.stderr[-300:] for o in outs if o.returncode])
check(js[1].get("loss") == js[2].get("loss"), "uint8 normalised by torch gives float32's loss: %s %s" % (js[1].get("loss"), js[2].get("loss")))
done()
