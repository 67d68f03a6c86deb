#!/usr/bin/env bash
# test_inspect_agrees.sh — `inspect --verify` fails exactly the datasets that `train` and
# `bench-io` refuse. Each case is a well-formed dataset (framing intact, dataset.json's sizes and
# CRC32Cs recomputed by tests/tools/dsedit.py) whose content contradicts its manifest: a label
# past the classes, negative, NaN, infinite or fractional, fewer classes than the labels use, and
# index offsets out of order. For each, all three commands exit 1 with a message naming the shard
# (or index) file; the untouched dataset passes all three.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
D=$T/fm
check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"
all3() {   # all3 DIR WANT(0|1) LABEL: inspect --verify, train and bench-io agree
    local d=$1 want=$2 label=$3 ri rt rb
    "$BATON" inspect "$d" --verify >"$T/i.out" 2>&1; ri=$?
    "$BATON" train --data "$d" --model mlp --batch 256 --epochs 1 --threads 1 --quiet --no-notice \
        --ckpt-dir "$T/ck-$label" >/dev/null 2>"$T/t.err"; rt=$?
    "$BATON" bench-io --data "$d" --mode mount --epochs 1 --quiet --work-dir "$T/w" --svg "$T/b.svg" >/dev/null 2>"$T/b.err"; rb=$?
    check '[ "$ri" -eq "$want" ] && [ "$rt" -eq "$want" ] && [ "$rb" -eq "$want" ]' \
        "$label: inspect --verify $ri, train $rt, bench-io $rb (want all $want): $(grep -m1 -i 'test-0' "$T/i.out") | $(head -c 200 "$T/t.err") | $(head -c 200 "$T/b.err")"
    if [ "$want" -eq 1 ]; then
        check 'grep -Eq "test-[0-9]+\.(rec|idx)" "$T/i.out" && grep -Eq "test-[0-9]+\.(rec|idx)" "$T/t.err" &&
               grep -Eq "test-[0-9]+\.(rec|idx)" "$T/b.err"' "$label: every message names the file"
    fi
    rm -rf "$T/ck-$label" "$T/w"
}
all3 "$D" 0 "the dataset as packed"
case_of() {   # case_of LABEL EDIT...: a copy edited, then the three commands
    local label=$1; shift
    rm -rf "$T/e" && cp -r "$D" "$T/e" && python3 tests/tools/dsedit.py "$T/e" "$@" || { bad "$label: dsedit $*"; return; }
    all3 "$T/e" 1 "$label"
}
case_of "a label past the classes" label 7 10
case_of "a negative label" label 100 -1
case_of "a NaN label" label 3 nan
case_of "an infinite label" label 0 inf
case_of "a fractional label" label 1000 2.5
case_of "fewer classes than the labels use" classes 5
case_of "index offsets out of order" swap-index 3 7
finish
