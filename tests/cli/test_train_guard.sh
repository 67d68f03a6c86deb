#!/usr/bin/env bash
# test_train_guard.sh — what `baton train` and `baton eval` refuse or protect, as a new user meets
# it: a checkpoint folder two trainers share (the second is refused, naming the first's pid), a
# read-only checkpoint folder (refused at start) and one that turns read-only mid-run (the failed
# save is retried once, then the run stops with exit 1 instead of training on), changed
# hyper-parameters on resume (refused, naming the change, unless --allow-change; the change is then
# kept), the CSV log after a crash (cut back to the checkpoint: no duplicate rows), explicit zeros
# and out-of-range values (usage errors, exit 2), a validation set or an eval dataset of another
# shape (the shape message), --json summaries, plain progress lines when stderr is not a terminal,
# and a resume with nothing left to do.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=2
pids=()
mnt=
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; [ -n "$mnt" ] && umount "$mnt" 2>/dev/null; rm -rf "$T"' EXIT
D=$T/fm
TR="$BATON train --data $D --model mlp --batch 256 --seed 7 --threads 2 --quiet"
check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"
# a 32x32 RGB set (CIFAR-10's binary format, 512 random images)
mkdir -p "$T/cifar"
python3 -c 'import os, sys; f = open(sys.argv[1], "wb"); [f.write(bytes([i % 10]) + os.urandom(3072)) for i in range(512)]' \
    "$T/cifar/test_batch.bin"
check '"$BATON" pack --from cifar10:"$T/cifar" --split test --out "$T/c3" --quiet >/dev/null' "pack a 32x32x3 set"

# --- usage errors: an explicit zero is never a silent default; limits are stated; exit 2
expect_fail 2 "--lr must be a positive number" $TR --epochs 1 --ckpt-dir "$T/u" --lr 0
expect_fail 2 "--lr must be a positive number" $TR --epochs 1 --ckpt-dir "$T/u" --lr nan
expect_fail 2 "--keep must be >= 1" $TR --epochs 1 --ckpt-dir "$T/u" --keep 0
expect_fail 2 "--max-steps must be >= 1" $TR --epochs 1 --ckpt-dir "$T/u" --max-steps 0
expect_fail 2 "--epochs must be >= 1" $TR --epochs 0 --ckpt-dir "$T/u"
expect_fail 2 "batch size 100000: must be 1..4096" $BATON train --data "$D" --model mlp --batch 100000 --ckpt-dir "$T/u"
check '[ ! -e "$T/u" ]' "a usage error creates nothing"

# --- two trainers on one folder: the second is refused with the first's pid; the first finishes
$TR --epochs 20 --ckpt-dir "$T/two" --ckpt-every-steps 5 >"$T/two1.out" 2>&1 &
p1=$!
pids+=("$p1")
for _ in $(seq 600); do [ -s "$T/two/.lock" ] && break; sleep 0.05; done
expect_fail 1 "checkpoint folder .*two is in use by process $p1" $TR --epochs 20 --ckpt-dir "$T/two"
kill -TERM "$p1"
wait "$p1"
check '[ $? -eq 75 ] && "$BATON" ckpt verify "$T/two" >/dev/null' "the first trainer's checkpoints are intact"

# --- a read-only checkpoint folder: refused at start; one that turns read-only mid-run stops the run
mkdir -p "$T/ro"
if mount -t tmpfs -o size=64m tmpfs "$T/ro" 2>/dev/null; then
    mnt=$T/ro
    mount -o remount,ro "$T/ro"
    expect_fail 1 "checkpoint folder .*ro.* is not writable.*Read-only" $TR --epochs 1 --ckpt-dir "$T/ro"
    mount -o remount,rw "$T/ro"
    $TR --epochs 50 --ckpt-dir "$T/ro/c" --ckpt-every-steps 20 >"$T/ro.out" 2>"$T/ro.err" &
    p2=$!
    pids+=("$p2")
    check 'wait_ckpt "$T/ro/c"' "read-only mid-run: first checkpoint appears"
    mount -o remount,ro "$T/ro"
    wait "$p2"
    rc=$?
    check '[ $rc -eq 1 ] && grep -q "retrying the checkpoint" "$T/ro.err" && grep -q "stopping rather than training on" "$T/ro.err"' \
        "read-only mid-run: one retry, then exit 1 (exit $rc): $(tail -c 500 "$T/ro.err")"
    step=$("$BATON" ckpt ls "$T/ro/c" 2>/dev/null | awk '$NF == "ok" { print $1 + 0; exit }')
    check '[ -n "$step" ] && [ "$step" -lt 2000 ] && "$BATON" ckpt verify "$T/ro/c" >/dev/null 2>&1' \
        "the run stopped long before its end, its last checkpoint intact (step '$step')"
    umount "$T/ro" && mnt=
else
    echo "note: cannot mount a tmpfs here; the read-only cases run in test_ckpt_store (an injected EROFS)" >&2
fi

# --- hyper-parameters on resume
check '$TR --epochs 1 --ckpt-dir "$T/h" --log "$T/h.csv" >/dev/null' "one epoch"
expect_fail 1 "trained with --lr 0.01; this run has 0.5.*--allow-change" $TR --ckpt-dir "$T/h" --lr 0.5
expect_fail 1 "trained with --epochs 1; this run has 3 \(the cosine schedule goes from 40 to 120 steps" \
    $TR --ckpt-dir "$T/h" --epochs 3
expect_fail 2 "" $TR --ckpt-dir "$T/h" --seed 8 --batch 0
expect_fail 1 "trained with --seed 7 --batch 256" $BATON train --data "$D" --model mlp --batch 128 --seed 7 --quiet --ckpt-dir "$T/h"
# nothing left to do: said as such, not "0 samples/s"
$TR --ckpt-dir "$T/h" >"$T/h0.out" 2>/dev/null
rc=$?
check '[ $rc -eq 0 ] && grep -q "nothing left to train (resumed at step 40)" "$T/h0.out"' "a finished resume: $(cat "$T/h0.out")"
# the crash case of the log: a row past the checkpoint (written, then killed before the next save)
echo "1,9.999999,0.111111,,,0.01,1.000" >>"$T/h.csv"
$TR --ckpt-dir "$T/h" --epochs 2 --lr 0.02 --allow-change --log "$T/h.csv" --json >"$T/h2.json" 2>"$T/h2.err"
rc=$?
check '[ $rc -eq 0 ]' "--allow-change applies --epochs 2 and --lr 0.02: $(tail -c 300 "$T/h2.err")"
check 'grep -q "resume: --epochs changed from 1 to 2" "$T/h2.err" && grep -q "resume: --lr changed from 0.01 to 0.02" "$T/h2.err"' \
    "the changes are logged"
check 'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j[\"status\"]==\"done\" and j[\"epoch\"]==2 and j[\"epochs\"]==2 and j[\"step\"]==80 and j[\"steps_run\"]==40 and j[\"lr\"]==0.02 and j[\"resumed\"] and j[\"checkpoint\"].endswith(\"ckpt-000000080\"), j" "$T/h2.json"' \
    "train --json: $(cat "$T/h2.json")"
check '[ "$(wc -l <"$T/h.csv")" -eq 3 ] && [ "$(cut -d, -f1 "$T/h.csv" | tr "\n" " ")" = "epoch 0 1 " ] && ! grep -q 9.999999 "$T/h.csv"' \
    "the log has one row per epoch, the stray one replaced: $(cat "$T/h.csv")"
check 'grep -q "\"base_lr\":0.02" "$T/h/ckpt-000000080/state.json" && grep -q "\"epochs\":2" "$T/h/ckpt-000000080/state.json"' \
    "the new values are in the checkpoint"
# a later resume without --lr keeps the changed one (the checkpoint's), not the default
$TR --ckpt-dir "$T/h" --epochs 3 --allow-change --json >"$T/h3.json" 2>/dev/null
check 'grep -q "\"lr\":0.02" "$T/h3.json"' "a resume without --lr keeps 0.02: $(cat "$T/h3.json")"

# --- ckpt ls --json, and ckpt show on a damaged checkpoint: shown as far as it reads, exit 1
"$BATON" ckpt ls "$T/h" --json >"$T/ls.json"
check 'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); c=j[\"checkpoints\"]; assert c and c[0][\"status\"]==\"ok\" and c[0][\"step\"]>=80 and c[0][\"bytes\"]>0, j" "$T/ls.json"' \
    "ckpt ls --json: $(head -c 300 "$T/ls.json")"
cp -r "$T/h" "$T/hd"
newest=$(ls -d "$T"/hd/ckpt-* | tail -1)
printf 'X' | dd of="$newest/model.safetensors" bs=1 seek=100 conv=notrunc 2>/dev/null
"$BATON" ckpt show "$newest" >"$T/show.out" 2>"$T/show.err"
rc=$?
check '[ $rc -eq 1 ] && grep -q "CRC32C" "$T/show.err" && grep -q "state.json" "$T/show.out"' "ckpt show of a damaged checkpoint: exit $rc, $(head -c 200 "$T/show.err")"

# --- another shape: validation set and eval give the shape message (not a normalisation error)
expect_fail 1 "fm: 28x28x1 images, 10 classes; .*c3 has 32x32x3, 10 classes" $TR --epochs 1 --ckpt-dir "$T/v3" --val "$T/c3"
check '"$BATON" train --data "$T/c3" --model resnet8 --batch 64 --max-steps 2 --quiet --ckpt-dir "$T/r8" >/dev/null' \
    "resnet8 on 32x32x3"
expect_fail 1 "trained on: 32x32x3 images, 10 classes; .*fm has 28x28x1, 10 classes" $BATON eval --ckpt "$T/r8" --data "$D"

# --- progress when stderr is not a terminal: plain lines every --progress-every seconds
check '"$BATON" train --data "$D" --model lenet --batch 64 --seed 7 --threads 2 --max-steps 60 --ckpt-dir "$T/p" \
       --progress-every 0.2 >/dev/null 2>"$T/p.err"' "train with --progress-every"
check '[ "$(grep -Ec "^train epoch 1/1 step [0-9]+ loss [0-9.]+ acc [0-9.]+ [0-9]+ samples/s [0-9.]+% [0-9]+/60 " "$T/p.err")" -ge 2 ]' \
    "plain progress lines: $(head -c 400 "$T/p.err")"
finish
