#!/usr/bin/env bash
# test_race_train.sh — `baton race train|eval` and `race drive --policy` end to end, short:
#   - a sensor policy trained for a few iterations on the oval: the summary (text and --json), the
#     checkpoints (`baton ckpt verify`), the model's model_metadata.json and hyperparameters.json
#     beside them, the per-iteration CSV log, SIM_TRACE_LOG files with DeepRacer's header; the
#     console's and deepracer-for-cloud's own files accepted unchanged;
#   - `race eval --json` (laps, best_lap_s, total_s, resets, limit_s, ratio), --trace, --svg;
#     `race drive --policy CKPT --frames DIR` (one PNG per step, and the first);
#   - SIGKILL at pseudo-random moments (every third one aimed at a checkpoint write) and resume:
#     the newest checkpoint `ckpt ls` calls ok verifies, the restart resumes from exactly it (a
#     run killed before it read its checkpoint, leaving the folder as it was, is counted — at most
#     half the kills — not judged), and
#     the last run ends with model.safetensors and optim.safetensors byte-identical to an
#     uninterrupted run's;
#   - an interruption notice from `baton imds`: exit 75 with a committed checkpoint and the log
#     line, then a rerun finishes with the uninterrupted run's bytes;
#   - bad files (an unknown action space type, a speed outside 0.1..4, an empty action list, a
#     negative lr): exit 1 naming the file and the field; usage errors exit 2; a resume with
#     another --seed and the eval of a checkpoint of `baton train` are refused;
#   - the job file docs/race-train.yaml passes `baton fleet check`;
#   - --threads 2 (the value network learning on a second thread) ends with --threads 1's bytes,
#     sensor and camera; --precision bf16 resumes to the bytes of an uninterrupted bf16 run.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1 BATON_NOTICE_POLL_S=0.1 BATON_NOTICE_TIMEOUT_S=0.5
unset AWS_EC2_METADATA_SERVICE_ENDPOINT AWS_EC2_METADATA_DISABLED
RANDOM=20
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
jcheck() { if [ "$(json "$1" "$2")" = True ]; then ok; else bad "$3: $(head -c 400 "$1" 2>/dev/null)"; fi; }

# ---- a short run: the files it writes
TR="$BATON race train --track oval --obs sensor --seed 3 --threads 1 --quiet"
check '$TR --ckpt-dir "$T/a" --episodes 60 --log "$T/a.csv" --trace "$T/trace" --json >"$T/a.json" 2>"$T/a.err"' \
    "train: $(head -c 600 "$T/a.err" 2>/dev/null)"
jcheck "$T/a.json" "d['status'] == 'done' and d['iteration'] == 3 and d['episodes'] == 60 and d['sim_steps'] > 0 and d['steps_per_s'] > 0 and not d['resumed']" "train --json"
check '"$BATON" ckpt verify "$T/a" >/dev/null 2>&1' "checkpoints verify"
# two learner threads (--threads 2: the value network beside the policy, each on a team of one)
# end with the bytes of one thread doing both; the camera's CNN likewise, one iteration
check '${TR/--threads 1/--threads 2} --ckpt-dir "$T/a2" --episodes 60 >/dev/null 2>"$T/a2.err" && cmp -s "$T/a/ckpt-000000003/model.safetensors" "$T/a2/ckpt-000000003/model.safetensors" && cmp -s "$T/a/ckpt-000000003/optim.safetensors" "$T/a2/ckpt-000000003/optim.safetensors"' \
    "two learners end with one thread's bytes: $(head -c 300 "$T/a2.err" 2>/dev/null)"
# --precision bf16 (oneDNN's bfloat16 convolutions and linear layers): where the CPU has AVX512-BF16,
# a run resumed from its first checkpoint ends with the uninterrupted run's bytes (the checkpoint
# keeps the precision), bytes other than f32's; a resume asking for f32 is refused; elsewhere
# the run is refused naming what the CPU lacks
if grep -qw avx512_bf16 /proc/cpuinfo; then
    check '$TR --ckpt-dir "$T/h1" --episodes 60 --precision bf16 --json >"$T/h1.json" 2>"$T/h.err" && $TR --ckpt-dir "$T/h2" --episodes 20 --precision bf16 >/dev/null 2>>"$T/h.err" && $TR --ckpt-dir "$T/h2" --episodes 60 >/dev/null 2>>"$T/h.err"' \
        "bf16 runs: $(head -c 300 "$T/h.err" 2>/dev/null)"
    jcheck "$T/h1.json" "d['kernels'] == 'dnnl-bf16'" "bf16 --json names its kernels"
    check 'grep -q "\"precision\":[[:space:]]*\"bf16\"" "$T/h2/ckpt-000000003/state.json"' "state.json keeps the precision"
    check 'cmp -s "$T/h1/ckpt-000000003/model.safetensors" "$T/h2/ckpt-000000003/model.safetensors" && cmp -s "$T/h1/ckpt-000000003/optim.safetensors" "$T/h2/ckpt-000000003/optim.safetensors"' \
        "bf16: a resumed run ends with the uninterrupted run's bytes"
    check '! cmp -s "$T/a/ckpt-000000003/model.safetensors" "$T/h1/ckpt-000000003/model.safetensors"' "bf16 is not f32's arithmetic"
    expect_fail 1 "another --precision" $TR --ckpt-dir "$T/h2" --episodes 80 --precision f32
else
    expect_fail 1 "AVX512-BF16" $TR --ckpt-dir "$T/h1" --episodes 20 --precision bf16
fi
expect_fail 2 "--precision must be f32 or bf16" $TR --ckpt-dir "$T/h3" --episodes 20 --precision fp8
CAM="$BATON race train --track oval --obs camera --seed 3 --quiet --episodes 4 --envs 4 --max-steps 40 --ckpt-every-sec 0"
check '$CAM --threads 1 --ckpt-dir "$T/c1" >/dev/null 2>"$T/c.err" && $CAM --threads 2 --ckpt-dir "$T/c2" >/dev/null 2>>"$T/c.err" && cmp -s "$T/c1/ckpt-000000001/model.safetensors" "$T/c2/ckpt-000000001/model.safetensors" && cmp -s "$T/c1/ckpt-000000001/optim.safetensors" "$T/c2/ckpt-000000001/optim.safetensors"' \
    "camera, two learners: one thread's bytes: $(head -c 300 "$T/c.err" 2>/dev/null)"
check '[ -d "$T/a/ckpt-000000003" ]' "ckpt-<iteration> folders"
check 'grep -q "\"sensor\":[[:space:]]*\[\"BATON_SENSOR_VECTOR\"\]" "$T/a/model_metadata.json" && grep -q "\"num_epochs\":[[:space:]]*3" "$T/a/hyperparameters.json"' \
    "model_metadata.json and hyperparameters.json beside the checkpoints"
check '[ "$(head -n1 "$T/a.csv" | cut -d, -f1-4)" = "iteration,episodes,steps,mean_reward" ] && [ "$(wc -l <"$T/a.csv")" -eq 4 ]' \
    "log: header and a row per iteration: $(cat "$T/a.csv")"
check '[ "$(head -n1 "$T/trace/0-iteration.csv")" = "episode,steps,X,Y,yaw,steer,throttle,action,reward,done,all_wheels_on_track,progress,closest_waypoint,track_len,tstamp,episode_status,pause_duration,obstacle_crash_counter" ]' \
    "SIM_TRACE_LOG header"
check 'ls "$T/trace" | grep -c -- "-iteration.csv" | grep -qx 3 && grep -q ",True,[A-Za-z]*,[0-9.]*,[0-9]*,[0-9.]*,[0-9.]*,off_track,0.0,0$" "$T/trace/0-iteration.csv"' \
    "trace files per iteration, an off_track row"
# resumed with more episodes: continues; the text summary
check '$TR --ckpt-dir "$T/a" --episodes 80 >"$T/a2.out" 2>"$T/a2.err" && grep -q "^iteration 4, 80 episodes" "$T/a2.out" && grep -q "resuming from .*(iteration 3," "$T/a2.err"' \
    "resume: $(cat "$T/a2.out" "$T/a2.err" 2>/dev/null | head -c 600)"
check 'grep -q "checkpoint .*ckpt-000000004" "$T/a2.out"' "text summary names the checkpoint"
# the console's and deepracer-for-cloud's files unchanged (camera obs turned into the sensor by --obs)
check '$TR --ckpt-dir "$T/c" --episodes 20 --metadata tests/race/console_model_metadata.json --hyper tests/race/console_hyperparameters.json >/dev/null 2>"$T/c.err"' \
    "console files: $(head -c 400 "$T/c.err" 2>/dev/null)"
check '$TR --ckpt-dir "$T/d" --episodes 20 --metadata tests/race/drfc_model_metadata_cont.json --hyper tests/race/drfc_hyperparameters.json >/dev/null 2>"$T/d.err"' \
    "deepracer-for-cloud files: $(head -c 400 "$T/d.err" 2>/dev/null)"
check 'grep -q "\"action_space_type\":[[:space:]]*\"continuous\"" "$T/d/model_metadata.json" && grep -q "\"discount_factor\":[[:space:]]*0.995" "$T/d/hyperparameters.json"' \
    "drfc files kept"

# ---- eval, drive --policy
check '"$BATON" race eval --ckpt "$T/a" --max-steps 2000 --json --trace "$T/eval.csv" --svg "$T/eval.svg" >"$T/e.json" 2>"$T/e.err"' \
    "eval: $(head -c 400 "$T/e.err" 2>/dev/null)"
jcheck "$T/e.json" "set(d) >= {'laps','best_lap_s','total_s','resets','limit_s','ratio'} and abs(d['limit_s'] - 6.172) < 0.01 and d['track'] == 'oval' and d['iteration'] == 4 and isinstance(d['laps'], list)" "eval --json fields"
jcheck "$T/e.json" "d['best_lap_s'] == 0 or abs(d['ratio'] - d['best_lap_s'] / d['limit_s']) < 1e-9" "eval ratio"
check 'head -n1 "$T/eval.csv" | grep -q "^episode,steps,X,Y,yaw" && [ "$(wc -l <"$T/eval.csv")" -gt 10 ]' "eval trace"
check 'grep -q "<svg" "$T/eval.svg" && grep -q "racing line" "$T/eval.svg"' "eval svg"
# the racing line's colour is one the driven line's speed scale never takes
check 'python3 - "$T/eval.svg" <<"PY"
import re, sys
svg = open(sys.argv[1]).read()
line = re.search(r"<polygon fill=\"none\" stroke=\"(#[0-9a-f]{6})\"", svg).group(1)
speeds = set(re.findall(r"<line [^>]*stroke=\"(#[0-9a-f]{6})\" stroke-width=\"3\" stroke-linecap", svg))
def near(a, b):
    return sum(abs(int(a[i:i + 2], 16) - int(b[i:i + 2], 16)) for i in (1, 3, 5)) < 120
assert speeds and not any(near(line, c) for c in speeds), (line, sorted(speeds)[:5])
PY' "eval svg: the racing line and the driven line (coloured by speed) do not share a colour"
"$BATON" race eval --ckpt "$T/a" --max-steps 500 >"$T/e.out" 2>&1
check 'grep -q "limit .*6.172 s" "$T/e.out"' "eval text: $(cat "$T/e.out")"
check '"$BATON" race drive oval --policy "$T/a" --frames "$T/frames" --json >"$T/dr.json" 2>"$T/dr.err"' \
    "drive --policy: $(head -c 400 "$T/dr.err" 2>/dev/null)"
jcheck "$T/dr.json" "d['policy'].endswith('/a') and d['steps'] > 0 and d['frames'] == d['steps'] + 1" "drive --policy frames"
nframes=$(json "$T/dr.json" "d['frames']")
check '[ "$(ls "$T/frames" | wc -l)" -eq "$nframes" ] && file "$T/frames/frame-00000.png" | grep -q "160 x 120"' \
    "camera PNGs of the drive"

# ---- SIGKILL at random moments, then resume: the final bytes of an uninterrupted run
N=400
FIN=$(printf 'ckpt-%09d' $((N / 20)))
TK="$TR --episodes $N --ckpt-every-steps 1"
check '$TK --ckpt-dir "$T/ref" >/dev/null 2>"$T/ref.err"' "reference run: $(head -c 300 "$T/ref.err" 2>/dev/null)"
check '[ -f "$T/ref/$FIN/model.safetensors" ]' "reference has $FIN"
newest_ok() { "$BATON" ckpt ls "$1" 2>/dev/null | awk '$NF == "ok" { print $1 + 0; exit }'; }
K=$T/k kills=0 expect= resumed=() early=0
while [ "$kills" -lt 10 ]; do
    before=$(ls -A "$K" 2>/dev/null)
    $TK --ckpt-dir "$K" >/dev/null 2>"$T/k.err" &
    pid=$!
    ms=$((20 + RANDOM % 300))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    if [ $(((kills + 1) % 3)) -eq 0 ]; then   # aim at a checkpoint write
        until=$((${EPOCHREALTIME/./} + 300000))
        while [ "${EPOCHREALTIME/./}" -lt "$until" ]; do compgen -G "$K/.ckpt-*.tmp.*" >/dev/null && break; done
    fi
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
    line=$(grep -m1 'resuming from' "$T/k.err")
    if [ -z "$expect" ]; then check '[ -z "$line" ]' "kill: resumed with no checkpoint ok: $line"
    elif [ -z "$line" ] && [ "$rc" -eq 137 ] && [ "$(ls -A "$K" 2>/dev/null)" = "$before" ]; then
        early=$((early + 1))   # killed before it read its checkpoint (a slow start): it changed nothing
    else check '[[ "$line" == *"(iteration $expect, "* ]]' "kill: expected a resume from $expect: $(head -c 300 "$T/k.err" 2>/dev/null)"; resumed+=("$expect"); fi
    [ "$rc" -ne 137 ] && break   # it finished before the kill
    kills=$((kills + 1))
    expect=$(newest_ok "$K")
    [ -n "$expect" ] && check '"$BATON" ckpt verify "$K/$(printf "ckpt-%09d" "$expect")" >/dev/null 2>&1' "kill: newest ok does not verify"
done
check '$TK --ckpt-dir "$K" >/dev/null 2>"$T/kf.err"' "final run after the kills: $(head -c 300 "$T/kf.err" 2>/dev/null)"
check 'cmp -s "$T/ref/$FIN/model.safetensors" "$K/$FIN/model.safetensors" && cmp -s "$T/ref/$FIN/optim.safetensors" "$K/$FIN/optim.safetensors"' \
    "after $kills kills: final weights differ from the uninterrupted run's"
check '[ "$early" -le $((kills / 2)) ]' "$early of $kills kills landed before the run read its checkpoint"
echo "killed $kills times ($early before the checkpoint was read); resumed from: ${resumed[*]}"

# ---- an interruption notice from the metadata emulator: exit 75, then the same end bytes
# The run takes 0.45 s here, less on a faster machine: the notice is sent by a control request
# once the first checkpoint is committed (mid-run whatever the speed), and polled every 20 ms
"$BATON" imds --listen 127.0.0.1:0 >"$T/imds.url" 2>"$T/imds.err" &
pids+=($!)
URL=
for _ in $(seq 100); do URL=$(head -n1 "$T/imds.url" 2>/dev/null); [ -n "$URL" ] && break; sleep 0.05; done
BATON_NOTICE_POLL_S=0.02 AWS_EC2_METADATA_SERVICE_ENDPOINT=$URL $TK --ckpt-dir "$T/n" >"$T/n.out" 2>"$T/n.err" &
tp=$!
pids+=("$tp")
check 'wait_ckpt "$T/n"' "notice: first checkpoint appears"
check 'curl -sf -X PUT "$URL/baton/interrupt?notice=60" >/dev/null' "notice: control request"
wait "$tp"
rc=$?
check '[ "$rc" -eq 75 ]' "notice: exit $rc, want 75: $(tail -c 400 "$T/n.err" 2>/dev/null)"
check 'grep -Eq "notice: terminate .*checkpoint ckpt-[0-9]+ committed, stopping" "$T/n.err" && "$BATON" ckpt verify "$T/n" >/dev/null 2>&1' \
    "notice: the stop is logged and the checkpoint verifies"
check 'grep -q "stopped on a terminate notice" "$T/n.out"' "notice: summary"
check 'grep -Eq "^interruption: terminate notice at .*, deadline \+[56][0-9]\.[0-9] s, step [0-9]+ committed at \+[0-9.]+ s, no remote, exit at \+[0-9.]+ s, margin [0-9.]+ s$" "$T/n.out"' \
    "notice: the interruption's times: $(cat "$T/n.out")"
step=$(newest_ok "$T/n")
check '[ -n "$step" ] && [ "$step" -lt $((N / 20)) ]' "notice: stopped before the end (at '$step')"
check 'AWS_EC2_METADATA_DISABLED=true $TK --ckpt-dir "$T/n" >/dev/null 2>&1 && cmp -s "$T/ref/$FIN/model.safetensors" "$T/n/$FIN/model.safetensors"' \
    "notice: the rerun ends with the uninterrupted run's weights"

# ---- bad files name the file and the field; usage errors
printf '{"action_space": [{"steering_angle": 0, "speed": 1}], "action_space_type": "discreet"}' >"$T/m1.json"
printf '{"action_space": [{"steering_angle": 0, "speed": 5}]}' >"$T/m2.json"
printf '{"action_space": []}' >"$T/m3.json"
printf '{"lr": -0.001}' >"$T/h1.json"
expect_fail 1 "m1.json: action_space_type: 'discreet' is unknown" $TR --ckpt-dir "$T/b1" --episodes 20 --metadata "$T/m1.json"
expect_fail 1 "m2.json: action_space\[0\].speed: 5 is outside 0.1..4" $TR --ckpt-dir "$T/b2" --episodes 20 --metadata "$T/m2.json"
expect_fail 1 "m3.json: action_space: is an empty list" $TR --ckpt-dir "$T/b3" --episodes 20 --metadata "$T/m3.json"
expect_fail 1 "h1.json: lr: -0.001 must be a positive number" $TR --ckpt-dir "$T/b4" --episodes 20 --hyper "$T/h1.json"
expect_fail 1 "no_such.json" $TR --ckpt-dir "$T/b5" --episodes 20 --metadata "$T/no_such.json"
expect_fail 1 "another --seed" "$BATON" race train --track oval --obs sensor --ckpt-dir "$T/a" --episodes 100 --seed 4 --quiet
expect_fail 2 "--track is required" "$BATON" race train --ckpt-dir "$T/u"
# a run that fails leaves no checkpoint folder behind (not one holding only its .lock)
expect_fail 1 "no such built-in track" "$BATON" race train --track nosuchtrack --ckpt-dir "$T/nt" --episodes 1
check '[ ! -e "$T/nt" ] && [ ! -e "$T/b1" ] && [ ! -e "$T/b5" ]' "failed runs leave no folder: $(ls -A "$T/nt" 2>&1)"
# a race checkpoint given to the image commands: they say what it is and what reads it
expect_fail 1 "not a baton train checkpoint: a race model's checkpoint \(baton race train\): evaluate it with baton race eval" \
    "$BATON" eval --ckpt "$T/a" --data "$T/none"
check '! "$BATON" infer-bench --ckpt "$T/a" --path fast --runs 1 2>&1 >/dev/null | grep -q "\"model\" missing" &&
       "$BATON" infer-bench --ckpt "$T/a" --path fast --runs 1 2>&1 >/dev/null | grep -q "not a baton train checkpoint: a race model"' \
    "infer-bench on a race checkpoint says what it is"
expect_fail 2 "--obs must be sensor or camera" $TR --ckpt-dir "$T/u" --obs lidar
expect_fail 2 "not both" $TR --ckpt-dir "$T/u" --minutes 1 --episodes 20
expect_fail 2 "--episodes must be >= 1" $TR --ckpt-dir "$T/u" --episodes 0
expect_fail 2 "--ckpt is required" "$BATON" race eval
expect_fail 2 "--laps must be 1..1000" "$BATON" race eval --ckpt "$T/a" --laps 0
expect_fail 1 "no checkpoint that verifies" "$BATON" race eval --ckpt "$T/nothing"
# a checkpoint of the supervised trainer is not a race model
mkdir -p "$T/sup/ckpt-000000001"
printf '{"step": 1, "model": "mlp"}' >"$T/sup/ckpt-000000001/state.json"
expect_fail 1 "race eval: " "$BATON" race eval --ckpt "$T/sup"

check '"$BATON" fleet check docs/race-train.yaml >/dev/null 2>"$T/fc.err"' "docs/race-train.yaml: $(cat "$T/fc.err" 2>/dev/null)"
finish
