#!/usr/bin/env bash
# test_run_demo.sh — the README's main job, `baton run` (what `make run` runs), shortened with
# --max-steps and its output sent to one file as `make run >out.txt 2>&1` does:
#   - the relay shows whatever this machine's speed: interruptions scheduled at 30 % and 65 % of the
#     job's steps (the market says so), both with notice, each replacement resuming from the
#     checkpoint its predecessor committed at the notice, 0 steps lost, the job done;
#   - stdout and stderr keep their order in the file: the demo's banner before the fleet's first
#     event, the fleet's report before the demo's closing lines.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=2
line_of() { grep -n -m1 -- "$1" "$T/out" | cut -d: -f1; }   # the first line that has $1 (empty: none)

W=$T/demo
t0=$(date +%s.%N)
check '"$BATON" run --work "$W" --max-steps 60 >"$T/out" 2>&1' "baton run --max-steps 60 completes"
t1=$(date +%s.%N)
"$BATON" fleet status fmnist-resnet8 --state "$W/fleet" --json >"$T/status.json" 2>/dev/null

# how interruptions come is said in the banner, by the fleet and in the closing lines
check 'grep -q "interruptions scheduled at 30 % and 65 % of the job.s 60 steps (steps 18 and 39)" "$T/out"' \
    "the banner says the interruptions are scheduled at 30 % and 65 % of the steps"
check 'grep -q "market: interruptions scheduled (2): instance 1 at step 18, instance 2 at step 39; none drawn" "$T/out"' \
    "the fleet says the market's interruptions are scheduled, not drawn"
check 'grep -q "at_step: 18" "$W/demo.yaml" && grep -q "at_step: 39" "$W/demo.yaml" && grep -q -- "--max-steps 60" "$W/demo.yaml"' \
    "the job file carries the schedule and the step limit"

# the relay: two notices, each replacement resuming from the committed checkpoint, nothing lost
check '[ "$(json "$T/status.json" "d[\"job\"][\"state\"]")" = done ]' "the job is done"
check '[ "$(json "$T/status.json" "d[\"totals\"][\"interruptions_with_notice\"], d[\"totals\"][\"interruptions_without_notice\"]")" = "2 0" ]' \
    "2 interruptions, both with notice"
check '[ "$(json "$T/status.json" "d[\"totals\"][\"lost_steps\"]")" = 0 ]' "0 steps lost"
check '[ "$(json "$T/status.json" "[i[\"exit_code\"] for i in d[\"instances\"]]")" = "[75, 75, 0]" ]' \
    "two trainers stopped after a checkpoint (exit 75), the third finished"
relay='i = d["instances"]; print(len(i) == 3 and i[0]["resumed_step"] == 0 and all(i[k]["resumed_step"] == i[k - 1]["checkpoint_step"] == i[k - 1]["reached_step"] and i[k]["resumed_step"] > 0 for k in (1, 2)) and i[0]["checkpoint_step"] >= 18 and i[1]["checkpoint_step"] >= 39 and i[2]["reached_step"] == 60)'
check '[ "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $relay" "$T/status.json")" = True ]' \
    "each replacement resumed from the checkpoint committed at its predecessor's notice (past steps 18 and 39), the last reached step 60"
check 'grep -q "interruptions 2 (2 with notice; scheduled at 30 % and 65 % of the steps), 3 instance(s); work lost 0 steps" "$T/out"' \
    "the demo's closing lines: 2 interruptions with notice, 0 lost"
# each notice's commit against its deadline: in the fleet's events, its report and the demo's lines
check '[ "$(json "$T/status.json" "d[\"deadlines\"][\"interruptions\"], d[\"deadlines\"][\"inside\"]")" = "2 2" ]' \
    "the report: 2 interruptions, both exited inside their deadlines: $(json "$T/status.json" "d.get(\"deadlines\")")"
check '[ "$(json "$T/status.json" "all(0 <= e[\"commit_after_s\"] <= e[\"exit_after_s\"] < e[\"deadline_after_s\"] and e[\"margin_s\"] > 0 for e in d[\"deadlines\"][\"each\"])")" = True ]' \
    "each: committed, then exited, before the deadline"
check 'grep -Eq "fleet .*: notice -> step [0-9]+ committed \+[0-9.]+ s, no upload, exit \+[0-9.]+ s; margin [0-9.]+ s of [0-9.]+ s" "$T/out"' \
    "the fleet's event says it"
check 'grep -q "^interruptions against their deadlines" "$T/out" && grep -Eq "^  2 interruption\(s\): commit p50 [0-9.]+ s, max [0-9.]+ s; exit p50 [0-9.]+ s, max [0-9.]+ s; margin p50 [0-9.]+ s, min [0-9.]+ s; 2 of 2 inside the deadline" "$T/out"' \
    "the fleet's report: the table and p50/max"
check 'grep -Eq "^  deadlines    2 notice\(s\): committed p50 [0-9.]+ s / max [0-9.]+ s after the notice, exited p50 [0-9.]+ s / max [0-9.]+ s; margin p50 [0-9.]+ s, min [0-9.]+ s \(2 of 2 inside\)" "$T/out"' \
    "the demo's closing lines: the deadlines"

# one file, in the order it happened
banner=$(line_of "^baton demo: ResNet-8")
jobline=$(line_of "^job file .*demo.yaml")
first=$(line_of "^fleet \[")
report=$(line_of "^job fmnist-resnet8: done")
last=$(grep -n "^fleet \[" "$T/out" | tail -n 1 | cut -d: -f1)
done_=$(line_of "^baton demo done")
check '[ -n "$banner" ] && [ -n "$jobline" ] && [ -n "$first" ] && [ "$banner" -lt "$jobline" ] && [ "$jobline" -lt "$first" ]' \
    "the banner (lines $banner, $jobline) comes before the fleet's first event (line $first)"
check '[ -n "$report" ] && [ -n "$done_" ] && [ "$last" -lt "$report" ] && [ "$report" -lt "$done_" ]' \
    "the fleet's last event (line $last), its report (line $report), then the demo's end (line $done_)"

echo "baton run --max-steps 60: $(python3 -c "print(round($t1 - $t0, 1))") s"
finish
