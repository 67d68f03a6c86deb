#!/usr/bin/env bash
# scan.sh — record scan throughput: `baton inspect --verify` over packed shards against
# `cat shards > /dev/null` in the same run, page cache warm. Prints a table (MB/s, records/s, ratio
# to cat, medians of REPS runs) and one JSON line per dataset. The goal for raw RecordIO is a
# ratio >= 0.8; TFRecord (with CRC checks on every record) and JPEG (every image decoded) are
# reported.
#   bench/scan.sh [REPS]        (BATON=path/to/baton, default build/baton)
set -euo pipefail
cd "$(dirname "$0")/.."
BATON=${BATON:-build/baton}
REPS=${1:-9}
W=$(mktemp -d /tmp/baton-bench-scan-XXXXXX)
trap 'rm -rf "$W"' EXIT
export BATON_NO_PROGRESS=1

python3 bench/gen_cifar.py "$W/cifar" "${CIFAR_N:-60000}"
$BATON pack --from fashion-mnist --out "$W/fmnist-raw-recordio" --quiet >/dev/null
$BATON pack --from "cifar10:$W/cifar" --out "$W/cifar-raw-recordio" --quiet >/dev/null
$BATON pack --from "cifar10:$W/cifar" --out "$W/cifar-raw-tfrecord" --format tfrecord --quiet >/dev/null
$BATON pack --from fashion-mnist --out "$W/fmnist-jpeg-recordio" --encode jpeg --quiet >/dev/null

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }

printf '%-22s %9s %9s %12s %12s %8s\n' dataset MB "cat MB/s" "baton MB/s" "records/s" ratio
for d in fmnist-raw-recordio cifar-raw-recordio cifar-raw-tfrecord fmnist-jpeg-recordio; do
    dir="$W/$d"
    files=$(ls "$dir"/*.rec "$dir"/*.tfrecord 2>/dev/null || true)
    bytes=$(cat $files | wc -c)
    records=$($BATON inspect "$dir" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])')
    cat $files >/dev/null; $BATON inspect "$dir" --verify --quiet >/dev/null   # warm the cache
    tc=() tb=()
    for _ in $(seq "$REPS"); do
        tc+=("$(secs cat $files)")
        tb+=("$(secs $BATON inspect "$dir" --verify --quiet)")
    done
    mc=$(printf '%s\n' "${tc[@]}" | median); mb=$(printf '%s\n' "${tb[@]}" | median)
    cat_mbs=$(echo "$bytes / $mc / 1000000" | bc -l); b_mbs=$(echo "$bytes / $mb / 1000000" | bc -l)
    rps=$(echo "$records / $mb" | bc -l); ratio=$(echo "$mc / $mb" | bc -l)
    printf '%-22s %9.1f %9.0f %12.0f %12.0f %8.2f\n' "$d" "$(echo "$bytes/1000000" | bc -l)" "$cat_mbs" "$b_mbs" "$rps" "$ratio"
    printf '{"bench":"scan","dataset":"%s","bytes":%d,"records":%d,"cat_s":%.4f,"baton_s":%.4f,"cat_mb_s":%.0f,"baton_mb_s":%.0f,"records_per_s":%.0f,"ratio":%.3f}\n' \
        "$d" "$bytes" "$records" "$mc" "$mb" "$cat_mbs" "$b_mbs" "$rps" "$ratio" >>"$W/json"
done
cat "$W/json"
