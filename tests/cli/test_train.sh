#!/usr/bin/env bash
# test_train.sh — `baton train` and `baton eval` end to end on a small Fashion-MNIST pack (test
# split, 10 000 images): training with background checkpoints, checkpoint verification, the CSV
# log header, byte-identical resume (15 + 15 steps against 30 uninterrupted), eval's JSON and
# confusion matrix, and bad input (unknown model, a checkpoint of another model, dataset/model
# shape mismatch).
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=2
D=$T/fm
TR="$BATON train --data $D --model mlp --epochs 2 --batch 64 --seed 7 --threads 2 --quiet"

check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"

# plain run with background checkpoints every 10 steps
check '$TR --ckpt-dir "$T/c1" --ckpt-every-steps 10 --max-steps 40 --log "$T/log.csv" >"$T/out1"' "train to 40 steps"
check '[ -d "$T/c1/ckpt-000000040" ]' "final checkpoint ckpt-000000040 exists"
check '"$BATON" ckpt verify "$T/c1" >/dev/null' "checkpoints verify"
check 'head -n1 "$T/log.csv" | grep -qx "epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds"' "CSV header"
check 'grep -q "\"step\":40" "$T/c1/ckpt-000000040/state.json"' "state.json step"
check 'grep -q "\"cursor\"" "$T/c1/ckpt-000000040/state.json"' "state.json cursor"
# asking again for the same --max-steps trains nothing more
check '$TR --ckpt-dir "$T/c1" --ckpt-every-steps 10 --max-steps 40 2>/dev/null | grep -q "^step 40,"' "rerun at max-steps"

# resume: 30 uninterrupted steps against 15 + 15
check '$TR --ckpt-dir "$T/a" --ckpt-every-steps 10 --max-steps 30 >/dev/null' "run A"
check '$TR --ckpt-dir "$T/b" --ckpt-every-steps 10 --max-steps 15 >/dev/null' "run B part 1"
check '$TR --ckpt-dir "$T/b" --ckpt-every-steps 10 --max-steps 30 >/dev/null 2>&1' "run B resumed"
check 'cmp -s "$T/a/ckpt-000000030/model.safetensors" "$T/b/ckpt-000000030/model.safetensors"' \
    "resumed model.safetensors is byte-identical"
check 'cmp -s "$T/a/ckpt-000000030/optim.safetensors" "$T/b/ckpt-000000030/optim.safetensors"' \
    "resumed optim.safetensors is byte-identical"

# a full epoch with validation: one CSV row with val columns
check '"$BATON" train --data "$D" --val "$D" --model mlp --epochs 1 --batch 256 --quiet --ckpt-dir "$T/e" --log "$T/e.csv" >/dev/null' "epoch with --val"
check '[ "$(wc -l <"$T/e.csv")" -eq 2 ] && tail -n1 "$T/e.csv" | grep -Eq "^0,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,"' "CSV row with val"

# eval
check '"$BATON" eval --ckpt "$T/e" --data "$D" --json >"$T/ev.json" && grep -q "\"accuracy\":" "$T/ev.json"' "eval --json"
check '"$BATON" eval --ckpt "$T/a/ckpt-000000030" --data "$D" | grep -q accuracy' "eval of one folder"

# --ckpt-every auto: Daly's interval for the measured blocking cost and the hazard, re-estimated
# after every save (a floor of 1 s, a ceiling of 1 h); the first save, after step 1, measures it
check 'BATON_SPOT_MTBI_S=1 $TR --ckpt-dir "$T/au1" --ckpt-every auto --keep 100 --max-steps 120 --json >"$T/au1.json" 2>"$T/au1.err"' \
    "--ckpt-every auto, a 1 s mean time between interruptions"
check 'python3 - "$T/au1.json" <<'"'"'EOF'"'"'
import json, math, sys
r = json.load(open(sys.argv[1]))
d, M = r["ckpt_delta_s"], 1.0
daly = M if d >= 2 * M else math.sqrt(2 * d * M) * (1 + math.sqrt(d / (2 * M)) / 3 + d / (2 * M) / 9) - d
want = min(3600.0, max(1.0, daly))
sys.exit(0 if d > 0 and abs(r["ckpt_tau_s"] - want) <= 1e-3 * want else 1)
EOF' "the interval is Daly's for the measured cost (floored at 1 s)"
n_au1=$(ls -d "$T"/au1/ckpt-* | wc -l); secs=$(sed -n 's/.*"seconds":\([0-9.]*\).*/\1/p' "$T/au1.json")
check '[ "$n_au1" -ge $(( ${secs%.*} + 1 )) ] && grep -q "checkpoint interval: 1.0 s" "$T/au1.err"' \
    "checkpoints every second: $n_au1 in ${secs} s"
check '$TR --ckpt-dir "$T/au2" --ckpt-every auto --interrupt-rate 10 --keep 100 --max-steps 120 --json >"$T/au2.json" 2>/dev/null &&
       [ "$(ls -d "$T"/au2/ckpt-* | wc -l)" -eq 2 ] &&
       awk -v t="$(sed -n "s/.*\"ckpt_tau_s\":\([0-9.]*\).*/\1/p" "$T/au2.json")" "BEGIN {exit !(t > 60 && t <= 3600)}"' \
    "10 % a month: an interval of minutes (two checkpoints: the first step, the end)"
expect_fail 2 "ckpt-every auto and a fixed" $TR --ckpt-dir "$T/au3" --ckpt-every auto --ckpt-every-sec 5
expect_fail 2 "--ckpt-every takes auto" $TR --ckpt-dir "$T/au3" --ckpt-every 60
# the confusion matrix: 10 × 10, sums to the sample count, its trace / samples is the accuracy, and
# each per-class accuracy is its diagonal entry over its row
check 'python3 - "$T/ev.json" <<'"'"'PY'"'"'
import json, sys
j = json.load(open(sys.argv[1]))
c, n = j["confusion"], j["samples"]
assert n == 10000 and j["classes"] == 10 and len(c) == 10 and all(len(r) == 10 for r in c), j
assert sum(map(sum, c)) == n, sum(map(sum, c))
assert abs(sum(c[i][i] for i in range(10)) / n - j["accuracy"]) < 1e-6, j["accuracy"]
assert all(abs(c[i][i] / sum(c[i]) - j["per_class_accuracy"][i]) < 1e-6 for i in range(10))
assert len(set(map(tuple, c))) > 1   # not a constant matrix
PY' "eval --json confusion matrix: $(head -c 400 "$T/ev.json")"
check '[ "$("$BATON" eval --ckpt "$T/e" --data "$D" | grep -Ec "^[ 0-9]{2} .{15}( +[0-9]+){10} +[01]\.[0-9]{4}$")" -eq 10 ]' \
    "eval prints a 10-row confusion table"
check '"$BATON" eval --ckpt "$T/e" --data "$D" | grep -Eq "^ 9 Ankle boot "' "rows named by dataset.json's class names"

# validation and eval on a set whose statistics differ from the training set's (the train split)
# normalise it as in training: eval's accuracy equals the trainer's final val_accuracy
V=$T/fmtrain
check '"$BATON" pack --from fashion-mnist --split train --out "$V" --quiet >/dev/null' "pack the train split"
check '"$BATON" train --data "$D" --val "$V" --model mlp --epochs 1 --batch 256 --quiet --ckpt-dir "$T/v" --log "$T/v.csv" >/dev/null' \
    "epoch with --val on another set"
check '"$BATON" eval --ckpt "$T/v" --data "$V" --json >"$T/v.json"' "eval on that set"
check 'awk -F, "NR == 2 {print \$5}" "$T/v.csv" >"$T/v.acc" && grep -o "\"accuracy\": *[0-9.e-]*" "$T/v.json" | head -1 | grep -o "[0-9.e-]*$" >>"$T/v.acc" &&
       awk "NR == 1 {a = \$1} NR == 2 {b = \$1} END {d = a - b; if (d < 0) d = -d; exit !(NR == 2 && d < 1e-6)}" "$T/v.acc"' \
    "eval accuracy equals the trainer's val_accuracy"

# bad input
expect_fail 2 "unknown model 'nope'" $BATON train --data "$D" --model nope --epochs 1 --ckpt-dir "$T/x"
# a run that fails after opening its checkpoint folder leaves nothing behind (not a folder holding
# only its .lock); a folder that was there stays, without the lock file
expect_fail 1 "cannot connect" $BATON train --data http://127.0.0.1:1/ds/ --model mlp --epochs 1 --ckpt-dir "$T/gone"
mkdir -p "$T/mine"
expect_fail 1 "cannot connect" $BATON train --data http://127.0.0.1:1/ds/ --model mlp --epochs 1 --ckpt-dir "$T/mine"
check '[ ! -e "$T/gone" ] && [ -d "$T/mine" ] && [ -z "$(ls -A "$T/mine")" ]' "failed runs leave no lock folder: $(ls -A "$T/gone" "$T/mine" 2>&1)"
expect_fail 1 "holds model mlp, not lenet" $BATON train --data "$D" --model lenet --epochs 1 --ckpt-dir "$T/a" --quiet
check '"$BATON" pack --from fashion-mnist --split test --out "$T/small" --shard-mb 1 --resize 14x14 --quiet >/dev/null' "pack 14x14"
expect_fail 1 "baton eval: .*(shape|14)" $BATON eval --ckpt "$T/a" --data "$T/small"
expect_fail 2 "required" $BATON train --model mlp --epochs 1
finish
