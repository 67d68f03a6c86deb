#!/usr/bin/env bash
# test_dist_interrupt.sh — Ctrl-C on `mpirun … baton train` (SIGINT to mpirun, as a terminal sends
# it: the ranks run in process groups of their own, so only mpirun gets it). Open MPI forwards a
# SIGTERM to every rank; the world stops at one step boundary, rank 0 commits the checkpoint, every
# rank exits 75 — and mpirun itself reports 1, its fixed status for a job it ended on a signal
# (docs/distributed.md says so; rank 0's summary says so too). The same command then resumes at
# the committed step and finishes.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
mpi_setup || { finish; exit; }
unset AWS_EC2_METADATA_SERVICE_ENDPOINT
D=$T/fm
check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"
N=150
TR="$BATON train --data $D --model lenet --batch 64 --seed 7 --threads 1 --epochs 1 --max-steps $N --ckpt-every-steps 1000 --ckpt-dir $T/c --progress-file $T/step"
# mpirun in a session of its own, as a shell's foreground job is; SIGINT to it alone, as Ctrl-C
setsid mpirun --bind-to none -n 2 $TR >"$T/run.out" 2>"$T/run.err" &
job=$!
for _ in $(seq 600); do
    s=$(tr -d ' \n' 2>/dev/null <"$T/step"); [ -n "$s" ] && [ "$((10#$s))" -ge 20 ] && break; sleep 0.05
done
kill -INT "$job"
wait "$job"
rc=$?
check '[ "$rc" -eq 1 ]' "mpirun's own status on Ctrl-C is Open MPI's 1 (got $rc; if this changes, docs/distributed.md must too)"
check 'grep -q "stopped on a sigterm notice" "$T/run.out"' "the world stopped on the forwarded SIGTERM: $(tail -c 400 "$T/run.out")"
check 'grep -q "every rank committed step [0-9]* and exits 75; if mpirun was the one signalled it reports 1" "$T/run.out"' \
    "rank 0 says what mpirun's 1 means: $(tail -c 300 "$T/run.out")"
step=$("$BATON" ckpt ls "$T/c" 2>/dev/null | awk '$NF == "ok" { print $1 + 0; exit }')
check '[ -n "$step" ] && [ "$step" -ge 20 ] && [ "$step" -lt $N ]' "a checkpoint committed where it stopped (newest ok: '$step')"
check 'grep -q "committed step $step " "$T/run.out"' "the summary names the committed step $step"
check '"$BATON" ckpt verify "$T/c" >/dev/null 2>&1' "the checkpoints verify"
check 'mpirun --bind-to none -n 2 $TR >"$T/re.out" 2>"$T/re.err"' "the same command finishes (see re.err)"
check 'grep -q "resuming from .*(step $step, " "$T/re.err" && [ -d "$T/c/$(printf "ckpt-%09d" $N)" ]' \
    "the rerun resumed at step $step and reached step $N: $(grep -m1 resuming "$T/re.err")"
finish
