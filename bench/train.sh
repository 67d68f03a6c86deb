#!/usr/bin/env bash
# train.sh — training throughput, baton against the PyTorch peer in the same run.
#
#   bench/train.sh [ROUNDS]        (default 5; MODELS="resnet20 lenet" by default)
#
# For resnet20 and lenet on 28x28x1 input, batch 128, 2 threads: ROUNDS alternated runs of baton's
# bench/train_speed.c (forward + loss + backward + SGD momentum update on a synthetic batch, oneDNN
# path) and of ../shared/peers/torch/bench.py in its best configuration (channels-last, OpenBLAS on
# OpenMP, glibc's malloc trimming off — as its docstring says). Prints each run, then a table of
# medians with the ratio baton / PyTorch and baton's achieved GFLOP/s against the machine's FP32
# peak (PEAK_GFLOPS, default 440 for this 2-core AVX-512 machine), and one JSON line per model.
# On a shared machine one 4-second run of either side can land in a slow spell (single rounds have
# ranged 1.06-1.97 for the same code), so the table also gives each round's ratio (the two sides
# measured back to back), their median, and a 95 % bootstrap interval for that median: a run of a
# few rounds is a sample, and the interval says how far its ratio can be trusted.
#
# Mixed precision (BF16=1, the default where /proc/cpuinfo has avx512_bf16 or amx_bf16; BF16=0 off):
# each round also runs baton with --precision bf16 and the peer under torch.autocast("cpu",
# bfloat16) (bench/pytorch_bf16_peer.py), the four runs of a round in a rotating order; a second
# table gives bf16's img/s and its ratios to baton f32, PyTorch f32 and PyTorch bf16 (medians of
# the per-round ratios).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
MODELS=${MODELS:-resnet20 lenet}
PEAK=${PEAK_GFLOPS:-440}
PEER=${PEER:-$PWD/../shared/peers/torch/bench.py}
PY=${PY:-/usr/bin/python3}
OUT=bench/out/train
mkdir -p "$OUT"
make -s bench-build >/dev/null
export OMP_NUM_THREADS=2
CPU=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1)
echo "cpu: ${CPU:-unknown}, $(nproc) cores (the ratio depends on the machine: it goes into the JSON line too)"
TUNE="glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295"

med() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
jget() { sed -n "s/.*\"$1\": *\([0-9.e+-]*\).*/\1/p" | tail -1; }

run_peer() { GLIBC_TUNABLES=$TUNE "$PY" "$PEER" --model "$1" --threads 2 --batch 128 --channels-last --json 2>/dev/null | jget train_img_per_s; }

if [ -z "${BF16:-}" ]; then
    if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then BF16=1; else BF16=0; fi
fi
run_peer_bf16() { GLIBC_TUNABLES=$TUNE "$PY" bench/pytorch_bf16_peer.py --model "$1" --threads 2 --batch 128 --json 2>/dev/null | jget train_img_per_s; }

# run_side SIDE MODEL: one timed run of one side (baton f32: its JSON line, for the GFLOP/s too)
run_side() {
    case $1 in
    baton) build/bench/train_speed --model "$2" --batch 128 --seconds 4 --reps 3 --json ;;
    baton-bf16) build/bench/train_speed --model "$2" --batch 128 --seconds 4 --reps 3 --precision bf16 --json | jget train_img_per_s ;;
    peer) run_peer "$2" ;;
    peer-bf16) run_peer_bf16 "$2" ;;
    esac
}

SIDES="baton peer"
[ "$BF16" = 1 ] && SIDES="baton baton-bf16 peer peer-bf16"
for model in $MODELS; do
    for s in $SIDES; do : >"$OUT/$model.$s"; done
    : >"$OUT/$model.gflops"
    for r in $(seq "$ROUNDS"); do
        # the sides in a rotating order (two sides: odd rounds baton first, even rounds the peer
        # first): no side always follows another
        read -r -a sides <<<"$SIDES"
        k=$(((r - 1) % ${#sides[@]}))
        order="${sides[*]:k} ${sides[*]:0:k}"
        line="$model round $r:"
        for s in $order; do
            v=$(run_side "$s" "$model")
            if [ "$s" = baton ]; then echo "$v" | jget train_gflops >>"$OUT/$model.gflops"; v=$(echo "$v" | jget train_img_per_s); fi
            eval "val_${s//-/_}=\$v"
        done
        for s in $SIDES; do
            eval "v=\$val_${s//-/_}"
            echo "$v" >>"$OUT/$model.$s"
            line="$line $s $(printf '%.1f' "${v:-0}") img/s"
        done
        echo "$line"
    done
done

# ratios(MODEL) -> "median lo hi n_at_goal n": each round's baton/peer ratio, their median and a 95 %
# bootstrap interval for the median (resampling the rounds, fixed seed).
ratios() {
    python3 - "$OUT/$1.${2:-baton}" "$OUT/$1.${3:-peer}" <<'PY'
import random, statistics, sys
def num(x):
    try:
        return float(x)
    except ValueError:  # a side that printed nothing in that round
        return 0.0
# line k of each file is round k: pair them by line, dropping rounds where either side failed
pairs = [(num(x), num(y)) for x, y in zip(open(sys.argv[1]), open(sys.argv[2]))]
r = [b / p for b, p in pairs if b > 0 and p > 0]
if not r:
    print("nan nan nan 0 0"); sys.exit()
rng = random.Random(1)
boot = sorted(statistics.median(rng.choices(r, k=len(r))) for _ in range(4000))
print("%.3f %.3f %.3f %d %d" % (statistics.median(r), boot[100], boot[3899], sum(x >= 1.5 for x in r), len(r)))
PY
}
printf '\n%-9s %12s %12s %8s %10s %8s\n' model "baton img/s" "torch img/s" ratio "GFLOP/s" "of peak"
for model in $MODELS; do
    b=$(med <"$OUT/$model.baton"); p=$(med <"$OUT/$model.peer"); g=$(med <"$OUT/$model.gflops")
    ratio=$(echo "scale=3; $b / $p" | bc -l); share=$(echo "scale=3; 100 * $g / $PEAK" | bc -l)
    read -r rm rlo rhi rgoal rn <<<"$(ratios "$model")"
    printf '%-9s %12.1f %12.1f %8.2f %10.1f %7.1f%%\n' "$model" "$b" "$p" "$ratio" "$g" "$share"
    printf '%-9s per-round ratio: median %.2f, 95%% interval %.2f-%.2f, %d of %d rounds >= 1.5\n' "" "$rm" "$rlo" "$rhi" "$rgoal" "$rn"
    fig="\"baton_img_per_s\": $b, \"torch_img_per_s\": $p, \"ratio\": $ratio, \"round_ratio_median\": $rm, \"round_ratio_ci95\": [$rlo, $rhi], \"baton_gflops\": $g"
    echo "{\"bench\": \"train\", \"model\": \"$model\", \"batch\": 128, \"threads\": 2, \"rounds\": $ROUNDS, $fig, \"peak_gflops\": $PEAK, \"cpu\": \"$CPU\"}" >>"$OUT/results.jsonl"
    echo "{\"bench\": \"train\", \"model\": \"$model\", $fig}"
done
[ "$BF16" = 1 ] || exit 0
printf '\nmixed precision (baton --precision bf16; PyTorch torch.autocast("cpu", bfloat16)), per-round ratios: median [95%% interval]\n'
printf '%-9s %11s %11s %11s %11s %22s %22s %22s\n' model "baton f32" "baton bf16" "torch f32" "torch bf16" \
    "bf16 / baton f32" "bf16 / torch f32" "bf16 / torch bf16"
for model in $MODELS; do
    read -r a1 a2 a3 _ _ <<<"$(ratios "$model" baton-bf16 baton)"
    read -r b1 b2 b3 _ _ <<<"$(ratios "$model" baton-bf16 peer)"
    read -r c1 c2 c3 _ _ <<<"$(ratios "$model" baton-bf16 peer-bf16)"
    printf '%-9s %11.1f %11.1f %11.1f %11.1f %8.2f [%.2f-%.2f] %8.2f [%.2f-%.2f] %8.2f [%.2f-%.2f]\n' "$model" \
        "$(med <"$OUT/$model.baton")" "$(med <"$OUT/$model.baton-bf16")" "$(med <"$OUT/$model.peer")" \
        "$(med <"$OUT/$model.peer-bf16")" "$a1" "$a2" "$a3" "$b1" "$b2" "$b3" "$c1" "$c2" "$c3"
    echo "{\"bench\": \"train-bf16\", \"model\": \"$model\", \"rounds\": $ROUNDS, \"baton_bf16_img_per_s\": $(med <"$OUT/$model.baton-bf16"), \"torch_bf16_img_per_s\": $(med <"$OUT/$model.peer-bf16"), \"bf16_over_baton_f32\": $a1, \"bf16_over_torch_f32\": $b1, \"bf16_over_torch_bf16\": $c1, \"cpu\": \"$CPU\"}" | tee -a "$OUT/results.jsonl"
done
