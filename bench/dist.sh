#!/usr/bin/env bash
# dist.sh — data-parallel training on this machine's cores (issue: distributed training).
#
#   bench/dist.sh [ROUNDS]        (default 3; MODELS="lenet resnet8" by default)
#
# 1. Allreduce bandwidth: bench/dist_allreduce.c under mpirun -n 2 (4 KB .. 16 MB of floats; the
#    median of 20 reductions per size; JSON lines).
# 2. Step time: `baton train` on a Fashion-MNIST pack (batch 128, 60 steps, mount mode, no
#    checkpoint until the end) in three shapes of the same two cores, ROUNDS alternated rounds:
#    one process with 1 thread, one process with 2 threads, and 2 ranks of 1 thread each; the
#    median samples/s of each, and for 2 ranks the allreduce span per step and the part of it
#    hidden behind backward (baton train --json: comm_s_per_step, overlap).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
MODELS=${MODELS:-lenet resnet8}
OUT=bench/out/dist
mkdir -p "$OUT"
make -s all bench-build >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 BATON_NO_PROGRESS=1
CPU=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1)
echo "cpu: ${CPU:-unknown}, $(nproc) cores; $(mpirun --version | head -1)"
MPI="mpirun --bind-to none --oversubscribe -n"

echo "## allreduce (2 ranks)"
$MPI 2 build/bench/dist_allreduce 20 | tee "$OUT/allreduce.jsonl"

D=$OUT/fm
[ -f "$D/dataset.json" ] || build/baton pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null
med() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
jget() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" | tail -1; }
one() {   # one MODEL SHAPE: prints the run's JSON
    local m=$1 shape=$2
    local ck=$OUT/ck-$m-$shape
    rm -rf "$ck"
    local tr=(train --data "$D" --model "$m" --batch 128 --seed 1 --max-steps 60 --ckpt-every-sec 0 --no-notice
              --quiet --json --ckpt-dir "$ck")
    case $shape in
        p1) OMP_NUM_THREADS=1 build/baton "${tr[@]}" --threads 1 ;;
        p2) OMP_NUM_THREADS=2 build/baton "${tr[@]}" --threads 2 ;;
        r2) OMP_NUM_THREADS=1 $MPI 2 build/baton "${tr[@]}" --threads 1 2>/dev/null ;;
    esac
}
echo "## step time (batch 128, 60 steps)"
printf '| model | 1 process, 1 thread | 1 process, 2 threads | 2 ranks × 1 thread | 2 ranks / 2 threads | allreduce per step | hidden behind backward |\n'
printf '| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n'
for m in $MODELS; do
    : >"$OUT/$m.p1"; : >"$OUT/$m.p2"; : >"$OUT/$m.r2"; : >"$OUT/$m.comm"; : >"$OUT/$m.ovl"
    for r in $(seq "$ROUNDS"); do
        order="p1 p2 r2"; [ $((r % 2)) = 0 ] && order="r2 p2 p1"
        for s in $order; do
            j=$(one "$m" "$s")
            echo "$j" | jget samples_per_s >>"$OUT/$m.$s"
            if [ "$s" = r2 ]; then
                echo "$j" | jget comm_s_per_step >>"$OUT/$m.comm"
                echo "$j" | jget overlap >>"$OUT/$m.ovl"
            fi
        done
    done
    p1=$(med <"$OUT/$m.p1"); p2=$(med <"$OUT/$m.p2"); r2=$(med <"$OUT/$m.r2")
    comm=$(med <"$OUT/$m.comm"); ovl=$(med <"$OUT/$m.ovl")
    printf '| %s | %.0f | %.0f | %.0f | %.2f | %.1f ms | %.0f %% |\n' "$m" "$p1" "$p2" "$r2" \
        "$(echo "$r2 / $p2" | bc -l)" "$(echo "$comm * 1000" | bc -l)" "$(echo "$ovl * 100" | bc -l)"
    printf '{"bench":"dist","model":"%s","cpu":"%s","p1_samples_s":%s,"p2_samples_s":%s,"r2_samples_s":%s,"comm_s_per_step":%s,"overlap":%s}\n' \
        "$m" "$CPU" "$p1" "$p2" "$r2" "$comm" "$ovl" >>"$OUT/dist.jsonl"
done
tail -n "$(echo $MODELS | wc -w)" "$OUT/dist.jsonl"
