"""test_one_door.py — the Python module and `baton train` go through one front door (issue 43):
(a) for each input mode (mount, file, cache, pipe) and each rank of world 1 and of world 2 (Open
MPI), the samples baton.Loader yields are those `baton train --sample-log` trains on: the same
epoch positions in the same order, with the same labels and input CRCs; (b) the checkpoint
cadence: tests/unit/cadence.txt's script of steps and fake-clock times replayed through
baton.Checkpoints gives the decisions written there, which tests/unit/test_ckpt_cadence.c gets
through the C calls `baton train`'s session makes (ckpt.h, baton_ckpt_cadence)."""
import os
import shutil
import subprocess

import baton
from harness import BATON, TMP, check, done, pack, sample_lines, skip

FM = pack(os.path.join(TMP, "fm"))
STEPS, BATCH, SEED = 12, 64, 5
MPI = shutil.which("mpirun")
mpi_env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMP_NUM_THREADS="1", BATON_DIST_TIMEOUT_S="60")
# the sanitizer build's baton carries its own runtime: mpirun and its daemons run without the
# interpreter's preload (test_python.sh's), as tests/cli/lib.sh's mpi_setup runs them
mpi_env.pop("LD_PRELOAD", None)
if "build-san" in os.environ.get("BATON_BUILD", ""):
    mpi_env["ASAN_OPTIONS"] = (mpi_env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")


def trained(mode, world):
    """What baton train trains on, per rank: lines "epoch position rank label crc"."""
    d = os.path.join(TMP, "train-%s-w%d" % (mode, world))
    log = d + ".samples"
    args = [BATON, "train", "--data", FM, "--model", "mlp", "--batch", str(BATCH), "--seed",
            str(SEED), "--epochs", "1", "--mode", mode, "--ckpt-dir", d, "--max-steps", str(STEPS), "--sample-log",
            log, "--quiet", "--threads", "1", "--no-notice"]
    if world > 1:
        args = [MPI, "--bind-to", "none", "-n", str(world)] + args
    r = subprocess.run(args, capture_output=True, text=True, env=mpi_env)
    check(r.returncode == 0, "baton train --mode %s at W = %d: %s" % (mode, world, r.stderr[-800:]))
    lines = [l.split() for l in open(log)] if os.path.exists(log) else []
    return {r: [l for l in lines if l[2] == str(r)] for r in range(world)}


def yielded(mode, rank, world, count):
    kw = {"local_dir": os.path.join(TMP, "copy-%s-%d-%d" % (mode, rank, world))} if mode in ("file", "cache") else {}
    out = []
    with baton.Loader(FM, mode=mode, batch=BATCH, seed=SEED, epochs=1, rank=rank, world=world, **kw) as l:
        for b in l:
            out += sample_lines(b, rank)
            if len(out) >= count:
                break
    return out[:count]


# ---- (a) the samples, mode by mode and rank by rank
for world in (1, 2):
    if world > 1 and not MPI:
        skip("mpirun not installed: world 2 not compared")
        continue
    for mode in ("mount", "file", "cache", "pipe"):
        ref = trained(mode, world)
        for rank in range(world):
            want = ref.get(rank, [])
            got = yielded(mode, rank, world, len(want))
            check(len(want) == STEPS * BATCH // world, "%s W=%d rank %d: train logged %d samples" % (
                mode, world, rank, len(want)))
            check(got == want, "%s W=%d rank %d: the Loader yields the positions baton train trained on (first "
                  "difference at %s)" % (mode, world, rank,
                                         next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), len(got))))

# ---- (b) the cadence: the script's decisions through baton.Checkpoints
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "cadence.txt")
ck, n, decisions, bad = None, 0, 0, []
for k in ("BATON_CKPT_EVERY", "BATON_SPOT_MTBI_S", "BATON_PROGRESS_FILE"):
    os.environ.pop(k, None)
for lineno, line in enumerate(open(script), 1):
    w = line.split()
    if not w or w[0].startswith("#"):
        continue
    if w[0] == "open":
        if ck:
            ck.close()
        n += 1
        ck = baton.Checkpoints(os.path.join(TMP, "cad%d" % n), every=w[1], mtbi=float(w[2]) or None)
    elif w[0] == "begin":
        ck._cadence("begin", int(w[1]), float(w[2]))
    elif w[0] == "due":
        got = ck._cadence("due", int(w[1]), float(w[2]))
        decisions += 1
        if got != int(w[3]):
            bad.append("line %d: due(%s, %s) = %d, the script says %s" % (lineno, w[1], w[2], got, w[3]))
    elif w[0] == "saved":
        ck._cadence("saved", 0, float(w[1]), float(w[2]))
if ck:
    ck.close()
check(decisions >= 25 and not bad, "the cadence script through baton.Checkpoints: %d decisions as the C path's%s" % (
    decisions, "; " + "; ".join(bad) if bad else ""))
done()
