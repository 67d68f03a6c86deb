#!/usr/bin/env bash
# test_race_serve.sh — `baton race serve`: two models trained briefly and submitted (one under an
# HTML-special alias), the server started on a free loopback port:
#   - the JSON API: /api/tracks, /api/leaderboard (rank order, the format), an entry's trace (as
#     many steps as it has, its laps), 404 for an unknown entry, track or path, 400 for a bad
#     format, 405 for a POST; the page's HTML has the alias escaped, never raw;
#   - the page in headless Chromium: the DOM after its script ran has the rows in rank order, the
#     replay of the first entry started (its line drawn, the car placed on it), no console message at all
#     (a script error or a failed request would log one); a screenshot kept under the build folder;
#   - an object-avoidance entry: the page's race selector, and its replay in Chromium drawing the
#     boxes where the entry's trace puts them at the step shown (translated to within 0.5 px);
#   - the server refuses a non-loopback address without --allow-remote, and stops on SIGTERM.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
unset BATON_LEAGUE_DB
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
DB=$T/league.db
M="--metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json"
EVIL='<script>alert("x")</script>'

check '"$BATON" race train --track oval $M --ckpt-dir "$T/m1" --episodes 600 --seed 1 --threads 1 --quiet >/dev/null' "train model 1"
check '"$BATON" race train --track oval $M --ckpt-dir "$T/m2" --episodes 200 --seed 2 --threads 1 --quiet >/dev/null' "train model 2"
check '"$BATON" race submit --ckpt "$T/m1" --alias ann --track oval --db "$DB" >/dev/null' "submit 1"
check '"$BATON" race submit --ckpt "$T/m2" --alias "$EVIL" --track oval --db "$DB" >/dev/null' "submit 2"

"$BATON" race serve --listen 127.0.0.1:0 --db "$DB" >"$T/url" 2>"$T/serve.err" &
pids+=($!)
for _ in $(seq 100); do U=$(head -n1 "$T/url" 2>/dev/null); [ -n "$U" ] && break; sleep 0.05; done
check '[ -n "$U" ]' "the server prints its URL: $(cat "$T/serve.err")"
code() { curl -s -o "$T/body" -w "%{http_code}" "$@"; }

check '[ "$(code "$U/api/tracks")" = 200 ] && [ "$(json "$T/body" "d[\"tracks\"] == [{\"track\": \"oval\", \"entries\": 2, \"aliases\": 2, \"races\": {\"time-trial\": 2, \"object-avoidance\": 0, \"head-to-bot\": 0}}]")" = True ]' \
    "/api/tracks: $(cat "$T/body")"
"$BATON" race leaderboard --db "$DB" --track oval --json >"$T/cli.json"
check '[ "$(code "$U/api/leaderboard?track=oval")" = 200 ] && [ "$(json "$T/body" "[e[\"id\"] for e in d[\"entries\"]]")" = "$(json "$T/cli.json" "[e[\"id\"] for e in d[\"entries\"]]")" ]' \
    "/api/leaderboard in the CLI's rank order"
first=$(json "$T/cli.json" 'd["entries"][0]["id"]')
check '[ "$(code "$U/api/entries/$first/trace")" = 200 ] && [ "$(json "$T/body" "d[\"steps\"] == len(d[\"x\"]) == len(d[\"y\"]) == len(d[\"v\"]) == len(d[\"lap\"]) == len(d[\"reset\"]) > 0 and max(d[\"lap\"]) >= 1")" = True ]' \
    "a trace's arrays"
check '[ "$(code "$U/api/entries/99/trace")" = 404 ] && grep -q "no entry 99" "$T/body"' "an unknown entry: 404"
check '[ "$(code "$U/api/entries/1x/trace")" = 404 ] && [ "$(code "$U/track/nowhere")" = 404 ] && [ "$(code "$U/nothing")" = 404 ]' "unknown paths: 404"
check '[ "$(code "$U/api/leaderboard?track=oval&format=sprint")" = 400 ] && grep -q "time-trial or total" "$T/body"' "a bad format: 400"
check '[ "$(code -X POST -d x=1 "$U/api/tracks")" = 405 ]' "POST: 405"
check '[ "$(code "$U/track/oval")" = 200 ] && grep -qF "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" "$T/body" && ! grep -qF "$EVIL" "$T/body"' \
    "the alias escaped in the page"
check '! grep -Eq "<script[^>]+src=|<link[^>]+href=\"[^d]|@import|url\\(" "$T/body"' "no external scripts, styles, fonts or icons"
check '[ "$(code "$U/track/oval?format=total")" = 200 ] && ! grep -q "no entries in this format" "$T/body" && grep -qF "&lt;script&gt;" "$T/body"' \
    "the total format's page ranks the same entries by their totals"

# ---- the page in a real browser
CHROME=$(command -v chromium || command -v chromium-browser)
check '[ -n "$CHROME" ]' "chromium is installed (scripts/deps.sh)"
SHOT=${BATON_BUILD:-build}/league-oval.png
browse() {  # browse ARGS...: headless Chromium, its stderr to $T/chrome.err
    timeout 60 "$CHROME" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
        --user-data-dir="$T/chrome" --enable-logging=stderr --v=0 --window-size=1100,1000 --virtual-time-budget=4000 "$@" \
        2>"$T/chrome.err"
}
# dom_ok: load the page and check its DOM (into $T/dom.check). A headless Chromium on a loaded
# 2-core machine has once come back without the replay drawn; a second load tells a slow start
# from a broken page (a broken one fails both), and what it printed is kept under the build folder.
dom_ok() {
    browse --dump-dom "$U/track/oval" >"$T/dom.html" || return 1
python3 - "$T/dom.html" "$(json "$T/cli.json" '",".join(str(e["id"]) for e in d["entries"])')" >"$T/dom.check" <<'PY'
import re, sys
dom = open(sys.argv[1]).read()
want = sys.argv[2].split(",")
rows = re.findall(r'<tr data-entry="(\d+)" data-rank="(\d+)"', dom)
ok = [r[0] for r in rows] == want and [r[1] for r in rows] == [str(i + 1) for i in range(len(want))]
car = re.search(r'<circle id="car"[^>]*>', dom)
moved = bool(car) and 'visibility="visible"' in car.group(0) and re.search(r'cx="[0-9.]+"', car.group(0))
line = re.search(r'<polyline id="driven"[^>]*points="([^"]*)"', dom)
drawn = bool(line) and len(line.group(1).split()) > 10
status = re.search(r'<p id="status">entry (\d+): step (\d+) of (\d+)', dom)
print(ok and bool(moved) and drawn and bool(status) and status.group(1) == want[0])
PY
    [ "$(cat "$T/dom.check")" = True ] && ! grep -q "CONSOLE" "$T/chrome.err"
}
if ! dom_ok; then
    cp "$T/chrome.err" "${BATON_BUILD:-build}/league-chrome-1.err" 2>/dev/null
    cp "$T/dom.html" "${BATON_BUILD:-build}/league-dom-1.html" 2>/dev/null
    echo "the page's first load in Chromium did not check out; loading it again" >&2
    dom_ok
fi
check '[ -s "$T/dom.html" ]' "chromium loads the page: $(grep -v dbus "$T/chrome.err" 2>/dev/null | tail -n 3)"
check '[ "$(cat "$T/dom.check")" = True ]' "the DOM: rows in rank order, the replay of the first entry drawn, its car placed on it"
check '! grep -q "CONSOLE" "$T/chrome.err"' "no console messages"
check 'browse --screenshot="$PWD/$SHOT" "$U/track/oval" >/dev/null && file "$SHOT" | grep -q "PNG image data, 1100 x 1000"' \
    "a screenshot: $SHOT"

# ---- object avoidance: its own board on the page, the replay drawing the boxes where the trace puts them
check '"$BATON" race submit --ckpt "$T/m1" --alias oa --track oval --race object-avoidance --db "$DB" --json >"$T/oa.json"' \
    "submit to object avoidance"
OA=$(json "$T/oa.json" 'd["id"]')
check '[ "$(code "$U/api/entries/$OA/trace")" = 200 ] && cp "$T/body" "$T/oa-trace.json" && [ "$(json "$T/oa-trace.json" "len(d[\"objects\"])")" = 3 ]' \
    "its trace carries 3 boxes"
check '[ "$(code "$U/api/tracks")" = 200 ] && [ "$(json "$T/body" "d[\"tracks\"][0][\"races\"]")" = "{'"'"'time-trial'"'"': 2, '"'"'object-avoidance'"'"': 1, '"'"'head-to-bot'"'"': 0}" ]' \
    "/api/tracks counts each race type's entries: $(cat "$T/body")"
check '[ "$(code "$U/")" = 200 ] && grep -qF "<a href=\"/track/oval?race=object-avoidance\">object-avoidance (1 entry)</a>" "$T/body" && ! grep -q "head-to-bot (" "$T/body"' \
    "the index links each race type a track has entries in"
# the front page and the track page count the same thing (entries), and the track page says how many
# racers its table ranks from them; its title names the race type and the format once each
check 'grep -qF ">time-trial (2 entries)</a>" "$T/body" && [ "$(code "$U/track/oval")" = 200 ] &&
       grep -qF "data-entries=\"2\" class=\"sel\">time-trial (2 entries)</a>" "$T/body" &&
       grep -qF "<p id=\"counts\">2 racers ranked from 2 entries" "$T/body" &&
       grep -qF "<title>oval — time-trial, fastest lap — baton league</title>" "$T/body"' \
    "front page and track page agree on the counts; the title: $(grep -o "<title>[^<]*" "$T/body")"
check '[ "$(code "$U/track/oval?race=object-avoidance")" = 200 ] && grep -q "data-race=\"object-avoidance\" data-entries=\"1\" class=\"sel\"" "$T/body" && grep -q "3 boxes at fixed places" "$T/body"' \
    "the page's race selector marks object avoidance, its rules said"
# oa_ok: the DOM after the replay ran: the entry's row, and each box's drawing translated to where
# the trace puts it at the step the status line shows (within 0.5 px), turned to its heading
oa_ok() {
    browse --dump-dom "$U/track/oval?race=object-avoidance" >"$T/oa-dom.html" || return 1
python3 - "$T/oa-dom.html" "$T/oa-trace.json" "$OA" >"$T/oa.check" <<'PY'
import json, re, sys
dom = open(sys.argv[1]).read()
tr = json.load(open(sys.argv[2]))
rows = re.findall(r'<tr data-entry="(\d+)"', dom)
svg = re.search(r'<svg[^>]*>', dom).group(0)
m = {k: float(re.search(r'data-%s="([-0-9.e]+)"' % k, svg).group(1)) for k in ("x0", "y1", "scale", "left", "top")}
st = re.search(r'<p id="status">entry (\d+): step (\d+) of (\d+)', dom)
k = int(st.group(2)) - 1 if st else -1
drawn = re.findall(r'<g class="object" data-kind="(\w+)" transform="translate\(([-0-9.]+) ([-0-9.]+)\) rotate\(([-0-9.]+)\)">', dom)
ok = rows == [sys.argv[3]] and st and st.group(1) == sys.argv[3] and len(drawn) == len(tr["objects"]) == 3
for (kind, x, y, r), o in zip(drawn, tr["objects"]):
    px = m["left"] + (o["x"][k] - m["x0"]) * m["scale"]
    py = m["top"] + (m["y1"] - o["y"][k]) * m["scale"]
    ok = ok and kind == o["kind"] == "box" and abs(float(x) - px) < 0.5 and abs(float(y) - py) < 0.5
    ok = ok and abs(float(r) + o["yaw"][k] * 180 / 3.141592653589793) < 0.05
print(bool(ok))
PY
    [ "$(cat "$T/oa.check")" = True ] && ! grep -q "CONSOLE" "$T/chrome.err"
}
if ! oa_ok; then
    cp "$T/oa-dom.html" "${BATON_BUILD:-build}/league-oa-dom-1.html" 2>/dev/null
    echo "the object-avoidance page's first load in Chromium did not check out; loading it again" >&2
    oa_ok
fi
check '[ "$(cat "$T/oa.check")" = True ]' "the replay draws the 3 boxes where the trace puts them"
check '! grep -q "CONSOLE" "$T/chrome.err"' "no console messages on the object-avoidance page"
check 'browse --screenshot="$PWD/${BATON_BUILD:-build}/league-oval-oa.png" "$U/track/oval?race=object-avoidance" >/dev/null' \
    "a screenshot: ${BATON_BUILD:-build}/league-oval-oa.png"
check '[ "$(code "$U/track/oval?race=sprint")" = 400 ] && grep -q "race .sprint." "$T/body"' "a bad race on the page: 400 naming race"

# ---- addresses and stopping
check '! "$BATON" race serve --listen 0.0.0.0:0 --db "$DB" 2>"$T/remote.err" && grep -q "not a loopback address" "$T/remote.err"' \
    "a non-loopback address needs --allow-remote"
kill -TERM "${pids[0]}"
check 'for _ in $(seq 100); do kill -0 "${pids[0]}" 2>/dev/null || break; sleep 0.05; done; ! kill -0 "${pids[0]}" 2>/dev/null' "SIGTERM stops the server"
wait "${pids[0]}" 2>/dev/null
st=$?
check '[ "$st" -eq 0 ]' "exit 0 after SIGTERM"
finish
