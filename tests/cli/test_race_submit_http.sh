#!/usr/bin/env bash
# test_race_submit_http.sh — submissions over HTTP to `baton race serve`:
#   - tokens: `race token add` prints one (only its SHA-256 in the database), a second add is
#     refused, --rotate retires the old one, revoke removes it;
#   - a tar of a checkpoint POSTed to /api/submit with its racer's token is queued (202), evaluated
#     by the worker (queued -> running -> done, GET /api/submissions/ID) and shown on the
#     leaderboard and the page, under an alias with SQL- and HTML-special characters; its laps are
#     `race eval`'s under the league's rules; a track from the league's --tracks folder by name;
#   - each race type: POST race=object-avoidance and `race submit --server --race head-to-bot`
#     evaluated under the official settings, each on its own board (/api/leaderboard?race=R), its
#     trace carrying its boxes or bots; /api/server lists the race types; a bad race or format 400
#     naming the field;
#   - every bad input refused with a clear message and nothing stored: no token, a malformed or
#     wrong one, another alias's token, a revoked one; tars with "../", an absolute path, a symbolic
#     link, a hard link, a FIFO, a bad checksum, no MANIFEST; an archive over the size limit (by
#     Content-Length) or chunked (no size declared: 411); a checkpoint of another kind of model; a
#     track given as a path or unknown; a Content-Type that is not a tar; a second submission while
#     one is waiting; a NUL in the alias or the track (%00: refused, not cut there);
#   - what the racer is told names only what the racer sent: a damaged MANIFEST at the archive's
#     top and in the racer's folder, a state.json that is not JSON (the parser's position), an
#     unknown entry — no path of the server's; IDs only as canonical decimal; a checkpoint folder
#     archived without its own entry (`tar cf - x/*`) taken;
#   - the server SIGKILLed while a submission is running, restarted: the submission is evaluated
#     again and finished exactly once (one entry, two attempts).
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
unset BATON_LEAGUE_DB BATON_LEAGUE_TEST_HOLD_MS
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
sql() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$DB" "$1"; }
DB=$T/league.db
TRACKS=../shared/tracks
M="--metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json"
A1="'; DROP TABLE entries;--"
A2='<b>bold</b> & "co"'

check '"$BATON" race train --track oval $M --ckpt-dir "$T/m1" --episodes 400 --seed 1 --threads 1 --quiet >/dev/null' "train model 1"
check '"$BATON" race train --track oval $M --ckpt-dir "$T/m2" --episodes 200 --seed 2 --threads 1 --quiet >/dev/null' "train model 2"
tar -C "$T/m1" -cf "$T/m1.tar" .                       # a run folder (its checkpoints inside)
tar -C "$T/m2" -cf "$T/m2.tar" "$(basename "$T"/m2/ckpt-*)"   # one checkpoint folder

# ---- tokens
check '"$BATON" race token add "$A1" --db "$DB" >"$T/tok1" 2>"$T/tok.err" && grep -Eqx "btn_[0-9a-f]{64}" "$T/tok1"' \
    "token add prints a token: $(cat "$T/tok.err" 2>/dev/null)"
check '"$BATON" race token add "$A2" --db "$DB" >"$T/tok2" 2>/dev/null' "a second racer's token"
TOK1=$(cat "$T/tok1") TOK2=$(cat "$T/tok2")
expect_fail 1 "has a token already \(--rotate" "$BATON" race token add "$A1" --db "$DB"
check '[ "$(sql "SELECT hash FROM tokens WHERE alias = '"'"'<b>bold</b> & \"co\"'"'"'")" = "$(printf %s "$TOK2" | sha256sum | cut -c1-64)" ] && ! grep -qa "$TOK1" "$DB"' \
    "the database holds the tokens' SHA-256, not the tokens"
check '"$BATON" race token ls --db "$DB" --json | grep -qF "\"alias\":\"'"'"'; DROP TABLE entries;--\""' "token ls"
check '"$BATON" race token add victim --db "$DB" >"$T/tok3" 2>/dev/null && "$BATON" race token revoke victim --db "$DB" >/dev/null' \
    "token add and revoke"
expect_fail 1 "'victim' has no token" "$BATON" race token revoke victim --db "$DB"
expect_fail 2 "add ALIAS \| ls \| revoke ALIAS" "$BATON" race token frobnicate --db "$DB"

# ---- the server
start() {  # start [ENV=VALUE...]: the server in the background; U its URL
    rm -f "$T/url"
    env "$@" "$BATON" race serve --listen 127.0.0.1:0 --db "$DB" --tracks "$TRACKS" --max-upload 3000000 \
        >"$T/url" 2>>"$T/serve.err" &
    pids+=($!)
    PID=$!
    U=
    for _ in $(seq 200); do U=$(head -n1 "$T/url" 2>/dev/null); [ -n "$U" ] && break; sleep 0.05; done
}
start
check '[ -n "$U" ]' "the server prints its URL: $(cat "$T/serve.err")"
code() { curl -s -o "$T/body" -w "%{http_code}" "$@"; }
enc() { python3 -c "import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=''))" "$1"; }
post() {  # post TOKEN ALIAS TRACK FILE [CURL ARGS...]
    local tok=$1 alias=$2 track=$3 file=$4; shift 4
    local auth=(-H "Authorization: Bearer $tok")
    [ -n "$tok" ] || auth=()
    code "${auth[@]}" -H "Content-Type: ${CT:-application/x-tar}" --data-binary @"$file" "$@" \
        "$U/api/submit?alias=$(enc "$alias")&track=$track"
}
wait_state() {  # wait_state ID STATE: poll until the submission is in STATE (10 s)
    for _ in $(seq 200); do
        curl -s "$U/api/submissions/$1" >"$T/sub.json" 2>/dev/null
        [ "$(json "$T/sub.json" 'd.get("state")')" = "$2" ] && return 0
        sleep 0.05
    done
    return 1
}

check '[ "$(post "$TOK1" "$A1" oval "$T/m1.tar")" = 202 ] && [ "$(json "$T/body" "d[\"state\"] in (\"queued\", \"running\", \"done\") and d[\"status_url\"] == \"/api/submissions/1\"")" = True ]' \
    "POST /api/submit: 202 and where to look: $(cat "$T/body" 2>/dev/null)"
check 'wait_state 1 done && [ "$(json "$T/sub.json" "d[\"entry\"] == 1 and d[\"attempts\"] == 1 and d[\"alias\"]")" = "$A1" ]' \
    "the submission evaluated: $(cat "$T/sub.json" 2>/dev/null)"
"$BATON" race eval --ckpt "$T/m1" --track oval --json >"$T/e1.json"
check '[ "$(code "$U/api/leaderboard?track=oval")" = 200 ] && [ "$(json "$T/body" "[(e[\"alias\"], e[\"best_lap_s\"]) for e in d[\"entries\"]]")" = "$(json "$T/e1.json" "[(\"$A1\", d[\"best_lap_s\"])]")" ]' \
    "on the leaderboard with race eval's lap: $(cat "$T/body" 2>/dev/null)"
check '[ "$(code "$U/track/oval")" = 200 ] && grep -qF "&#39;; DROP TABLE entries;--" "$T/body"' "shown on the page, escaped"
# a track of the league's folder, by name; the second racer
check '[ "$(post "$TOK2" "$A2" Oval_track "$T/m2.tar")" = 202 ] && wait_state 2 done' "a track from --tracks: $(cat "$T/sub.json" 2>/dev/null)"
check '[ "$(code "$U/api/leaderboard?track=Oval_track")" = 200 ] && [ "$(json "$T/body" "[e[\"alias\"] for e in d[\"entries\"]]")" = "['"'"'$A2'"'"']" ]' \
    "the second racer on Oval_track: $(cat "$T/body" 2>/dev/null)"
# the client: `race submit --server` sends the newest checkpoint and follows it to its end
check 'BATON_LEAGUE_TOKEN="$TOK1" "$BATON" race submit --server "$U" --ckpt "$T/m2" --alias "$A1" --track oval --json >"$T/c.json" 2>"$T/c.err" && [ "$(json "$T/c.json" "d[\"state\"], d[\"entry\"]")" = "done 3" ]' \
    "race submit --server: the submission done, entry 3"
# it says how the model did and where it stands, as a local submit does (the server's answer)
check '[ "$(json "$T/c.json" "d[\"result\"][\"best_lap_s\"] >= 0 and d[\"result\"][\"alias\"] == \"$A1\" and d[\"entries\"] >= 1")" = True ]' \
    "race submit --server --json: the result and the number on the board: $(cat "$T/c.json")"
check 'BATON_LEAGUE_TOKEN="$TOK1" "$BATON" race submit --server "$U" --ckpt "$T/m2" --alias "$A1" --track oval >"$T/c.out" 2>"$T/c.err" &&
       grep -q "^entry 4: .* on oval (time-trial), iteration [0-9]*: .*best lap [0-9.]* s, total [0-9.]* s" "$T/c.out" &&
       grep -Eq "^  (rank [0-9]+ of [0-9]+|not the alias.s best)" "$T/c.out"' \
    "race submit --server prints the lap time and the rank: $(cat "$T/c.out" 2>/dev/null)"
printf '%s\n' "$TOK2" >"$T/tok2.file"
expect_fail 1 "POST /api/submit: the league answered 403: the token is not this alias's" "$BATON" race submit --server "$U" --token-file "$T/tok2.file" --ckpt "$T/m2" --alias "$A1" --track oval
expect_fail 2 "needs the racer's token: .BATON_LEAGUE_TOKEN or --token-file" "$BATON" race submit --server "$U" --ckpt "$T/m2" --alias "$A1" --track oval
expect_fail 2 "--server and --db are two different leagues" "$BATON" race submit --server "$U" --db "$DB" --ckpt "$T/m2" --alias "$A1" --track oval
check '[ "$(code "$U/api/submissions/99")" = 404 ] && [ "$(code "$U/api/submissions/x")" = 404 ] && [ "$(code "$U/api/submit")" = 405 ]' \
    "unknown submissions 404; GET /api/submit 405"

# ---- the other race types over HTTP: each evaluated under the league's official settings, ranked
# on its own board by total time, its drive's objects in its trace
check '[ "$(code "$U/api/server")" = 200 ] && [ "$(json "$T/body" "[(r[\"race\"], r[\"format\"]) for r in d[\"races\"]] == [(\"time-trial\", \"time-trial\"), (\"object-avoidance\", \"total\"), (\"head-to-bot\", \"total\")] and d[\"races\"][1][\"settings\"][\"boxes\"][0] == {\"progress\": 0.25, \"lane\": 1} and d[\"races\"][2][\"settings\"][\"bots\"] == 2")" = True ]' \
    "/api/server lists the race types and their settings: $(cat "$T/body")"
check '[ "$(code -H "Authorization: Bearer $TOK2" -H "Content-Type: application/x-tar" --data-binary @"$T/m1.tar" "$U/api/submit?alias=$(enc "$A2")&track=oval&race=object-avoidance")" = 202 ] && wait_state "$(json "$T/body" "d[\"id\"]")" done' \
    "POST race=object-avoidance: queued and done: $(cat "$T/body") $(cat "$T/sub.json" 2>/dev/null)"
check '[ "$(json "$T/sub.json" "d[\"race\"], d[\"format\"], d[\"result\"][\"race\"], d[\"result\"][\"rank\"], d[\"entries\"]")" = "object-avoidance total object-avoidance 1 1" ]' \
    "its submission and result name the race: $(cat "$T/sub.json")"
OA=$(json "$T/sub.json" 'd["entry"]')
check 'BATON_LEAGUE_TOKEN="$TOK1" "$BATON" race submit --server "$U" --race head-to-bot --ckpt "$T/m2" --alias "$A1" --track oval --json >"$T/h.json" 2>"$T/h.err" && [ "$(json "$T/h.json" "d[\"state\"], d[\"result\"][\"race\"], d[\"result\"][\"format\"], d[\"result\"][\"rank\"], d[\"entries\"]")" = "done head-to-bot total 1 1" ]' \
    "race submit --server --race head-to-bot: $(cat "$T/h.json" "$T/h.err" 2>/dev/null)"
H2B=$(json "$T/h.json" 'd["entry"]')
check '[ "$(code "$U/api/leaderboard?track=oval&race=object-avoidance")" = 200 ] && [ "$(json "$T/body" "d[\"race\"], d[\"format\"], [(e[\"id\"], e[\"settings\"][\"collision_penalty_s\"]) for e in d[\"entries\"]] == [($OA, 5)]")" = "object-avoidance total True" ]' \
    "object avoidance's board: $(cat "$T/body")"
check '[ "$(code "$U/api/leaderboard?track=oval&race=head-to-bot")" = 200 ] && [ "$(json "$T/body" "[e[\"id\"] for e in d[\"entries\"]] == [$H2B] and d[\"entries\"][0][\"settings\"][\"bot_speed_mps\"] == 1")" = True ]' \
    "head-to-bot's board: $(cat "$T/body")"
check '[ "$(code "$U/api/leaderboard?track=oval")" = 200 ] && [ "$(json "$T/body" "[e[\"id\"] for e in d[\"entries\"] if e[\"id\"] in ($OA, $H2B) or e[\"race\"] != \"time-trial\"]")" = "[]" ]' \
    "the time trial's board holds neither"
check '[ "$(code "$U/api/entries/$OA/trace")" = 200 ] && [ "$(json "$T/body" "[o[\"kind\"] for o in d[\"objects\"]] == [\"box\"] * 3 and all(len(o[\"x\"]) == len(o[\"y\"]) == len(o[\"yaw\"]) == d[\"steps\"] for o in d[\"objects\"])")" = True ]' \
    "the object-avoidance trace carries its 3 boxes, a place per step"
check '[ "$(code "$U/api/entries/$H2B/trace")" = 200 ] && [ "$(json "$T/body" "[o[\"kind\"] for o in d[\"objects\"]] == [\"bot\"] * 2 and all(len(set(o[\"x\"])) > 10 for o in d[\"objects\"])")" = True ]' \
    "the head-to-bot trace carries its 2 bots, moving"
check '[ "$(code "$U/api/entries/1/trace")" = 200 ] && [ "$(json "$T/body" "\"objects\" in d")" = False ]' "a time trial's trace has no objects"
refused_race() {  # refused_race QUERY WANT: a POST with that query refused 400, naming the field
    [ "$(code -H "Authorization: Bearer $TOK2" -H "Content-Type: application/x-tar" --data-binary @"$T/m1.tar" "$U/api/submit?alias=$(enc "$A2")&track=oval&$1")" = 400 ] && grep -q "$2" "$T/body"
}
check 'refused_race race=drag "race .drag.: time-trial, object-avoidance, head-to-bot or head-to-model"' "an unknown race: 400 naming race: $(cat "$T/body")"
check 'refused_race race= "race ..: time-trial"' "an empty race: 400 naming race"
check 'refused_race "race=head-to-bot&format=sprint" "format .sprint."' "a bad format with a race: 400 naming format"
check '[ "$(code "$U/api/leaderboard?track=oval&race=Head-To-Bot")" = 400 ] && grep -q "race .Head-To-Bot." "$T/body"' "the leaderboard's race: 400 naming race"
expect_fail 2 "race 'drag': time-trial, object-avoidance, head-to-bot or head-to-model" "$BATON" race submit --server "$U" --race drag --ckpt "$T/m2" --alias "$A1" --track oval

# ---- bad input: refused, nothing stored
python3 - "$T" <<'PY'
import io, os, sys, tarfile
t = sys.argv[1]
man = open(os.path.join(t, "m2.tar"), "rb").read()
def make(name, members):
    with tarfile.open(os.path.join(t, name), "w", format=tarfile.GNU_FORMAT) as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
def f(name, data=b"x"):
    i = tarfile.TarInfo(name); i.size = len(data); return (i, data)
def special(name, kind, link=""):
    i = tarfile.TarInfo(name); i.type = kind; i.linkname = link; return (i, None)
make("dotdot.tar", [f("MANIFEST"), f("../escape")])
make("abs.tar", [f("MANIFEST"), f("/tmp/escape")])
make("symlink.tar", [f("MANIFEST"), special("model.safetensors", tarfile.SYMTYPE, "/etc/passwd")])
make("hardlink.tar", [f("MANIFEST"), special("state.json", tarfile.LNKTYPE, "MANIFEST")])
make("fifo.tar", [f("MANIFEST"), special("pipe", tarfile.FIFOTYPE)])
make("nomanifest.tar", [f("README", b"hello")])
b = bytearray(man); b[148:156] = b"0000000\0"; open(os.path.join(t, "checksum.tar"), "wb").write(b)
open(os.path.join(t, "big.tar"), "wb").write(b"\0" * 3100000)
PY
before_s=$(sql "SELECT count(*) FROM submissions") before_e=$(sql "SELECT count(*) FROM entries")
refused() {  # refused STATUS PATTERN TOKEN ALIAS TRACK FILE [CURL ARGS...]
    local want=$1 pat=$2; shift 2
    local got
    got=$(post "$@")
    if [ "$got" = "$want" ] && grep -Eq -- "$pat" "$T/body"; then ok; else bad "$want /$pat/ wanted; got $got: $(head -c 400 "$T/body")"; fi
}
refused 401 "a token is required" "" "$A1" oval "$T/m1.tar"
refused 401 "expected .+Bearer btn_" "not-a-token" "$A1" oval "$T/m1.tar"
refused 403 "the token is not this alias's" "btn_$(printf '0%.0s' $(seq 64))" "$A1" oval "$T/m1.tar"
refused 403 "the token is not this alias's" "$TOK2" "$A1" oval "$T/m1.tar"
refused 403 "the token is not this alias's" "$(cat "$T/tok3")" victim oval "$T/m1.tar"
refused 400 "'\.\./escape': a .+ component is not accepted" "$TOK1" "$A1" oval "$T/dotdot.tar"
refused 400 "'/tmp/escape': an absolute path is not accepted" "$TOK1" "$A1" oval "$T/abs.tar"
refused 400 "'model.safetensors' is a symbolic link; only files and folders" "$TOK1" "$A1" oval "$T/symlink.tar"
refused 400 "'state.json' is a hard link" "$TOK1" "$A1" oval "$T/hardlink.tar"
refused 400 "'pipe' is a FIFO" "$TOK1" "$A1" oval "$T/fifo.tar"
refused 400 "wrong checksum" "$TOK1" "$A1" oval "$T/checksum.tar"
refused 400 "no MANIFEST in the archive" "$TOK1" "$A1" oval "$T/nomanifest.tar"
refused 413 "over 3000000 bytes" "$TOK1" "$A1" oval "$T/big.tar"
refused 411 "Content-Length required" "$TOK1" "$A1" oval "$T/big.tar" -H "Transfer-Encoding: chunked"
refused 400 "track: letters, digits" "$TOK1" "$A1" "tracks%2F..%2F..%2Fetc%2Fpasswd" "$T/m1.tar"
refused 400 "not starting with '.'" "$TOK1" "$A1" "..%2F..%2Fetc%2Fpasswd" "$T/m1.tar"
refused 400 "not starting with '.'" "$TOK1" "$A1" ".hidden" "$T/m1.tar"
refused 404 "track 'nowhere': not a built-in track" "$TOK1" "$A1" nowhere "$T/m1.tar"
CT=text/plain refused 415 "the body is a tar" "$TOK1" "$A1" oval "$T/m1.tar"
refused 400 "format 'sprint'" "$TOK1" "$A1" "oval&format=sprint" "$T/m1.tar"
check '"$BATON" pack --from fashion-mnist --split test --out "$T/fm" --shard-mb 1 --quiet >/dev/null && "$BATON" train --data "$T/fm" --model mlp --epochs 1 --max-steps 5 --batch 64 --threads 1 --quiet --ckpt-dir "$T/mlp" >/dev/null && tar -C "$T/mlp" -cf "$T/mlp.tar" .' \
    "a baton train checkpoint"
refused 400 "not a race model that loads" "$TOK1" "$A1" oval "$T/mlp.tar"
check '[ "$(sql "SELECT count(*) FROM submissions")" = "$before_s" ] && [ "$(sql "SELECT count(*) FROM entries")" = "$before_e" ]' \
    "nothing stored by refused submissions"
check '! ls "${TMPDIR:-/tmp}" | grep -q "^baton-upload-"' "no unpacked upload left behind"

# ---- what a racer is told names only what the racer sent; what a query carries is taken whole
python3 - "$T" "$(ls -d "$T"/m2/ckpt-*)" <<'PY'
import io, os, sys, tarfile
t, ck = sys.argv[1], sys.argv[2]
files = {n: open(os.path.join(ck, n), "rb").read() for n in sorted(os.listdir(ck))}
def make(name, members, folder=""):
    with tarfile.open(os.path.join(t, name), "w", format=tarfile.GNU_FORMAT) as tf:
        for n, data in members.items():
            i = tarfile.TarInfo(folder + n); i.size = len(data); tf.addfile(i, io.BytesIO(data))
man = files["MANIFEST"].split(b"\n")
man[2] = man[2].split(b" ")[0] + b" lots " + man[2].split(b" ")[2]   # line 3: a size that is not a number
make("badman.tar", dict(files, MANIFEST=b"\n".join(man)))              # the files at the archive's top
make("badman-dir.tar", dict(files, MANIFEST=b"\n".join(man)), "mine/")  # in a folder of the racer's name
make("notjson.tar", dict(files, **{"state.json": b'{"kind": "race-ppo",\n  "step": 12,,\n}'}))
make("glob.tar", files, "x/")   # as `tar cf - x/*` writes it: no entry of the folder x itself
PY
noserver() { ! grep -qE "/tmp/|$T|baton-upload" "$T/body"; }   # no path of the server's in the answer
refused 400 "not a race model that loads: .*MANIFEST: line 3" "$TOK1" "$A1" oval "$T/badman.tar"
check 'noserver && grep -qE "\"(not a race model that loads: )?MANIFEST: line 3" "$T/body"' "a damaged MANIFEST at the top: named as the archive has it: $(cat "$T/body")"
refused 400 "mine/MANIFEST: line 3" "$TOK1" "$A1" oval "$T/badman-dir.tar"
check 'noserver' "a damaged MANIFEST in the racer's folder: named as the archive has it: $(cat "$T/body")"
refused 400 "state.json: not JSON: at byte 35 \(line 2, column 15\)" "$TOK1" "$A1" oval "$T/notjson.tar"
check 'noserver' "a state.json that is not JSON: no server path: $(cat "$T/body")"
check '[ "$(code "$U/api/entries/99/trace")" = 404 ] && grep -q "no entry 99" "$T/body" && noserver' "a missing entry: no server path: $(cat "$T/body")"
check '[ "$(code -H "Authorization: Bearer $TOK1" -H "Content-Type: application/x-tar" --data-binary @"$T/m1.tar" \
          "$U/api/submit?alias=$(enc "$A1")%00junk&track=oval")" = 400 ] && grep -q "query argument .alias.: a NUL byte (%00) at byte 24" "$T/body"' \
    "an alias with a NUL in it refused, not cut there: $(cat "$T/body")"
refused 400 "query argument 'track': a NUL byte \(%00\) at byte 4" "$TOK1" "$A1" "oval%00../../x" "$T/m1.tar"
ids_canonical() {
    for p in entries/%201/trace entries/01/trace entries/+1/trace submissions/%201 submissions/01 submissions/1%20; do
        [ "$(code "$U/api/$p")" = 404 ] || { echo "$p: $(cat "$T/body")"; return 1; }
    done
}
check 'ids_canonical >"$T/ids"' "IDs only as canonical decimal (with no space, sign or leading zero): $(cat "$T/ids" 2>/dev/null)"
check '[ "$(post "$TOK1" "$A1" oval "$T/glob.tar")" = 202 ] && wait_state "$(json "$T/body" "d[\"id\"]")" done' \
    "a checkpoint folder archived without its own entry is taken: $(cat "$T/body") $(cat "$T/sub.json" 2>/dev/null)"
check '[ "$(code "$U/api/leaderboard")" = 200 ] && python3 -c "import sys; open(sys.argv[1], \"rb\").read().decode(\"utf-8\")" "$T/body"' \
    "the leaderboard is valid UTF-8"

# ---- killed mid-evaluation: finished exactly once after a restart
kill -9 "$PID"; wait "$PID" 2>/dev/null
start BATON_LEAGUE_TEST_HOLD_MS=20000
check '[ "$(post "$TOK2" "$A2" oval "$T/m1.tar")" = 202 ]' "a submission to be killed in: $(cat "$T/body" 2>/dev/null)"
SID=$(json "$T/body" 'd["id"]')
check 'wait_state "$SID" running' "submission $SID running: $(cat "$T/sub.json" 2>/dev/null)"
# a second submission while one waits is refused
refused 409 "has submission $SID waiting to be evaluated" "$TOK2" "$A2" oval "$T/m1.tar"
entries=$(sql "SELECT count(*) FROM entries")
kill -9 "$PID"; wait "$PID" 2>/dev/null
check '[ "$(sql "SELECT state FROM submissions WHERE id = $SID")" = 1 ] && [ "$(sql "SELECT count(*) FROM entries")" = "$entries" ]' \
    "killed with submission $SID running, nothing of it stored"
start
check 'wait_state "$SID" done && [ "$(json "$T/sub.json" "d[\"attempts\"]")" = 2 ]' "after the restart: done at the second attempt: $(cat "$T/sub.json" 2>/dev/null)"
check 'grep -q "1 submission(s) were being evaluated when the server stopped: queued again" "$T/serve.err"' "the restart says so"
check '[ "$(sql "SELECT count(*) FROM entries WHERE checkpoint = '"'"'submission $SID'"'"'")" = 1 ] && [ "$(sql "SELECT count(*) FROM entries")" = $((entries + 1)) ]' \
    "exactly one entry for it"
check '[ "$(sql "SELECT count(*) FROM submissions WHERE archive IS NOT NULL")" = 0 ]' "finished submissions' archives dropped"
kill -TERM "$PID"
check 'for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done; ! kill -0 "$PID" 2>/dev/null' "SIGTERM stops it"
finish
