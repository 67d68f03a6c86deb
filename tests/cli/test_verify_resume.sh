#!/usr/bin/env bash
# test_verify_resume.sh — `baton verify-resume`: baton train interrupted by every kind (SIGTERM,
# SIGKILL, a spot notice through the local metadata emulator, SIGINT) and rerun is "identical" to
# its uninterrupted run (exit 0); a small Python trainer (tests/cli/verify_trainer.py) broken on
# purpose is caught at the right step with the right cause (exit 1): its loader state saved one
# batch ahead (samples, the first step after the resume), its momentum not saved (the loss, the
# second step after it; the weights if a checkpoint comes first), its noise generator not restored
# (the weights, at the next checkpoint); the PyTorch example identical under every kind, and the
# example with each of three classic bugs (the optimizer's state not saved, the loader's state read
# one batch late, the random generators not saved with dropout on) caught at its step; race train
# identical; usage errors exit 2.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
B=${BATON_BUILD:-build}
export TMPDIR=$T   # the check's own work folders
case "$BATON" in /*) ;; *) BATON=$PWD/$BATON ;; esac
case "$B" in /*) BD=$B ;; *) BD=$PWD/$B ;; esac

# usage
expect_fail 2 "^baton verify-resume: no command: give it after --$" $BATON verify-resume --ckpt-dir "$T/c"
expect_fail 2 "^baton verify-resume: --ckpt-dir is required" $BATON verify-resume -- true
expect_fail 2 "^baton verify-resume: --kinds: 'hup' is not one of term, kill, notice, int$" \
    $BATON verify-resume --kinds term,hup --ckpt-dir "$T/c" -- true
expect_fail 2 "^baton verify-resume: --ckpt-dir .*: refusing to empty it" $BATON verify-resume --ckpt-dir . -- true
# a command that logs no steps is not a trainer: an error naming the variable
expect_fail 1 "logged no steps to \\\$BATON_VERIFY_LOG" $BATON verify-resume --quiet --ckpt-dir "$T/c" -- true

check '"$BATON" pack --from fashion-mnist --split test --out "$T/fm" --shard-mb 1 --quiet >/dev/null' "pack"

# baton train, every kind: identical
"$BATON" verify-resume --interruptions 4 --kinds term,kill,notice,int --seed 3 --ckpt-dir "$T/ck" --json -- \
    "$BATON" train --data "$T/fm" --model mlp --threads 1 --epochs 3 --max-steps 200 --ckpt-every-steps 10 --ckpt-dir "$T/ck" --quiet \
    >"$T/train.json" 2>"$T/train.err"
rc=$?
check '[ $rc -eq 0 ] && [ "$(json "$T/train.json" "d[\"cause\"]")" = identical ]' \
    "baton train: identical (exit $rc): $(head -c 800 "$T/train.json") $(tail -5 "$T/train.err")"
check '[ "$(json "$T/train.json" "d[\"steps\"]")" = 200 ] && [ "$(json "$T/train.json" "d[\"compared\"][\"batches\"] >= 200 and d[\"compared\"][\"losses\"] >= 200 and d[\"compared\"][\"checkpoints\"] >= 2")" = True ]' \
    "baton train: 200 steps, every batch and loss compared"
check '[ "$(json "$T/train.json" "\",\".join(sorted(i[\"kind\"] + \":\" + i[\"outcome\"] for i in d[\"interruptions\"]))")" = "int:stopped,kill:stopped,notice:stopped,term:stopped" ]' \
    "baton train: every kind stopped it: $(json "$T/train.json" "d[\"interruptions\"]")"
echo "baton train: $(json "$T/train.json" "d[\"seconds\"]")"
# a kind the command does not react to (notices, to a train that does not watch them) is reported,
# not a difference
"$BATON" verify-resume --interruptions 2 --kinds notice --ckpt-dir "$T/nn" --json -- \
    "$BATON" train --data "$T/fm" --model mlp --threads 1 --max-steps 40 --ckpt-every-steps 5 --ckpt-dir "$T/nn" --no-notice --quiet \
    >"$T/nn.json" 2>"$T/nn.err"
rc=$?
check '[ $rc -eq 0 ] && [ "$(json "$T/nn.json" "d[\"cause\"] == \"identical\" and d[\"interruptions\"][0][\"outcome\"] in (\"ignored\", \"finished first\") and all(i[\"outcome\"] != \"stopped\" for i in d[\"interruptions\"])")" = True ]' \
    "notices to a run that ignores them: reported, identical (exit $rc): $(head -c 600 "$T/nn.json") $(tail -3 "$T/nn.err")"

# a broken trainer is caught: the table says where and why
python_ok=1
if [ ! -x /usr/bin/python3 ] || [ ! -d "$BD/python/baton" ] || ! /usr/bin/python3 -c "import numpy" 2>/dev/null; then
    skip "no /usr/bin/python3 with NumPy, or no module in $BD/python (make builds it): the broken trainers are not run"
    python_ok=0
fi
pyenv=(env PYTHONPATH="$BD/python")
case "$B" in *san*) pyenv+=(LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
                          ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1) ;; esac
vpy() {   # vpy NAME BUG [extra trainer flags]: verify-resume of the trainer with one SIGTERM
    local name=$1 bug=$2
    shift 2
    "${pyenv[@]}" "$BATON" verify-resume --interruptions 1 --kinds term --seed 5 --ckpt-dir "$T/$name.ck" --json -- \
        /usr/bin/python3 tests/cli/verify_trainer.py --data "$T/fm" --ckpt "$T/$name.ck" --steps 40 --bug "$bug" "$@" \
        >"$T/$name.json" 2>"$T/$name.err"
    echo $?
}
# from: the step the rerun resumed from; at: the verdict "cause@step"
from() { json "$T/$1.json" "d[\"runs\"][2][\"resumed_from\"] if len(d[\"runs\"]) > 2 else -1"; }
at() { json "$T/$1.json" "d[\"cause\"] + \"@\" + str(d.get(\"step\", 0))"; }
if [ $python_ok = 1 ]; then
    rc=$(vpy good "")
    check '[ "$rc" = 0 ] && [ "$(at good)" = identical@0 ]' "python, no bug: identical (exit $rc): $(head -c 600 "$T/good.json") $(tail -3 "$T/good.err")"

    rc=$(vpy loader loader-after)
    s=$(from loader)
    check '[ "$rc" = 1 ] && [ "$(at loader)" = "samples@$((s + 1))" ]' \
        "loader state saved ahead: samples at the first step after the resume from $s: $(at loader) $(json "$T/loader.json" "d.get(\"what\")")"

    rc=$(vpy optim optimizer)
    s=$(from optim)
    want="loss@$((s + 2))"
    [ $(((s + 1) % 5)) = 0 ] && want="weights@$((s + 1))"
    check '[ "$rc" = 1 ] && [ "$(at optim)" = "$want" ]' \
        "momentum not saved: $want after the resume from $s: $(at optim) $(json "$T/optim.json" "d.get(\"what\")")"

    rc=$(vpy rng rng --no-loss)
    s=$(from rng)
    check '[ "$rc" = 1 ] && [ "$(at rng)" = "weights@$(((s / 5 + 1) * 5))" ]' \
        "noise generator not restored: weights at the next checkpoint after $s: $(at rng) $(json "$T/rng.json" "d.get(\"what\")")"
    # the table names the step and cause in words
    "${pyenv[@]}" "$BATON" verify-resume --interruptions 1 --kinds term --seed 5 --quiet --ckpt-dir "$T/t.ck" -- \
        /usr/bin/python3 tests/cli/verify_trainer.py --data "$T/fm" --ckpt "$T/t.ck" --steps 40 --bug loader-after >"$T/table" 2>&1
    rc=$?
    check '[ $rc = 1 ] && grep -q "^different at step [0-9]*: samples: step [0-9]*: the batch held epoch 0 positions" "$T/table" && grep -q "^time: uninterrupted" "$T/table"' \
        "the table: $(head -3 "$T/table")"
fi

# the PyTorch example (dropout on) under one interruption of every kind: identical; the example with
# each classic bug (bench/verify_resume/variants.py derives them from it) caught at the first
# differing step with the right cause (variants.py --expect); bench/verify_resume.sh runs the full set
torch_ok=$python_ok
if [ $python_ok = 1 ] && ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
    skip "no PyTorch for /usr/bin/python3: the example's cases are not run"
    torch_ok=0
fi
case "$B" in *san*) torch_ok=0; echo "(the PyTorch example's cases run in the plain pass: torch under the sanitizers takes minutes)" ;; esac
if [ $torch_ok = 1 ]; then
    t0=$(date +%s.%N)
    check 'python3 bench/verify_resume/variants.py "$T/var" >/dev/null' "the example's variants derive"
    # seed 9 draws steps 3, 6, 7 and 11 of 16: the notice (polled every 0.1 s, up to 4 of these steps
    # late) and the last SIGINT land well before the end, where a late one would find the run done
    ex() {   # ex NAME SCRIPT INTERRUPTIONS KINDS: verify-resume's report in $T/NAME.json, its exit status
        "${pyenv[@]}" OMP_NUM_THREADS=1 "$BATON" verify-resume --interruptions "$3" --kinds "$4" --seed 9 --quiet \
            --ckpt-dir "$T/$1.ck" --json -- /usr/bin/python3 "$2" --data "$T/fm" --ckpt "$T/$1.ck" --epochs 1 \
            --batch 32 --deterministic --threads 1 --loader-threads 1 --max-steps 16 --every 4 --dropout 0.2 \
            --log-s 0 >"$T/$1.json" 2>"$T/$1.err"
        echo $?
    }
    rc=$(ex example examples/pytorch/train.py 4 term,kill,notice,int)
    check '[ "$rc" = 0 ] && [ "$(json "$T/example.json" "d[\"cause\"] == \"identical\" and sorted(i[\"kind\"] for i in d[\"interruptions\"] if i[\"outcome\"] == \"stopped\") == [\"int\", \"kill\", \"notice\", \"term\"]")" = True ]' \
        "the PyTorch example: identical, stopped by every kind (exit $rc): $(head -c 800 "$T/example.json") $(tail -3 "$T/example.err")"
    for v in optimizer loader rng; do
        rc=$(ex "$v" "$T/var/train_$v.py" 1 term)
        want=$(python3 bench/verify_resume/variants.py "$T/$v.json" --expect "$v" --every 4)
        check '[ "$rc" = 1 ] && [ "$(at "$v")" = "$want" ] && [ "$want" != identical@0 ]' \
            "the example with the $v bug: $want, got $(at "$v") (exit $rc): $(json "$T/$v.json" "d.get(\"what\")") $(tail -3 "$T/$v.err")"
    done
    echo "the PyTorch example's cases: $(python3 -c "import sys; print('%.1f s' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(date +%s.%N)")"
fi

# race train: identical (iterations are its steps; no batches, the policy loss and the checkpoints)
"$BATON" verify-resume --interruptions 2 --kinds kill,term --seed 2 --ckpt-dir "$T/race" --json -- \
    "$BATON" race train --track oval --obs sensor --episodes 100 --seed 4 --threads 1 --ckpt-every-steps 1 --ckpt-dir "$T/race" --quiet \
    >"$T/race.json" 2>"$T/race.err"
rc=$?
check '[ $rc -eq 0 ] && [ "$(json "$T/race.json" "d[\"cause\"]")" = identical ]' \
    "race train: identical (exit $rc): $(head -c 800 "$T/race.json") $(tail -5 "$T/race.err")"
finish
