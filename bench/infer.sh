#!/usr/bin/env bash
# infer.sh — inference latency of baton's fast path against the PyTorch peer, side by side in one
# run: the same models (lenet, resnet20; 1×28×28 Fashion-MNIST input), the same thread count, the
# peer in its best configuration (channels-last, OpenBLAS-OpenMP, glibc malloc tuned), runs
# alternated baton / peer, medians over the rounds.
#
#   bench/infer.sh [ROUNDS]        (default 5; THREADS=2 by default)
#
# baton: `baton infer-bench --path fast --batch 1,64` (each context a fresh process: cold start =
# spawn → checkpoint verified, read, loaded → primitives ready; first = the first query after that;
# P50/P90 over ≥ 400 queries and ≥ 1 s). Peer: ../shared/peers/torch/bench.py (its batch-1 P50/P90
# over 400 queries after 20 warm-up ones, batch-64 P50; its first_infer_ms = model built + first
# query, after `import torch`). Its training phase is cut short (not compared here).
# Prints a table with the ratios and one JSON line; raw JSON lines go to bench/out/infer/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${1:-5}
THREADS=${THREADS:-2}
PEER=$ROOT/../shared/peers/torch/bench.py
OUT=bench/out/infer
B=build/baton
[ -f "$PEER" ] || { echo "infer.sh: the PyTorch peer is missing ($PEER)" >&2; exit 1; }
make -s -j2 all
mkdir -p "$OUT"
[ -f "$OUT/fm/dataset.json" ] || $B pack --from fashion-mnist --split test --out "$OUT/fm" --quiet >/dev/null
for m in lenet resnet20; do
    [ -d "$OUT/ck-$m" ] || $B train --data "$OUT/fm" --model $m --epochs 1 --batch 64 --max-steps 30 \
        --threads "$THREADS" --quiet --ckpt-dir "$OUT/ck-$m" >/dev/null
done
rm -f "$OUT"/baton-*.jsonl "$OUT"/peer-*.jsonl
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
for r in $(seq "$ROUNDS"); do
    for m in lenet resnet20; do
        echo "round $r/$ROUNDS: $m" >&2
        $B infer-bench --ckpt "$OUT/ck-$m" --threads "$THREADS" --batch 1,64 --path fast --runs 400 --seconds 1 \
            --json >>"$OUT/baton-$m.jsonl"
        GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295 \
            /usr/bin/python3 "$PEER" --model $m --threads "$THREADS" --channels-last --json --train-seconds 0.3 \
            --reps 1 2>/dev/null | tail -n1 >>"$OUT/peer-$m.jsonl"
    done
done
LOAD1=$(cut -d' ' -f1 /proc/loadavg)
/usr/bin/python3 - "$OUT" "$THREADS" "$ROUNDS" "$LOAD0" "$LOAD1" <<'EOF'
import json, statistics, sys
out, threads, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
med = statistics.median
summary = {"bench": "infer", "threads": threads, "rounds": rounds,
           "loadavg_start": float(sys.argv[4]), "loadavg_end": float(sys.argv[5])}
print(f"{'model':9} {'baton p50':>10} {'peer p50':>9} {'ratio':>6} {'baton p90':>10} {'peer p90':>9} "
      f"{'first':>7} {'first/p50':>9} {'cold ms':>8} {'b64 ratio':>9}")
for m in ("lenet", "resnet20"):
    b = [json.loads(l.rstrip().rstrip(",")) for l in open(f"{out}/baton-{m}.jsonl") if l.startswith("{")]
    p = [json.loads(l) for l in open(f"{out}/peer-{m}.jsonl") if l.startswith("{")]
    b1 = [x for x in b if x["batch"] == 1]
    b64 = [x for x in b if x["batch"] == 64]
    s = {
        "baton_p50_ms": med(x["p50_ms"] for x in b1), "baton_p90_ms": med(x["p90_ms"] for x in b1),
        "baton_first_ms": med(x["first_ms"] for x in b1), "baton_cold_start_ms": med(x["cold_start_ms"] for x in b1),
        "baton_exec_ms": med(x["exec_ms"] for x in b1), "baton_load_ms": med(x["load_ms"] for x in b1),
        "baton_prepare_ms": med(x["prepare_ms"] for x in b1),
        "baton_b64_p50_ms": med(x["p50_ms"] for x in b64),
        "peer_p50_ms": med(x["infer_b1_p50_ms"] for x in p), "peer_p90_ms": med(x["infer_b1_p90_ms"] for x in p),
        "peer_b64_p50_ms": med(x["infer_b64_p50_ms"] for x in p), "peer_first_infer_ms": med(x["first_infer_ms"] for x in p),
    }
    s["p50_ratio"] = s["baton_p50_ms"] / s["peer_p50_ms"]
    s["first_over_p50"] = s["baton_first_ms"] / s["baton_p50_ms"]
    s["b64_ratio"] = s["baton_b64_p50_ms"] / s["peer_b64_p50_ms"]
    s["ok"] = s["p50_ratio"] <= 0.5 and s["first_over_p50"] <= 3 and s["baton_cold_start_ms"] <= 100
    summary[m] = {k: round(v, 4) if isinstance(v, float) else v for k, v in s.items()}
    print(f"{m:9} {s['baton_p50_ms']:10.3f} {s['peer_p50_ms']:9.3f} {s['p50_ratio']:6.2f} {s['baton_p90_ms']:10.3f} "
          f"{s['peer_p90_ms']:9.3f} {s['baton_first_ms']:7.3f} {s['first_over_p50']:9.2f} {s['baton_cold_start_ms']:8.1f} "
          f"{s['b64_ratio']:9.2f}")
print("goals: p50 ratio <= 0.5, first/p50 <= 3, cold start <= 100 ms; medians of", rounds, "alternated rounds;",
      "load average", sys.argv[4], "->", sys.argv[5])
print(json.dumps(summary))
EOF
