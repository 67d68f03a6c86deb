#!/usr/bin/env bash
# test_fleet.sh — `baton fleet` with a stand-in trainer (tests/cli/fake_trainer.sh: ~20 ms steps,
# checkpoint folders, exits 75 on a notice through `baton notice wait`), time-scaled x60:
#   - interruptions with and without notice, zone changes that move the volume (one volume left,
#     snapshots verified before the old copy goes), work lost 0 with notice and at most one
#     checkpoint interval without, cost sums that add up;
#   - a crash retried, and a task that keeps crashing stops the job with a clear report;
#   - a two-command sweep running in parallel, one volume each;
#   - the supervisor killed (SIGKILL) mid-run and restarted: the worker is adopted, a notice still
#     reaches it, nothing is lost;
#   - cancel and resume;
#   - bad input: malformed job file, unknown instance type, unwritable state folder, garbage and
#     unreachable metadata services;
#   - the workers' environment: a job's env: secrets reach them and nothing else; a short OpenMP
#     spin (GOMP_SPINCOUNT=1000) unless the job's env: sets one.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
FAKE="sh $PWD/tests/cli/fake_trainer.sh"
S=$T/state
export BATON_LOG=warn

# json FILE EXPR: evaluate a Python expression over the parsed JSON d

job() {   # job NAME COMMAND [extra YAML lines...]
    local name=$1 cmd=$2; shift 2
    {
        echo "name: $name"
        echo "command: $cmd"
        echo "instance_types: [c5.xlarge]"
        echo "zones: [us-east-1a, us-east-1b]"
        echo "market:"
        echo "  time_scale: 60"
        echo "  launch_delay: 20s"
        echo "  notice: 60s"
        echo "  capacity_cooldown: 1m"
        for l in "$@"; do echo "$l"; done
    } >"$T/$name.yaml"
}

wait_running() {   # wait_running JOB: until its first instance runs and has made a step (JSON in $T/JOB.json)
    for _ in $(seq 150); do
        "$BATON" fleet status "$1" --state "$S" --json 2>/dev/null >"$T/$1.json" &&
            [ "$(json "$T/$1.json" "d[\"instances\"] and d[\"instances\"][0][\"state\"] == \"RUNNING\" and d[\"instances\"][0][\"reached_step\"] > 2")" = True ] &&
            return 0
        sleep 0.1
    done
    return 1
}

# ---- A: interruptions, zone moves, work lost, costs
job a "$FAKE 200 20" "  interruptions:" "    - {after: 40s}" "    - {after: 30s, notice: 0}" "    - {after: 40s}" \
    "    - {after: 30s, notice: 0}" "    - {after: 40s}"
check '"$BATON" fleet run "$T/a.yaml" --state "$S" >"$T/a.out" 2>"$T/a.err"' "fleet a completes: $(tail -3 "$T/a.err" 2>/dev/null)"
"$BATON" fleet status a --state "$S" --json >"$T/a.json"
V=$(json "$T/a.json" 'd["tasks"][0]["volume"]')
check '[ "$(cat "$V/done.txt")" = 200 ]' "the task reached step 200"
check '[ "$(json "$T/a.json" "d[\"totals\"][\"interruptions\"]")" = 5 ]' "5 interruptions"
# each launch is told to plan its checkpoints (--ckpt-every auto) for a mean time between
# interruptions that the interruptions seen so far shorten (the type's Spot Advisor bucket the prior)
mtbis=$(for f in "$V"/logs/i-*.log; do   # in launch order (ids end in the launch number)
    sed -n 's/^ckpt-every auto mtbi \([0-9.]*\)$/\1/p' "$f"; done | tr '\n' ' ')
check 'python3 -c "import sys; m = [float(x) for x in sys.argv[1:]]; sys.exit(0 if len(m) >= 6 and all(b < a for a, b in zip(m, m[1:])) else 1)" $mtbis' \
    "every launch told --ckpt-every auto, each later one a shorter mean time between interruptions ($mtbis)"
check '[ "$(json "$T/a.json" "d[\"totals\"][\"interruptions_without_notice\"]")" = 2 ]' "2 without notice"
check '[ "$(json "$T/a.json" "d[\"totals\"][\"max_lost_steps_with_notice\"]")" = 0 ]' "no step lost with notice"
check '[ "$(json "$T/a.json" "d[\"totals\"][\"max_lost_steps_without_notice\"]")" -le 20 ]' "at most one interval lost without"
check '[ "$(json "$T/a.json" "sum(1 for i in d[\"instances\"] if i[\"state\"]==\"STOPPED\" and i[\"interruption\"]==\"notice\" and i[\"lost_steps\"]==0 and i[\"exit_code\"]==75)")" = 3 ]' \
    "each noticed instance exited 75 after a checkpoint of the step it reached"
check '[ "$(json "$T/a.json" "abs(sum(i[\"spot_cost\"] for i in d[\"instances\"]) - d[\"totals\"][\"spot_cost\"]) < 1e-12")" = True ]' "spot costs add up"
check '[ "$(json "$T/a.json" "abs(sum(i[\"charged_s\"]*i[\"spot_price\"]/3600 for i in d[\"instances\"]) - d[\"totals\"][\"spot_cost\"]) < 1e-12")" = True ]' \
    "spot cost = charged seconds x price"
check '[ "$(json "$T/a.json" "all((i[\"charged_s\"]==0) == (i[\"interruption\"]!=\"none\" and i[\"running_s\"]<3600) for i in d[\"instances\"] if i[\"running_s\"] > 0)")" = True ]' \
    "first-hour rule: exactly the instances interrupted within their first hour are free"
check '[ "$(json "$T/a.json" "abs(d[\"totals\"][\"useful_seconds\"]+d[\"totals\"][\"restart_seconds\"]+d[\"totals\"][\"lost_seconds\"]-d[\"totals\"][\"training_seconds\"]) < 1e-6")" = True ]' \
    "useful + restart + lost = training seconds"
check '[ "$(json "$T/a.json" "round((1-d[\"totals\"][\"billable_seconds\"]/d[\"totals\"][\"training_seconds\"])*100, 6) == round(d[\"totals\"][\"sagemaker_savings_pct\"], 6)")" = True ]' \
    "SageMaker savings formula"
# zones alternate (a reclaimed pool has no capacity for a minute): the volume moved, one copy left
check '[ "$(json "$T/a.json" "len(set(i[\"zone\"] for i in d[\"instances\"]))")" = 2 ]' "instances in both zones"
check '[ "$(find "$S/a/volumes" -mindepth 2 -maxdepth 2 -name "vol-0-*" | wc -l)" = 1 ]' "exactly one volume left"
check 'grep -q "\"step\":\"snapshot-verified\"" "$S/a/events.jsonl"' "snapshots verified"
check 'python3 - "$S/a/events.jsonl" <<"EOF"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
steps = [e["detail"]["step"] for e in ev if e["kind"] == "volume" and "step" in e.get("detail", {})]
moves = [steps[i:i + 4] for i in range(0, len(steps), 4)]
want = ["snapshot-created", "snapshot-verified", "volume-restored", "old-volume-deleted"]
sys.exit(0 if moves and all(m == want for m in moves) else 1)
EOF' "every move: snapshot, verify, restore, and only then delete the old copy"
check 'grep -q "^interruptions 5 (3 with notice, 2 without)" "$T/a.out"' "report table"
check '[ -s "$S/a/timeline.svg" ] && grep -q "<svg" "$S/a/timeline.svg" && grep -q "checkpoint" "$S/a/timeline.svg"' "timeline SVG"
check '[ "$(wc -l <"$S/a/events.jsonl")" -ge 20 ] && python3 -c "import json,sys; [json.loads(l) for l in open(sys.argv[1])]" "$S/a/events.jsonl"' \
    "events.jsonl is JSON lines"
check '"$BATON" fleet status --state "$S" | grep -Eq "^a +done"' "status lists the job"

# ---- B: a crash is retried; a task that keeps crashing fails the job, clearly
job b "$FAKE 60 20 30" "  random: false"
check '"$BATON" fleet run "$T/b.yaml" --state "$S" --quiet >/dev/null 2>&1' "one crash is retried"
"$BATON" fleet status b --state "$S" --json >"$T/b.json"
check '[ "$(json "$T/b.json" "[i[\"state\"] for i in d[\"instances\"]]")" = "['"'"'CRASHED'"'"', '"'"'DONE'"'"']" ]' "crashed, then done"
check '[ "$(json "$T/b.json" "d[\"instances\"][1][\"resumed_step\"]")" = 20 ]' "the retry resumed from the checkpoint"
job c "echo broken >&2; exit 3" "retries: 1"
expect_fail 1 "task 0 failed: 2 crashes \(retries: 1\).*status 3.*broken" "$BATON" fleet run "$T/c.yaml" --state "$S" --quiet
check '"$BATON" fleet status c --state "$S" | grep -q "job c: failed"' "status says failed"

# ---- C: a sweep: two experiments in parallel, each with its own volume
{
    echo "name: sweep"
    echo "commands: ['$FAKE 50 10', '$FAKE 70 10']"
    echo "target_capacity: 2"
    echo "instance_types: [c5.xlarge]"
    echo "zones: [us-east-1a]"
    echo "market: {time_scale: 60, launch_delay: 10s, random: false}"
} >"$T/sweep.yaml"
check '"$BATON" fleet run "$T/sweep.yaml" --state "$S" --quiet >/dev/null' "sweep completes"
"$BATON" fleet status sweep --state "$S" --json >"$T/s.json"
check '[ "$(json "$T/s.json" "[t[\"final_step\"] for t in d[\"tasks\"]]")" = "[50, 70]" ]' "both experiments done"
check '[ "$(json "$T/s.json" "len(set(t[\"volume\"] for t in d[\"tasks\"]))")" = 2 ]' "one volume each"
check '[ "$(json "$T/s.json" "d[\"instances\"][1][\"t_running\"] < d[\"instances\"][0][\"t_end\"]")" = True ]' "in parallel"

# ---- D: kill the supervisor mid-run, restart it: the worker is adopted and still gets its notice
job d "$FAKE 220 20" "  interruptions:" "    - {after: 3m}"
"$BATON" fleet run "$T/d.yaml" --state "$S" --quiet >/dev/null 2>&1 &
sup=$!
wait_running d
sleep 0.5
{ kill -9 $sup; wait $sup; } 2>/dev/null
wpid=$(json "$T/d.json" 'd["instances"][0]["name"]')
before=$(cat "$S/d/run/$wpid.step" 2>/dev/null || echo 0)
sleep 0.6
after=$(cat "$S/d/run/$wpid.step" 2>/dev/null || echo 0)
check '[ "$after" -gt "$before" ]' "the worker keeps training without its supervisor ($before -> $after)"
check '"$BATON" fleet run "$T/d.yaml" --state "$S" --quiet >/dev/null 2>&1' "the restarted supervisor completes the job"
"$BATON" fleet status d --state "$S" --json >"$T/d.json"
check 'grep -q "\"kind\":\"adopt\"" "$S/d/events.jsonl"' "the running worker was adopted"
check '[ "$(json "$T/d.json" "d[\"instances\"][0][\"exit_code\"], d[\"instances\"][0][\"lost_steps\"]")" = "75 0" ]' \
    "the adopted worker got its notice, checkpointed and stopped: nothing lost"
check '[ "$(json "$T/d.json" "d[\"tasks\"][0][\"final_step\"]")" = 220 ]' "the job finished"
check '[ -z "$(pgrep -f "fake_trainer.sh 220" || true)" ]' "no orphaned worker"

# ---- D1: the supervisor killed right after it announced a notice (before the worker's next poll:
# a 1 h notice at time scale 60 is a minute here, polled every 2.5 s): the restarted supervisor
# serves the notice again, and the adopted worker stops after its checkpoint instead of dying at
# the deadline with its work lost
job d1 "$FAKE 200 20" "  interruptions:" "    - {after: 20s, notice: 1h}"
"$BATON" fleet run "$T/d1.yaml" --state "$S" --quiet >/dev/null 2>&1 &
sup=$!
for _ in $(seq 1000); do grep -q '"to":"NOTICED"' "$S/d1/events.jsonl" 2>/dev/null && break; sleep 0.01; done
{ kill -9 $sup; wait $sup; } 2>/dev/null
check 'grep -q "\"to\":\"NOTICED\"" "$S/d1/events.jsonl"' "the supervisor announced a notice, then was killed"
check '"$BATON" fleet run "$T/d1.yaml" --state "$S" --quiet >/dev/null 2>&1' "the restarted supervisor completes the job"
"$BATON" fleet status d1 --state "$S" --json >"$T/d1.json"
check '[ "$(json "$T/d1.json" "d[\"instances\"][0][\"exit_code\"], d[\"instances\"][0][\"lost_steps\"]")" = "75 0" ]' \
    "the adopted NOTICED worker still got its notice: stopped after a checkpoint, nothing lost"

# ---- D2: the supervisor and its worker both killed: status says "stalled" (not "running"), shows the
# step reached so far (not -1), and stops counting time for an instance nothing runs any more
job st "$FAKE 400 20"
"$BATON" fleet run "$T/st.yaml" --state "$S" --quiet >/dev/null 2>&1 &
sup=$!
wait_running st
{ kill -9 $sup; wait $sup; } 2>/dev/null
# the worker is a process group (the trainer and its `baton notice wait`): kill all of it
for wp in $(pgrep -f "fake_trainer.sh 400"); do kill -9 -- "-$(ps -o pgid= -p "$wp" | tr -d ' ')" 2>/dev/null; done
sleep 0.5
"$BATON" fleet status st --state "$S" --json >"$T/g1.json"
sleep 1.2
"$BATON" fleet status st --state "$S" --json >"$T/g2.json"
"$BATON" fleet status st --state "$S" >"$T/g.txt"
check '[ "$(json "$T/g1.json" "d[\"job\"][\"state\"], d[\"job\"][\"supervisor_running\"], d[\"tasks\"][0][\"final_step\"], d[\"tasks\"][0][\"step\"] > 0")" = "stalled False None True" ]' \
    "stalled job: state, no final step, the step so far: $(head -c 300 "$T/g1.json")"
check '[ "$(json "$T/g1.json" "d[\"instances\"][0][\"running_s\"]")" = "$(json "$T/g2.json" "d[\"instances\"][0][\"running_s\"]")" ]' \
    "nothing runs the instance: its time stops growing"
check 'grep -q "^job st: stalled" "$T/g.txt" && grep -q "supervisor (pid [0-9]*) is not running" "$T/g.txt" && grep -Eq "task 0: .*reached step [1-9]" "$T/g.txt"' \
    "status text: $(head -3 "$T/g.txt")"

# ---- E: cancel stops the worker after a checkpoint; running again resumes
job e "$FAKE 200 20" "  random: false"
"$BATON" fleet run "$T/e.yaml" --state "$S" --quiet >/dev/null 2>&1 &
sup=$!
wait_running e
check '"$BATON" fleet cancel e --state "$S" >/dev/null' "cancel"
wait $sup
check '[ $? = 75 ]' "the cancelled run exits 75"
"$BATON" fleet status e --state "$S" --json >"$T/e.json"
check '[ "$(json "$T/e.json" "d[\"job\"][\"state\"], d[\"instances\"][0][\"exit_code\"], d[\"instances\"][0][\"lost_steps\"]")" = "cancelled 75 0" ]' \
    "cancelled after a checkpoint, nothing lost"
check '"$BATON" fleet run "$T/e.yaml" --state "$S" --quiet >/dev/null 2>&1' "running it again resumes and finishes"
"$BATON" fleet status e --state "$S" --json >"$T/e.json"
check '[ "$(json "$T/e.json" "d[\"job\"][\"state\"], d[\"tasks\"][0][\"final_step\"], d[\"instances\"][1][\"resumed_step\"] > 0")" = "done 200 True" ]' \
    "resumed from its checkpoint"

# ---- F: garbage and unreachable metadata services: never a notice; the deadline kill loses at most one interval
for mode in garbage unreachable; do
    job "f$mode" "$FAKE 90 15" "  random: false"   # the interruption comes from --interrupts
    check '"$BATON" fleet run "$T/f$mode.yaml" --state "$S" --imds $mode --interrupts 40s --quiet >/dev/null 2>&1' "imds $mode: completes"
    "$BATON" fleet status "f$mode" --state "$S" --json >"$T/f.json"
    check '[ "$(json "$T/f.json" "d[\"instances\"][0][\"exit_code\"] == 137 and d[\"instances\"][0][\"lost_steps\"] <= 15 and d[\"tasks\"][0][\"final_step\"] == 90")" = True ]' \
        "imds $mode: no notice seen, killed at the deadline, at most one interval lost"
    check '[ ! -s "$(json "$T/f.json" "d[\"tasks\"][0][\"volume\"]")/notice.txt" ]' "imds $mode: nothing taken for a notice"
done

# ---- bad input
printf 'name: bad\ncommand: x\ninstance_types: [c5.xlarge]\nzones: [a]\nmarket:\n  time_scale: fast\n' >"$T/bad.yaml"
expect_fail 1 "bad.yaml:6: market.time_scale: expected" "$BATON" fleet run "$T/bad.yaml" --state "$S"
printf 'name: bad\ncommand: x\ninstance_types:\n  - x9.mega\nzones: [a]\n' >"$T/bad2.yaml"
expect_fail 1 "bad2.yaml:4: instance_types\[0\]: unknown instance type 'x9.mega'" "$BATON" fleet run "$T/bad2.yaml" --state "$S"
printf 'name: bad\ncommand: x\ninstance_types: [c5.xlarge]\nzones: [a]\n  oops: [\n' >"$T/bad3.yaml"
expect_fail 1 "bad3.yaml:[0-9]+: yaml" "$BATON" fleet run "$T/bad3.yaml" --state "$S"
expect_fail 1 "job file.*nope.yaml" "$BATON" fleet run "$T/nope.yaml" --state "$S"
touch "$T/afile"
expect_fail 1 "state folder.*afile" "$BATON" fleet run "$T/a.yaml" --state "$T/afile/state"
# a spot price above the on-demand one is accepted, with a warning
job pricey "$FAKE 10 5"
sed -i 's|instance_types: \[c5.xlarge\]|instance_types: [{name: x1, on_demand_price: 0.1, spot_price: 0.2}]|' "$T/pricey.yaml"
check '"$BATON" fleet check "$T/pricey.yaml" 2>&1 >/dev/null | grep -q "spot price \$0.2/h is above its on-demand price \$0.1/h"' \
    "warning for a spot price above on-demand: $("$BATON" fleet check "$T/pricey.yaml" 2>&1 | head -2)"
# a volume seed that does not exist is found by `fleet check` (and `run`), not by three failed launches
job g "$FAKE 10 5" "volume: {seed: $T/no-such-seed}" "retries: 0"
expect_fail 1 "g.yaml: volume.seed: .*no-such-seed: no such folder" "$BATON" fleet check "$T/g.yaml"
expect_fail 1 "g.yaml: volume.seed: .*no-such-seed: no such folder" "$BATON" fleet run "$T/g.yaml" --state "$S" --quiet
check '[ ! -e "$S/g" ]' "nothing was started for it"
# what a command needs is checked before launch: its program, its --data, the files it names
job nodata "$BATON train --data file:///no/such/fmnist --mode pipe --model mlp --epochs 1 --ckpt-dir ckpt"
expect_fail 1 "nodata.yaml: the job's command cannot run as written" "$BATON" fleet check "$T/nodata.yaml"
check '"$BATON" fleet check "$T/nodata.yaml" 2>&1 | grep -q "^--data file:///no/such/fmnist: /no/such/fmnist does not exist"' \
    "fleet check names the missing data: $("$BATON" fleet check "$T/nodata.yaml" 2>&1 | tail -1)"
check '! "$BATON" fleet run "$T/nodata.yaml" --state "$S" --quiet >/dev/null 2>&1 && [ ! -e "$S/nodata" ]' \
    "fleet run refuses it before any launch"
mkdir -p "$T/pyseed" && echo 'print(1)' >"$T/pyseed/train.py"
job tools "no-such-tool-xyz --data data" "volume: {seed: $T/pyseed}"
job pyfile "python3 tain.py --data data" "volume: {seed: $T/pyseed}"
check '"$BATON" fleet check "$T/tools.yaml" 2>&1 | grep -q "^program no-such-tool-xyz: not on PATH" &&
       "$BATON" fleet check "$T/tools.yaml" 2>&1 | grep -q "^--data data: .*pyseed/data does not exist"' "a missing program, a relative --data looked up in the seed"
check '"$BATON" fleet check "$T/pyseed.yaml" >/dev/null 2>&1 || "$BATON" fleet check "$T/pyfile.yaml" 2>&1 | grep -q "^tain.py: not in the volume seed"' \
    "a script the command names must be in the seed: $("$BATON" fleet check "$T/pyfile.yaml" 2>&1 | tail -2)"
# relative paths in a job file are relative to its folder, not to where baton runs
mkdir -p "$T/jobs/seeddata" && echo x >"$T/jobs/seeddata/x.txt"
job rel "$FAKE 10 5" "volume: {seed: seeddata}" "state_dir: st"
mv "$T/rel.yaml" "$T/jobs/rel.yaml"
ABS=$(cd "$(dirname "$BATON")" && pwd)/$(basename "$BATON")
check '(cd / && "$ABS" fleet run "$T/jobs/rel.yaml" --quiet >/dev/null 2>&1) && [ -d "$T/jobs/st/rel" ]' \
    "state_dir and volume.seed resolved against the job file's folder"
check '[ "$(find "$T/jobs/st/rel/volumes" -name x.txt | wc -l)" -ge 1 ]' \
    "the seed was copied into the volume"
# a job that ended, its file then edited: said so, with how to run the new commands
sed -i 's|fake_trainer.sh 10 5|fake_trainer.sh 12 5|' "$T/jobs/rel.yaml"
"$BATON" fleet run "$T/jobs/rel.yaml" >/dev/null 2>"$T/rel.err"
check 'grep -q "already ended (done), and .*rel.yaml has changed since: its commands differ" "$T/rel.err" && grep -q "give the job another name, or remove" "$T/rel.err"' \
    "an edited finished job: $(cat "$T/rel.err")"
check '"$BATON" fleet check "$T/a.yaml" | grep -q "job a, backend local, 1 task"' "fleet check summarises a good job file"
expect_fail 1 "bad2.yaml:4: instance_types\[0\]: unknown instance type" "$BATON" fleet check "$T/bad2.yaml"
expect_fail 2 "a job file is required" "$BATON" fleet run
expect_fail 2 "--imds bogus" "$BATON" fleet run "$T/a.yaml" --imds bogus
expect_fail 2 "--interrupts: entry 2 '5x'" "$BATON" fleet run "$T/a.yaml" --state "$S/x" --interrupts 5m,5x
expect_fail 2 "--interrupts: entry 1 '5m/-1'" "$BATON" fleet run "$T/a.yaml" --state "$S/x" --interrupts 5m/-1
# ---- secrets: a job's env: values reach its workers, never the state folder, its database or logs
SECRET=fake-secret-9f3e2c71
SUM=$(printf %s "$SECRET" | md5sum | cut -c1-12)   # the worker checks its env against this, not the secret
cat >"$T/sec.yaml" <<EOY
name: sec
command: '[ "\$(printf %s "\$API_TOKEN" | md5sum | cut -c1-12)" = $SUM ] && [ "\$QUOTED" = "q-\$API_TOKEN" ]'
instance_types: [c5.xlarge]
zones: [us-east-1a]
market:
  time_scale: 600
  launch_delay: 5s
env:
  API_TOKEN: $SECRET
  QUOTED: "q-$SECRET"
EOY
check '"$BATON" fleet run "$T/sec.yaml" --state "$S" --json >"$T/sec.out" 2>"$T/sec.err"' "the workers got their env: $(tail -3 "$T/sec.err" 2>/dev/null)"
check '! grep -rqa "$SECRET" "$S/sec" "$T/sec.out" "$T/sec.err" && "$BATON" fleet status sec --state "$S" --json 2>&1 | { ! grep -q "$SECRET"; }' \
    "the secret is nowhere in the state folder (fleet.db, events, logs) or the output"
check 'python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT jobfile_text FROM job\").fetchone()[0])" "$S/sec/fleet.db" | grep -q "API_TOKEN: <redacted>"' \
    "the kept job file says <redacted>"
# ---- the workers share the machine's cores: a short OpenMP spin, unless the job's env: (or the
# caller's environment) sets one
job spin-default "'[ \"\$GOMP_SPINCOUNT\" = 1000 ]'"
job spin-own "'[ \"\$GOMP_SPINCOUNT\" = 7 ]'" "env:" "  GOMP_SPINCOUNT: \"7\""
for name in spin-default spin-own; do
    check 'env -u GOMP_SPINCOUNT "$BATON" fleet run "$T/$name.yaml" --state "$S" >/dev/null 2>"$T/spin.err"' \
        "$name: the workers' GOMP_SPINCOUNT: $(tail -3 "$T/spin.err" 2>/dev/null)"
done
expect_fail 1 "no fleet job" "$BATON" fleet status nosuchjob --state "$S"
expect_fail 1 "not running" "$BATON" fleet cancel a --state "$S"
finish
