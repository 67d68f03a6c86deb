#!/usr/bin/env bash
# accuracy.sh — real-data accuracy of `baton train` and an independent check of `baton eval`
# (checkpoint issue). For each model: train on Fashion-MNIST (train split, 60,000 images; packed
# with `baton pack --from fashion-mnist`, i.e. the Debian dataset-fashion-mnist files) for 10 epochs
# with the test split (10,000) as --val; then `baton eval --json` on the final checkpoint, and the
# PyTorch peer's check_weights.py on the same model.safetensors with the same normalisation. Goals:
# test accuracy lenet >= 91 %, resnet20 >= 92 %; baton and PyTorch agree within 0.1 % (absolute).
#
# Hyper-parameters (the trainer's fixed recipe: SGD, Nesterov momentum 0.9, weight decay 5e-4,
# cosine decay to 0 over all steps, no warm-up; it applies no augmentation): batch 128, lr 0.01 for
# lenet and 0.1 for resnet20 (the trainer's defaults; override with LR_LENET / LR_RESNET20), seed 0.
#
# Usage: bench/accuracy.sh [MODEL...]     (default: lenet resnet20; lenet takes minutes, resnet20
#        about half an hour on 2 cores)   env: ACC_DIR keeps the data, checkpoints and logs there;
#        PRECISION="f32 bf16" trains (and evaluates) each model in each precision (default f32),
#        and then gives bf16's test accuracy against f32's (mixed-precision goal: within 0.3 points);
#        EPOCHS (10: what the goals are for; fewer only to try the script)
# Output: per-epoch CSV rows as they come, a table, one JSON line per model.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
models=${*:-lenet resnet20}
precisions=${PRECISION:-f32}
EPOCHS=${EPOCHS:-10}   # the goals are for 10; fewer only to try the script
make -s -j2 all
BATON=$ROOT/build/baton
PEER=$ROOT/../shared/peers/torch/check_weights.py
[ -f "$PEER" ] || { echo "accuracy.sh: $PEER not found" >&2; exit 1; }
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} BATON_NO_PROGRESS=1
if [ -n "${ACC_DIR:-}" ]; then W=$ACC_DIR; mkdir -p "$W"; else
    W=$(mktemp -d /tmp/baton-bench-acc.XXXXXX); trap 'rm -rf "$W"' EXIT; fi
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), OMP_NUM_THREADS=$OMP_NUM_THREADS, work $W"
[ -f "$W/train/dataset.json" ] || "$BATON" pack --from fashion-mnist --split train --out "$W/train" --quiet >/dev/null
[ -f "$W/test/dataset.json" ] || "$BATON" pack --from fashion-mnist --split test --out "$W/test" --quiet >/dev/null
# what baton eval normalises the test images with: the training data's statistics (state.json keeps them)
read -r MEAN STD < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["mean"][0], d["std"][0])' "$W/train/dataset.json")

json=()
printf '%-9s %-9s %7s %6s %7s %10s %10s %10s %9s %7s\n' model precision epochs lr batch "train s" "baton acc" \
    "torch acc" "|diff|" goal >"$W/table"
declare -A acc_of
for m in $models; do
for prec in $precisions; do
    case $m in
        lenet) lr=${LR_LENET:-0.01}; goal=0.91 ;;
        resnet20) lr=${LR_RESNET20:-0.1}; goal=0.92 ;;
        *) echo "accuracy.sh: unknown model $m" >&2; exit 2 ;;
    esac
    ck=$W/ck-$m-$prec
    log=$W/$m-$prec.csv
    rm -rf "$ck" "$log"
    echo "== $m, $prec: $EPOCHS epochs, batch 128, lr $lr"
    t0=$(date +%s.%N)
    "$BATON" train --data "$W/train" --val "$W/test" --model "$m" --epochs "$EPOCHS" --batch 128 --lr "$lr" --seed 0 \
        --precision "$prec" --ckpt-dir "$ck" --log "$log" --quiet &
    pid=$!
    shown=1
    while kill -0 "$pid" 2>/dev/null; do
        sleep 5
        n=$(wc -l <"$log" 2>/dev/null || echo 0)
        if [ "$n" -gt "$shown" ]; then tail -n +"$((shown + 1))" "$log"; shown=$n; fi
    done
    wait "$pid"
    t1=$(date +%s.%N)
    n=$(wc -l <"$log"); [ "$n" -gt "$shown" ] && tail -n +"$((shown + 1))" "$log"
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.0f", b-a}')
    final=$(ls -d "$ck"/ckpt-* | sort | tail -n 1)
    "$BATON" eval --ckpt "$final" --data "$W/test" --precision "$prec" --json >"$W/$m-$prec.eval.json"
    bacc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["accuracy"])' "$W/$m-$prec.eval.json")
    acc_of[$m-$prec]=$bacc
    /usr/bin/python3 "$PEER" --model "$m" --weights "$final/model.safetensors" --mean "$MEAN" --std "$STD" --json \
        >"$W/$m-$prec.torch.out"
    tacc=$(tail -n 1 "$W/$m-$prec.torch.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["test_accuracy"])')
    diff=$(awk -v a="$bacc" -v b="$tacc" 'BEGIN{d=a-b; if (d<0) d=-d; printf "%.4f", d}')
    ok_goal=$(awk -v a="$bacc" -v g="$goal" 'BEGIN{print (a >= g) ? "true" : "false"}')
    ok_agree=$(awk -v d="$diff" 'BEGIN{print (d <= 0.001) ? "true" : "false"}')
    printf '%-9s %-9s %7d %6s %7d %10s %10.4f %10.4f %9s %7s\n' "$m" "$prec" "$EPOCHS" "$lr" 128 "$secs" "$bacc" "$tacc" \
        "$diff" ">= $goal" >>"$W/table"
    json+=("{\"bench\":\"accuracy\",\"model\":\"$m\",\"precision\":\"$prec\",\"epochs\":$EPOCHS,\"batch\":128,\"lr\":$lr,\"train_s\":$secs,\"baton_test_accuracy\":$bacc,\"torch_test_accuracy\":$tacc,\"abs_diff\":$diff,\"goal\":$goal,\"goal_met\":$ok_goal,\"agree_within_0.1pct\":$ok_agree,\"checkpoint_step\":$(basename "$final" | sed 's/ckpt-0*//')}")
done
if [ -n "${acc_of[$m-f32]:-}" ] && [ -n "${acc_of[$m-bf16]:-}" ]; then
    d=$(awk -v a="${acc_of[$m-bf16]}" -v b="${acc_of[$m-f32]}" 'BEGIN{printf "%.4f", a-b}')
    ok=$(awk -v d="$d" 'BEGIN{print (d >= -0.003 && d <= 0.003) ? "true" : "false"}')
    json+=("{\"bench\":\"accuracy-bf16\",\"model\":\"$m\",\"bf16_minus_f32\":$d,\"goal_within\":0.003,\"goal_met\":$ok}")
fi
done
echo
cat "$W/table"
printf '%s\n' "${json[@]}"
