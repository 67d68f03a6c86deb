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
# Mixed precision (BF16=1, the default where /proc/cpuinfo has avx512_bf16 or amx_bf16): baton's
# contexts run with --precision f32,bf16 (the fast path and fast-bf16 in the same process series)
# and each round also runs bench/pytorch_bf16_peer.py (torch.autocast("cpu", bfloat16)) at batch
# 64; a second table gives the batch-64 P50s and bf16's ratio to PyTorch f32 (goal <= 0.5) and to
# PyTorch bf16. In a round the sides alternate baton / peer f32 / peer bf16, reversed every other
# round.
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
rm -f "$OUT"/baton-*.jsonl "$OUT"/peer-*.jsonl "$OUT"/peerbf16-*.jsonl
if [ -z "${BF16:-}" ]; then
    if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then BF16=1; else BF16=0; fi
fi
PREC=f32
[ "$BF16" = 1 ] && PREC=f32,bf16
TUNE=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295
side() {   # side NAME MODEL
    case $1 in
    baton) $B infer-bench --ckpt "$OUT/ck-$2" --threads "$THREADS" --batch 1,64 --path fast --precision $PREC --runs 400 \
               --seconds 1 --json >>"$OUT/baton-$2.jsonl" ;;
    peer) GLIBC_TUNABLES=$TUNE /usr/bin/python3 "$PEER" --model $2 --threads "$THREADS" --channels-last --json \
              --train-seconds 0.3 --reps 1 2>/dev/null | tail -n1 >>"$OUT/peer-$2.jsonl" ;;
    peerbf16) GLIBC_TUNABLES=$TUNE /usr/bin/python3 bench/pytorch_bf16_peer.py --model $2 --threads "$THREADS" --no-train \
                  --json 2>/dev/null | tail -n1 >>"$OUT/peerbf16-$2.jsonl" ;;
    esac
}
SIDES="baton peer"
[ "$BF16" = 1 ] && SIDES="baton peer peerbf16"
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
for r in $(seq "$ROUNDS"); do
    for m in lenet resnet20; do
        echo "round $r/$ROUNDS: $m" >&2
        order=$SIDES
        [ $((r % 2)) = 0 ] && order=$(echo "$SIDES" | tr ' ' '\n' | tac | tr '\n' ' ')
        for s in $order; do side "$s" "$m"; done
    done
done
LOAD1=$(cut -d' ' -f1 /proc/loadavg)
/usr/bin/python3 - "$OUT" "$THREADS" "$ROUNDS" "$LOAD0" "$LOAD1" "$BF16" <<'EOF'
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
    b1 = [x for x in b if x["batch"] == 1 and x["path"] == "fast"]
    b64 = [x for x in b if x["batch"] == 64 and x["path"] == "fast"]
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
if sys.argv[6] == "1":
    print(f"\nbatch 64 in bf16 (baton fast-bf16; PyTorch torch.autocast(\"cpu\", bfloat16)), p50 ms; ratios are medians of "
          f"the per-round ratios")
    print(f"{'model':9} {'baton f32':>9} {'baton bf16':>10} {'torch f32':>9} {'torch bf16':>10} {'bf16/torch f32':>14} "
          f"{'bf16/torch bf16':>15} {'bf16/baton f32':>14}")
    for m in ("lenet", "resnet20"):
        b = [json.loads(l.rstrip().rstrip(",")) for l in open(f"{out}/baton-{m}.jsonl") if l.startswith("{")]
        p = [json.loads(l) for l in open(f"{out}/peer-{m}.jsonl") if l.startswith("{")]
        q = [json.loads(l) for l in open(f"{out}/peerbf16-{m}.jsonl") if l.startswith("{")]
        f32 = [x["p50_ms"] for x in b if x["batch"] == 64 and x["path"] == "fast"]
        bf = [x["p50_ms"] for x in b if x["batch"] == 64 and x["path"] == "fast-bf16"]
        pf, pb = [x["infer_b64_p50_ms"] for x in p], [x["infer_b64_p50_ms"] for x in q]
        rt = lambda a, c: med(x / y for x, y in zip(a, c)) if a and c else float("nan")
        s = {"baton_b64_p50_ms": med(f32), "baton_bf16_b64_p50_ms": med(bf), "peer_b64_p50_ms": med(pf),
             "peer_bf16_b64_p50_ms": med(pb), "bf16_over_peer_f32": rt(bf, pf), "bf16_over_peer_bf16": rt(bf, pb),
             "bf16_over_baton_f32": rt(bf, f32)}
        summary[m].update({k: round(v, 4) for k, v in s.items()})
        print(f"{m:9} {s['baton_b64_p50_ms']:9.3f} {s['baton_bf16_b64_p50_ms']:10.3f} {s['peer_b64_p50_ms']:9.3f} "
              f"{s['peer_bf16_b64_p50_ms']:10.3f} {s['bf16_over_peer_f32']:14.2f} {s['bf16_over_peer_bf16']:15.2f} "
              f"{s['bf16_over_baton_f32']:14.2f}")
    print("goal: bf16 / torch f32 <= 0.5 at batch 64")
print(json.dumps(summary))
EOF
