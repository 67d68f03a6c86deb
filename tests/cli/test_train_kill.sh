#!/usr/bin/env bash
# alone: its kills land at moments timed against the training speed of a machine it has to itself
# test_train_kill.sh — crash safety of `baton train`: SIGKILL a run at 20 pseudo-random moments
# (every third kill waits for a checkpoint write to be in flight, i.e. for a .ckpt-*.tmp.* folder),
# and after each kill check that the newest checkpoint `baton ckpt ls` calls ok verifies on its own
# and that the restarted run resumes from exactly that step (or starts fresh when there is none; a
# run killed before it read its checkpoint, leaving the folder as it was, is counted, not judged).
# The last run finishes; its final model.safetensors and optim.safetensors must be byte-identical to
# an uninterrupted run's, and the CSV log's rows must repeat the uninterrupted run's epoch row
# (train.c documents that a crash may repeat a row, so duplicates are allowed, other rows are not).
# Delays come from bash's $RANDOM with a fixed seed, so the sequence of delays is repeatable.
# Then the same for --precision bf16, once (below).
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=2
RANDOM=42
KILLS=20
N=240            # 157 steps per epoch at --batch 64: the run crosses one epoch boundary
D=$T/fm
TR="$BATON train --data $D --model mlp --batch 64 --epochs 2 --max-steps $N --ckpt-every-steps 3 --seed 7 --threads 2 --quiet"
FIN=$(printf 'ckpt-%09d' "$N")

check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"
check '$TR --ckpt-dir "$T/ref" --log "$T/ref.csv" >/dev/null 2>&1' "uninterrupted reference run"
check '[ -f "$T/ref/$FIN/model.safetensors" ]' "reference has $FIN"

# newest_ok DIR: step of the newest checkpoint that `ckpt ls` reports ok (empty when none)
newest_ok() {
    "$BATON" ckpt ls "$1" 2>/dev/null | awk '$NF == "ok" { print $1 + 0; exit }'
}

# finish_cycle DIR: the last, uninterrupted run of a cycle, then the byte comparisons
finish_cycle() {
    local c=$1
    if $TR --ckpt-dir "$c" --log "$c.csv" >/dev/null 2>"$c.final.err"; then ok
    else bad "final run in $c: $(head -c 600 "$c.final.err")"; fi
    check 'cmp -s "$T/ref/$FIN/model.safetensors" "$c/$FIN/model.safetensors"' \
        "$c: model.safetensors differs from the uninterrupted run's"
    check 'cmp -s "$T/ref/$FIN/optim.safetensors" "$c/$FIN/optim.safetensors"' \
        "$c: optim.safetensors differs from the uninterrupted run's"
    check '"$BATON" ckpt verify "$c" >/dev/null 2>&1' "$c: all checkpoints verify after the final run"
    # CSV: the header once, then only copies of the reference's rows (minus the seconds column)
    check '[ "$(head -n1 "$c.csv")" = "epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds" ] &&
           [ "$(grep -c "^epoch," "$c.csv")" -eq 1 ]' "$c: CSV header"
    local want got
    want=$(tail -n +2 "$T/ref.csv" | cut -d, -f1-6 | sort -u)
    got=$(tail -n +2 "$c.csv" | cut -d, -f1-6 | sort -u)
    check '[ -n "$want" ] && [ "$want" = "$got" ]' "$c: CSV rows differ from the reference's: want '$want', got '$got'"
}

kills=0 cycle=0 pid=
during_write=0 fresh_starts=0 corrupt_seen=0
resumed=()
C=
new_cycle() {
    cycle=$((cycle + 1)); C=$T/k$cycle; expect=
}
new_cycle
early=0
while :; do
    before=$(ls -A "$C" 2>/dev/null)
    $TR --ckpt-dir "$C" --log "$C.csv" >"$T/run.out" 2>"$T/run.err" &
    pid=$!
    # 0.05 .. 1.50 s
    ms=$((50 + RANDOM % 1451))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    if [ $(((kills + 1) % 3)) -eq 0 ]; then
        # aim at a checkpoint write: spin until a temporary folder shows up, for at most 0.5 s
        until=$((${EPOCHREALTIME/./} + 500000))
        while [ "${EPOCHREALTIME/./}" -lt "$until" ]; do
            compgen -G "$C/.ckpt-*.tmp.*" >/dev/null && break
        done
    fi
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
    # what did the run that just ended resume from?
    line=$(grep -m1 'resuming from' "$T/run.err")
    if [ -z "$expect" ]; then
        check '[ -z "$line" ]' "cycle $cycle: run resumed although no checkpoint was ok: $line"
        fresh_starts=$((fresh_starts + 1))
    elif [ -z "$line" ] && [ "$rc" -eq 137 ] && [ "$(ls -A "$C" 2>/dev/null)" = "$before" ]; then
        # killed before it got as far as reading its checkpoint (a slow start, as under the
        # sanitizers): it changed nothing, so the next run must resume from the same step
        early=$((early + 1))
    else
        check '[[ "$line" == *"(step $expect, "* ]]' \
            "cycle $cycle: expected resume from step $expect, stderr: $(head -c 600 "$T/run.err")"
        resumed+=("$expect")
    fi
    if [ "$rc" -ne 137 ]; then
        # finished (or failed) before the kill landed
        check '[ "$rc" -eq 0 ]' "cycle $cycle: train exited $rc: $(head -c 600 "$T/run.err")"
        [ "$rc" -eq 0 ] && finish_cycle "$C"
        [ "$kills" -ge "$KILLS" ] && break
        new_cycle
        continue
    fi
    kills=$((kills + 1))
    compgen -G "$C/.ckpt-*.tmp.*" >/dev/null && during_write=$((during_write + 1))
    "$BATON" ckpt ls "$C" 2>/dev/null | grep -q CORRUPT && corrupt_seen=$((corrupt_seen + 1))
    expect=$(newest_ok "$C")
    if [ -n "$expect" ]; then
        check '"$BATON" ckpt verify "$C/$(printf "ckpt-%09d" "$expect")" >/dev/null 2>&1' \
            "cycle $cycle: newest ok checkpoint $expect does not verify"
    fi
    [ "$kills" -ge "$KILLS" ] && break
done
if [ "$kills" -ge "$KILLS" ] && [ "$rc" -eq 137 ]; then
    # the run after the last kill: it must resume from the recorded step too
    finish_cycle "$C"
    line=$(grep -m1 'resuming from' "$C.final.err")
    if [ -n "$expect" ]; then
        check '[[ "$line" == *"(step $expect, "* ]]' "final run: expected resume from step $expect: $line"
        resumed+=("$expect")
    else
        check '[ -z "$line" ]' "final run resumed although no checkpoint was ok: $line"
    fi
fi
# --precision bf16 (lenet: convolutions and linear layers in bfloat16), where oneDNN has bfloat16 on
# this CPU: a run SIGKILLed after its first checkpoint resumes — keeping the checkpoint's precision
# without the flag — to the bytes of an uninterrupted bf16 run (resnet8 too, whose activations
# between convolutions and batch norms are bfloat16); asking f32 on resume is refused without
# --allow-change; with oneDNN limited to AVX-512 without BF16 the flag is refused, and the
# checkpoint goes on there in f32 with --allow-change (checkpoints are f32). ~8 s.
BF="$BATON train --data $D --model lenet --batch 64 --max-steps 16 --ckpt-every-steps 4 --seed 3 --threads 2 --quiet"
NOBF="env ONEDNN_MAX_CPU_ISA=AVX512_CORE"
if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
    check '$BF --ckpt-dir "$T/bref" --precision bf16 --json >"$T/bref.json" 2>"$T/bref.err"' "bf16 run: $(head -c 300 "$T/bref.err" 2>/dev/null)"
    check '[ "$(json "$T/bref.json" "d[\"kernels\"]")" = dnnl-bf16 ]' "bf16 run's kernels: $(cat "$T/bref.json")"
    $BF --ckpt-dir "$T/bk" --precision bf16 >/dev/null 2>&1 &
    pid=$!
    until=$((${EPOCHREALTIME/./} + 20000000))
    until [ -d "$T/bk/ckpt-000000004" ] || [ "${EPOCHREALTIME/./}" -gt "$until" ]; do sleep 0.02; done
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    check '[ ! -d "$T/bk/ckpt-000000016" ]' "the bf16 run finished before the kill"
    check 'grep -q "\"precision\":\"bf16\"" "$T/bk/ckpt-000000004/state.json"' "state.json keeps the precision"
    expect_fail 1 "trained with --precision bf16; this run has --precision f32" $BF --ckpt-dir "$T/bk" --precision f32
    check '$BF --ckpt-dir "$T/bk" 2>"$T/bk.err" >/dev/null && grep -q "resuming from" "$T/bk.err"' "bf16 resume: $(head -c 300 "$T/bk.err" 2>/dev/null)"
    check 'cmp -s "$T/bref/ckpt-000000016/model.safetensors" "$T/bk/ckpt-000000016/model.safetensors" &&
           cmp -s "$T/bref/ckpt-000000016/optim.safetensors" "$T/bk/ckpt-000000016/optim.safetensors"' \
        "a bf16 run resumed after SIGKILL ends with other bytes than the uninterrupted one"
    # resnet8: its activations between convolutions and batch norms in bfloat16 (and their
    # gradients), which lenet has none of — the same kill, resume and bytes
    R8="$BATON train --data $D --model resnet8 --batch 64 --max-steps 12 --ckpt-every-steps 4 --seed 3 --threads 2 --quiet --precision bf16"
    check '$R8 --ckpt-dir "$T/r8ref" >/dev/null 2>"$T/r8ref.err"' "resnet8 bf16 run: $(head -c 300 "$T/r8ref.err" 2>/dev/null)"
    $R8 --ckpt-dir "$T/r8k" >/dev/null 2>&1 &
    pid=$!
    until=$((${EPOCHREALTIME/./} + 20000000))
    until [ -d "$T/r8k/ckpt-000000004" ] || [ "${EPOCHREALTIME/./}" -gt "$until" ]; do sleep 0.02; done
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    check '[ ! -d "$T/r8k/ckpt-000000012" ]' "the resnet8 bf16 run finished before the kill"
    check '$R8 --ckpt-dir "$T/r8k" 2>"$T/r8k.err" >/dev/null && grep -q "resuming from" "$T/r8k.err"' "resnet8 bf16 resume: $(head -c 300 "$T/r8k.err" 2>/dev/null)"
    check 'cmp -s "$T/r8ref/ckpt-000000012/model.safetensors" "$T/r8k/ckpt-000000012/model.safetensors" &&
           cmp -s "$T/r8ref/ckpt-000000012/optim.safetensors" "$T/r8k/ckpt-000000012/optim.safetensors"' \
        "a resnet8 bf16 run resumed after SIGKILL ends with other bytes than the uninterrupted one"
    expect_fail 1 "AVX512-BF16 or AMX.*ONEDNN_MAX_CPU_ISA=AVX512_CORE" $NOBF $BF --ckpt-dir "$T/bn" --precision bf16
    expect_fail 1 "trained with --precision bf16.*AVX512-BF16" $NOBF $BF --ckpt-dir "$T/bk" --max-steps 17
    check '$NOBF $BF --ckpt-dir "$T/bk" --max-steps 17 --precision f32 --allow-change --json >"$T/bf.json" 2>/dev/null &&
           [ "$(json "$T/bf.json" "d[\"kernels\"] + str(d[\"step\"])")" = dnnl17 ]' \
        "a bf16 checkpoint does not go on in f32 without bfloat16: $(cat "$T/bf.json" 2>/dev/null)"
else
    expect_fail 1 "AVX512-BF16 or AMX" $BF --ckpt-dir "$T/bn" --precision bf16
fi

check '[ "$kills" -ge "$KILLS" ]' "only $kills kills happened"
check '[ "$early" -le $((KILLS / 2)) ]' "$early of $KILLS kills landed before the run read its checkpoint"
echo "killed $kills times ($during_write with a checkpoint write in flight, $corrupt_seen with a CORRUPT listing, $fresh_starts fresh starts, $early before the checkpoint was read, $cycle cycle(s)); resumed from steps: ${resumed[*]}"
finish
