#!/usr/bin/env bash
# train.sh — training throughput, baton against the PyTorch peer in the same run.
#
#   bench/train.sh [ROUNDS]        (default 3; MODELS="resnet20 lenet" by default)
#
# For resnet20 and lenet on 28x28x1 input, batch 128, 2 threads: ROUNDS alternated runs of baton's
# bench/train_speed.c (forward + loss + backward + SGD momentum update on a synthetic batch, oneDNN
# path) and of ../shared/peers/torch/bench.py in its best configuration (channels-last, OpenBLAS on
# OpenMP, glibc's malloc trimming off — as its docstring says). Prints each run, then a table of
# medians with the ratio baton / PyTorch and baton's achieved GFLOP/s against the machine's FP32
# peak (PEAK_GFLOPS, default 440 for this 2-core AVX-512 machine), and one JSON line per model.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
MODELS=${MODELS:-resnet20 lenet}
PEAK=${PEAK_GFLOPS:-440}
PEER=${PEER:-$PWD/../shared/peers/torch/bench.py}
PY=${PY:-/usr/bin/python3}
OUT=bench/out/train
mkdir -p "$OUT"
make -s bench-build >/dev/null
export OMP_NUM_THREADS=2
TUNE="glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295"

med() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
jget() { sed -n "s/.*\"$1\": *\([0-9.e+-]*\).*/\1/p" | tail -1; }

for model in $MODELS; do
    : >"$OUT/$model.baton" ; : >"$OUT/$model.peer" ; : >"$OUT/$model.gflops"
    for r in $(seq "$ROUNDS"); do
        j=$(build/bench/train_speed --model "$model" --batch 128 --seconds 4 --reps 3 --json)
        b=$(echo "$j" | jget train_img_per_s); g=$(echo "$j" | jget train_gflops)
        echo "$b" >>"$OUT/$model.baton"; echo "$g" >>"$OUT/$model.gflops"
        p=$(GLIBC_TUNABLES=$TUNE "$PY" "$PEER" --model "$model" --threads 2 --batch 128 --channels-last --json 2>/dev/null | jget train_img_per_s)
        echo "$p" >>"$OUT/$model.peer"
        printf '%-9s round %d: baton %8.1f img/s  pytorch %8.1f img/s\n' "$model" "$r" "$b" "$p"
    done
done

printf '\n%-9s %12s %12s %8s %10s %8s\n' model "baton img/s" "torch img/s" ratio "GFLOP/s" "of peak"
for model in $MODELS; do
    b=$(med <"$OUT/$model.baton"); p=$(med <"$OUT/$model.peer"); g=$(med <"$OUT/$model.gflops")
    ratio=$(echo "scale=3; $b / $p" | bc -l); share=$(echo "scale=3; 100 * $g / $PEAK" | bc -l)
    printf '%-9s %12.1f %12.1f %8.2f %10.1f %7.1f%%\n' "$model" "$b" "$p" "$ratio" "$g" "$share"
    echo "{\"bench\": \"train\", \"model\": \"$model\", \"batch\": 128, \"threads\": 2, \"rounds\": $ROUNDS, \"baton_img_per_s\": $b, \"torch_img_per_s\": $p, \"ratio\": $ratio, \"baton_gflops\": $g, \"peak_gflops\": $PEAK}" >>"$OUT/results.jsonl"
    echo "{\"bench\": \"train\", \"model\": \"$model\", \"baton_img_per_s\": $b, \"torch_img_per_s\": $p, \"ratio\": $ratio, \"baton_gflops\": $g}"
done
