#!/usr/bin/env bash
# test_fleet_nodes.sh — a local fleet task over nodes (`nodes: {min, max}`): one simulated instance
# per rank, each with its own metadata service, the task's ranks launched under mpirun (loopback,
# oversubscribed), LeNet on a Fashion-MNIST pack:
#   - {min: 1, max: 2}, a notice on the second member once it trained 40 steps: the world stops at
#     one step (exit 75, the noticed member STOPPED after a checkpoint, not killed at its
#     deadline, its deadline event logged), the survivor relaunches alone at once, the replacement joins by a stop of that
#     launch (world 2 -> 1 -> 2); every sample trained exactly once
#     (the sample audit log) in each epoch of the 200 steps, from both ranks; the end is byte-identical to the same world sizes
#     run by hand from the same steps (mpirun -n 2, 1, 2); the supervisor is SIGKILLed while the
#     first launch runs, and the one started next adopts it (through both its members);
#   - {min: 2, max: 2}, the second member reclaimed without notice: the launch ends at once (no
#     crash counted), the survivor waits for its replacement (never a launch of 1 rank), the
#     relaunch resumes from the last checkpoint and the task finishes.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
if ! command -v mpirun >/dev/null; then skip "mpirun not installed (scripts/deps.sh installs openmpi-bin)"; finish; exit; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
# Open MPI keeps allocations until exit that LeakSanitizer would report as leaks
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
D=$T/fm
check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"
TR="baton train --data $D --model lenet --batch 64 --seed 7 --threads 1 --quiet --epochs 2"
job() {   # job NAME MIN STEPS NOTICE SCALE: two zones, the first member never interrupted, the second after 40
          # steps; a launch takes 2 simulated minutes (a replacement arrives after the launch it left ended)
    cat >"$T/$1.yaml" <<EOF
name: $1
command: $TR --max-steps $3 --ckpt-dir ckpt --sample-log samples
nodes: {min: $2, max: 2}
instance_types: [c5.large]
zones: [us-east-1a, us-east-1b]
state_dir: $T/state
env: {OMP_NUM_THREADS: 1}
market:
  time_scale: $5
  launch_delay: 2m
  notice: 2m
  interruptions:
    - {task: 0, after: 100h}
    - {task: 0, after: 1s, after_steps: 40, notice: $4}
EOF
}
vol() { ls -d "$T"/state/"$1"/volumes/*/vol-0-* | head -1; }
worlds() { sed -n 's/.*launched \([0-9]*\) rank(s) under mpirun.*from step \([0-9]*\).*/\1 \2/p' "$1"; }

# ---- {min: 1, max: 2}, a notice: 2 -> 1 -> 2 ranks
# (its supervisor SIGKILLed once the first launch runs: the next one adopts the launch)
job grow 1 200 2m 30
"$BATON" fleet run "$T/grow.yaml" >/dev/null 2>"$T/grow.err1" &
sup=$!
for _ in $(seq 1200); do grep -q "launched 2 rank(s)" "$T/grow.err1" 2>/dev/null && break; sleep 0.05; done   # up to 60 s: slow under the sanitizers beside another lane
kill -KILL "$sup" 2>/dev/null; wait "$sup" 2>/dev/null
check '"$BATON" fleet run "$T/grow.yaml" >"$T/grow.out" 2>"$T/grow.err2"' "fleet run, nodes {min: 1, max: 2}, resumed by a new supervisor"
check '[ "$(grep -c "adopted the running worker (pid $(sed -n "s/.*under mpirun (pid \([0-9]*\)).*/\1/p" "$T/grow.err1" | head -1)," "$T/grow.err2")" -eq 2 ]' \
    "the new supervisor adopted the running launch through both of its members"
cat "$T/grow.err1" "$T/grow.err2" >"$T/grow.err"
V=$(vol grow)
worlds "$T/grow.err" >"$T/grow.worlds"
echo "launches (ranks, from step): $(tr '\n' ';' <"$T/grow.worlds")"
check '[ "$(cut -d" " -f1 "$T/grow.worlds" | tr "\n" " ")" = "2 1 2 " ]' "the launches had 2, then 1, then 2 ranks ($(cut -d' ' -f1 "$T/grow.worlds" | tr '\n' ' '))"
check 'grep -q "NOTICED -> STOPPED: stopped after a checkpoint (exit 75) (rank 1 of 2)" "$T/grow.err"' \
    "the noticed member stopped after a checkpoint, before its deadline"
check 'grep -q "more member(s) ready: the 1 rank(s) stop at the next step" "$T/grow.err"' "the replacement joined by a stop of the 1-rank launch"
check 'grep -q "i-[0-9a-f]* task 0: notice -> step [0-9]* committed +[0-9.]* s, no upload, exit +[0-9.]* s; margin" "$T/grow.err"' \
    "the noticed member's exit 75 logged its deadline event (rank 0's interruption in the task's result file)"
check 'grep -q "task 0: done, step 200, 1 interruption(s), 0 crash(es)" "$T/grow.out"' "done at step 200, 1 interruption, no crash"
check '[ "$(wc -l <"$V/samples")" -eq 12752 ] && [ "$(awk "{print \$1, \$2}" "$V/samples" | sort -u | wc -l)" -eq 12752 ] &&
       [ "$(awk "\$1 == 0" "$V/samples" | wc -l)" -eq 10000 ] && [ "$(awk "{print \$3}" "$V/samples" | sort -u | tr "\n" " ")" = "0 1 " ]' \
    "200 steps of 64 (157 an epoch, the last of 16): the epoch's 10000 samples and 2752 of the next, each trained once, from ranks 0 and 1"
# the same world sizes by hand, from the same steps (a property of training, not of the fleet's
# code: the plain build's pass checks it; test_dist runs those ranks under the sanitizers)
H="mpirun --oversubscribe --bind-to none -n"
if [ "${BATON_BUILD:-build}" != build-san ]; then
    s1=$(sed -n 2p "$T/grow.worlds" | cut -d' ' -f2) s2=$(sed -n 3p "$T/grow.worlds" | cut -d' ' -f2)
    HT="$BATON ${TR#baton } --no-notice --ckpt-dir $T/byhand"
    check '[ -n "$s1" ] && [ -n "$s2" ] && $H 2 $HT --max-steps "$s1" >/dev/null 2>&1 && $H 1 $HT --max-steps "$s2" >/dev/null 2>&1 &&
           $H 2 $HT --max-steps 200 >/dev/null 2>&1' "by hand: 2 ranks to step $s1, 1 to $s2, 2 to 200"
    check 'cmp -s "$T/byhand/ckpt-000000200/model.safetensors" "$V/ckpt/ckpt-000000200/model.safetensors" &&
           cmp -s "$T/byhand/ckpt-000000200/optim.safetensors" "$V/ckpt/ckpt-000000200/optim.safetensors"' \
        "the fleet's resized run is byte-identical to the same world sizes run by hand"
fi

# ---- {min: 2, max: 2}, a member reclaimed without notice: the survivor waits for 2
job fixed 2 80 0 60
check '"$BATON" fleet run "$T/fixed.yaml" >"$T/fixed.out" 2>"$T/fixed.err"' "fleet run, nodes {min: 2, max: 2}"
worlds "$T/fixed.err" >"$T/fixed.worlds"
check '[ "$(cut -d" " -f1 "$T/fixed.worlds" | tr "\n" " ")" = "2 2 " ]' "two launches, both of 2 ranks ($(cut -d' ' -f1 "$T/fixed.worlds" | tr '\n' ' '))"
check 'grep -q "RUNNING -> STOPPED: interrupted without notice" "$T/fixed.err" && grep -q "ended (exit 137)" "$T/fixed.err"' \
    "the member reclaimed without notice ended the launch"
check 'grep -q "task 0: done, step 80, 1 interruption(s), 0 crash(es)" "$T/fixed.out"' "done at step 80, no crash counted"
r2=$(sed -n 2p "$T/fixed.worlds" | cut -d' ' -f2)
check '[ -n "$r2" ] && [ "$r2" -gt 0 ] && [ -d "$(vol fixed)/ckpt/ckpt-$(printf %09d "$r2")" ]' \
    "the relaunch resumed from the last checkpoint (step $r2)"
finish
