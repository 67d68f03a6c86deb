#!/usr/bin/env bash
# test_race_submit_camera.sh — camera models reach a league at its default limit:
#   - a camera model after one iteration: its checkpoint is over the default 64 MiB (the Adam
#     state alone is two thirds of it); `race export` writes its policy alone as a checkpoint
#     (state.json "contents": "policy", only policy.* tensors, no optimizer tensors), a sixth of the
#     whole, that `race eval` drives exactly as the whole checkpoint and that a run refuses to
#     resume from, naming why;
#   - GET /api/server tells a client the league's limit; `race submit --server` to a league at the
#     default limit sends the policy alone (the log says how many bytes) and the camera model is
#     evaluated and ranked;
#   - a league whose limit the policy exceeds: the client says so, with both sizes, before sending
#     anything (the server stores no submission);
#   - head-to-model with camera cars: the model races its exported policy (race match).
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
unset BATON_LEAGUE_DB BATON_LEAGUE_TEST_HOLD_MS
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
DB=$T/league.db
python3 - "$T/h.json" <<'PY'
import json, sys
h = json.load(open("tests/race/console_hyperparameters.json"))
h["num_episodes_between_training"], h["num_epochs"] = 2, 1
json.dump(h, open(sys.argv[1], "w"))
PY
check '"$BATON" race train --track oval --metadata tests/race/console_model_metadata.json --hyper "$T/h.json" --ckpt-dir "$T/cam" \
    --episodes 2 --max-steps 50 --seed 4 --threads 1 --quiet >/dev/null 2>"$T/train.err"' "a camera model, one iteration: $(head -c 400 "$T/train.err" 2>/dev/null)"
full=$(du -sb "$T"/cam/ckpt-* | cut -f1)
check '[ "$full" -gt $((64 << 20)) ]' "its checkpoint is over 64 MiB: $full bytes"

# ---- race export: the policy alone
check '"$BATON" race export --ckpt "$T/cam" --out "$T/pol" --json >"$T/x.json" 2>"$T/x.err"' "race export: $(cat "$T/x.err" 2>/dev/null)"
P=$(json "$T/x.json" 'd["checkpoint"]')
check '[ -d "$P" ] && [ "$(json "$T/x.json" "d[\"bytes\"] * 5 < $full")" = True ]' "a fifth of the whole at most: $(cat "$T/x.json")"
check 'python3 - "$P" <<"PY"
import json, struct, sys
def names(f):
    with open(f, "rb") as h:
        n = struct.unpack("<Q", h.read(8))[0]
        return [k for k in json.loads(h.read(n)) if k != "__metadata__"]
m, o = names(sys.argv[1] + "/model.safetensors"), names(sys.argv[1] + "/optim.safetensors")
st = json.load(open(sys.argv[1] + "/state.json"))
assert m and all(k.startswith("policy.") for k in m) and o == [] and st["contents"] == "policy", (m, o, st.get("contents"))
PY' "the export holds policy.* tensors only, no optimizer, contents \"policy\""
check '"$BATON" race eval --ckpt "$T/cam" --max-steps 200 --json --trace "$T/full.csv" >/dev/null 2>&1 &&
       "$BATON" race eval --ckpt "$P" --max-steps 200 --json --trace "$T/pol.csv" >/dev/null 2>&1 && cmp -s "$T/full.csv" "$T/pol.csv"' \
    "race eval drives the export exactly as the whole checkpoint (the same trace)"
expect_fail 1 'holds the policy network alone .*no value network or optimizer to resume from' \
    "$BATON" race train --track oval --metadata tests/race/console_model_metadata.json --hyper "$T/h.json" --ckpt-dir "$T/pol" \
    --episodes 4 --max-steps 50 --seed 4 --threads 1 --quiet

# ---- a league at the default limit
check '"$BATON" race token add cam --db "$DB" >"$T/tok" 2>/dev/null' "a token"
start() {  # start [ARGS...]: the server; U its URL
    rm -f "$T/url"
    "$BATON" race serve --listen 127.0.0.1:0 --db "$DB" "$@" >"$T/url" 2>>"$T/serve.err" &
    pids+=($!)
    PID=$!
    U=
    for _ in $(seq 200); do U=$(head -n1 "$T/url" 2>/dev/null); [ -n "$U" ] && break; sleep 0.05; done
}
start
check '[ -n "$U" ] && curl -s "$U/api/server" >"$T/server.json" && [ "$(json "$T/server.json" "d[\"max_upload_bytes\"]")" = $((64 << 20)) ]' \
    "GET /api/server: the limit: $(cat "$T/server.json" 2>/dev/null)"
check 'BATON_LEAGUE_TOKEN=$(cat "$T/tok") "$BATON" race submit --server "$U" --ckpt "$T/cam" --alias cam --track oval --json \
    >"$T/s.json" 2>"$T/s.err" && [ "$(json "$T/s.json" "d[\"state\"]")" = done ]' "the camera model submitted and evaluated: $(head -c 600 "$T/s.err" 2>/dev/null)"
sent=$(sed -n 's/.*the policy of .* (\([0-9]*\) bytes) sent as submission.*/\1/p' "$T/s.err")
check '[ -n "$sent" ] && [ "$sent" -lt $((32 << 20)) ]' "the policy alone sent: $sent bytes of $full"
check '[ "$(curl -s "$U/api/leaderboard?track=oval" | python3 -c "import json,sys; print([e[\"alias\"] for e in json.load(sys.stdin)[\"entries\"]])")" = "['"'"'cam'"'"']" ]' \
    "on the board"
kill -TERM "$PID"
wait "$PID" 2>/dev/null

# ---- a league that takes less than the policy: the client says so before sending
start --max-upload 1000000
expect_fail 1 "its policy is [0-9]+ bytes, over the 1000000 bytes the league at http://127.0.0.1:[0-9]+ takes" \
    env BATON_LEAGUE_TOKEN="$(cat "$T/tok")" "$BATON" race submit --server "$U" --ckpt "$T/cam" --alias cam --track oval
check '[ "$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select count(*) from submissions\").fetchone()[0])" "$DB")" = 1 ]' \
    "nothing sent: still one submission"
check '[ -z "$(ls -d "${TMPDIR:-/tmp}"/baton-submit-* 2>/dev/null)" ]' "the client's export folder removed"
kill -TERM "$PID"
wait "$PID" 2>/dev/null
# head-to-model with camera cars: the camera model against its exported policy, each seeing the
# other drawn in its frames (race match; a short drive)
check '"$BATON" race match --ckpt "$T/cam" --ckpt "$T/pol" --track oval --laps 1 --max-steps 40 --json >"$T/cm.json" 2>"$T/cm.err" &&
       python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (len(d[\"cars\"]) == 2 and d[\"steps\"] == 40))" "$T/cm.json"' \
    "two camera cars race: $(head -c 300 "$T/cm.err" "$T/cm.json" 2>/dev/null)"
finish
