#!/usr/bin/env bash
# race.sh — how fast the race simulator and its camera run on one core (race issue, part 1), and
# with `train`, how well and how fast `baton race train` learns (part 2).
#
#   bench/race.sh [RUNS]               the simulator's speed (below)
#   bench/race.sh train [CASE...]      training benchmarks, each a training run then a time trial:
#     sensor-oval, sensor-reinvent     the sensor policy (docs/race-model/'s files: 22
#                                      discrete actions, 1.5..4 m/s), default reward, SENSOR_MIN
#                                      minutes (15) on THREADS_SENSOR threads (1)
#     camera-oval, camera-reinvent     DeepRacer's setup: the front camera, the shallow CNN, the
#                                      console's default actions and hyper-parameters, CAMERA_MIN
#                                      minutes (60) on THREADS_CAMERA threads (2)
#     camera-fast-reinvent             the camera and the shallow CNN with the sensor model's fast
#                                      actions (docs/race-model/camera/: 22, 1.5..4 m/s), CAMERA_MIN
#                                      minutes on THREADS_CAMERA threads (the value network learning
#                                      on the second), CAMERA_PRECISION (bf16 where the CPU has
#                                      AVX512-BF16, else f32)
#     oa-reinvent, h2b-reinvent        the league's object-avoidance and head-to-bot courses
#                                      (bench/race/*.yaml) with the sensor model (LIDAR added),
#                                      RACE_MIN minutes (30) on THREADS_SENSOR threads; evaluated on
#                                      the same course: crashes, and overtakes per lap
#     throughput                       car steps per second through the whole loop, both
#                                      observations, 60 s each, against DeepRacer's 15 per worker
#   (all but throughput when none is named; PARALLEL=1 runs the named cases at once, each on its
#   own threads). Each case prints the trainer's and the evaluator's
#   JSON, the load (/proc/loadavg) sampled every 30 s during the run, and the trainer's CPU time
#   against its wall time (what the machine's other work took from it), then one JSON line
#   {"bench":"race-train",...}. Work folders go under OUT (default /tmp/baton-bench-race-train).
#
# Runs build/bench/race_speed (bench/race_speed.c) RUNS times, one after the other on one core
# (taskset to CPU 0 when available), and prints each run's figures and their medians: car steps
# per second (goal >= 5 M), params + reward per car (C built-in and DeepRacer's Python), sensor
# vectors per car, camera frames per
# second (goal >= 3,000), the plain reference paths beside the fast ones, and each against
# DeepRacer's 15 steps (frames) per second of real time. Times are CPU time of the benchmark's
# thread, so other work on the machine lowers the figures less than it would wall-clock ones.
#
# Usage: bench/race.sh [RUNS (default 5)]   env: TRACK (default ../shared/tracks/reinvent_base.npy),
#        ENVS (cars per batch, default 64), BENCH_SECONDS (CPU seconds per figure, default 2)
# Output: a table per run, then the medians and one JSON line {"bench":"race",...}.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = train ]; then
    shift
    exec bench/race_train.sh "$@"
fi
runs=${1:-5}
track=${TRACK:-../shared/tracks/reinvent_base.npy}
make -s -j2 build/bench/race_speed
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "# $(date -u +%FT%TZ) $(uname -m), $(nproc) cores ($cpu), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# track $track, ${ENVS:-64} cars per batch, $runs runs"
W=$(mktemp -d /tmp/baton-bench-race.XXXXXX)
trap 'rm -rf "$W"' EXIT
for i in $(seq "$runs"); do
    echo "== run $i"
    "${pin[@]}" build/bench/race_speed --track "$track" --envs "${ENVS:-64}" --seconds "${BENCH_SECONDS:-2}" \
        >"$W/out.$i"
    grep -v '^{' "$W/out.$i"
    grep '^{' "$W/out.$i" >>"$W/json"
done
python3 - "$W/json" "$cpu" "$runs" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = ["steps_per_s", "ref_steps_per_s", "params_reward_per_s", "python_reward_per_s", "sensor_per_s", "frames_per_s",
        "ref_frames_per_s"]
med = {k: statistics.median(r[k] for r in rows) for k in keys}
lo = {k: min(r[k] for r in rows) for k in keys}
hi = {k: max(r[k] for r in rows) for k in keys}
print("\n== medians of %d runs (min .. max)" % len(rows))
names = {"steps_per_s": "car steps/s (fast)", "ref_steps_per_s": "car steps/s (reference)",
         "params_reward_per_s": "params + reward per car/s", "python_reward_per_s": "params + Python reward/s",
         "sensor_per_s": "sensor vectors per car/s",
         "frames_per_s": "camera frames/s (fast)", "ref_frames_per_s": "camera frames/s (reference)"}
for k in keys:
    print("%-30s %12.0f   (%.0f .. %.0f)   %8.0f x real time" % (names[k], med[k], lo[k], hi[k], med[k] / 15))
print("goals: steps %s (>= 5,000,000), frames %s (>= 3,000)" % (
    "met" if med["steps_per_s"] >= 5e6 else "NOT met", "met" if med["frames_per_s"] >= 3000 else "NOT met"))
out = {"bench": "race", "runs": len(rows), "cpu": sys.argv[2], "track": rows[0]["track"], "envs": rows[0]["envs"]}
out.update({"median_" + k: round(med[k]) for k in keys})
out["fast_over_ref_steps"] = round(med["steps_per_s"] / med["ref_steps_per_s"], 2)
out["fast_over_ref_frames"] = round(med["frames_per_s"] / med["ref_frames_per_s"], 2)
print(json.dumps(out))
EOF
