#!/usr/bin/env bash
# fleet.sh — what interruptions cost on the local spot fleet: the same training job run by
# `baton fleet run` once without interruptions and once with six (five with a two-minute notice,
# one without; the replacements alternate zones, so the volume moves), time x60. Prints wall
# times, the ratio the issue asks for — (interrupted wall − launch delays) / uninterrupted wall,
# goal <= 1.10 — work lost per interruption, savings, and one JSON line. The data is streamed
# from outside the volume (pipe mode); the volume holds checkpoints and logs.
# Each round runs both jobs back to back; the ratio reported is the median of the rounds' own
# ratios (the machine is shared: same-round comparisons), with the fastest runs' ratio beside it.
# What one interruption costs is printed too, so shorter or longer jobs can be extrapolated: with
# six interruptions in a job of a few wall seconds (six simulated minutes) the restart cost alone
# (process start, oneDNN's kernel generation, first step: ~0.13 s each) is over 10 %.
#   bench/fleet.sh [ROUNDS]        (BATON=path/to/baton; MODEL=mlp EPOCHS=20 BATCH=128 EVERY=100
#                                   GAP=1200: interrupt once an instance has trained GAP steps)
set -euo pipefail
cd "$(dirname "$0")/.."
BATON=$(realpath "${BATON:-build/baton}")
MODEL=${MODEL:-mlp} EPOCHS=${EPOCHS:-20} BATCH=${BATCH:-128} EVERY=${EVERY:-100}
W=$(mktemp -d /tmp/baton-bench-fleet-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
export BATON_NO_PROGRESS=1 BATON_LOG=warn
SCALE=60 LAUNCH=30 REPS=${1:-5} GAP=${GAP:-1200}

$BATON pack --from fashion-mnist --out "$W/data" --quiet >/dev/null
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
job() {   # job NAME [market lines]
    local name=$1; shift
    {
        echo "name: $name"
        echo "command: baton train --data file://$W/data --mode pipe --model $MODEL --epochs $EPOCHS --batch $BATCH --seed 1 --ckpt-dir ckpt --ckpt-every-steps $EVERY --quiet"
        echo "instance_types: [c5.xlarge, c5a.xlarge, m5.xlarge]"
        echo "zones: [us-east-1a, us-east-1b]"
        echo "market:"
        echo "  time_scale: $SCALE"
        echo "  launch_delay: ${LAUNCH}s"
        echo "  notice: 2m"
        echo "  capacity_cooldown: 3m"
        for l in "$@"; do echo "$l"; done
    } >"$W/$name.yaml"
}
run() {   # run NAME -> wall seconds
    local t0 t1
    t0=$(date +%s.%N)
    $BATON fleet run "$W/$1.yaml" --state "$W/state" --quiet >/dev/null
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

job plain "  random: false"
# six interruptions, each once an instance has trained GAP steps (a schedule that lands inside the
# job on a fast machine as on a slow one; mlp, 20 epochs: 9,380 steps)
g="{after_steps: $GAP}"
job storm "  random: false" "  interruptions:" "    - $g" "    - $g" "    - {after_steps: $GAP, notice: 0}" "    - $g" "    - $g" "    - $g"
tu=1000000000 ti=1000000000
delays=$(echo "6 * $LAUNCH / $SCALE" | bc -l)
: >"$W/ratios"
for r in $(seq "$REPS"); do
    rm -rf "$W/state"
    a=$(run plain)
    $BATON fleet status plain --state "$W/state" --json >"$W/plain.json"
    b=$(run storm)
    $BATON fleet status storm --state "$W/state" --json >"$W/storm.json"
    n=$(json "$W/storm.json" 'len(d["instances"])')
    [ "$n" = 7 ] || { echo "fleet.sh: $n instances, expected 7 (six interruptions)" >&2; exit 1; }
    echo "($b - $delays) / $a" | bc -l >>"$W/ratios"
    printf 'round %d: uninterrupted %.1f s, interrupted %.1f s, ratio %.3f\n' "$r" "$a" "$b" "$(tail -1 "$W/ratios")"
    tu=$(echo "if ($a < $tu) $a else $tu" | bc -l)
    ti=$(echo "if ($b < $ti) $b else $ti" | bc -l)
done
best=$(echo "($ti - $delays) / $tu" | bc -l)
ratio=$(sort -g "$W/ratios" | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}')
per=$(echo "($ti - $delays - $tu) / 6" | bc -l)
vp=$(json "$W/plain.json" 'd["tasks"][0]["volume"]') vs=$(json "$W/storm.json" 'd["tasks"][0]["volume"]')
last=$(ls "$vp/ckpt" | tail -1)
same=no
cmp -s "$vp/ckpt/$last/model.safetensors" "$vs/ckpt/$last/model.safetensors" && same=yes

printf '%-34s %s\n' "model, epochs" "$MODEL, $EPOCHS (batch $BATCH, checkpoint every $EVERY steps)"
printf '%-34s %.1f s\n' "uninterrupted fleet run" "$tu"
printf '%-34s %.1f s (%d instances)\n' "with six interruptions" "$ti" "$n"
printf '%-34s %.1f s\n' "launch delays (replacements)" "$delays"
printf '%-34s %.3f (goal <= 1.10; fastest runs: %.3f)\n' "(interrupted - delays) / plain" "$ratio" "$best"
printf '%-34s %.2f s wall (%.1f simulated s)\n' "cost of one interruption" "$per" "$(echo "$per * $SCALE" | bc -l)"
printf '%-34s %s\n' "interruptions (notice, none)" "$(json "$W/storm.json" 'd["totals"]["interruptions_with_notice"], d["totals"]["interruptions_without_notice"]')"
printf '%-34s %s\n' "max steps lost (notice, none)" "$(json "$W/storm.json" 'd["totals"]["max_lost_steps_with_notice"], d["totals"]["max_lost_steps_without_notice"]')"
printf '%-34s %s\n' "final weights identical" "$same"
printf '%-34s %.1f %% (SageMaker-style %.1f %%)\n' "savings vs on-demand" "$(json "$W/storm.json" 'd["totals"]["savings_pct"]')" \
    "$(json "$W/storm.json" 'd["totals"]["sagemaker_savings_pct"]')"
printf '{"bench":"fleet","model":"%s","epochs":%d,"plain_s":%.2f,"interrupted_s":%.2f,"instances":%d,"launch_delays_s":%.2f,"ratio":%.3f,"ratio_fastest":%.3f,"per_interruption_s":%.3f,"identical":"%s"}\n' \
    "$MODEL" "$EPOCHS" "$tu" "$ti" "$n" "$delays" "$ratio" "$best" "$per" "$same"
