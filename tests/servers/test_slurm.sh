#!/usr/bin/env bash
# test_slurm.sh — the slurm backend of `baton fleet` on a real one-node Slurm (tests/servers/slurm.sh:
# munged, slurmctld, slurmd on loopback, started and stopped by pid in a scratch folder).
#
# One `baton train` task (an MLP on a Fashion-MNIST pack) is submitted with `baton fleet run
# --backend slurm`, then interrupted three times, each time once it has written a checkpoint
# beyond the one it resumed from:
#   1. `scontrol requeue` (Slurm signals every process, requeues the job);
#   2. a job in the higher-priority `urgent` partition that needs the whole node (preemption,
#      PreemptMode=REQUEUE);
#   3. `scancel --signal=USR1 --batch` (what --signal=B:USR1@T sends before the time limit: the
#      batch script forwards it as TERM and requeues the job itself after the checkpoint).
# Each time the trainer exits 75 after a committed checkpoint and the next run resumes from exactly
# that checkpoint (its "resuming from" line against the previous run's "checkpoint ... committed,
# stopping"); the job completes; its final weights are byte-identical to an uninterrupted run's;
# `baton fleet status` reads the states back (text and --json), `baton fleet cancel` cancels a
# second submission; and a job file asking for zones is refused.
# Then data parallelism: a fleet job with `nodes: {min: 1, max: 2}` and 2 ranks per node, its ranks
# started by srun --mpi=pmix in the batch script, requeued once, resumes and ends byte-identical to
# an uninterrupted 2-rank mpirun run.
# Requeue delays (cred_expire + 1 s) are cut short with `scontrol update StartTime=now+2`.
#
# Skips (exit 77, tests/run.sh's "skipped", with the reason) only when the slurm-wlm packages are not installed or not root.
# Output: one "ok - ..." / "FAIL - ..." line per check; the last line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
here=tests/servers
BATON=${BATON:-build/baton}
BATON=$(cd "$(dirname "$BATON")" && pwd)/$(basename "$BATON")

for c in slurmctld slurmd sbatch scontrol munged; do
    if ! command -v "$c" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$c" ]; then
        echo "skip - $c not installed (scripts/deps.sh installs slurmctld slurmd slurm-client munge)"
        echo "0 passed, 0 failed, 1 skipped"
        exit 77
    fi
done
if [ "$(id -u)" != 0 ]; then
    echo "skip - a one-node Slurm needs root (slurmd starts jobs as their user)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
export PATH="$PATH:/usr/sbin:/sbin"

pass=0 failed=0
ok()   { echo "ok - $*"; pass=$((pass + 1)); }
bad()  { echo "FAIL - $*"; failed=$((failed + 1)); }
check() { if eval "$1"; then ok "$2"; else bad "$2"; fi; }

T=$(mktemp -d /tmp/baton-slurm-XXXXXX)
chmod 755 "$T"    # munged's socket lives below: every folder above it must be searchable
finish() {
    local rc=$?
    set +e
    [ -n "${SLURM_CONF:-}" ] && scancel --quiet -u root 2>/dev/null
    "$here/slurm.sh" stop "$T/slurm" >/dev/null 2>&1
    if [ "${BATON_KEEP_TMP:-0}" = 1 ]; then echo "# kept $T" >&2; else rm -rf "$T"; fi
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then echo "FAIL - test script aborted (status $rc)"; failed=1; fi
    echo "$pass passed, $failed failed"
    [ "$failed" -eq 0 ] || exit 1
    exit 0
}
trap finish EXIT
trap 'exit 130' INT TERM HUP

. "$here/lib.sh"
srv_port CPORT
srv_port DPORT
t_start=$SECONDS
if ! env_line=$("$here/slurm.sh" start "$T/slurm" "$CPORT" "$DPORT" 2>"$T/slurm-start.err"); then
    bad "slurm starts: $(tail -n 20 "$T/slurm-start.err")"
    exit 1
fi
eval "$env_line"
ok "one-node slurm is up ($(tail -n1 "$T/slurm-start.err"))"

# ---- the data, the reference run, the job file
export OMP_NUM_THREADS=2
mkdir -p "$T/nodmi"
D=$T/fm
N=400
FIN=$(printf 'ckpt-%09d' "$N")
TRAIN="baton train --data $D --model lenet --epochs 4 --batch 64 --seed 7 --threads 2 --quiet --max-steps $N --ckpt-every-steps 20"
check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"
check 'PATH=$(dirname "$BATON"):$PATH $TRAIN --ckpt-dir "$T/ref" --no-notice >/dev/null 2>&1' "uninterrupted reference run"

cat >"$T/job.yaml" <<EOF
name: fmnist-slurm
backend: slurm
command: $TRAIN --ckpt-dir ckpt --log logs/train.csv
retries: 1
state_dir: $T/state
env:
  AWS_EC2_METADATA_DISABLED: "true"   # this test never asks a real metadata service
  BATON_DMI_DIR: $T/nodmi
slurm:
  partition: batch
  cpus_per_task: 1
  signal_before: 5m
EOF
VOL=$T/state/fmnist-slurm/volumes/task-0

# ---- helpers
jobstate() { scontrol show job -o "$JOB" 2>/dev/null | sed -n 's/.* JobState=\([A-Z_]*\).*/\1/p'; }
runs_ended() { local n; n=$(grep -c '^end ' "$VOL/logs/slurm-runs.log" 2>/dev/null); echo "${n:-0}"; }
# until_ok SECONDS CMD ARGS...: wait (bounded) until CMD ARGS succeeds
until_ok() {
    local n=$(( $1 * 10 )); shift
    while ! "$@"; do
        n=$((n - 1)); [ "$n" -gt 0 ] || return 1
        sleep 0.1
    done
}
waited() {   # waited SECONDS NAME CMD ARGS...: ok/bad on whether CMD came true in time
    local secs=$1 name=$2; shift 2
    if until_ok "$secs" "$@"; then ok "$name"; return 0; fi
    bad "$name (not within $secs s; job state $(jobstate))"
    tail -n 20 "$VOL/logs/slurm-$JOB.log" 2>/dev/null | sed 's/^/    | /'
    exit 1   # the steps after this one depend on it
}
state_is() { [ "$(jobstate)" = "$1" ]; }
ended_more_than() { [ "$(runs_ended)" -gt "$1" ]; }
newest_step() { ls -d "$VOL"/ckpt/ckpt-* 2>/dev/null | sed 's/.*ckpt-0*//' | sort -n | tail -n1; }
ckpt_beyond() { local s; s=$(newest_step); [ -n "$s" ] && [ "$s" -gt "$1" ]; }
# after an interruption: the run has ended, the job waits in the queue; skip the requeue delay
back_in_queue() {   # back_in_queue ENDED_BEFORE NAME
    waited 60 "$2: the run ended" ended_more_than "$1"
    waited 30 "$2: the job is back in the queue" state_is PENDING
    # not StartTime=now: a launch in the same second as the requeue meets the revoked credential
    # of the previous run ("Job credential revoked") and fails the job
    scontrol update jobid="$JOB" StartTime=now+2 >/dev/null 2>&1
    waited 60 "$2: the job runs again" state_is RUNNING
}

# ---- submit
check '"$BATON" fleet run "$T/job.yaml" >"$T/run.out" 2>"$T/run.err"' "fleet run --backend slurm"
JOB=$(sed -n 's/.*submitted as Slurm job \([0-9]*\).*/\1/p' "$T/run.err")
check '[ -n "$JOB" ]' "a job id is reported"
check 'grep -q -- "--requeue" "$T/state/fmnist-slurm/slurm/task-0.sbatch" && grep -q -- "--signal=B:USR1@300" "$T/state/fmnist-slurm/slurm/task-0.sbatch" && grep -q -- "--open-mode=append" "$T/state/fmnist-slurm/slurm/task-0.sbatch"' \
    "the batch script asks for requeue, USR1 300 s before the time limit, appended output"
waited 30 "the job starts" state_is RUNNING
check '"$BATON" fleet status fmnist-slurm --state "$T/state" | grep -Eq "^0 +$JOB +RUNNING"' "fleet status (by job name) shows it RUNNING"

# ---- 1: scontrol requeue
waited 60 "run 1 writes a checkpoint" ckpt_beyond 0
scontrol requeue "$JOB"
back_in_queue 0 "requeue"
s1=$(newest_step)

# ---- 2: preemption by a job in the urgent partition that needs the whole node
waited 60 "run 2 writes a checkpoint beyond $s1" ckpt_beyond "$s1"
PJ=$(sbatch --parsable --partition=urgent --exclusive --output=/dev/null --wrap "sleep 1")
check '[ -n "$PJ" ]' "the urgent job is submitted"
back_in_queue 1 "preemption"
s2=$(newest_step)

# ---- 3: USR1 to the batch script, as before the time limit
waited 60 "run 3 writes a checkpoint beyond $s2" ckpt_beyond "$s2"
scancel --signal=USR1 --batch "$JOB"
back_in_queue 2 "USR1"

# ---- completion
check '"$BATON" fleet status "$T/job.yaml" --wait --timeout 120 >"$T/final.out" 2>"$T/final.err"' \
    "the job completes"
check 'grep -Eq "^0 +$JOB +COMPLETED +- +3 +4 +3 +0 +0 +$N " "$T/final.out"' \
    "status: COMPLETED, 3 restarts, 4 runs, 3 stops with a checkpoint, exit 0, checkpoint $N: $(tail -n1 "$T/final.out")"
check '"$BATON" fleet status fmnist-slurm --state "$T/state" --json | grep -q "\"state\":\"COMPLETED\",.*\"restarts\":3"' "status --json"
check 'cmp -s "$T/ref/$FIN/model.safetensors" "$VOL/ckpt/$FIN/model.safetensors"' \
    "final model.safetensors is byte-identical to the uninterrupted run's"
check '[ "$(grep -c "^end .*rc=75 " "$VOL/logs/slurm-runs.log")" -eq 3 ]' \
    "every interruption ended with exit 75: $(grep "^end" "$VOL/logs/slurm-runs.log" | tr '\n' '|')"
check 'grep -q "DUE TO JOB REQUEUE" "$VOL/logs/slurm-$JOB.log" && grep -q "DUE TO PREEMPTION" "$VOL/logs/slurm-$JOB.log"' \
    "Slurm logged the requeue and the preemption"
check 'grep -q "outcome=notice signal=usr1" "$VOL/logs/slurm-runs.log" && grep -q "requeueing job $JOB" "$VOL/logs/slurm-$JOB.log"' \
    "USR1: the batch script requeued the job itself after the checkpoint"

# every resume continues from the checkpoint the previous run committed when it stopped
mapfile -t stopped < <(sed -n 's/.*checkpoint \(ckpt-[0-9]*\) committed, stopping.*/\1/p' "$VOL/logs/slurm-$JOB.log")
mapfile -t resumed < <(sed -n 's/.*resuming from [^ ]*\/\(ckpt-[0-9]*\) .*/\1/p' "$VOL/logs/slurm-$JOB.log")
check '[ "${#stopped[@]}" -eq 3 ] && [ "${#resumed[@]}" -eq 3 ]' \
    "three stops with a committed checkpoint, three resumes (${stopped[*]:-none} / ${resumed[*]:-none})"
check '[ "${stopped[*]}" = "${resumed[*]}" ]' "each run resumed from the last run's checkpoint (${stopped[*]:-} = ${resumed[*]:-})"
check '[ "${stopped[0]:-x}" != "${stopped[1]:-x}" ] && [ "${stopped[1]:-x}" != "${stopped[2]:-x}" ]' \
    "each run made progress before its interruption"

# ---- cancel; refusals
cat >"$T/job2.yaml" <<EOF
name: sleeper
backend: slurm
command: sleep 60
state_dir: $T/state2
EOF
check '"$BATON" fleet run "$T/job2.yaml" 2>/dev/null' "a second job is submitted"
expect_refused() {   # expect_refused PATTERN NAME CMD...
    local pat=$1 name=$2; shift 2
    "$@" >/dev/null 2>"$T/refused.err"
    local rc=$?
    check '[ $rc -ne 0 ] && grep -Eq -- "$pat" "$T/refused.err"' "$name: $(head -c 300 "$T/refused.err")"
}
expect_refused "still has jobs in the Slurm queue" "a second submission while queued is refused" \
    "$BATON" fleet run "$T/job2.yaml"
check '"$BATON" fleet cancel sleeper --state "$T/state2" 2>/dev/null' "fleet cancel"
cancelled() { "$BATON" fleet status "$T/job2.yaml" | grep -Eq "^0 +[0-9]+ +CANCELLED"; }
waited 20 "the job is CANCELLED" cancelled
printf 'name: zoned\nbackend: slurm\ncommand: "true"\nzones: [us-east-1a]\nstate_dir: %s/state3\n' "$T" >"$T/job3.yaml"
expect_refused "zones: the slurm backend has no zones" "zones on Slurm are refused" "$BATON" fleet run "$T/job3.yaml"
printf 'name: typo\nbackend: slurm\ncommand: "true"\nstate_dir: %s/state3\nslurm:\n  partiton: batch\n' "$T" >"$T/job4.yaml"
expect_refused "job4.yaml:6: slurm.partiton: unknown field" "a misspelt slurm option names its line" \
    "$BATON" fleet run "$T/job4.yaml"
# ---- data parallel: a fleet job whose task is a run over machines (nodes: {min: 1, max: 2} and
# 2 ranks per node: this one-node cluster grants 1 node, so 2 ranks), its ranks started by the
# batch script's srun --mpi=pmix (Open MPI over PMIx), requeued once: the ranks stop on Slurm's
# SIGTERM after rank 0's checkpoint (exit 75), the rerun resumes from it, and the end is
# byte-identical to an uninterrupted 2-rank mpirun run
if command -v mpirun >/dev/null; then
    DP="train --data $D --model lenet --batch 64 --seed 7 --threads 1 --quiet --max-steps 120 --ckpt-every-steps 10"
    check 'OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --bind-to none -n 2 "$BATON" $DP --ckpt-dir "$T/dpref" --no-notice >/dev/null 2>&1' \
        "2-rank reference run under mpirun"
    cat >"$T/dp.yaml" <<EOF
name: dp-slurm
backend: slurm
command: baton $DP --ckpt-dir ckpt --dist mpi
nodes: {min: 1, max: 2}
state_dir: $T/state
env:
  AWS_EC2_METADATA_DISABLED: "true"
  BATON_DMI_DIR: $T/nodmi
  OMP_NUM_THREADS: 1
slurm:
  partition: batch
  cpus_per_task: 1
  ntasks_per_node: 2
EOF
    DPV=$T/state/dp-slurm/volumes/task-0
    check '"$BATON" fleet run "$T/dp.yaml" >/dev/null 2>"$T/dp-run.err"' "fleet run: a task over nodes {min: 1, max: 2}"
    JOB=$(sed -n 's/.*submitted as Slurm job \([0-9]*\).*/\1/p' "$T/dp-run.err")
    check '[ -n "$JOB" ] && grep -q -- "--nodes=1-2" "$T/state/dp-slurm/slurm/task-0.sbatch" &&
           grep -q "srun --mpi=pmix" "$T/state/dp-slurm/slurm/task-0.sbatch"' \
        "submitted as job $JOB: --nodes=1-2, the ranks started by srun --mpi=pmix"
    dp_beyond() { local s; s=$(ls -d "$DPV"/ckpt/ckpt-* 2>/dev/null | sed 's/.*ckpt-0*//' | sort -n | tail -n1); [ -n "$s" ] && [ "$s" -ge "$1" ]; }
    waited 60 "the 2-rank task checkpoints step 30" dp_beyond 30
    scontrol requeue "$JOB"
    waited 30 "the 2-rank task is back in the queue" state_is PENDING
    scontrol update jobid="$JOB" StartTime=now+2 >/dev/null 2>&1
    waited 90 "the 2-rank task completes" state_is COMPLETED
    check 'grep -q "stopped on a sigterm notice" "$DPV/logs/slurm-$JOB.log" && grep -q "resuming from" "$DPV/logs/slurm-$JOB.log" &&
           grep -q "step 120, .* 2 ranks" "$DPV/logs/slurm-$JOB.log"' "2 ranks stopped on the requeue, resumed, finished"
    check '[ "$(grep -c "^start " "$DPV/logs/slurm-runs.log")" -eq 2 ] && grep -q "outcome=done" "$DPV/logs/slurm-runs.log"' \
        "two runs of the task, the last one done"
    check 'cmp -s "$T/dpref/ckpt-000000120/model.safetensors" "$DPV/ckpt/ckpt-000000120/model.safetensors" &&
           cmp -s "$T/dpref/ckpt-000000120/optim.safetensors" "$DPV/ckpt/ckpt-000000120/optim.safetensors"' \
        "nodes on Slurm, requeued once: byte-identical to the uninterrupted mpirun run"
else
    bad "mpirun not installed (scripts/deps.sh installs openmpi-bin)"
fi
echo "# $((SECONDS - t_start)) s" >&2
