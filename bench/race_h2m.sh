#!/usr/bin/env bash
# race_h2m.sh — head-to-model's benchmark (issue: "Race a friend's model"): the docs' sensor model
# (docs/race-model/, a time trial) trained OPP_MIN minutes (5, as the docs train theirs) on
# reinvent_base is the friend; a new model of the same files trains LEARN_MIN minutes on one core
# with `--race head-to-model --opponent` it; then MATCHES matches between them (`baton race
# match`, 3 laps, the league's rules), half with each on the line, each pair of them under its own
# seed with a little action noise (STEER_NOISE degrees, SPEED_NOISE m/s) so that they differ. Prints a table and one
# JSON line: the learner's wins (first past the line) of MATCHES.
#
#   bench/race_h2m.sh                      # the issue's case: 30 minutes, 20 matches
#   OPP_MIN=2 LEARN_MIN=8 bench/race_h2m.sh   # a short look
#   FRIEND=DIR LEARN_MIN=8 bench/race_h2m.sh  # an earlier run's friend (copied), not trained again
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${B:-}" ] || { make -s -j2 build/baton; B=build/baton; }   # B=path: a copy that a rebuild cannot replace mid-run
OUT=${OUT:-/tmp/baton-bench-race-h2m}
TRACK=${TRACK:-../shared/tracks/reinvent_base.npy}
OPP_MIN=${OPP_MIN:-5}   # the docs' sensor model: five minutes on one core
LEARN_MIN=${LEARN_MIN:-30}
MATCHES=${MATCHES:-20}
STEER_NOISE=${STEER_NOISE:-1}
SPEED_NOISE=${SPEED_NOISE:-0.05}
M="--metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json"
export OMP_NUM_THREADS=1
rm -rf "$OUT" && mkdir -p "$OUT"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "# $(date -u +%FT%TZ) $(nproc --all) cores ($cpu), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "${FRIEND:-}" ]; then
    echo "== the friend: $FRIEND"
    cp -r "$FRIEND" "$OUT/friend"
else
    echo "== the friend: $OPP_MIN min, a time trial"
    $B race train --track "$TRACK" $M --ckpt-dir "$OUT/friend" --minutes "$OPP_MIN" --threads 1 --quiet --seed 1
fi
echo "== the learner: $LEARN_MIN min against it"
$B race train --track "$TRACK" $M --race head-to-model --opponent "$OUT/friend" --ckpt-dir "$OUT/learner" \
    --minutes "$LEARN_MIN" --threads 1 --quiet --seed 2
wins=0 done_=0
printf "%5s %6s %10s %10s %s\n" match start "learner s" "friend s" winner
for ((i = 0; i < MATCHES; i++)); do
    seed=$((i / 2 + 1))
    if ((i % 2 == 0)); then order=(--ckpt "$OUT/learner" --ckpt "$OUT/friend"); me=0; else order=(--ckpt "$OUT/friend" --ckpt "$OUT/learner"); me=1; fi
    $B race match "${order[@]}" --track "$TRACK" --laps 3 --seed "$seed" --steer-noise "$STEER_NOISE" \
        --speed-noise "$SPEED_NOISE" --json >"$OUT/match-$i.json"
    read -r won ls fs < <(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); c=d['cars']; me=int(sys.argv[2]); print(int(c[me]['position'] == 1), '%.3f' % c[me]['total_s'], '%.3f' % c[1 - me]['total_s'])" "$OUT/match-$i.json" "$me")
    wins=$((wins + won)) done_=$((done_ + 1))
    printf "%5d %6s %10s %10s %s\n" "$i" "$([ $me = 0 ] && echo line || echo behind)" "$ls" "$fs" "$([ "$won" = 1 ] && echo learner || echo friend)"
done
echo "{\"bench\": \"race-h2m\", \"track\": \"$(basename "$TRACK" .npy)\", \"friend_min\": $OPP_MIN, \"learner_min\": $LEARN_MIN, \"matches\": $done_, \"learner_wins\": $wins, \"steer_noise_deg\": $STEER_NOISE, \"speed_noise_mps\": $SPEED_NOISE}"
