#!/usr/bin/env bash
# ab.sh — two builds of baton side by side on what bench/train.sh and bench/infer.sh measure, the
# two alternated inside every round, so that the shared machine's drift falls on both alike: a
# redesign's "before and after".
#
#   bench/ab.sh BEFORE_DIR [ROUNDS]     (default 5; THREADS=2)
#
# BEFORE_DIR: another checkout of baton (git worktree add DIR REV), built with
# `make bench-build` there; this checkout is "after". Per round and model (resnet20, lenet):
# training throughput, build/bench/train_speed --batch 128 --seconds 4 --reps 3 (img/s), and
# inference latency, baton infer-bench --path fast --batch 1,64 on bench/infer.sh's checkpoints
# (batch-1 P50 and batch-64 P50, ms); odd rounds run "before" first, even rounds "after" first.
# Prints every round, then medians with [min-max], the ratio of the medians after/before and the
# median of each round's after/before (the two back to back); one JSON line.
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?usage: bench/ab.sh BEFORE_DIR [ROUNDS]}
ROUNDS=${2:-5}
THREADS=${THREADS:-2}
OUT=bench/out/ab
for d in "$A" .; do
    if [ ! -x "$d/build/bench/train_speed" ] || [ ! -x "$d/build/baton" ]; then
        echo "ab.sh: $d: run make bench-build there first" >&2; exit 1
    fi
done
mkdir -p "$OUT" bench/out/infer
B=build/baton
[ -f bench/out/infer/fm/dataset.json ] || $B pack --from fashion-mnist --split test --out bench/out/infer/fm --quiet >/dev/null
for m in lenet resnet20; do
    [ -d "bench/out/infer/ck-$m" ] || $B train --data bench/out/infer/fm --model $m --epochs 1 --batch 64 --max-steps 30 \
        --threads "$THREADS" --quiet --ckpt-dir "bench/out/infer/ck-$m" >/dev/null
done
export OMP_NUM_THREADS=$THREADS
: >"$OUT/rows.jsonl"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "# $(date -u +%FT%TZ) $(nproc) cores ($cpu), load $(cut -d' ' -f1-3 /proc/loadavg); before $(git -C "$A" rev-parse --short HEAD), after $(git rev-parse --short HEAD)"

one() {   # one SIDE DIR MODEL ROUND: a JSON row
    local side=$1 dir=$2 m=$3 r=$4
    local t i
    t=$("$dir/build/bench/train_speed" --model "$m" --batch 128 --seconds 4 --reps 3 --json | tail -n1)
    i=$("$dir/build/baton" infer-bench --ckpt "bench/out/infer/ck-$m" --threads "$THREADS" --batch 1,64 --path fast \
        --runs 400 --seconds 1 --json)
    python3 - "$side" "$m" "$r" "$t" "$i" <<'PY' | tee -a "$OUT/rows.jsonl"
import json, sys
side, m, r, t, i = sys.argv[1:]
t = json.loads(t)
rows = [json.loads(l.rstrip().rstrip(",")) for l in i.splitlines() if l.startswith("{")]
b1 = [x for x in rows if x.get("batch") == 1][0]; b64 = [x for x in rows if x.get("batch") == 64][0]
print(json.dumps({"side": side, "model": m, "round": int(r), "train_img_per_s": t["train_img_per_s"],
                  "b1_p50_ms": b1["p50_ms"], "b64_p50_ms": b64["p50_ms"]}))
PY
}

for r in $(seq "$ROUNDS"); do
    for m in resnet20 lenet; do
        if [ $((r % 2)) = 1 ]; then one before "$A" $m "$r"; one after . $m "$r"
        else one after . $m "$r"; one before "$A" $m "$r"; fi
    done
done
python3 - "$OUT/rows.jsonl" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out = {"bench": "ab", "load_end": float(sys.argv[2])}
print(f"{'model':9} {'figure':18} {'before':>28} {'after':>28} {'after/before':>12} {'per round':>9}")
for m in ("resnet20", "lenet"):
    for k, name in (("train_img_per_s", "training img/s"), ("b1_p50_ms", "batch-1 P50 ms"), ("b64_p50_ms", "batch-64 P50 ms")):
        v = {s: [x[k] for x in rows if x["model"] == m and x["side"] == s] for s in ("before", "after")}
        med = {s: statistics.median(v[s]) for s in v}
        cell = lambda s: f"{med[s]:.3f} [{min(v[s]):.3f}-{max(v[s]):.3f}]"
        # each round's after/before (the two ran back to back): their median
        pair = {}
        for x in rows:
            if x["model"] == m:
                pair.setdefault(x["round"], {})[x["side"]] = x[k]
        rr = statistics.median(p["after"] / p["before"] for p in pair.values() if len(p) == 2)
        print(f"{m:9} {name:18} {cell('before'):>28} {cell('after'):>28} {med['after'] / med['before']:12.3f} {rr:9.3f}")
        out[f"{m}_{k}"] = {"before": med["before"], "after": med["after"], "ratio": round(med["after"] / med["before"], 3),
                           "round_ratio_median": round(rr, 3)}
print(json.dumps(out))
PY
