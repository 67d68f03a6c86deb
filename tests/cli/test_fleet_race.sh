#!/usr/bin/env bash
# test_fleet_race.sh — race training on a local spot fleet, from the documented job file
# docs/race-train.yaml (its command, volume seed and market; the budget cut from 15 minutes to
# 2,000 episodes = 100 iterations, a checkpoint every 10 iterations, and an interruption schedule
# added), time-scaled x60:
#   - three interruptions (two with a notice, one without), each after 15 iterations: the job completes; each interruption
#     with notice loses no iteration, the one without at most one checkpoint interval; the
#     trainers that got a notice exit 75 after a checkpoint;
#   - the final policy, value network and both optimizers are byte-identical to an uninterrupted
#     `baton race train` run's, and the per-iteration log on the volume has every iteration;
#   - the documented job with no interval flag (shortened, uninterrupted) checkpoints at Daly's
#     interval for the trainer's measured cost and the hazard the fleet gives it.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1 BATON_LOG=warn
S=$T/state
BUDGET="--episodes 2000 --ckpt-every-steps 10"

check '"$BATON" race train --track oval --metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json \
    --ckpt-dir "$T/ref" $BUDGET --threads 1 --quiet --no-notice >/dev/null' "uninterrupted reference run"
check '[ -f "$T/ref/ckpt-000000100/model.safetensors" ]' "the reference ends at iteration 100"

# the documented job: its budget and the interruptions changed, its seed folder named absolutely
sed -e "s|--minutes 15|$BUDGET|" -e "s|seed: ./race-model|seed: $PWD/docs/race-model|" \
    -e '/^  interruptions:  /,/after_steps: 31}$/d' \
    -e 's|^  notice: 2m|  notice: 2m\n  launch_delay: 20s\n  capacity_cooldown: 2m\n  interruptions:\n    - {after_steps: 15}\n    - {after_steps: 15, notice: 0}\n    - {after_steps: 15}|' \
    docs/race-train.yaml >"$T/race.yaml"
check 'grep -q "episodes 2000" "$T/race.yaml" && grep -q "after_steps: 15, notice: 0" "$T/race.yaml"' "the job file was adapted"
check '"$BATON" fleet check "$T/race.yaml" >/dev/null' "the adapted job file checks"
check '"$BATON" fleet run "$T/race.yaml" --state "$S" >"$T/run.out" 2>"$T/run.err"' "race training on the fleet completes: $(tail -n 3 "$T/run.err" 2>/dev/null)"
"$BATON" fleet status race-oval --state "$S" --json >"$T/st.json"
V=$(json "$T/st.json" 'd["tasks"][0]["volume"]')
check '[ "$(json "$T/st.json" "d[\"totals\"][\"interruptions_with_notice\"], d[\"totals\"][\"interruptions_without_notice\"]")" = "2 1" ]' \
    "2 interruptions with notice, 1 without"
check '[ "$(json "$T/st.json" "d[\"totals\"][\"max_lost_steps_with_notice\"]")" = 0 ]' "no iteration lost on an interruption with notice"
check '[ "$(json "$T/st.json" "d[\"totals\"][\"max_lost_steps_without_notice\"]")" -le 10 ]' "at most one checkpoint interval lost without notice"
check '[ "$(json "$T/st.json" "sum(1 for i in d[\"instances\"] if i[\"exit_code\"] == 75)")" = 2 ]' "two trainers exited 75 after a checkpoint"
check 'cmp -s "$T/ref/ckpt-000000100/model.safetensors" "$V/ckpt/ckpt-000000100/model.safetensors"' \
    "final networks byte-identical to the uninterrupted run"
check 'cmp -s "$T/ref/ckpt-000000100/optim.safetensors" "$V/ckpt/ckpt-000000100/optim.safetensors"' "both optimizers too"
check '"$BATON" ckpt verify "$V/ckpt" >/dev/null' "the volume's checkpoints verify"
check '[ "$(tail -n +2 "$V/logs/train.csv" | cut -d, -f1 | sort -un | wc -l)" = 100 ] && [ "$(tail -n +2 "$V/logs/train.csv" | wc -l)" = 100 ]' \
    "the log on the volume has each of the 100 iterations once"
# the documented job as written (no interval flag) but short, with no interruption: the trainer
# takes the fleet's default, --ckpt-every auto, Daly's interval for its measured checkpoint cost and
# the hazard the fleet gives the instance's type (its result, as `fleet status` reports it)
sed -e "s|--minutes 15|--episodes 400|" -e "s|seed: ./race-model|seed: $PWD/docs/race-model|" \
    -e '/^  interruptions:  /,/after_steps: 31}$/d' docs/race-train.yaml >"$T/daly.yaml"
check '! grep -q "ckpt-every\|after_steps" "$T/daly.yaml" && "$BATON" fleet run "$T/daly.yaml" --state "$T/s2" >/dev/null 2>"$T/daly.err"' \
    "the documented job, shortened: $(tail -n 2 "$T/daly.err" 2>/dev/null)"
"$BATON" fleet status race-oval --state "$T/s2" --json >"$T/daly.json" 2>/dev/null
check 'python3 - "$T/daly.json" <<'"'"'EOF'"'"'
import json, math, sys
r = json.load(open(sys.argv[1]))["tasks"][0]["result"]
d, M, tau = r["ckpt_delta_s"], r["ckpt_mtbi_s"], r["ckpt_tau_s"]
daly = M if d >= 2 * M else math.sqrt(2 * d * M) * (1 + math.sqrt(d / (2 * M)) / 3 + d / (2 * M) / 9) - d
want = min(3600.0, max(1.0, daly))
sys.exit(0 if d > 0 and M > 0 and abs(tau - want) <= 1e-3 * want else 1)
EOF' "race train under the fleet checkpoints at Daly's interval for its measured cost and the fleet's hazard: $(head -c 300 "$T/daly.json")"
json "$T/st.json" '"\n".join("%s %s %s->%s checkpoint %s lost %s" % (i["name"], i.get("interruption", ""), i["resumed_step"], i["reached_step"], i.get("checkpoint_step"), i["lost_steps"]) for i in d["instances"])' >&2 || true
finish
