#!/usr/bin/env bash
# race_train.sh — the training benchmarks of bench/race.sh (`bench/race.sh train [CASE...]`; see
# there): each case trains with `baton race train`, then drives DeepRacer's time trial with
# `baton race eval --laps 3`, and prints the figures with the load and CPU share of the run.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${B:-}" ] || { make -s -j2 build/baton; B=build/baton; }   # B=path: a copy that a rebuild cannot replace mid-run
OUT=${OUT:-/tmp/baton-bench-race-train}
REINVENT=${REINVENT:-../shared/tracks/reinvent_base.npy}
SENSOR_MIN=${SENSOR_MIN:-15}
CAMERA_MIN=${CAMERA_MIN:-60}
RACE_MIN=${RACE_MIN:-30}
# head-to-bot's training: its reward (lateral clearance from the bot ahead), its race file (bots at
# new places each episode; H2B_TRAIN_RACE= to train on the evaluation's) and extra flags (H2B_ARGS)
# the fast camera case's arithmetic: bfloat16 where the CPU has it
CAMERA_PRECISION=${CAMERA_PRECISION:-$(grep -qw avx512_bf16 /proc/cpuinfo && echo bf16 || echo f32)}
THREADS_SENSOR=${THREADS_SENSOR:-1}
THREADS_CAMERA=${THREADS_CAMERA:-2}
mkdir -p "$OUT"
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(sensor-oval sensor-reinvent camera-oval camera-reinvent)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "# $(date -u +%FT%TZ) $(uname -m), $(nproc) cores ($cpu), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

# run NAME MINUTES THREADS TRACK RACE ARGS...: train, then evaluate; figures into $OUT/NAME.*
# RACE: a --race-file for training and evaluation alike, or - for the time trial
run() {
    local name=$1 minutes=$2 threads=$3 track=$4 race=$5
    shift 5
    local ra=()
    [ "$race" = - ] || ra=(--race-file "$race")
    local tra=("${ra[@]}")   # training's race file: $TRAIN_RACE where a case sets one
    [ -z "${TRAIN_RACE:-}" ] || tra=(--race-file "$TRAIN_RACE")
    local d=$OUT/$name
    rm -rf "$d" "$d".*
    echo "== $name: baton race train --track $track ${tra[*]} $* --minutes $minutes --threads $threads"
    (while :; do cut -d' ' -f1 /proc/loadavg >>"$d.load"; sleep 30; done) &
    local sampler=$!
    local TIMEFORMAT="%R %U %S"   # the trainer's wall, user and system seconds
    { time $B race train --track "$track" --ckpt-dir "$d" --minutes "$minutes" --threads "$threads" --log "$d.csv" \
        --quiet --json "${tra[@]}" "$@" >"$d.train.json" 2>"$d.train.err"; } 2>"$d.time" || { cat "$d.train.err"; kill $sampler; return 1; }
    kill $sampler 2>/dev/null || true
    $B race eval --ckpt "$d" --track "$track" --laps 3 "${ra[@]}" --json --svg "$d.svg" --trace "$d.trace.csv" >"$d.eval.json"
    python3 - "$name" "$d" "$threads" <<'PY'
import json, sys
name, d, threads = sys.argv[1:]
tr = json.load(open(d + ".train.json")); ev = json.load(open(d + ".eval.json"))
text = open(d + ".load").read().split()
load = [float(x) for x in text]
wall, user, sys_ = [float(x) for x in open(d + ".time").read().split()[-3:]]
share = (user + sys_) / wall / int(threads)
laps = [round(l["time_s"], 3) for l in ev["laps"]]
print("  trained %.1f min, %d iterations, %d episodes, %d car steps, %.0f steps/s (%s kernels)" % (
    tr["total_seconds"] / 60, tr["iteration"], tr["episodes"], tr["sim_steps"], tr["steps_per_s"], tr["kernels"]))
if ev.get("crashes") is not None or ev.get("overtakes") is not None:
    print("  objects: %s crash(es), overtakes per lap %s" % (ev.get("crashes"), ev.get("overtakes")))
print("  time trial: laps %s, best %.3f s, resets %d, limit %.3f s, ratio %.3f%s" % (
    laps, ev["best_lap_s"], ev["resets"], ev["limit_s"], ev["ratio"], "" if ev["completed"] else " (gave up)"))
if load:
    print("  load during the run: mean %.2f, max %.2f (%d samples); the trainer had %.0f %% of its %s thread(s)" % (
        sum(load) / len(load), max(load), len(load), 100 * share, threads))
out = {"bench": "race-train", "case": name, "track": ev["track"], "minutes": round(tr["total_seconds"] / 60, 2),
       "threads": int(threads), "iterations": tr["iteration"], "episodes": tr["episodes"], "sim_steps": tr["sim_steps"],
       "steps_per_s": round(tr["steps_per_s"]), "laps": laps, "best_lap_s": round(ev["best_lap_s"], 3),
       "total_s": round(ev["total_s"], 3), "resets": ev["resets"], "limit_s": round(ev["limit_s"], 3),
       "ratio": round(ev["ratio"], 3), "completed": ev["completed"], "race": ev.get("race", "time-trial"),
       "crashes": ev.get("crashes", 0), "overtakes": ev.get("overtakes"),
       "three_laps_no_reset": ev["completed"] and ev["resets"] == 0,
       "load_mean": round(sum(load) / len(load), 2) if load else None, "load_max": max(load) if load else None,
       "cpu_share": round(share, 2), "steps_per_cpu_s": round(tr["sim_steps"] / max(user + sys_, 1e-9))}
print(json.dumps(out))
PY
}

# throughput NAME THREADS ARGS...: 60 s of training, steps per second through the whole loop
throughput() {
    local name=$1 threads=$2
    shift 2
    local d=$OUT/tp-$name
    rm -rf "$d"
    local TIMEFORMAT="%R %U %S"
    { time $B race train --track "${TP_TRACK:-oval}" --ckpt-dir "$d" --minutes "${TP_MIN:-1}" --threads "$threads" --quiet --json "$@" \
        >"$d.json" 2>/dev/null; } 2>"$d.time"
    python3 - "$name" "$d" "$threads" <<'PY'
import json, sys
name, d, threads = sys.argv[1:]
tr = json.load(open(d + ".json"))
real, user, sys_ = [float(x) for x in open(d + ".time").read().split()[-3:]]
share = (user + sys_) / real / int(threads)
print("  %-7s %8.0f car steps/s through the whole loop = %.0f x DeepRacer's 15 per worker; CPU %.0f %% of %s thread(s); %.0f per CPU second" % (
    name, tr["steps_per_s"], tr["steps_per_s"] / 15, 100 * share, threads, tr["sim_steps"] / max(user + sys_, 1e-9)))
print(json.dumps({"bench": "race-throughput", "obs": name, "threads": int(threads), "steps_per_s": round(tr["steps_per_s"]),
                  "x_deepracer": round(tr["steps_per_s"] / 15), "cpu_share": round(share, 2),
                  "steps_per_cpu_s": round(tr["sim_steps"] / max(user + sys_, 1e-9)), "sim_steps": tr["sim_steps"],
                  "seconds": round(tr["total_seconds"], 1),
                  "load": open("/proc/loadavg").read().split()[0]}))
PY
}

one() {
    local c=$1
    case $c in
        sensor-oval) run "$c" "$SENSOR_MIN" "$THREADS_SENSOR" oval - --metadata docs/race-model/model_metadata.json \
            --hyper docs/race-model/hyperparameters.json ;;
        sensor-reinvent) run "$c" "$SENSOR_MIN" "$THREADS_SENSOR" "$REINVENT" - --metadata docs/race-model/model_metadata.json \
            --hyper docs/race-model/hyperparameters.json ;;
        camera-oval) run "$c" "$CAMERA_MIN" "$THREADS_CAMERA" oval - --obs camera ;;
        camera-reinvent) run "$c" "$CAMERA_MIN" "$THREADS_CAMERA" "$REINVENT" - --obs camera ;;
        camera-fast-reinvent) run "$c" "$CAMERA_MIN" "$THREADS_CAMERA" "$REINVENT" - --precision "$CAMERA_PRECISION" \
            --metadata docs/race-model/camera/model_metadata.json --hyper docs/race-model/camera/hyperparameters.json ;;
        oa-reinvent) run "$c" "$RACE_MIN" "$THREADS_SENSOR" "$REINVENT" bench/race/object-avoidance.yaml \
            --metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json ;;
        h2b-reinvent)   # shellcheck disable=SC2086
            TRAIN_RACE=${H2B_TRAIN_RACE-bench/race/head-to-bot-train.yaml} run "$c" "$RACE_MIN" "$THREADS_SENSOR" "$REINVENT" bench/race/head-to-bot.yaml \
            --metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json \
            --reward "${H2B_REWARD:-bench/race/head-to-bot-reward.c}" ${H2B_ARGS:-} ;;
        throughput)
            echo "== throughput: 60 s of training on the oval"
            throughput sensor "$THREADS_SENSOR" --metadata docs/race-model/model_metadata.json \
                --hyper docs/race-model/hyperparameters.json
            throughput camera "$THREADS_CAMERA" --obs camera ;;
        throughput-camera)   # the camera alone: TP_TRACK, TP_MIN minutes, THREADS_CAMERA threads, TP_ARGS
            echo "== throughput: the camera, ${TP_MIN:-1} min on ${TP_TRACK:-oval}, $THREADS_CAMERA thread(s) ${TP_ARGS:-}"
            # shellcheck disable=SC2086
            throughput camera "$THREADS_CAMERA" --obs camera ${TP_ARGS:-} ;;
        *) echo "unknown case $c (sensor-oval sensor-reinvent camera-oval camera-reinvent camera-fast-reinvent oa-reinvent h2b-reinvent throughput throughput-camera)" >&2; return 2 ;;
    esac
}

if [ "${PARALLEL:-0}" = 1 ]; then   # the cases at once, each on its own threads; their output in turn
    ps=()
    for c in "${cases[@]}"; do one "$c" >"$OUT/out-$c.txt" 2>&1 & ps+=($!); done
    st=0
    for p in "${ps[@]}"; do wait "$p" || st=1; done
    for c in "${cases[@]}"; do cat "$OUT/out-$c.txt"; done
    [ "$st" -eq 0 ] || exit 1
else
    for c in "${cases[@]}"; do one "$c"; done
fi
echo "# done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
