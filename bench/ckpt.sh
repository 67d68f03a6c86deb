#!/usr/bin/env bash
# ckpt.sh — what checkpoints cost and how fast a run comes back (checkpoint issue).
#
#  1. build/bench/ckpt_cost (bench/ckpt_cost.c): blocking time of a background save as a share of
#     the trainer's default interval (60 s) and of one step, for resnet20 and resnet56 with SGD
#     momentum and two synthetic sizes; synchronous save against dd conv=fsync of the same bytes,
#     alternating (see the program's header).
#  2. Resume to first step with `baton train` on a real checkpoint: train resnet20 / resnet56 to
#     step 5 on Fashion-MNIST (test split, mount mode), then RUNS times resume with --max-steps 6
#     (the step-6 checkpoint is removed before each run). From the logs (BATON_LOG=debug): time from
#     launching the process to the end of its first training step (wall clock), the checkpoint read
#     (newest-verified search, CRC checks, load), and their difference (goal < 1 s); also the whole
#     --max-steps process (start to exit, including the final synchronous save). Medians.
#
# Usage: bench/ckpt.sh [RUNS (default 5)]      env: CKPT_BENCH_DIR (scratch folder, default /tmp;
#        the checkpoints, dd's file and the dataset go there: the file system being measured)
# Output: tables, then JSON lines ({"bench":"ckpt_cost",...} and {"bench":"resume",...}).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
make -s -j2 all bench-build
BATON=$PWD/build/baton
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} BATON_NO_PROGRESS=1
W=$(mktemp -d "${CKPT_BENCH_DIR:-/tmp}/baton-bench-ckpt.XXXXXX")
trap 'rm -rf "$W"' EXIT
echo "# $(date -u +%FT%TZ) $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), scratch $W ($(df -T "$W" | awk 'NR==2{print $2}'))"

echo "== checkpoint cost (build/bench/ckpt_cost)"
build/bench/ckpt_cost --dir "$W" >"$W/cost.out"
grep -v '^{' "$W/cost.out"

echo
echo "== resume to first step (baton train, $runs runs each)"
"$BATON" pack --from fashion-mnist --split test --out "$W/fm" --shard-mb 8 --quiet >/dev/null
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else printf "%.6f\n", (v[NR/2]+v[NR/2+1])/2}'; }
printf '%-10s %14s %12s %14s %14s %12s\n' model "to 1st step s" "ckpt read s" "minus read s" "step compute s" "process s"
json=()
for model in resnet20 resnet56; do
    c=$W/ck-$model
    "$BATON" train --data "$W/fm" --model "$model" --epochs 1 --batch 128 --ckpt-dir "$c" --max-steps 5 --quiet >/dev/null
    : >"$W/first" ; : >"$W/read" ; : >"$W/proc" ; : >"$W/comp"
    for _ in $(seq "$runs"); do
        rm -rf "$c"/ckpt-000000006
        sync
        t0=$(date +%s.%N)
        BATON_LOG=debug "$BATON" train --data "$W/fm" --model "$model" --epochs 1 --batch 128 --ckpt-dir "$c" \
            --max-steps 6 --quiet >/dev/null 2>"$W/log"
        t1=$(date +%s.%N)
        first=$(sed -n 's/.*first step of this process done at \([0-9.]*\) .*/\1/p' "$W/log")
        read_s=$(sed -n 's/.*checkpoint read in \([0-9.]*\) s.*/\1/p' "$W/log")
        sed -n 's/.*its compute \([0-9.]*\) s.*/\1/p' "$W/log" >>"$W/comp"
        if [ -z "$first" ] || [ -z "$read_s" ]; then cat "$W/log" >&2; exit 1; fi
        awk -v a="$t0" -v b="$first" 'BEGIN{printf "%.6f\n", b-a}' >>"$W/first"
        echo "$read_s" >>"$W/read"
        awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f\n", b-a}' >>"$W/proc"
    done
    f=$(median <"$W/first"); r=$(median <"$W/read"); p=$(median <"$W/proc"); k=$(median <"$W/comp")
    d=$(awk -v f="$f" -v r="$r" 'BEGIN{printf "%.3f", f-r}')
    printf '%-10s %14.3f %12.3f %14.3f %14.3f %12.3f\n' "$model" "$f" "$r" "$d" "$k" "$p"
    json+=("{\"bench\":\"resume\",\"model\":\"$model\",\"runs\":$runs,\"launch_to_first_step_s\":$f,\"ckpt_read_s\":$r,\"first_step_minus_read_s\":$d,\"first_step_compute_s\":$k,\"max_steps_process_s\":$p,\"goal_s\":1}")
done
echo
grep '^{' "$W/cost.out"
printf '%s\n' "${json[@]}"
