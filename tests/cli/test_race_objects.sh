#!/usr/bin/env bash
# test_race_objects.sh — DeepRacer's other race types on the command line: `race drive` and
# `race eval` with --race object-avoidance (boxes) and head-to-bot (bot cars):
#   - drive --json names the race and counts its objects; the centre-line driver's episode ends
#     crashed or at the lap (never off the track on reinvent_base); the same seed drives the same
#     steps, --randomize with another seed may not; camera frames show the boxes (frames differ from
#     a time trial's where a box is in view);
#   - eval of a short-trained sensor policy with objects: --json has the race and its crashes, the
#     trace's last column obstacle_crash_counter, one "crashed" row per crash counted;
#   - race train with bots: the sensor policy's model_metadata.json gains LIDAR, state.json the race;
#     a run resumed between iterations (the race taken from the checkpoint) ends with the
#     uninterrupted run's bytes; another race on resume is refused; eval and drive of that model;
#   - race match (head-to-model): two one-action checkpoints built to collide, the car behind
#     crashing and paying for it; the same match of two trained models twice, the same JSON;
#     race train --race head-to-model --opponent: the LIDAR model, its opponent in state.json, a
#     resumed run byte-identical to an uninterrupted one, another opponent refused on resume;
#   - bad flags exit 2 naming the flag (a setting of another race type, counts out of range, an
#     unknown race);
#   - --race-file: a YAML file of baton's names and a JSON file of deepracer-for-cloud's DR_* names
#     race as the flags would (the same drive as the same flags); a bad file is refused naming the
#     file, the line and the key (a value out of range, a key of another race type, an unknown key,
#     no race, a place out of range, not YAML), and a race flag beside --race-file is a usage error;
#   - docs/race.md's two rewards for these races (read from the document: avoid.py, overtake.py),
#     written as DeepRacer's published examples are, train a few episodes and drive a lap with
#     their races, every step's reward finite and the parameters they read present.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
TR=../shared/tracks/reinvent_base.npy
jcheck() { if [ "$(json "$1" "$2")" = True ]; then ok; else bad "$3: $(head -c 400 "$1" 2>/dev/null)"; fi; }

# ---- drive
check '$BATON race drive $TR --race object-avoidance --objects 3 --json >"$T/oa.json" 2>"$T/e"' "drive oa: $(cat "$T/e" 2>/dev/null)"
jcheck "$T/oa.json" "d['race'] == 'object-avoidance' and d['objects'] == 3 and d['status'] in ('crashed', 'lap_complete')" "drive oa --json"
check '$BATON race drive $TR --race head-to-bot --bots 2 --bot-speed 0.5 --lane-change --json >"$T/h2b.json" 2>"$T/e"' \
    "drive h2b: $(cat "$T/e" 2>/dev/null)"
jcheck "$T/h2b.json" "d['race'] == 'head-to-bot' and d['objects'] == 2 and d['status'] in ('crashed', 'lap_complete')" "drive h2b --json"
check '$BATON race drive $TR --json >"$T/tt.json" 2>"$T/e"' "drive tt"
jcheck "$T/tt.json" "d['race'] == 'time-trial' and d['objects'] == 0 and d['status'] == 'lap_complete'" "drive tt --json"
# seeded: random scenes repeat
for k in 1 2; do
    $BATON race drive $TR --race head-to-bot --bots 3 --randomize --lane-change --seed 5 --json >"$T/r$k.json" 2>&1
done
check 'cmp -s "$T/r1.json" "$T/r2.json"' "a seeded random scene drives the same: $(cat "$T/r1.json" "$T/r2.json")"
# frames: the boxes are drawn (box 1 is 4.4 m ahead at the start; the drive may end at it)
check '$BATON race drive $TR --race object-avoidance --objects 3 --max-steps 40 --frames "$T/fo" >/dev/null 2>"$T/e"' "frames oa"
check '$BATON race drive $TR --max-steps 40 --frames "$T/ft" >/dev/null 2>"$T/e"' "frames tt"
differ=0
for f in "$T"/fo/frame-*.png; do cmp -s "$f" "$T/ft/$(basename "$f")" || differ=$((differ + 1)); done
check '[ "$(ls "$T/fo" | wc -l)" -ge 20 ] && [ "$differ" -ge 10 ]' "frames with boxes: $differ of $(ls "$T/fo" | wc -l) differ from a time trial's"

# ---- eval with objects
check '$BATON race train --track $TR --obs sensor --seed 3 --threads 1 --quiet --ckpt-dir "$T/m" --episodes 20 >/dev/null 2>"$T/e"' \
    "train: $(head -c 400 "$T/e")"
check '$BATON race eval --ckpt "$T/m" --race object-avoidance --objects 6 --collision-penalty 3 --max-steps 1500 --json --trace "$T/ev.csv" >"$T/ev.json" 2>"$T/e"' \
    "eval oa: $(head -c 400 "$T/e")"
jcheck "$T/ev.json" "d['race'] == 'object-avoidance' and 'crashes' in d and d['crashes'] <= d['resets']" "eval --json"
crashes=$(json "$T/ev.json" "d['crashes']")
check '[ "$(head -n1 "$T/ev.csv" | awk -F, "{print \$NF}")" = obstacle_crash_counter ]' "eval trace header"
check '[ "$(grep -c ",crashed,0.0," "$T/ev.csv")" = "$crashes" ]' "one crashed row per crash ($crashes): $(grep -c ",crashed," "$T/ev.csv")"
check '[ "$(tail -n1 "$T/ev.csv" | awk -F, "{print \$NF}")" = "$crashes" ]' "the counter's last value is the crash count"
check '$BATON race eval --ckpt "$T/m" --race head-to-bot --bots 2 --bot-speed 0.3 --max-steps 600 >"$T/ev.txt" 2>"$T/e"' "eval h2b text"
check 'grep -q "crash(es)\|no lap completed" "$T/ev.txt"' "eval text: $(cat "$T/ev.txt")"

# ---- training with objects: a sensor policy gains the LIDAR; the race is the checkpoint's; a run
# resumed between iterations ends byte-identical to an uninterrupted one (random scenes included)
TRN="$BATON race train --track $TR --obs sensor --seed 4 --threads 1 --quiet"
RACE="--race head-to-bot --bots 2 --bot-speed 0.4 --lane-change --randomize"
check '$TRN $RACE --ckpt-dir "$T/u" --episodes 40 >/dev/null 2>"$T/e"' "train h2b: $(head -c 400 "$T/e")"
check '$TRN $RACE --ckpt-dir "$T/r" --episodes 20 >/dev/null 2>"$T/e" && $TRN --ckpt-dir "$T/r" --episodes 40 --trace "$T/rt" >/dev/null 2>"$T/e"' \
    "train h2b in two runs: $(head -c 400 "$T/e")"
FIN=ckpt-000000002
check 'cmp -s "$T/u/$FIN/model.safetensors" "$T/r/$FIN/model.safetensors" && cmp -s "$T/u/$FIN/optim.safetensors" "$T/r/$FIN/optim.safetensors"' \
    "a resumed run with bots is byte-identical to an uninterrupted one"
check 'grep -q "\"sensor\":[[:space:]]*\[\"BATON_SENSOR_VECTOR\",[[:space:]]*\"LIDAR\"\]" "$T/u/model_metadata.json"' \
    "model_metadata.json: the sensor vector with the LIDAR: $(cat "$T/u/model_metadata.json")"
check 'grep -q "\"bots\":[[:space:]]*2" "$T/u/$FIN/state.json" && grep -q "\"lane_change\":[[:space:]]*true" "$T/u/$FIN/state.json"' \
    "state.json keeps the race"
check '[ "$(head -n1 "$T/rt/1-iteration.csv" | awk -F, "{print \$NF}")" = obstacle_crash_counter ]' "training trace header"
expect_fail 1 "another race \(its objects\)" $TRN --race head-to-bot --bots 3 --ckpt-dir "$T/u" --episodes 60
check '$BATON race eval --ckpt "$T/u" --race head-to-bot --bots 2 --bot-speed 0.4 --max-steps 300 --json >"$T/ue.json" 2>"$T/e"' \
    "eval of the LIDAR model: $(head -c 400 "$T/e")"
jcheck "$T/ue.json" "d['race'] == 'head-to-bot' and d['iteration'] == 2" "eval of the LIDAR model --json"
# overtakes: the laps' passes add up; bots at 0.05 m/s start 1/3 and 2/3 of a lap ahead, so a
# lap driven without a reset passes both, once each (a reset's jump back is no pass)
check '$BATON race eval --ckpt "$T/u" --race head-to-bot --bots 2 --bot-speed 0.05 --laps 1 --json >"$T/uo.json" 2>"$T/e"' \
    "eval overtakes: $(head -c 400 "$T/e")"
jcheck "$T/uo.json" "sum(l['overtakes'] for l in d['laps']) == d['overtakes'] and all('bots_passed' in l for l in d['laps']) and (not d['completed'] or d['resets'] > 0 or (d['overtakes'] == 2 and d['laps'][0]['bots_passed'] == [0, 1]))" \
    "overtakes per lap"
check '$BATON race drive $TR --policy "$T/u" --race head-to-bot --bots 2 --max-steps 50 --json >"$T/ud.json" 2>"$T/e"' \
    "drive the LIDAR model: $(head -c 400 "$T/e")"
# a time trial's checkpoint is as before: no objects in its state, no LIDAR
check '! grep -q "\"objects\"" "$T/m/ckpt-000000001/state.json" && ! grep -q LIDAR "$T/m/model_metadata.json"' "time trial files unchanged"

# ---- head-to-model: `race match`. Two checkpoints built to collide: one action each, straight on,
# "slow" (0.5 m/s) on the line and "fast" (4 m/s) 1 m behind it: the car behind hits the one ahead
# from behind and pays for each crash (5 s), the one ahead none (bumped); the trace has one crashed
# row per crash, each car an episode. The same match of two trained models is the same JSON twice.
for v in slow:0.5 fast:4; do
    printf '{"action_space": [{"steering_angle": 0, "speed": %s, "index": 0}], "sensor": ["BATON_SENSOR_VECTOR"], "neural_network": "BATON_SENSOR_MLP", "training_algorithm": "clipped_ppo", "action_space_type": "discrete", "version": "5"}' \
        "${v#*:}" >"$T/${v%%:*}.json"
    check '$BATON race train --track $TR --metadata "$T/${v%%:*}.json" --hyper docs/race-model/hyperparameters.json --ckpt-dir "$T/${v%%:*}" --episodes 1 --seed 1 --threads 1 --quiet >/dev/null 2>"$T/e"' \
        "a one-action model (${v%%:*}): $(head -c 300 "$T/e")"
done
check '$BATON race match --ckpt "$T/slow" --ckpt "$T/fast" --laps 1 --json --trace "$T/match.csv" --svg "$T/match.svg" >"$T/hit.json" 2>"$T/e"' \
    "match built to collide: $(head -c 300 "$T/e")"
jcheck "$T/hit.json" "d['race'] == 'head-to-model' and [c['start'] for c in d['cars']] == [1, 2] and d['cars'][1]['crashes'] > 0 and d['cars'][0]['crashes'] == 0 and d['cars'][0]['bumps'] > 0 and d['cars'][1]['penalties_s'] >= 5 * d['cars'][1]['crashes'] and d['cars'][0]['position'] == 1 and all(c['completed'] for c in d['cars'])" \
    "the car behind crashes into the one ahead and pays for it"
fast_crashes=$(json "$T/hit.json" "d['cars'][1]['crashes']")
check '[ "$(grep -c "^1,.*,crashed,0.0," "$T/match.csv")" = "$fast_crashes" ] && [ "$(grep -c "^0,.*,crashed," "$T/match.csv")" = 0 ]' \
    "the trace: one crashed row per crash of the car behind ($fast_crashes)"
check 'grep -q "$T/slow" "$T/match.svg" && grep -q "$T/fast" "$T/match.svg"' "the match's SVG names both cars"
for k in 1 2; do
    $BATON race match --ckpt "$T/u" --ckpt "$T/m" --track $TR --laps 1 --seed 7 --max-steps 600 --json >"$T/mm$k.json" 2>"$T/e"
done
check 'cmp -s "$T/mm1.json" "$T/mm2.json"' "the same match twice, the same JSON: $(head -c 300 "$T/e") $(head -c 300 "$T/mm1.json")"
jcheck "$T/mm1.json" "len(d['cars']) == 2 and sorted(c['position'] for c in d['cars']) == [1, 2] and all(set(c) >= {'car', 'laps', 'total_s', 'crashes', 'overtakes', 'position'} for c in d['cars'])" \
    "match --json: one object per car"
# training against a model (--race head-to-model --opponent): the sensor policy gains the LIDAR,
# state.json names the opponent; a run resumed between iterations (the opponent taken from the
# checkpoint) ends with the uninterrupted run's bytes; another opponent on resume is refused; the
# trained model then races its opponent
H2M="--race head-to-model --opponent $T/slow"
check '$TRN $H2M --ckpt-dir "$T/hu" --episodes 40 >/dev/null 2>"$T/e" && $TRN $H2M --ckpt-dir "$T/hr" --episodes 20 >/dev/null 2>>"$T/e" && $TRN --ckpt-dir "$T/hr" --episodes 40 >/dev/null 2>>"$T/e"' \
    "train against a model, and in two runs: $(head -c 400 "$T/e")"
check 'cmp -s "$T/hu/$FIN/model.safetensors" "$T/hr/$FIN/model.safetensors" && cmp -s "$T/hu/$FIN/optim.safetensors" "$T/hr/$FIN/optim.safetensors"' \
    "a resumed run against a model is byte-identical to an uninterrupted one"
check 'grep -q "LIDAR" "$T/hu/model_metadata.json" && grep -q "\"opponents\":\[\"[^\"]*/slow\"\]" "$T/hu/$FIN/state.json"' \
    "the LIDAR model; state.json names its opponent: $(grep -o "\"opponents\":[^]]*]" "$T/hu/$FIN/state.json")"
expect_fail 1 "another --opponent \(the models raced against\)" $TRN --race head-to-model --opponent "$T/fast" --ckpt-dir "$T/hu" --episodes 60
expect_fail 2 "--race head-to-model needs --opponent" $TRN --race head-to-model --ckpt-dir "$T/hx" --episodes 20
check '$BATON race match --ckpt "$T/hu" --ckpt "$T/slow" --laps 1 --max-steps 300 --json >"$T/hm.json" 2>"$T/e"' "the trained model races its opponent: $(head -c 300 "$T/e")"
expect_fail 2 "two to four --ckpt are required" $BATON race match --ckpt "$T/u" --track $TR
expect_fail 2 "at most 4 cars" $BATON race match --ckpt "$T/u" --ckpt "$T/u" --ckpt "$T/u" --ckpt "$T/u" --ckpt "$T/u" --track $TR
expect_fail 1 "a start gap of 0.1 m" $BATON race match --ckpt "$T/u" --ckpt "$T/m" --track $TR --gap 0.1

# ---- usage errors name the flag
expect_fail 2 "--objects needs --race object-avoidance" $BATON race drive $TR --objects 3
expect_fail 2 "--bots needs --race head-to-bot" $BATON race drive $TR --race object-avoidance --bots 2
expect_fail 2 "--lane-change needs --race head-to-bot" $BATON race drive $TR --lane-change
expect_fail 2 "--bot-speed must be above 0" $BATON race drive $TR --race head-to-bot --bot-speed 0
expect_fail 2 "--objects must be 1..16" $BATON race drive $TR --race object-avoidance --objects 17
expect_fail 2 "--bots must be 1..6" $BATON race eval --ckpt "$T/m" --race head-to-bot --bots 0
expect_fail 2 "--race takes time-trial, object-avoidance or head-to-bot" $BATON race eval --ckpt "$T/m" --race rally
expect_fail 2 "--collision-penalty must be 0..3600" $BATON race eval --ckpt "$T/m" --collision-penalty -1
expect_fail 2 "--randomize needs --race" $BATON race drive $TR --randomize

# ---- --race-file
printf '# two boxes\nrace: object-avoidance\npositions:\n  - [0.25, 1]\n  - [0.6, -1]\n' >"$T/oa.yaml"
printf '{"DR_RACE_TYPE": "HEAD_TO_BOT", "DR_H2B_NUMBER_OF_BOT_CARS": 2, "DR_H2B_BOT_CAR_SPEED": "1.0", "DR_H2B_IS_LANE_CHANGE": "True"}' >"$T/h2b.json"
printf '{"race": "object-avoidance", "objects": 2, "positions": [[0.25, 1], [0.6, -1]]}' >"$T/oa.json2"
check '$BATON race drive $TR --race-file "$T/oa.yaml" --json >"$T/f1.json" 2>"$T/e" && $BATON race drive $TR --race-file "$T/oa.json2" --json >"$T/f2.json" 2>>"$T/e" && cmp -s "$T/f1.json" "$T/f2.json"' \
    "the same race from YAML and from JSON: $(cat "$T/e" "$T/f1.json" 2>/dev/null)"
jcheck "$T/f1.json" "d['race'] == 'object-avoidance' and d['objects'] == 2" "--race-file: two boxes"
check '$BATON race drive $TR --race-file "$T/h2b.json" --json >"$T/f3.json" 2>"$T/e" && $BATON race drive $TR --race head-to-bot --bots 2 --bot-speed 1 --lane-change --json >"$T/f4.json" 2>>"$T/e" && cmp -s "$T/f3.json" "$T/f4.json"' \
    "deepracer-for-cloud's names: the drive the flags give: $(cat "$T/e" "$T/f3.json" "$T/f4.json" 2>/dev/null)"
badfile() {  # badfile TEXT PATTERN: a file of TEXT refused with PATTERN
    printf "$1" >"$T/bad.yaml"
    expect_fail 1 "$2" $BATON race drive $TR --race-file "$T/bad.yaml"
}
badfile 'race: head-to-bot\nbots: 2\nbot_speed: 5\n' "bad.yaml:3: bot_speed: 5 is outside 0..4"
badfile 'race: head-to-bot\nobjects: 2\n' "bad.yaml:2: objects: belongs to object-avoidance, not head-to-bot"
badfile 'race: object-avoidance\nboxes: 2\n' "bad.yaml:2: 'boxes' is not a race setting"
badfile 'objects: 2\n' 'bad.yaml:1: no "race"'
badfile 'race: object-avoidance\nDR_OA_OBJECT_POSITIONS: "0.2,1;0.5,3"\n' "bad.yaml:2: DR_OA_OBJECT_POSITIONS: place 2: progress 0.5 \\(0..1\\) or lane 3"
badfile 'race: rally\n' "bad.yaml:1: race: 'rally' is not a race type"
badfile 'race: [1\n' "bad.yaml:2: "
expect_fail 2 "--objects beside --race-file" $BATON race drive $TR --race-file "$T/oa.yaml" --objects 3

# ---- docs/race.md's rewards for objects and bots, as the document has them
python3 tests/cli/docwalk.py docs/race.md object-rewards "$T/doc" >/dev/null
cp "$T/doc/01.python" "$T/avoid.py" && cp "$T/doc/02.python" "$T/overtake.py"
check 'grep -q "def reward_function" "$T/avoid.py" && grep -q "objects_speed" "$T/overtake.py"' "the two rewards read from the document"
M="--metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json"
for r in "avoid object-avoidance --objects 3" "overtake head-to-bot --bots 2 --bot-speed 1 --lane-change"; do
    name=${r%% *} race=${r#* }
    check '$BATON race train --track $TR --obs sensor $M --reward "$T/$name.py" --ckpt-dir "$T/rw-$name" --episodes 40 --seed 5 --threads 1 --quiet --race $race >"$T/rw.out" 2>"$T/rw.err"' \
        "$name.py trains with its race: $(head -c 400 "$T/rw.err" 2>/dev/null)"
    check '$BATON race drive $TR --reward "$T/$name.py" --race $race --json >"$T/rwd.json" 2>"$T/rwd.err"' "$name.py drives: $(head -c 400 "$T/rwd.err" 2>/dev/null)"
    jcheck "$T/rwd.json" "d['reward_function'].endswith('$name.py') and d['steps'] > 0 and 0 < d['reward'] < 1e9" "$name.py: the drive's reward"
done
finish
