#!/usr/bin/env bash
# deadline.sh — every notice ends in a commit inside its deadline: a job on the local spot fleet
# interrupted N times (default 100), at every GAP-th step of the task (the market's at_step: a
# resumed instance trains at least one step first), every time with
# the market's two-minute notice (time x60: two wall seconds). Reads the fleet's "deadline" events
# (baton fleet status --json: deadlines) and prints how many commits landed inside their deadlines,
# the steps lost, and the percentiles of notice → commit, notice → exit and the margin left; then
# one JSON line. Not part of `make test` (minutes of wall time).
#   bench/deadline.sh [N]     (BATON=path/to/baton; MODEL=mlp BATCH=64 GAP=100 SCALE=60 NOTICE=2m)
set -euo pipefail
cd "$(dirname "$0")/.."
BATON=$(realpath "${BATON:-build/baton}")
N=${1:-100} MODEL=${MODEL:-mlp} BATCH=${BATCH:-64} GAP=${GAP:-100} SCALE=${SCALE:-60} NOTICE=${NOTICE:-2m}
W=$(mktemp -d /tmp/baton-bench-deadline-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
export BATON_NO_PROGRESS=1 BATON_LOG=warn

$BATON pack --from fashion-mnist --split test --out "$W/data" --quiet >/dev/null
# enough steps for N interruptions GAP steps apart and a last stretch (the test split: 157 steps an
# epoch); an instance goes on training until it sees its notice, so GAP must exceed what it trains
# meanwhile (mlp here: tens of steps), or later interruptions land on one instance's steps and fewer happen
steps=$(( (N + 2) * GAP ))
epochs=$(( steps / 157 + 1 ))
{
    echo "name: deadline"
    echo "command: baton train --data $W/data --model $MODEL --epochs $epochs --batch $BATCH --seed 1 --ckpt-dir ckpt --ckpt-every-steps 1000 --max-steps $steps --quiet"
    echo "instance_types: [c5.xlarge]"
    echo "zones: [us-east-1a]"
    echo "market:"
    echo "  time_scale: $SCALE"
    echo "  launch_delay: 30s"
    echo "  notice: $NOTICE"
    echo "  capacity_cooldown: 1s"   # one pool: its replacement is not held back by the reclaim
    echo "  random: false"
    echo "  interruptions:"
    for k in $(seq "$N"); do echo "    - {at_step: $((k * GAP))}"; done
} >"$W/job.yaml"
t0=$(date +%s.%N)
$BATON fleet run "$W/job.yaml" --state "$W/state" --quiet >/dev/null
t1=$(date +%s.%N)
$BATON fleet status deadline --state "$W/state" --json >"$W/status.json"
python3 - "$W/status.json" "$(echo "$t1 - $t0" | bc -l)" "$N" "$SCALE" "$NOTICE" "$MODEL" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); wall = float(sys.argv[2]); n = int(sys.argv[3])
dl, tot = d["deadlines"], d["totals"]
each = dl["each"]
lead = sorted(e["deadline_after_s"] for e in each if "deadline_after_s" in e)
rows = [
    ("job", "%s, %s interruptions planned, notice %s at x%s (%.1f s of wall time)" % (sys.argv[6], n, sys.argv[5], sys.argv[4], lead[len(lead) // 2] if lead else 0)),
    ("wall time", "%.0f s, %d instances" % (wall, len(d["instances"]))),
    ("interruptions with notice", "%d (%d without)" % (tot["interruptions_with_notice"], tot["interruptions_without_notice"])),
    ("commits recorded", "%d, %d inside their deadline" % (dl["interruptions"], dl["inside"])),
    ("steps lost", "%d" % tot["lost_steps"]),
    ("notice -> commit", "p50 %.3f s, max %.3f s" % (dl["commit_p50_s"], dl["commit_max_s"])),
    ("notice -> exit", "p50 %.3f s, max %.3f s" % (dl["exit_p50_s"], dl["exit_max_s"])),
    ("margin left", "p50 %.3f s, min %.3f s" % (dl["margin_p50_s"], dl["margin_min_s"])),
]
for k, v in rows:
    print("%-28s %s" % (k, v))
print(json.dumps({"bench": "deadline", "planned": n, "interruptions": dl["interruptions"], "inside": dl["inside"],
                  "lost_steps": tot["lost_steps"], "commit_p50_s": dl["commit_p50_s"], "commit_max_s": dl["commit_max_s"],
                  "exit_p50_s": dl["exit_p50_s"], "exit_max_s": dl["exit_max_s"], "margin_p50_s": dl["margin_p50_s"],
                  "margin_min_s": dl["margin_min_s"], "wall_s": round(wall, 1)}))
PY
